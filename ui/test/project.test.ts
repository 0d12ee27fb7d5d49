// The project bar, welcome view, trust dialog and provider picker: pure decisions, the controller
// against a scripted ProjectApi, and the trust dialog component (keyboard, text-only insertion).
import { flushSync, mount, unmount } from "svelte";
import { beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../src/api";
import type { ProjectInfo } from "../src/bindings/ProjectInfo";
import type { ProviderList } from "../src/bindings/ProviderList";
import type { RecentProject } from "../src/bindings/RecentProject";
import type { TrustPrompt } from "../src/bindings/TrustPrompt";
import ProviderPicker from "../src/components/ProviderPicker.svelte";
import TrustDialog from "../src/components/TrustDialog.svelte";
import Welcome from "../src/components/Welcome.svelte";
import type { ProjectApi } from "../src/project/api";
import { ProviderChoiceStore, withProviderChoice } from "../src/project/choice.svelte";
import { ProjectController } from "../src/project/controller.svelte";
import { commandLine, decide, fieldValue, initialChoice, recentRows, shouldOpenDialog, startFields } from "../src/project/state";
import type { RunApi } from "../src/run/api";

const info = (root: string): ProjectInfo => ({ root, data_dir: "/d", settings_files: [], settings_problems: [] });

const recent = (path: string, extra: Partial<RecentProject> = {}): RecentProject => ({
  path,
  display: path,
  name: path.split("/").pop() ?? path,
  missing: false,
  current: false,
  opened_at_ms: 1,
  ...extra,
});

const PROMPT: TrustPrompt = {
  ask: true,
  applied: "untrusted",
  status: {
    project: "/w/p",
    state: "untrusted",
    digest: "d1",
    problems: [],
    grants: {
      servers: [
        {
          name: "memory",
          transport: "stdio",
          command: "sh",
          args: ["-c", "<img src=x onerror=alert(1)>"],
          url: null,
          cwd: "/w/p",
          env: ["SECRET_TOKEN"],
          headers: [],
          replaces_user_server: false,
          scope: "project",
          pins: [],
          variables: [],
        },
      ],
      settings: [{ file: "/w/p/.aibuddy/settings.json", line: 3, field: "exec.writable_roots", value: ["/etc"] }],
      hooks: [],
    },
  },
};

const PROVIDERS: ProviderList = {
  providers: [
    { name: "local", kind: "openai-chat", model: "qwen3:8b", host: "127.0.0.1:11434", has_key: false, problem: null },
    { name: "anthropic", kind: "anthropic", model: "claude-sonnet-4-6", host: "api.anthropic.com", has_key: true, problem: null },
  ],
  default: "local",
  chosen: "anthropic",
  chosen_model: null,
};

describe("pure decisions", () => {
  it("splits the recent list: openable (not the current one) first, missing apart", () => {
    const rows = recentRows([recent("/a", { current: true }), recent("/b"), recent("/gone", { missing: true })]);
    expect(rows.openable.map((r) => r.path)).toEqual(["/b"]);
    expect(rows.missing.map((r) => r.path)).toEqual(["/gone"]);
  });

  it("opens the dialog only when the shell says to ask; both answers carry the digest shown", () => {
    expect(shouldOpenDialog(PROMPT)).toBe(true);
    expect(shouldOpenDialog({ ...PROMPT, ask: false })).toBe(false);
    expect(shouldOpenDialog(null)).toBe(false);
    expect(decide(PROMPT, true)).toEqual({ kind: "trust", digest: "d1" });
    expect(decide(PROMPT, false)).toEqual({ kind: "decline", digest: "d1" });
  });

  it("renders command lines quoted and values as text", () => {
    expect(commandLine("sh", ["-c", "a b"])).toBe('"sh" "-c" "a b"');
    expect(commandLine(null, [])).toBeNull();
    expect(fieldValue({ file: "f", line: null, field: "exec.network", value: true })).toBe("true");
    expect(fieldValue({ file: "f", line: null, field: "exec.writable_roots", value: ["/a", "/b"] })).toBe("/a, /b");
  });

  it("starts runs on the remembered entry; the default and a blank model add nothing", () => {
    const choice = initialChoice(PROVIDERS);
    expect(choice).toEqual({ provider: "anthropic", model: "" });
    expect(startFields(choice, PROVIDERS)).toEqual({ provider: "anthropic" });
    expect(startFields({ provider: "local", model: "  " }, PROVIDERS)).toEqual({});
    expect(startFields({ provider: "local", model: "qwen3:32b" }, PROVIDERS)).toEqual({ model: "qwen3:32b" });
    expect(startFields(null, PROVIDERS)).toEqual({});
    expect(initialChoice({ ...PROVIDERS, chosen: null })).toEqual({ provider: "local", model: "" });
  });

  it("adds the picker's choice to start_run unless the caller named one", async () => {
    const seen: unknown[] = [];
    const base = { startRun: async (a: unknown) => (seen.push(a), { run_id: "r" }) } as unknown as RunApi;
    const store = new ProviderChoiceStore();
    store.list = PROVIDERS;
    store.choice = { provider: "anthropic", model: "claude-opus-4-6" };
    const api = withProviderChoice(base, store);
    await api.startRun({ prompt: "hi" });
    await api.startRun({ prompt: "x", provider: "local" });
    expect(seen).toEqual([
      { prompt: "hi", provider: "anthropic", model: "claude-opus-4-6" },
      { prompt: "x", provider: "local", model: "claude-opus-4-6" },
    ]);
  });
});

/** A scripted ProjectApi recording its calls; events are played with `emitProject`/`emitTrust`. */
function scripted(overrides: Partial<ProjectApi> = {}) {
  const calls: Array<[string, unknown]> = [];
  let projectHandler: (i: ProjectInfo | null) => void = () => undefined;
  let trustHandler: (p: TrustPrompt) => void = () => undefined;
  const api: ProjectApi = {
    pickProject: async () => (calls.push(["pick", null]), info("/w/picked")),
    openRecent: async (path) => (calls.push(["open", path]), info(path)),
    listRecent: async () => [recent("/w/p", { current: true }), recent("/w/old", { missing: true })],
    forgetRecent: async (path) => (calls.push(["forget", path]), true),
    trustStatus: async () => PROMPT,
    trustProject: async (digest) => (calls.push(["trust", digest]), { ...PROMPT, ask: false, applied: "trusted", status: { ...PROMPT.status, state: "trusted" } }),
    distrustProject: async (digest) => (calls.push(["distrust", digest]), { ...PROMPT, ask: false }),
    listProviders: async () => PROVIDERS,
    chooseProvider: async (p, m) => void calls.push(["choose", [p, m]]),
    onProjectChanged: async (h) => ((projectHandler = h), () => undefined),
    onTrustChanged: async (h) => ((trustHandler = h), () => undefined),
    ...overrides,
  };
  return { api, calls, emitProject: (i: ProjectInfo | null) => projectHandler(i), emitTrust: (p: TrustPrompt) => trustHandler(p) };
}

describe("project controller", () => {
  it("asks for trust at load, trusts at the digest shown and closes the dialog", async () => {
    const s = scripted();
    const c = new ProjectController(s.api);
    await c.connect(info("/w/p"), false);
    expect(c.dialogOpen).toBe(true);
    expect(c.recent.map((r) => r.path)).toEqual(["/w/p", "/w/old"]);
    await c.decide(true);
    expect(s.calls).toEqual([["trust", "d1"]]);
    expect(c.dialogOpen).toBe(false);
    expect(c.trust?.status.state).toBe("trusted");
  });

  it("a refused trust (files changed since) reopens the dialog on the new content with the reason", async () => {
    let status = PROMPT;
    const s = scripted({
      trustStatus: async () => status,
      trustProject: async () => {
        status = { ...PROMPT, status: { ...PROMPT.status, digest: "d2" } };
        throw new ApiError({ code: "project", stage: "Authorization", message: "changed since it was shown" });
      },
    });
    const c = new ProjectController(s.api);
    await c.connect(info("/w/p"), false);
    await c.decide(true);
    expect(c.dialogOpen).toBe(true);
    expect(c.trust?.status.digest).toBe("d2");
    expect(c.trustError).toContain("changed since");
  });

  it("declining sends the digest; a change on disk asks again; a switch resets the views", async () => {
    const s = scripted();
    let resets = 0;
    const c = new ProjectController(s.api, () => (resets += 1));
    await c.connect(info("/w/p"), false);
    await c.decide(false);
    expect(s.calls).toEqual([["distrust", "d1"]]);
    expect(c.dialogOpen).toBe(false);
    s.emitTrust({ ...PROMPT, status: { ...PROMPT.status, digest: "d3" } });
    expect(c.dialogOpen).toBe(true);
    const before = c.generation;
    await c.open("/w/other");
    expect(c.info?.root).toBe("/w/other");
    expect(c.generation).toBeGreaterThan(before);
    expect(resets).toBe(1);
    s.emitProject(null);
    expect(c.none).toBe(true);
  });

  it("with no project open shows the welcome view; a refused open keeps the reason", async () => {
    const s = scripted({
      openRecent: async () => {
        throw new ApiError({ code: "project", stage: "Parameters", message: "not a directory" });
      },
    });
    const c = new ProjectController(s.api);
    await c.connect(null, true);
    expect(c.none).toBe(true);
    expect(c.trust).toBeNull();
    await c.open("/w/file.txt");
    expect(c.error).toBe("not a directory");
    expect(c.none).toBe(true);
  });
});

describe("project controller: trust status failures and switches", () => {
  const TRUSTED: TrustPrompt = { ...PROMPT, ask: false, applied: "trusted", status: { ...PROMPT.status, state: "trusted" } };

  it("a failed trust_status is kept to show (with retry), nothing trusted meanwhile; a retry clears it", async () => {
    let fail = true;
    const s = scripted({
      trustStatus: async () => {
        if (fail) throw new ApiError({ code: "project", stage: "Discovery", message: "settings.json: permission denied" });
        return TRUSTED;
      },
    });
    const c = new ProjectController(s.api);
    await c.connect(info("/w/p"), false);
    expect(c.trustLoadError).toBe("settings.json: permission denied");
    expect(c.trust).toBeNull();
    expect(c.dialogOpen).toBe(false);
    fail = false;
    await c.loadTrust();
    expect(c.trustLoadError).toBeNull();
    expect(c.trust?.status.state).toBe("trusted");
  });

  it("a switch forgets the previous project's trust at once; a late answer about it is ignored", async () => {
    let answer: (p: TrustPrompt) => void = () => {};
    let calls = 0;
    const s = scripted({
      trustStatus: () => {
        calls += 1;
        if (calls === 1) return Promise.resolve(TRUSTED);
        return new Promise<TrustPrompt>((r) => (answer = r));
      },
    });
    const c = new ProjectController(s.api);
    await c.connect(info("/w/p"), false);
    expect(c.trust?.status.state).toBe("trusted");
    const switching = c.changed(info("/w/other"));
    // The new project's status is not read yet: nothing says it is trusted.
    expect(c.trust).toBeNull();
    const late = answer;
    const second = c.changed(info("/w/third"));
    late(TRUSTED);
    await switching;
    expect(c.trust).toBeNull();
    answer({ ...PROMPT, status: { ...PROMPT.status, project: "/w/third" } });
    await second;
    expect(c.trust?.status.project).toBe("/w/third");
  });

  it("a recent entry the shell could not forget is said, not an unhandled rejection; the list is read again", async () => {
    let reads = 0;
    const s = scripted({
      forgetRecent: async () => {
        throw new ApiError({ code: "project", stage: "Execution", message: "recent.json is read-only" });
      },
      listRecent: async () => (reads++, [recent("/w/old", { missing: true })]),
    });
    const c = new ProjectController(s.api);
    await c.connect(null, true);
    const before = reads;
    await expect(c.forget("/w/old")).resolves.toBeUndefined();
    expect(c.error).toBe("Could not remove /w/old from the recent projects: recent.json is read-only");
    expect(reads).toBe(before + 1);
    expect(c.recent.map((r) => r.path)).toEqual(["/w/old"]);
  });

  it("a switch the window knows the shell refuses (its run in progress) is said without asking the shell", async () => {
    const s = scripted();
    let blocked: string | null = "A run is in progress in this project: stop it first, then open another project.";
    const c = new ProjectController(s.api, () => undefined, () => blocked);
    await c.connect(info("/w/p"), false);
    await c.pick();
    await c.open("/w/other");
    expect(s.calls).toEqual([]);
    expect(c.error).toContain("stop it first");
    expect(c.info?.root).toBe("/w/p");
    // The run ends: the refusal goes at once, before any other action.
    blocked = null;
    expect(c.error).toBeNull();
    // The window says nothing blocks any more: a later run does not bring the refusal back.
    c.unblocked();
    blocked = "A run is in progress in this project: stop it first, then open another project.";
    expect(c.error).toBeNull();
    blocked = null;
    await c.open("/w/other");
    expect(c.error).toBeNull();
    expect(c.info?.root).toBe("/w/other");
  });
});

let host: HTMLElement;
beforeEach(() => {
  document.body.innerHTML = "<button id=before>before</button><div id=host></div>";
  host = document.getElementById("host") as HTMLElement;
});
const key = (el: Element, k: string) => el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));
const flush = () => new Promise((r) => setTimeout(r, 0));

