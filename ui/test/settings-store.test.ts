// The settings pages' stores without their views (src/settings/store.svelte.ts): loading and
// writing through a scripted shell, the level a write goes to, refused values first among the
// problems, the approval mode, the provider and MCP forms, and a field's draft text.
import { describe, expect, it } from "vitest";
import type { ApprovalMode } from "../src/bindings/ApprovalMode";
import type { ApprovalsView } from "../src/bindings/ApprovalsView";
import type { Level } from "../src/bindings/Level";
import type { SettingsPages } from "../src/bindings/SettingsPages";
import type { SettingsProblem } from "../src/bindings/SettingsProblem";
import type { SettingsWrite } from "../src/bindings/SettingsWrite";
import { ApiError } from "../src/lib/invoke";
import type { ApprovalsApi } from "../src/run/approvals-api";
import type { SettingsApi } from "../src/settings/api";
import { parseProcessCap, valueAt } from "../src/settings/model";
import { ApprovalModeStore, Draft, McpServerForm, NetworkDraft, ProviderForm, SettingsStore, stepPage } from "../src/settings/store.svelte";

const FILES = { user_settings: "/u/settings.json", project_settings: "/p/.aibuddy/settings.json", user_mcp: "/u/mcp.json", project_mcp: "/p/.aibuddy/mcp.json" };

function pages(user: Record<string, unknown> = {}, project: Record<string, unknown> = {}): SettingsPages {
  return { files: FILES, user, project, problems: [], mcp_servers: [], mcp_problems: [], provider_keys: [], trust: "trusted" };
}

const saved: SettingsWrite = { written: { file: FILES.user_settings, changed: true, trust: { kind: "not_concerned" } }, problems: [] };

/** A shell answering from `state`; every call is recorded. */
function shell(state: { pages: SettingsPages; answer?: SettingsWrite; fail?: boolean }, calls: unknown[][]): SettingsApi {
  return {
    settingsPages: async () => {
      if (state.fail) throw new ApiError({ code: "project", stage: "Discovery", message: "settings.json: bad" });
      return state.pages;
    },
    setSetting: async (level: Level, path: string[], value?: unknown) => {
      calls.push(["set_setting", level, path, value]);
      return state.answer ?? saved;
    },
    putMcpServer: async (level, name, entry) => {
      calls.push(["put_mcp_server", level, name, entry]);
      return state.answer ?? saved;
    },
    removeMcpServer: async (level, name) => {
      calls.push(["remove_mcp_server", level, name]);
      return state.answer ?? saved;
    },
    setProviderKey: async (name, key) => {
      calls.push(["set_provider_key", name, key]);
      if (key === "fail") throw new ApiError({ code: "internal", stage: "Execution", message: "no keyring" });
      return "set";
    },
    removeProviderKey: async (name) => {
      calls.push(["remove_provider_key", name]);
      return "not_set";
    },
  };
}

