// The stores of a call's card and of the background processes panel, without their views: the
// processes read and polled (src/run/processes.svelte.ts), a call's file changes
// (src/run/call-changes.svelte.ts) and its images (src/run/call-images.svelte.ts), each against a
// scripted shell whose answers the test releases in the order it wants.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CallImage } from "../src/bindings/CallImage";
import type { ChangesView } from "../src/bindings/ChangesView";
import type { ProcessRow } from "../src/bindings/ProcessRow";
import { ApiError } from "../src/lib/invoke";
import { CallChangesStore } from "../src/run/call-changes.svelte";
import { CallImagesStore } from "../src/run/call-images.svelte";
import type { CheckpointsApi } from "../src/run/checkpoints-api";
import type { ProcessesApi } from "../src/run/processes-api";
import { PROCESSES_POLL_MS, ProcessesStore } from "../src/run/processes.svelte";

/** A promise the test settles itself. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const row = (id: string, over: Partial<ProcessRow> = {}): ProcessRow => ({
  process_id: id,
  run_id: "01RUN",
  command: "npm run dev",
  running: true,
  kept: false,
  status: "running",
  output_bytes: 3,
  tail: "ok\n",
  ...over,
});

const apiError = (code: string, stage: string | null, message: string) => new ApiError({ code, stage, message } as never);

describe("the background processes store", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function shell(list: () => Promise<ProcessRow[]>) {
    const asked: string[] = [];
    const api: ProcessesApi = {
      listProcesses: () => {
        asked.push("list");
        return list();
      },
      stopProcess: async (id) => {
        asked.push(`stop ${id}`);
        if (id === "gone") throw apiError("process", "Execution", "no such process");
        return true;
      },
      keepProcess: async (id, keep) => {
        asked.push(`keep ${id} ${keep}`);
        return true;
      },
    };
    return { api, asked };
  }

  it("reads when shown, polls while shown and the window is not hidden, and stops polling when hidden", async () => {
    const { api, asked } = shell(async () => [row("bg1")]);
    let windowHidden = false;
    const store = new ProcessesStore(api, () => windowHidden);
    const lists = () => asked.filter((a) => a === "list").length;
    // Not shown: nothing is read.
    store.shown(false)();
    await vi.advanceTimersByTimeAsync(PROCESSES_POLL_MS * 3);
    expect(lists()).toBe(0);
    const stop = store.shown(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(lists()).toBe(1);
    expect(store.rows.map((r) => r.process_id)).toEqual(["bg1"]);
    await vi.advanceTimersByTimeAsync(PROCESSES_POLL_MS * 2);
    expect(lists()).toBe(3);
    windowHidden = true;
    await vi.advanceTimersByTimeAsync(PROCESSES_POLL_MS * 2);
    expect(lists()).toBe(3);
    windowHidden = false;
    stop();
    await vi.advanceTimersByTimeAsync(PROCESSES_POLL_MS * 3);
    expect(lists()).toBe(3);
  });

  it("shows why the list could not be read, keeps the last rows, and clears the error on the next good read", async () => {
    let fail = true;
    const { api } = shell(async () => {
      if (fail) throw apiError("processes", "Execution", "the table is locked");
      return [row("bg1")];
    });
    const store = new ProcessesStore(api, () => false);
    await store.refresh();
    expect(store.error).toBe("the table is locked");
    expect(store.rows).toEqual([]);
    fail = false;
    await store.refresh();
    expect(store.error).toBeNull();
    expect(store.rows.length).toBe(1);
    fail = true;
    await store.refresh();
    expect(store.error).toBe("the table is locked");
    expect(store.rows.length).toBe(1);
  });

  it("drops the answer to an older read that arrives after a newer one", async () => {
    const answers = [deferred<ProcessRow[]>(), deferred<ProcessRow[]>()];
    let i = 0;
    const { api } = shell(() => answers[i++]!.promise);
    const store = new ProcessesStore(api, () => false);
    const first = store.refresh();
    const second = store.refresh();
    answers[1]!.resolve([row("bg1", { running: false, status: "ended (exit code 0) after 5 ms" })]);
    await second;
    answers[0]!.resolve([row("bg1")]);
    await first;
    expect(store.rows[0]?.running).toBe(false);
    expect(store.rows[0]?.status).toBe("ended (exit code 0) after 5 ms");
  });

  it("stops and keeps through the shell, disables Stop while it is under way, reads again, and shows a failure", async () => {
    const stopped = deferred<boolean>();
    const { api, asked } = shell(async () => [row("bg1")]);
    api.stopProcess = (id) => {
      asked.push(`stop ${id}`);
      return stopped.promise;
    };
    const store = new ProcessesStore(api, () => false);
    const stopping = store.stop("bg1");
    expect(store.stopping).toEqual({ bg1: true });
    stopped.resolve(true);
    await stopping;
    expect(store.stopping).toEqual({});
    await store.keep("bg1", true);
    expect(asked).toEqual(["stop bg1", "list", "keep bg1 true", "list"]);
    // A Stop the shell refuses is shown (the next read's error, or its success, replaces it later).
    const { api: api2 } = shell(() => new Promise<never>(() => undefined));
    const store2 = new ProcessesStore(api2, () => false);
    void store2.stop("gone");
    await vi.advanceTimersByTimeAsync(0);
    expect(store2.error).toBe("no such process");
    expect(store2.stopping).toEqual({});
  });
});

const changes = (runId: string, path: string): ChangesView =>
  ({
    run_id: runId,
    files: [{ path, path_shown: [], change: "modified" }],
    skipped: [],
    complete: true,
    not_covered: "",
  }) as unknown as ChangesView;

function checkpoints(callChanges: (id: string) => Promise<ChangesView>): CheckpointsApi {
  const never = () => new Promise<never>(() => undefined);
  return { callChanges, runChanges: never, rewindPreview: never, rewind: never };
}

describe("a call's changes store", () => {
  it("shows what the call changed", async () => {
    const store = new CallChangesStore(checkpoints(async (id) => changes("01RUN", `${id}.txt`)));
    await store.load("c1");
    expect(store.error).toBeNull();
    expect(store.view?.files.map((f) => f.path)).toEqual(["c1.txt"]);
  });

  it("shows nothing for a call without a checkpoint or without a shell, and the message of any other failure", async () => {
    let err: unknown = apiError("checkpoint", "Parameters", "call c1 has no checkpoint");
    const store = new CallChangesStore(checkpoints(async () => Promise.reject(err)));
    await store.load("c1");
    expect(store.view).toBeNull();
    expect(store.error).toBeNull();
    err = new Error("window.__TAURI_INTERNALS__ is undefined");
    await store.load("c1");
    expect(store.error).toBeNull();
    err = apiError("checkpoint", "Execution", "the checkpoint store is unreadable");
    await store.load("c1");
    expect(store.error).toBe("the checkpoint store is unreadable");
    expect(store.view).toBeNull();
  });

  it("drops a late answer (or failure) for the call shown before", async () => {
    const answers = new Map([
      ["old", deferred<ChangesView>()],
      ["new", deferred<ChangesView>()],
    ]);
    const store = new CallChangesStore(checkpoints((id) => answers.get(id)!.promise));
    const old = store.load("old");
    const now = store.load("new");
    answers.get("new")!.resolve(changes("01RUN", "new.txt"));
    await now;
    answers.get("old")!.resolve(changes("01RUN", "old.txt"));
    await old;
    expect(store.view?.files.map((f) => f.path)).toEqual(["new.txt"]);
    // Nor does a failure of the previous call's read.
    const late = deferred<ChangesView>();
    answers.set("old", late);
    const before = store.load("old");
    const after = store.load("new");
    answers.get("new")!.resolve(changes("01RUN", "new.txt"));
    await after;
    late.reject(apiError("checkpoint", "Execution", "stale"));
    await before;
    expect(store.error).toBeNull();
    expect(store.view?.files.map((f) => f.path)).toEqual(["new.txt"]);
  });
});

const PNG: CallImage = { media_type: "image/png", width: 2, height: 2, data_url: "data:image/png;base64,iVBORw0KGgo=" } as CallImage;

describe("a call's images store", () => {
  it("asks only for a call that ended ok and whose text names an image", () => {
    const names = "[image 1: image/png, 2x2, 70 B]";
    expect(CallImagesStore.wanted("ok", names)).toBe(true);
    expect(CallImagesStore.wanted("running", names)).toBe(false);
    expect(CallImagesStore.wanted("error", names)).toBe(false);
    expect(CallImagesStore.wanted("ok", "no image here")).toBe(false);
    expect(CallImagesStore.wanted("ok", null)).toBe(false);
  });

  it("loads a wanted call's images, none when not wanted, and none when they cannot be read", async () => {
    const asked: string[] = [];
    let fail = false;
    const store = new CallImagesStore(async (id) => {
      asked.push(id);
      if (fail) throw apiError("store", "Execution", "unreadable");
      return [PNG];
    });
    await store.load("c1", false);
    expect(asked).toEqual([]);
    expect(store.images).toEqual([]);
    await store.load("c1", true);
    expect(asked).toEqual(["c1"]);
    expect(store.images).toEqual([PNG]);
    fail = true;
    await store.load("c2", true);
    expect(store.images).toEqual([]);
  });

  it("drops a late answer for the call shown before", async () => {
    const answers = new Map([
      ["old", deferred<CallImage[]>()],
      ["new", deferred<CallImage[]>()],
    ]);
    const store = new CallImagesStore((id) => answers.get(id)!.promise);
    const old = store.load("old", true);
    const now = store.load("new", true);
    answers.get("new")!.resolve([]);
    await now;
    answers.get("old")!.resolve([PNG]);
    await old;
    expect(store.images).toEqual([]);
  });
});

describe("the window's services", () => {
  it("the processes panel reads the processes service given through context", async () => {
    const { clearMocks, mockIPC } = await import("@tauri-apps/api/mocks");
    const { flushSync, mount, unmount } = await import("svelte");
    const App = (await import("../src/components/App.svelte")).default;
    const { RunController } = await import("../src/run/controller.svelte");
    const { servicesContext, shellServices } = await import("../src/services");
    // Anything else the window asks the shell for is not this test's.
    mockIPC(() => {
      throw { code: "ipc", stage: null, message: "not in this test" };
    });
    const never = () => new Promise<never>(() => undefined);
    const runs = new RunController({
      startRun: never,
      stopRun: async () => undefined,
      continueRun: never,
      listRuns: async () => [],
      showRun: never,
      answerConfirm: async () => false,
      answerNetwork: async () => false,
      answerAskUser: async () => false,
      cancelCall: async () => false,
      onRunEvent: async () => () => undefined,
    });
    const asked: string[] = [];
    const processes: ProcessesApi = {
      listProcesses: async () => (asked.push("list"), [row("bg-from-context")]),
      stopProcess: async () => true,
      keepProcess: async () => true,
    };
    const api = {
      callTool: never,
      cancelCall: async () => false,
      answerConfirm: async () => false,
      answerNetwork: async () => false,
      projectInfo: never,
      listTools: async () => [],
    };
    const host = document.createElement("div");
    document.body.append(host);
    const c = mount(App, { target: host, props: {}, context: servicesContext(shellServices({ api, runs, processes })) });
    flushSync();
    await vi.waitFor(() => {
      flushSync();
      expect(host.querySelector('[data-testid="process"]')?.getAttribute("data-process-id")).toBe("bg-from-context");
    });
    expect(asked.length).toBeGreaterThan(0);
    unmount(c);
    host.remove();
    clearMocks();
  });
});