describe("trust dialog", () => {
  it("shows servers, env names and widening settings as text; Esc declines once; focus starts on Don't trust", async () => {
    const decisions: boolean[] = [];
    const c = mount(TrustDialog, { target: host, props: { prompt: PROMPT, ondecide: (t: boolean) => decisions.push(t) } });
    flushSync();
    await flush();
    const dialog = host.querySelector('[data-testid="trust-dialog"]') as HTMLElement;
    expect(dialog.getAttribute("aria-modal")).toBe("true");
    expect(host.querySelector('[data-testid="trust-server-name"]')?.textContent).toBe("memory");
    expect(host.querySelector('[data-testid="trust-command"]')?.textContent).toContain("<img src=x onerror=alert(1)>");
    expect(host.querySelector("img")).toBeNull();
    expect(host.querySelector('[data-testid="trust-env"]')?.textContent).toBe("SECRET_TOKEN");
    expect(host.querySelector('[data-testid="trust-setting"]')?.textContent).toContain("exec.writable_roots");
    expect(document.activeElement?.getAttribute("data-testid")).toBe("trust-decline");
    key(dialog, "Enter");
    key(dialog, "Escape");
    key(dialog, "Escape");
    flushSync();
    expect(decisions).toEqual([false]);
    unmount(c);
  });

  it("trusts only on the Trust button", () => {
    const decisions: boolean[] = [];
    const c = mount(TrustDialog, { target: host, props: { prompt: PROMPT, ondecide: (t: boolean) => decisions.push(t) } });
    flushSync();
    (host.querySelector('[data-testid="trust-accept"]') as HTMLButtonElement).click();
    flushSync();
    expect(decisions).toEqual([true]);
    expect((host.querySelector('[data-testid="trust-decline"]') as HTMLButtonElement).disabled).toBe(true);
    unmount(c);
  });
});