describe("the settings store", () => {
  it("loads, writes at the level picked and reads the pages again; the refused value comes first", async () => {
    const calls: unknown[][] = [];
    const refusal: SettingsProblem = { file: FILES.project_settings, line: 1, column: 2, field: "exec.writable_roots", message: "too broad" };
    const onDisk: SettingsProblem = { ...refusal, field: "exec.network", message: "wrong type" };
    const state = { pages: { ...pages(), problems: [onDisk] }, answer: { written: null, problems: [refusal] } as SettingsWrite };
    const store = new SettingsStore(shell(state, calls));
    expect(store.pages).toBeNull();
    expect(store.levelFile).toBeNull();
    await store.load();
    expect(store.levelFile).toBe(FILES.user_settings);
    store.level = "project";
    store.page = "mcp";
    expect(store.levelFile).toBe(FILES.project_mcp);
    store.page = "exec";

    const write = store.save(["exec", "writable_roots"], ["/"]);
    expect(store.busy).toBe(true);
    await write;
    expect(store.busy).toBe(false);
    expect(calls).toEqual([["set_setting", "project", ["exec", "writable_roots"], ["/"]]]);
    expect(store.problems).toEqual([refusal, onDisk]);
    expect(store.noticeWarn).toBe(true);
    expect(store.notice).toBe("Not saved: the value is refused (see the field).");

    // A write that is saved clears the refusal and says where it went.
    state.answer = saved;
    await store.putMcpServer("files", { command: "npx" });
    expect(calls[1]).toEqual(["put_mcp_server", "project", "files", { command: "npx" }]);
    expect(store.problems).toEqual([onDisk]);
    expect(store.noticeWarn).toBe(false);
    expect(store.notice).toContain(`Saved to ${FILES.user_settings}.`);
    await store.removeMcpServer("user", "files");
    expect(calls[2]).toEqual(["remove_mcp_server", "user", "files"]);
  });

  it("keeps a failed read's typed error, and says a stored key without ever keeping it", async () => {
    const calls: unknown[][] = [];
    const state = { pages: pages(), fail: true };
    const store = new SettingsStore(shell(state, calls));
    await store.load();
    expect(store.error).toEqual({ code: "project", stage: "Discovery", message: "settings.json: bad" });
    state.fail = false;
    await store.setProviderKey("local", "sk-1");
    expect(store.error).toBeNull();
    expect(store.notice).toBe("The key of local is stored in the OS keyring.");
    expect(JSON.stringify(store)).not.toContain("sk-1");
    await store.setProviderKey("local", "fail");
    expect(store.error?.message).toBe("no keyring");
    await store.removeProviderKey("local");
    expect(store.notice).toBe("The key of local was removed from the OS keyring.");
    expect(calls.map((c) => c[0])).toEqual(["set_provider_key", "set_provider_key", "remove_provider_key"]);
  });

  it("steps through the pages with the arrow keys, wrapping around", () => {
    expect(stepPage("providers", 1)).toBe("mcp");
    expect(stepPage("exec", 1)).toBe("providers");
    expect(stepPage("providers", -1)).toBe("exec");
  });
});

describe("the approval mode store", () => {
  const view = (mode: ApprovalMode): ApprovalsView => ({
    mode,
    next_mode: mode,
    chosen: true,
    chosen_for_project: mode,
    project_narrows: null,
    modes: [],
    rules: [],
  });

  it("reads the mode, chooses another (busy meanwhile) and keeps a refusal's error", async () => {
    const chosen: ApprovalMode[] = [];
    const api: ApprovalsApi = {
      approvalsView: async () => view("ask"),
      setApprovalMode: async (mode) => {
        chosen.push(mode);
        if (mode === "read-only") throw new ApiError({ code: "internal", stage: "Execution", message: "cannot write" });
        return view(mode);
      },
      confirmOffer: async () => null,
      answerConfirmWithRule: async () => false,
    };
    const store = new ApprovalModeStore(api);
    await store.load();
    expect(store.view?.mode).toBe("ask");
    const choice = store.choose("auto");
    expect(store.busy).toBe(true);
    await choice;
    expect(store.busy).toBe(false);
    expect(store.view?.mode).toBe("auto");
    await store.choose("read-only");
    expect(store.error?.message).toBe("cannot write");
    expect(store.view?.mode).toBe("auto");
    expect(chosen).toEqual(["auto", "read-only"]);
  });
});

