// The run view's stores without their views: the conversation's prompt, approval mode and runs
// polling (src/run/view.svelte.ts), a raw output read range by range (src/run/raw-output.svelte.ts)
// and the first run's model setup (src/project/setup.svelte.ts), each against a scripted shell.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CallRecordView } from "../src/bindings/CallRecordView";
import type { LocalServer } from "../src/bindings/LocalServer";
import type { ModelSetup } from "../src/bindings/ModelSetup";
import type { SettingsWrite } from "../src/bindings/SettingsWrite";
import { ApiError } from "../src/lib/invoke";
import type { ModelSetupApi } from "../src/project/model-setup";
import { ModelSetupStore } from "../src/project/setup.svelte";
import type { RunApi } from "../src/run/api";
import type { ApprovalsApi } from "../src/run/approvals-api";
import { RunController } from "../src/run/controller.svelte";
import type { RawOutputApi } from "../src/run/raw-output";
import { RawOutputRecord, RawOutputStore } from "../src/run/raw-output.svelte";
import { RUNS_POLL_MS, RunViewStore } from "../src/run/view.svelte";

/** A run shell that counts what the view asks of it; starting a run never answers. */
function runShell(asked: string[]): RunApi {
  const never = () => new Promise<never>(() => undefined);
  return {
    startRun: (a) => {
      asked.push(`start_run ${a.prompt}`);
      return never();
    },
    stopRun: async () => undefined,
    continueRun: never,
    listRuns: async () => {
      asked.push("list_runs");
      return [];
    },
    showRun: never,
    answerConfirm: async () => false,
    answerNetwork: async () => false,
    answerAskUser: async () => false,
    cancelCall: async () => false,
    onRunEvent: async () => () => undefined,
  };
}

function approvals(mode: () => string): ApprovalsApi {
  return {
    approvalsView: async () => {
      const m = mode();
      if (m === "fail") throw new ApiError({ code: "project", stage: null, message: "unreadable" });
      return { mode: m as "ask", next_mode: "ask", chosen: true, chosen_for_project: null, project_narrows: null, modes: [], rules: [] };
    },
    setApprovalMode: async () => {
      throw new Error("not asked");
    },
    confirmOffer: async () => null,
    answerConfirmWithRule: async () => false,
  };
}

describe("the conversation's store", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("sends a prompt that is not blank, once, and not while a run is active or shown view only", async () => {
    const asked: string[] = [];
    const controller = new RunController(runShell(asked));
    const view = new RunViewStore(controller, approvals(() => "ask"), () => false);
    view.prompt = "   ";
    expect(view.canSend).toBe(false);
    view.send();
    view.prompt = "fix the build";
    expect(view.canSend).toBe(true);
    view.send();
    expect(view.prompt).toBe("");
    await vi.advanceTimersByTimeAsync(0);
    expect(asked).toEqual(["start_run fix the build"]);
    // The run is starting: a second prompt waits.
    view.prompt = "and the tests";
    expect(view.canSend).toBe(false);
    view.send();
    expect(view.prompt).toBe("and the tests");
    controller.state = { ...controller.state, phase: "elsewhere" };
    expect(view.viewOnly).toBe(true);
    expect(view.canSend).toBe(false);
  });

  it("reads the runs list once hidden, then each time shown and every poll while shown and the window is not hidden", async () => {
    const asked: string[] = [];
    let windowHidden = false;
    let mode = "auto";
    const view = new RunViewStore(new RunController(runShell(asked)), approvals(() => mode), () => windowHidden);
    const lists = () => asked.filter((a) => a === "list_runs").length;
    // Mounted hidden: listed once, nothing polled, the mode not read.
    let stop = view.shown(false);
    await vi.advanceTimersByTimeAsync(RUNS_POLL_MS * 3);
    expect(lists()).toBe(1);
    expect(view.approvalMode).toBeNull();
    stop();
    view.shown(false)();
    expect(lists()).toBe(1);
    // Shown: listed, the mode read, polled.
    stop = view.shown(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(lists()).toBe(2);
    expect(view.approvalMode).toBe("auto");
    await vi.advanceTimersByTimeAsync(RUNS_POLL_MS * 2);
    expect(lists()).toBe(4);
    windowHidden = true;
    await vi.advanceTimersByTimeAsync(RUNS_POLL_MS * 2);
    expect(lists()).toBe(4);
    windowHidden = false;
    stop();
    await vi.advanceTimersByTimeAsync(RUNS_POLL_MS * 2);
    expect(lists()).toBe(4);
    // An unreadable mode is not shown.
    mode = "fail";
    view.shown(true)();
    await vi.advanceTimersByTimeAsync(0);
    expect(view.approvalMode).toBeNull();
  });

  it("polls a run shown view only while shown", async () => {
    const controller = new RunController(runShell([]));
    let reads = 0;
    controller.refreshElsewhere = async () => {
      reads++;
    };
    const view = new RunViewStore(controller, approvals(() => "ask"), () => false);
    view.followElsewhere(true, false)();
    view.followElsewhere(false, true)();
    await vi.advanceTimersByTimeAsync(RUNS_POLL_MS * 2);
    expect(reads).toBe(0);
    const stop = view.followElsewhere(true, true);
    await vi.advanceTimersByTimeAsync(RUNS_POLL_MS * 2);
    expect(reads).toBe(2);
    stop();
    await vi.advanceTimersByTimeAsync(RUNS_POLL_MS * 2);
    expect(reads).toBe(2);
  });
});

