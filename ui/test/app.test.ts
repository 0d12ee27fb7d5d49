import { clearMocks, mockIPC } from "@tauri-apps/api/mocks";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Api } from "../src/api";
import { ApiError } from "../src/api";
import { mountApp } from "../src/app";
import type { CallResult } from "../src/bindings/CallResult";
import type { ProjectInfo } from "../src/bindings/ProjectInfo";
import type { TrustPrompt } from "../src/bindings/TrustPrompt";
import type { ProjectApi } from "../src/project/api";
import { ProjectController } from "../src/project/controller.svelte";
import type { ToolListing } from "../src/bindings/ToolListing";
import { TOOLS, listing } from "./fixtures";

const PROJECT: ProjectInfo = {
  root: "/home/me/work/sample-project",
  data_dir: "/home/me/.local/share/aibuddy",
  settings_files: ["/home/me/work/sample-project/.aibuddy/settings.json"],
  settings_problems: [],
};

const NO_CALLS = {
  callTool: async () => {
    throw new Error("no call expected");
  },
  cancelCall: async () => false,
  answerConfirm: async () => false,
  answerNetwork: async () => false,
};

/** The shell's history commands (the History tab's own API goes through Tauri's IPC). */
function mockHistoryIpc(): string[] {
  const calls: string[] = [];
  mockIPC((cmd) => {
    calls.push(cmd);
    if (cmd === "history_page") return { rows: [], next: null };
    if (cmd === "history_facets") return { tools: [], runs: [], statuses: ["ok"], stages: [] };
    throw { code: "ipc", stage: null, message: `not in this test: ${cmd}` };
  });
  return calls;
}
afterEach(() => clearMocks());

function fakeApi(tools: ToolListing[] | ApiError, project: ProjectInfo = PROJECT): Api {
  return {
    ...NO_CALLS,
    projectInfo: async () => project,
    listTools: async () => {
      if (tools instanceof ApiError) throw tools;
      return tools;
    },
  };
}

let root: HTMLElement;
beforeEach(() => {
  document.body.innerHTML = '<div id="app" aria-busy="true"></div>';
  root = document.getElementById("app") as HTMLElement;
});

/** Lets the components re-render after a DOM event (Svelte batches updates in a microtask). */
const settle = () => new Promise((r) => setTimeout(r, 0));
const texts = (selector: string) => [...root.querySelectorAll(selector)].map((el) => el.textContent?.trim());

