// The feature stores without their views (src/window/, src/console/, src/catalog/
// store.svelte.ts), and the services context the window reads (src/services.ts).
import { mount } from "svelte";
import { describe, expect, it } from "vitest";
import type { Api } from "../src/api";
import { ApiError } from "../src/api";
import App from "../src/components/App.svelte";
import { ProviderChoiceStore } from "../src/project/choice.svelte";
import { WindowStore } from "../src/window/store.svelte";
import { ConsoleStore } from "../src/console/store.svelte";
import type { CatalogApi } from "../src/catalog/api";
import type { ProjectApi } from "../src/project/api";
import { ElicitationForm } from "../src/components/elicitation/form.svelte";
import type { ElicitationRequest } from "../src/run/state";
import { CatalogStore, ServerActions } from "../src/catalog/store.svelte";
import { TOOLS } from "./fixtures";

function api(tools: () => Promise<typeof TOOLS>): Api {
  return {
    projectInfo: async () => ({ root: "/p", data_dir: "/d", settings_files: [], settings_problems: [] }),
    listTools: tools,
    callTool: async () => {
      throw new Error("no call expected");
    },
    cancelCall: async () => false,
    answerConfirm: async () => false,
    answerNetwork: async () => false,
  };
}

describe("the window store", () => {
  it("loads project and tools and tells the console the tool list", async () => {
    const told: number[] = [];
    const win = new WindowStore({ api: api(async () => TOOLS), runs: null, projects: null, choice: new ProviderChoiceStore() });
    win.onTools = (tools) => told.push(tools.length);
    await win.load();
    expect(win.project?.root).toBe("/p");
    expect(win.tools).toHaveLength(TOOLS.length);
    expect(win.toolsLoading).toBe(false);
    expect(told).toEqual([TOOLS.length]);
  });

  it("keeps a failed tool list's typed error, and still tells the console (an empty list)", async () => {
    const told: number[] = [];
    const failing = new WindowStore({
      api: api(async () => {
        throw new ApiError({ code: "project", stage: null, message: "settings.json: bad" });
      }),
      runs: null,
      projects: null,
      choice: new ProviderChoiceStore(),
    });
    failing.onTools = (tools) => told.push(tools.length);
    await failing.loadTools();
    expect(failing.toolsError).toEqual({ code: "project", stage: null, message: "settings.json: bad" });
    expect(told).toEqual([0]);
  });

  it("without a run controller: no Conversation tab, Alt+1 does nothing, a console call blocks a switch", () => {
    const win = new WindowStore({ api: api(async () => []), runs: null, projects: null, choice: new ProviderChoiceStore() }, "run");
    expect(win.tab).toBe("tools");
    expect(win.tabs.map((t) => [t.id, t.key])).toEqual([
      ["tools", 2],
      ["history", 3],
      ["settings", 4],
    ]);
    expect(win.showTabNumber(1)).toBe(false);
    expect(win.showTabNumber(3)).toBe(true);
    expect(win.tab).toBe("history");
    expect(win.switchBlocked()).toBeNull();
    win.consoleRunning = true;
    expect(win.switchBlocked()).toMatch(/A tool call is running/);
  });
});

describe("the services context", () => {
  it("is required: the window refuses to mount without it", () => {
    const host = document.createElement("div");
    expect(() => mount(App, { target: host, props: {} })).toThrow(/servicesContext/);
  });
});

describe("the console store (no view)", () => {
  it("runs one call: the running flag around it, live events logged, the result kept, finished told", async () => {
    const running: boolean[] = [];
    let finished = 0;
    const calls: Array<[string, string]> = [];
    const store = new ConsoleStore(
      {
        ...api(async () => TOOLS),
        callTool: async (tool, args, onEvent) => {
          calls.push([tool, args]);
          onEvent({ type: "tool_started", call_id: "c1", tool } as never);
          onEvent({ type: "tool_output_delta", call_id: "c1", stream: "stdout", chunk: "hi\n" } as never);
          return { tool_call_id: "c1", tool, status: "ok", stage: null, duration_ms: 3, model: "hi" } as never;
        },
      },
      () => finished++,
    );
    store.onRunning = (now) => running.push(now);
    store.setTools(TOOLS);
    await store.start("read_file", '{"path":"a"}');
    expect(calls).toEqual([["read_file", '{"path":"a"}']]);
    expect(running).toEqual([true, false]);
    expect(store.log).toEqual(["Started read_file"]);
    expect(store.chunks).toEqual([{ stream: "stdout", text: "hi\n" }]);
    expect(store.result?.status).toBe("ok");
    expect(store.callId).toBeNull();
    expect(finished).toBe(1);
    store.dispose();
  });

  it("keeps a refused call's typed error; Stop without a call sends nothing", async () => {
    let cancels = 0;
    const store = new ConsoleStore({
      ...api(async () => []),
      callTool: async () => {
        throw { code: "tool", stage: "Discovery", message: "no tool named `x`" };
      },
      cancelCall: async () => (cancels++, true),
    });
    await store.stop();
    await store.start("x", "{}");
    expect(store.failure).toEqual({ code: "tool", stage: "Discovery", message: "no tool named `x`" });
    expect(cancels).toBe(0);
    store.dispose();
  });
});