/** A raw output of `text` served in ranges; `hold` keeps a call's ranges until released. */
function rawShell(outputs: Record<string, string>, held: Map<string, () => void> = new Map()): RawOutputApi {
  const bytes = (id: string) => new TextEncoder().encode(outputs[id] ?? "");
  return {
    callRecord: async (id) => {
      if (!(id in outputs)) throw new ApiError({ code: "tool", stage: "Discovery", message: `no call \`${id}\`` });
      return { raw_total_bytes: bytes(id).length } as CallRecordView;
    },
    rawRange: async (id, offset, length) => {
      if (held.has(id)) await new Promise<void>((r) => held.set(id, r));
      return bytes(id).slice(offset, offset + length);
    },
    saveRawOutput: async (id) => (id === "c1" ? "/home/me/c1.txt" : null),
    historyPage: async () => {
      throw new Error("not asked");
    },
    historyFacets: async () => {
      throw new Error("not asked");
    },
    historyHead: async () => {
      throw new Error("not asked");
    },
  };
}

describe("a raw output's store", () => {
  it("reads range by range, keeps a character split across ranges whole, copies and saves", async () => {
    // "é" is two bytes: the first range ends between them.
    const store = new RawOutputStore(rawShell({ c1: "aé-b" }));
    const reads: number[] = [];
    const api = rawShell({ c1: "aé-b" });
    const ranged: RawOutputApi = {
      ...api,
      rawRange: (id, offset) => {
        reads.push(offset);
        return api.rawRange(id, offset, 2);
      },
    };
    const small = new RawOutputStore(ranged);
    await small.open("c1", 5);
    expect([small.chunks, small.loaded]).toEqual([["a"], 2]);
    const copied: string[] = [];
    await small.copy(async (t) => void copied.push(t));
    expect(small.note).toBe("copied the first 2 B");
    await small.more();
    await small.more();
    expect(small.chunks.join("")).toBe("aé-b");
    expect(small.loaded).toBe(5);
    expect(reads).toEqual([0, 2, 4]);
    await small.copy(async (t) => void copied.push(t));
    expect(copied).toEqual(["a", "aé-b"]);
    expect(small.note).toBe("copied");
    await small.copy(async () => {
      throw new Error("denied");
    });
    expect(small.note).toBe("could not copy: denied");
    await small.save();
    expect(small.note).toBe("saved to /home/me/c1.txt");
    await store.open("c2", 0);
    await store.save();
    expect(store.note).toBe("not saved");
  });

  it("a range still read for the previous call adds nothing to the next one", async () => {
    const held = new Map<string, () => void>([["old", () => undefined]]);
    const store = new RawOutputStore(rawShell({ old: "OLD", next: "NEXT" }, held));
    const first = store.open("old", 3);
    await Promise.resolve();
    await store.open("next", 4);
    expect(store.chunks).toEqual(["NEXT"]);
    held.get("old")?.();
    await first;
    expect(store.chunks).toEqual(["NEXT"]);
    expect([store.loaded, store.busy]).toEqual([4, false]);
  });

  it("a dialog's record gives the total, or the typed error's message", async () => {
    const api = rawShell({ c1: "abc" });
    const found = new RawOutputRecord(api);
    await found.load("c1");
    expect([found.total, found.error]).toEqual([3, null]);
    const missing = new RawOutputRecord(api);
    await missing.load("c404");
    expect([missing.total, missing.error]).toEqual([null, "no call `c404`"]);
  });
});

describe("the first run's model setup store", () => {
  const OLLAMA: LocalServer = { id: "ollama", name: "Ollama", base_url: "http://127.0.0.1:11434/v1", models: ["qwen3:8b", "llama3.2"] };
  const written: SettingsWrite = { written: { file: "/u/settings.json", changed: true, trust: { kind: "not_concerned" } }, problems: [] };

  function setupShell(setup: ModelSetup | null, answer: SettingsWrite | Error, used: [string, string][]): ModelSetupApi {
    return {
      modelSetup: async () => {
        if (setup === null) throw new ApiError({ code: "internal", stage: null, message: "probe failed" });
        return setup;
      },
      useLocal: async (server, model) => {
        used.push([server.id, model]);
        if (answer instanceof Error) throw answer;
        return answer;
      },
    };
  }

  it("reads what to offer, uses the chosen model (the first until one is chosen), busy meanwhile", async () => {
    const used: [string, string][] = [];
    const store = new ModelSetupStore(setupShell({ needs_setup: true, local_servers: [OLLAMA] }, written, used));
    await store.load();
    expect(store.setup?.local_servers).toEqual([OLLAMA]);
    expect(store.modelOf(OLLAMA)).toBe("qwen3:8b");
    store.chosen.ollama = "llama3.2";
    const using = store.use(OLLAMA);
    expect(store.busy).toBe(true);
    expect(await using).toBe(true);
    expect(store.busy).toBe(false);
    expect(used).toEqual([["ollama", "llama3.2"]]);
    expect(await store.use({ ...OLLAMA, id: "empty", models: [] })).toBe(false);
    expect(used).toHaveLength(1);
  });

  it("says what refused the entry, and nothing when the shell cannot tell", async () => {
    const refused: SettingsWrite = { written: null, problems: [{ file: "/u/settings.json", line: 1, column: 1, field: "providers.ollama", message: "bad url" }] };
    const store = new ModelSetupStore(setupShell(null, refused, []));
    await store.load();
    expect(store.setup).toBeNull();
    expect(await store.use(OLLAMA)).toBe(false);
    expect(store.error).toBe("Not saved: bad url");
    const failing = new ModelSetupStore(setupShell(null, new ApiError({ code: "project", stage: "Execution", message: "read-only file" }), []));
    expect(await failing.use(OLLAMA)).toBe(false);
    expect(failing.error).toBe("read-only file");
  });
});