describe("mountApp", () => {
  it("shows the project and the tools grouped by config, with risk, state and absent reasons", async () => {
    const app = mountApp(root, fakeApi(TOOLS));
    expect(root.querySelector('[data-testid="loading"]')).not.toBeNull();
    await app.ready;

    expect(root.getAttribute("aria-busy")).toBeNull();
    expect(texts('[data-testid="project-name"]')).toEqual(["sample-project"]);
    expect(texts('[data-testid="project-path"]')).toEqual([PROJECT.root]);
    expect(texts('[data-testid="tool-group"] h3')).toEqual(["Execute", "Filesystem", "Skills", "github"]);
    expect(texts('[data-testid="risk"]')).toEqual(["high impact", "writes", "read-only", "read-only"]);
    expect([...root.querySelectorAll('[data-testid="tool"]')].map((el) => [el.getAttribute("data-tool"), el.getAttribute("data-state")])).toEqual([
      ["execute", "absent"],
      ["ls", "active"],
      ["read_file", "active"],
      ["write_file", "active"],
      ["view_skill", "active"],
      ["mcp__github__search", "deferred"],
    ]);
    expect(texts('[data-testid="absent-reason"]')).toEqual(["Absent: no sandbox with command execution is available in this host"]);
    expect(texts('[data-testid^="count-"]')).toEqual(["4 active", "1 deferred", "1 absent"]);
    expect(texts('[data-testid="confinement"]')).toEqual(["confinement: landlock-v7"]);
  });

  it("shows settings problems with file, line and field, and no banner when there are none", async () => {
    const withProblems: ProjectInfo = {
      ...PROJECT,
      settings_problems: [
        { file: "/p/.aibuddy/settings.json", line: 3, column: 5, field: "tools.enabeld", message: "unknown field" },
        { file: "/d/settings.json", line: null, column: null, field: "exec.heartbeat_secs", message: "expected a number" },
      ],
    };
    let app = mountApp(root, fakeApi(TOOLS, withProblems));
    await app.ready;
    expect(texts('[data-testid="settings-problem"]')).toEqual([
      "/p/.aibuddy/settings.json:3 tools.enabeld: unknown field",
      "/d/settings.json exec.heartbeat_secs: expected a number",
    ]);
    expect(root.querySelector(".banner-title")?.textContent).toBe("2 settings problems (these fields use their defaults)");

    app = mountApp(root, fakeApi(TOOLS));
    await app.ready;
    expect(root.querySelector('[data-testid="settings-problems"]')).toBeNull();
  });

  it("filters the list as the person types", async () => {
    const app = mountApp(root, fakeApi(TOOLS));
    await app.ready;
    const search = root.querySelector("input.search") as HTMLInputElement;
    expect(search.disabled).toBe(false);
    search.value = "write";
    search.dispatchEvent(new Event("input"));
    await settle();
    expect(texts('[data-testid="tool"] .tool-name')).toEqual(["write_file"]);
    search.value = "zzz";
    search.dispatchEvent(new Event("input"));
    await settle();
    expect(texts('[data-testid="tools-empty"]')).toEqual(["No tool matches the filter."]);
  });

  it("renders text from tools as text, never as markup", async () => {
    const hostile = listing({ name: "mcp__x__y", config: "mcp:x", source: "mcp:x", display_name: "<img src=x onerror=alert(1)>", description: "<b>bold</b>" });
    const app = mountApp(root, fakeApi([hostile]));
    await app.ready;
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelector("b")).toBeNull();
    expect(texts('[data-testid="tool-group"] h3')).toEqual(["<img src=x onerror=alert(1)>"]);
  });

  it("says when no tool is configured", async () => {
    const app = mountApp(root, fakeApi([]));
    await app.ready;
    expect(root.querySelector('[data-testid="tools-empty"] .empty-title')?.textContent).toBe("No tools configured");
    expect(root.querySelector('[data-testid="tools-empty"] code')?.textContent).toBe("tools.enabled");
  });

  it("shows the typed error when listing fails, and recovers on refresh", async () => {
    let fail = true;
    const api: Api = {
      ...NO_CALLS,
      projectInfo: async () => PROJECT,
      listTools: async () => {
        if (fail) throw new ApiError({ code: "project", stage: null, message: "cannot read .aibuddy/settings.json" });
        return TOOLS;
      },
    };
    const app = mountApp(root, api);
    await app.ready;
    expect(texts('[data-testid="tools-error"] .error-message')).toEqual(["cannot read .aibuddy/settings.json"]);
    expect(texts('[data-testid="tools-error"] .badge')).toEqual(["project"]);
    fail = false;
    await app.refresh();
    expect(root.querySelector('[data-testid="tools-error"]')).toBeNull();
    expect(root.querySelectorAll('[data-testid="tool"]')).toHaveLength(TOOLS.length);
  });

  it("offers only active tools to the console and shows the (empty) stored history", async () => {
    const ipc = mockHistoryIpc();
    const app = mountApp(root, fakeApi(TOOLS));
    await app.ready;
    const options = [...root.querySelectorAll('[data-testid="console-tool"] option')].map((o) => o.textContent);
    expect(options).toEqual(["ls", "read_file", "view_skill", "write_file"]);
    for (let i = 0; i < 5 && !root.querySelector('[data-testid="hb-empty"]'); i++) await settle();
    expect(root.querySelector('[data-testid="history-browser"]')).not.toBeNull();
    expect(root.querySelector('[data-testid="hb-empty"]')?.textContent).toBe("No calls recorded for this project yet.");
    expect(ipc).toContain("history_page");
    expect(ipc).toContain("history_facets");
    expect(root.querySelector('[data-testid="call-result"]')).toBeNull();
  });
});