describe("welcome view", () => {
  it("lists openable and missing projects; missing ones can be removed, not opened", () => {
    const opened: string[] = [];
    const forgotten: string[] = [];
    const c = mount(Welcome, {
      target: host,
      props: {
        recent: [recent("/w/a"), recent("/w/gone", { missing: true })],
        onpick: () => undefined,
        onopen: (p: string) => opened.push(p),
        onforget: (p: string) => forgotten.push(p),
      },
    });
    flushSync();
    expect([...host.querySelectorAll('[data-testid="recent-open"]')].map((b) => b.getAttribute("data-path"))).toEqual(["/w/a"]);
    expect(host.querySelectorAll('[data-testid="recent-missing"]').length).toBe(1);
    (host.querySelector('[data-testid="recent-forget"]') as HTMLButtonElement).click();
    (host.querySelector('[data-testid="recent-open"]') as HTMLButtonElement).click();
    expect(forgotten).toEqual(["/w/gone"]);
    expect(opened).toEqual(["/w/a"]);
    unmount(c);
  });
});

describe("welcome view's recent list", () => {
  it("says a failed read with Retry, keeps the list last read, and clears the notice once a read succeeds", async () => {
    let fail = true;
    let reads = 0;
    const s = scripted({
      listRecent: async () => {
        reads += 1;
        if (fail) throw new ApiError({ code: "internal", stage: null, message: "cannot read desktop-recent-projects.json" });
        return [recent("/w/a")];
      },
    });
    const place = new ProjectController(s.api);
    await place.connect(null, true);
    expect(place.recent).toEqual([]);
    expect(place.recentError).toBe("cannot read desktop-recent-projects.json");
    const c = mount(Welcome, {
      target: host,
      props: {
        get recent() {
          return place.recent;
        },
        get recentError() {
          return place.recentError;
        },
        onpick: () => undefined,
        onopen: () => undefined,
        onforget: () => undefined,
        onretry: () => void place.loadRecent(),
      },
    });
    flushSync();
    const notice = () => host.querySelector('[data-testid="recent-error"]');
    expect(notice()?.textContent).toContain("The recent projects could not be read (cannot read desktop-recent-projects.json).");
    // Retry reads again; still failing, the notice stays.
    (host.querySelector('[data-testid="recent-retry"]') as HTMLButtonElement).click();
    await new Promise((r) => setTimeout(r, 0));
    flushSync();
    expect(reads).toBe(2);
    expect(notice()).not.toBeNull();
    // It succeeds: the list is shown, the notice goes.
    fail = false;
    (host.querySelector('[data-testid="recent-retry"]') as HTMLButtonElement).click();
    await new Promise((r) => setTimeout(r, 0));
    flushSync();
    expect(notice()).toBeNull();
    expect([...host.querySelectorAll('[data-testid="recent-open"]')].map((b) => b.getAttribute("data-path"))).toEqual(["/w/a"]);
    // A later failure keeps the list last read, said as possibly out of date.
    fail = true;
    await place.loadRecent();
    flushSync();
    expect(place.recent.map((r) => r.path)).toEqual(["/w/a"]);
    expect(notice()?.textContent).toContain("Possibly out of date: the recent projects could not be read");
    expect(host.querySelectorAll('[data-testid="recent-open"]').length).toBe(1);
    unmount(c);
  });
});