describe("the catalog stores (no view)", () => {
  const catalogApi = (over: Partial<CatalogApi> = {}): CatalogApi => ({
    listServers: async () => [],
    listSkills: async () => ({ skills: [], problems: [] }),
    reconnectServer: async () => true,
    mcpLogin: async () => ({ kind: "logged_in" }) as never,
    cancelMcpLogin: async () => false,
    mcpLogout: async () => true,
    mcpLogins: async () => [{ server: "docs", more_scope_needed: true }],
    ...over,
  });

  it("keeps the lists' typed error and clears it once they are read", async () => {
    let fail = true;
    const store = new CatalogStore(
      catalogApi({
        listSkills: async () => {
          if (fail) throw { code: "project", stage: null, message: "skills: unreadable" };
          return { skills: [], problems: ["a/SKILL.md:1: no name"] };
        },
      }),
    );
    await store.load();
    expect(store.error?.message).toBe("skills: unreadable");
    fail = false;
    await store.load();
    expect(store.error).toBeNull();
    expect(store.skills.problems).toEqual(["a/SKILL.md:1: no name"]);
    await new CatalogStore(null).load();
  });

  it("an action's failure stays with its server, the lists are read again, tokens follow the servers", async () => {
    let changed = 0;
    const actions = new ServerActions(
      catalogApi({
        reconnectServer: async () => {
          throw { code: "tool", stage: "Execution", message: "spawn failed" };
        },
      }),
      () => changed++,
    );
    await actions.reconnect("docs");
    expect(actions.failures.docs?.message).toBe("spawn failed");
    expect(actions.pending).toBeNull();
    expect(changed).toBe(1);
    actions.readTokens(1);
    await new Promise((r) => setTimeout(r, 0));
    expect(actions.holdsToken("docs")).toBe(true);
    expect(actions.lacksScope("docs")).toBe(true);
    actions.readTokens(0);
    expect(actions.holdsToken("docs")).toBe(false);
    await actions.logout("docs");
    expect(actions.failures.docs).toBeUndefined();
  });
});

describe("the provider choice store (no view)", () => {
  it("a project change forgets the last project's notices with its choice", async () => {
    const store = new ProviderChoiceStore();
    const projects = {
      listProviders: async () => {
        throw new ApiError({ code: "project", stage: null, message: "settings unreadable" });
      },
      chooseProvider: async () => {
        throw new ApiError({ code: "project", stage: null, message: "cannot write" });
      },
    } as unknown as ProjectApi;
    await store.load(projects);
    expect(store.failed).toBe("settings unreadable");
    store.choice = { provider: "anthropic", model: " m " };
    await store.remember(projects);
    expect(store.notRemembered).toBe("cannot write");
    store.reset();
    expect([store.list, store.choice, store.failed, store.notRemembered]).toEqual([null, null, null, null]);
  });
});

describe("the elicitation form store (no view)", () => {
  it("refuses a send with a problem per field, keeps them current as typed, then answers once", () => {
    const answers: Array<[string, unknown]> = [];
    const request = {
      elicitation_id: "e1",
      server: "docs",
      message: "Who?",
      schema: { type: "object", properties: { name: { type: "string", minLength: 2 } }, required: ["name"] },
    } as unknown as ElicitationRequest;
    const form = new ElicitationForm(request, (id, answer) => answers.push([id, answer]));
    expect(form.errors).toEqual({});
    expect(form.send()).toBe("refused");
    expect(Object.keys(form.errors)).toEqual(["name"]);
    form.texts.name = "Al";
    expect(form.errors).toEqual({});
    expect(form.send()).toBe("sent");
    form.answer("declined");
    expect(form.send()).toBe("ignored");
    expect(answers).toEqual([["e1", { kind: "form", content: { name: "Al" } }]]);
  });
});