const TRUSTED: TrustPrompt = {
  ask: false,
  applied: "trusted",
  status: { project: PROJECT.root, state: "trusted", digest: "d1", problems: [], grants: { servers: [], settings: [], hooks: [] } },
};

describe("a project switch while a console call runs", () => {
  /** A project API whose folder dialog answers with `pick` (or throws it); records its calls. */
  function projectApi(pick: () => Promise<ProjectInfo | null>) {
    const calls: string[] = [];
    const api: ProjectApi = {
      pickProject: async () => (calls.push("pick"), pick()),
      openRecent: async () => PROJECT,
      listRecent: async () => [],
      forgetRecent: async () => true,
      trustStatus: async () => TRUSTED,
      trustProject: async () => {
        throw new Error("no trust expected");
      },
      distrustProject: async () => {
        throw new Error("no trust expected");
      },
      listProviders: async () => ({ providers: [], default: null, chosen: null, chosen_model: null }),
      chooseProvider: async () => undefined,
      onProjectChanged: async () => () => undefined,
      onTrustChanged: async () => () => undefined,
    };
    return { api, calls };
  }

  it("is refused while the call runs, with Stop the call, and the notice goes once the call has ended", async () => {
    mockHistoryIpc();
    let finish: (r: CallResult) => void = () => undefined;
    let callRunning = false;
    const cancelled: string[] = [];
    const api: Api = {
      ...fakeApi(TOOLS),
      callTool: (_tool, _args, onEvent) => {
        callRunning = true;
        onEvent({ type: "tool_started", call_id: "c1", tool: "ls" } as never);
        return new Promise<CallResult>((r) => (finish = (result) => ((callRunning = false), r(result))));
      },
      cancelCall: async (id) => (cancelled.push(id), true),
    };
    // As the shell does: a switch is refused with `busy` while a call runs.
    const projects = projectApi(async () => {
      if (callRunning) throw new ApiError({ code: "busy", stage: null, message: "a tool call is running in the open project: stop it first, then open another project" });
      return null;
    });
    const app = mountApp(root, api, null, projects.api);
    await app.ready;
    root.querySelector<HTMLButtonElement>('[data-testid="console-run"]')?.click();
    await settle();
    root.querySelector<HTMLButtonElement>('[data-testid="project-pick"]')?.click();
    await settle();
    const notice = () => root.querySelector('[data-testid="project-error"]');
    expect(notice()?.textContent).toContain("A tool call is running in this project: stop it first");
    expect(projects.calls).toEqual([]);
    root.querySelector<HTMLButtonElement>('[data-testid="project-error-stop-call"]')?.click();
    await settle();
    expect(cancelled).toEqual(["c1"]);
    // The call ends (as the shell reports it): the notice goes by itself.
    finish({ tool_call_id: "c1", tool: "ls", status: "cancelled", stage: "Execution", model: "stopped", duration_ms: 5 } as unknown as CallResult);
    for (let i = 0; i < 3; i++) await settle();
    expect(notice()).toBeNull();
    // Nothing runs: the next switch asks the shell.
    root.querySelector<HTMLButtonElement>('[data-testid="project-pick"]')?.click();
    await settle();
    expect(projects.calls).toEqual(["pick"]);
    expect(notice()).toBeNull();
  });

  it("a busy refusal of the shell lasts until the window says the work ended; another failure stays", async () => {
    let refusal = new ApiError({ code: "busy", stage: null, message: "a tool call is running in the open project: stop it first, then open another project" });
    const projects = projectApi(async () => {
      throw refusal;
    });
    const place = new ProjectController(projects.api);
    await place.connect(PROJECT, false);
    await place.pick();
    expect(place.error).toBe("a tool call is running in the open project: stop it first, then open another project");
    // The call ended (App calls this when its run or console call is no longer in progress).
    place.unblocked();
    expect(place.error).toBeNull();
    refusal = new ApiError({ code: "project", stage: "Parameters", message: "not a directory" });
    await place.pick();
    place.unblocked();
    expect(place.error).toBe("not a directory");
  });
});