describe("provider picker", () => {
  it("says when the shell could not remember the choice, instead of swallowing it", async () => {
    let fail = true;
    const s = scripted({
      chooseProvider: async () => {
        if (fail) throw new ApiError({ code: "project", stage: null, message: "cannot write the project's state" });
      },
    });
    const target = document.createElement("div");
    document.body.append(target);
    const store = new ProviderChoiceStore();
    const picker = mount(ProviderPicker, { target, props: { api: s.api, store } });
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 0));
    flushSync();
    const model = target.querySelector<HTMLInputElement>('[data-testid="provider-model"]');
    expect(model).not.toBeNull();
    if (model) model.value = "claude-opus-4-6";
    model?.dispatchEvent(new Event("input", { bubbles: true }));
    model?.dispatchEvent(new Event("change", { bubbles: true }));
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 0));
    flushSync();
    expect(target.querySelector('[data-testid="provider-not-remembered"]')?.textContent).toBe("used for the next run, not remembered: cannot write the project's state");
    expect(store.choice?.model).toBe("claude-opus-4-6");
    fail = false;
    model?.dispatchEvent(new Event("change", { bubbles: true }));
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 0));
    flushSync();
    expect(target.querySelector('[data-testid="provider-not-remembered"]')).toBeNull();
    unmount(picker);
    target.remove();
  });
});