describe("the entry forms", () => {
  it("a provider entry keeps the entry's other keys, images only for openai-chat; a key leaves its box", () => {
    const p = pages({ providers: { local: { kind: "openai-chat", model: "m", base_url: "http://127.0.0.1:1/v1", images: true, timeout: 5 } } });
    const form = new ProviderForm();
    expect(form.entry(p, "user")).toBeNull();
    form.edit({ name: "local", level: "user", kind: "openai-chat", model: "m", baseUrl: "http://127.0.0.1:1/v1", isDefault: false }, p, "user");
    expect(form.images).toBe(true);
    form.model = "m2";
    expect(form.entry(p, "user")).toEqual({
      path: ["providers", "local"],
      value: { kind: "openai-chat", model: "m2", base_url: "http://127.0.0.1:1/v1", images: true, timeout: 5 },
    });
    form.kind = "anthropic";
    expect(form.entry(p, "user")?.value).toEqual({ kind: "anthropic", model: "m2", base_url: "http://127.0.0.1:1/v1", timeout: 5 });
    form.keys.local = "  ";
    expect(form.takeKey("local")).toBeNull();
    form.keys.local = "sk-2";
    expect(form.takeKey("local")).toBe("sk-2");
    expect(form.keys.local).toBe("");
  });

  it("an MCP entry refuses malformed lines, keeps the original's other keys and clears", () => {
    const mcp = new McpServerForm();
    mcp.edit({ name: "files", level: "user", entry: { command: "npx", timeouts: { call: 60 } }, shadowed: false });
    mcp.form.env = "NOEQUALS";
    expect(mcp.submit()).toBeNull();
    expect(mcp.errors).toEqual(["env line `NOEQUALS` is not KEY=value"]);
    mcp.form.env = "A=1";
    expect(mcp.submit()).toEqual({ name: "files", entry: { command: "npx", env: { A: "1" }, timeouts: { call: 60 } } });
    expect(mcp.errors).toEqual([]);
    mcp.reset();
    expect(mcp.form.name).toBe("");
    expect(mcp.submit()).toBeNull();
  });
});

describe("a field's draft", () => {
  it("shows the written value until typed, checks before saving, and follows a new written value", async () => {
    const calls: unknown[][] = [];
    const state = { pages: pages({ exec: { max_processes: 64 } }) };
    const store = new SettingsStore(shell(state, calls));
    await store.load();
    const written = () => {
      const v = store.pages ? valueAt(store.pages, store.level, "exec", "max_processes") : undefined;
      return v === undefined ? "" : String(v);
    };
    const draft = new Draft(written, parseProcessCap);
    expect(draft.text).toBe("64");
    expect(draft.changed).toBe(false);
    draft.text = "lots";
    expect(draft.changed).toBe(true);
    expect(draft.submit()).toBeNull();
    expect(draft.error).toContain("Enter a whole number");
    draft.text = " 128 ";
    expect(draft.submit()).toBe(128);
    expect(draft.error).toBeNull();
    draft.text = "lots";
    draft.submit();
    // Another level: the draft shows that level's value, the typed text and its error gone.
    store.level = "project";
    expect(draft.text).toBe("");
    expect(draft.error).toBeNull();
    // A save answered with the new value (read again) replaces what was typed.
    draft.text = "9";
    state.pages = pages({}, { exec: { max_processes: 32 } });
    await store.load();
    expect(draft.text).toBe("32");
  });

  it("the network field: the written choice until Custom is picked, lists back to the written ones", async () => {
    const state = { pages: pages({ exec: { network: { allow: ["crates.io"], deny: [] } } }) };
    const store = new SettingsStore(shell(state, []));
    await store.load();
    const net = new NetworkDraft(() => (store.pages ? valueAt(store.pages, store.level, "exec", "network") : undefined));
    expect([net.written, net.mode, net.allow]).toEqual(["custom", "custom", "crates.io"]);
    expect(net.changed).toBe(false);
    net.allow = "crates.io\n*.npmjs.org\n";
    expect(net.changed).toBe(true);
    expect(net.value()).toEqual({ allow: ["crates.io", "*.npmjs.org"], deny: [] });
    store.level = "project";
    expect([net.written, net.mode, net.allow]).toEqual(["unset", "unset", ""]);
    net.mode = "custom";
    expect(net.mode).toBe("custom");
    // Read again with a new value: the choice and the lists are the written ones again.
    state.pages = pages({}, { exec: { network: true } });
    await store.load();
    expect([net.written, net.mode, net.allow]).toEqual(["registries", "registries", ""]);
  });
});
