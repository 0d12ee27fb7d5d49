// The settings pages: the pure model (levels, problems as `tools check` prints them, list and map
// fields, the MCP entry form, notices) and the mounted panel against a scripted fake shell (writes
// by level, refused values shown on the field, keys never shown back, markup stays text).
import { flushSync, mount, unmount } from "svelte";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KeyState } from "../src/bindings/KeyState";
import type { Level } from "../src/bindings/Level";
import type { SettingsPages } from "../src/bindings/SettingsPages";
import type { SettingsProblem } from "../src/bindings/SettingsProblem";
import type { SettingsWrite } from "../src/bindings/SettingsWrite";
import SettingsPanel from "../src/components/settings/SettingsPanel.svelte";
import type { SettingsApi } from "../src/settings/api";
import {
  linesToMap,
  mcpEntryOf,
  formatSeconds,
  mcpFormOf,
  parseTimeLimit,
  problemText,
  problemsFor,
  providerEntry,
  withImages,
  providerRows,
  valueAt,
  writtenNotice,
} from "../src/settings/model";
import { networkListsOf, networkModeOf, networkValue } from "../src/settings/network";
import { AUTHORITY_RULES, SETTINGS_FIELDS } from "../src/bindings/settingsFields";
import { authorityHint, fieldHint, fieldMeaning, fieldSpec, pageFields } from "../src/settings/fields";

const USER = "/home/me/.local/share/aibuddy/settings.json";
const PROJECT = "/home/me/p/.aibuddy/settings.json";

function pages(partial: Partial<SettingsPages> = {}): SettingsPages {
  return {
    files: { user_settings: USER, project_settings: PROJECT, user_mcp: "/home/me/.local/share/aibuddy/mcp.json", project_mcp: "/home/me/p/.aibuddy/mcp.json" },
    user: { providers: { default: "local", local: { kind: "openai-chat", model: "qwen3:8b", base_url: "http://127.0.0.1:11434/v1" } }, exec: { network: false } },
    project: { exec: { writable_roots: ["~/.cargo"] } },
    problems: [],
    mcp_servers: [{ name: "files", level: "user", entry: { command: "npx", args: ["-y", "srv"], timeouts: { call: 60 } }, shadowed: false }],
    mcp_problems: [],
    provider_keys: [{ name: "local", key: "not_set" }],
    trust: "trusted",
    ...partial,
  };
}

const problem = (field: string, file = USER): SettingsProblem => ({ file, line: 3, column: 5, field, message: "wrong type: found a string, expected a boolean" });

describe("settings model", () => {
  it("reads a level's values as written", () => {
    const p = pages();
    expect(valueAt(p, "user", "exec", "network")).toBe(false);
    expect(valueAt(p, "project", "exec", "network")).toBeUndefined();
    expect(valueAt(p, "project", "exec", "writable_roots")).toEqual(["~/.cargo"]);
    expect(valueAt(pages({ user: null }), "user", "exec", "network")).toBeUndefined();
  });

  it("prints problems as tools check does and picks a field's own", () => {
    const p = problem("exec.network");
    expect(problemText(p)).toBe(`${USER}:3:5: \`exec.network\`: wrong type: found a string, expected a boolean`);
    expect(problemText({ ...p, line: null, column: null })).toBe(`${USER}: \`exec.network\`: wrong type: found a string, expected a boolean`);
    const all = [p, problem("exec.network_x"), problem("(file)"), problem("exec.network", PROJECT), problem("providers.local.model")];
    expect(problemsFor(all, USER, "exec.network").map((x) => x.field)).toEqual(["exec.network", "(file)"]);
    expect(problemsFor(all, USER, "providers.local").map((x) => x.field)).toEqual(["(file)", "providers.local.model"]);
  });

  it("turns env and header lines into maps and reports malformed lines", () => {
    expect(linesToMap("A=1\n\n B = two=2 \n=x", "=")).toEqual({ map: { A: "1", B: "two=2" }, bad: ["=x"] });
    expect(linesToMap("Authorization: Bearer t", ":").map).toEqual({ Authorization: "Bearer t" });
  });

  it("round-trips an MCP entry through the form, keeping keys the form does not edit", () => {
    const original = { command: "npx", args: ["-y", "srv"], env: { K: "v" }, timeouts: { call: 60 }, "x-other": true };
    const form = mcpFormOf("files", original);
    expect(form).toMatchObject({ name: "files", transport: "stdio", args: "-y\nsrv", env: "K=v", enabled: true });
    expect(mcpEntryOf(form, original)).toEqual({ entry: original, bad: [] });
    const http = mcpEntryOf({ ...form, transport: "http", url: " https://x/mcp ", headers: "X-A: 1\nbroken", enabled: false }, original);
    expect(http.entry).toEqual({ url: "https://x/mcp", headers: { "X-A": "1" }, timeouts: { call: 60 }, "x-other": true, enabled: false });
    expect(http.bad).toEqual(["header line `broken` is not Name: value"]);
  });

  it("lists provider entries of both levels and builds entries", () => {
    const rows = providerRows(pages({ project: { providers: { cloud: { model: "m" } } } }));
    expect(rows.map((r) => `${r.level}/${r.name}/${r.isDefault}`)).toEqual(["project/cloud/false", "user/local/true"]);
    expect(providerEntry("", " m ", "", { context_window: 8 })).toEqual({ model: "m", context_window: 8 });
    expect(withImages({ model: "m" }, "openai-chat", true)).toEqual({ model: "m", images: true });
    expect(withImages({ model: "m", images: true }, "openai-chat", false)).toEqual({ model: "m" });
    expect(withImages({ model: "m", images: true }, "anthropic", true)).toEqual({ model: "m" });
  });

  it("reads a time limit in seconds, minutes or hours, within 1 s to 24 h, and says it back", () => {
    expect(["90", " 90 s ", "30 min", "30m", "2 h", "24 hours", "1"].map(parseTimeLimit)).toEqual([90, 90, 1800, 1800, 7200, 86_400, 1].map((value) => ({ value })));
    for (const bad of ["0", "86401", "25 h", "1.5", "-3", "10 days", "lots", "", "1e3"]) {
      expect(parseTimeLimit(bad), bad).toHaveProperty("error");
    }
    expect([90, 59, 1800, 3600, 5400, 86_400].map(formatSeconds)).toEqual(["1 min 30 s", "59 s", "30 min", "1 h", "1 h 30 min", "24 h"]);
  });

  it("says where a write went, when it applies and what it did to trust", () => {
    const base = { file: USER, changed: true };
    expect(writtenNotice({ ...base, trust: { kind: "not_concerned" } })).toContain("applies when the project is opened again");
    expect(writtenNotice({ ...base, trust: { kind: "kept", digest: "d" } })).toContain("stays trusted");
    expect(writtenNotice({ ...base, trust: { kind: "changed_meanwhile" } })).toContain("trust dialog will ask");
    expect(writtenNotice({ ...base, trust: { kind: "not_recorded", state: "untrusted" } })).toContain("not trusted");
    expect(writtenNotice({ ...base, changed: false, trust: { kind: "not_concerned" } })).toBe(`Nothing changed in ${USER}.`);
  });
});

interface Call {
  cmd: string;
  args: unknown[];
}

function fakeApi(state: { pages: SettingsPages; answer?: SettingsWrite; key?: KeyState }, calls: Call[]): SettingsApi {
  const written: SettingsWrite = { written: { file: USER, changed: true, trust: { kind: "not_concerned" } }, problems: [] };
  return {
    settingsPages: async () => state.pages,
    setSetting: async (level: Level, path: string[], value?: unknown) => {
      calls.push({ cmd: "set_setting", args: [level, path, value] });
      return state.answer ?? written;
    },
    putMcpServer: async (level, name, entry) => {
      calls.push({ cmd: "put_mcp_server", args: [level, name, entry] });
      return state.answer ?? written;
    },
    removeMcpServer: async (level, name) => {
      calls.push({ cmd: "remove_mcp_server", args: [level, name] });
      return written;
    },
    setProviderKey: async (name, key) => {
      calls.push({ cmd: "set_provider_key", args: [name, key] });
      return state.key ?? "set";
    },
    removeProviderKey: async (name) => {
      calls.push({ cmd: "remove_provider_key", args: [name] });
      return "not_set";
    },
  };
}

const settle = async () => {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 0));
    flushSync();
  }
};

describe("settings field table", () => {
  it("finds a key's row, a name's under its section's `*` row, and a sub-key's under its field", () => {
    expect(fieldSpec("exec.network")?.path).toBe("exec.network");
    expect(fieldSpec("exec.network.allow")?.path).toBe("exec.network");
    expect(fieldSpec("providers.default")?.path).toBe("providers.default");
    expect(fieldSpec("providers.local")?.path).toBe("providers.*");
    expect(fieldSpec("exec.future_field")).toBeUndefined();
    expect(fieldSpec("providers")).toBeUndefined();
  });

  it("gives the trust dialog every widening field's meaning, the agent's included", () => {
    for (const f of SETTINGS_FIELDS) if (f.rule !== "neutral") expect(fieldMeaning(f.path)).toBe(f.meaning);
    expect(fieldMeaning("agent.step_timeout_secs")).toContain("model response");
    expect(fieldMeaning("agent.summary_model")).toContain("pays for");
    expect(fieldMeaning("exec.future_field")).toBe("Gives more than your own settings.");
  });

  it("says a field's authority rule at the project level only, and a user-only field's refusal", () => {
    expect(authorityHint("exec.max_processes")).toBe(AUTHORITY_RULES.widens_above_user);
    expect(authorityHint("exec.unprotected_paths")).toContain("Only your own settings");
    const user = fieldHint("exec.max_processes", "user", "1 to 9.");
    expect(user).toBe(`${fieldSpec("exec.max_processes")?.meaning} 1 to 9.`);
    expect(fieldHint("exec.max_processes", "project")).toContain("above your own applies only once the project is trusted");
  });

  it("puts every editable key on a page, never one that may hold credentials", () => {
    for (const f of SETTINGS_FIELDS) {
      expect(f.editable, f.path).toBe(f.page !== null);
      if (f.may_hold_secrets) expect(f.page, f.path).toBeNull();
    }
    expect(pageFields("providers").map((f) => f.path)).toContain("agent.step_timeout_secs");
  });
});

describe("network setting model", () => {
  it("reads the three choices and the lists as written, and builds the value from the lists", () => {
    expect([undefined, false, true, { deny: ["x"] }].map(networkModeOf)).toEqual(["unset", "off", "registries", "custom"]);
    expect(networkListsOf({ allow: ["crates.io", "*.npmjs.org"], deny: ["evil.example:443"] })).toEqual({
      allow: "crates.io\n*.npmjs.org",
      deny: "evil.example:443",
      allowDefault: false,
    });
    expect(networkListsOf({ deny: [] })).toEqual({ allow: "", deny: "", allowDefault: true });
    expect(networkListsOf(true)).toEqual({ allow: "", deny: "", allowDefault: false });
    expect(networkValue(" crates.io \n\n*\n", "localhost:5173\n")).toEqual({ allow: ["crates.io", "*"], deny: ["localhost:5173"] });
  });
});

describe("settings panel", () => {
  let root: HTMLElement;
  let instance: ReturnType<typeof mount> | null = null;

  beforeEach(() => {
    root = document.createElement("div");
    document.body.replaceChildren(root);
  });
  afterEach(() => {
    if (instance) unmount(instance);
    instance = null;
  });

  async function open(state: { pages: SettingsPages; answer?: SettingsWrite }, calls: Call[]) {
    instance = mount(SettingsPanel, { target: root, props: { api: fakeApi(state, calls) } });
    await (instance as unknown as { load(): Promise<void> }).load();
    await settle();
  }

  const q = (sel: string) => root.querySelector(sel) as HTMLElement;
  const click = async (sel: string) => {
    q(sel).click();
    await settle();
  };
  const type = async (sel: string, value: string) => {
    const el = q(sel) as HTMLInputElement;
    el.value = value;
    el.dispatchEvent(new Event("input", { bubbles: true }));
    await settle();
  };

  it("writes a provider entry at the user level by default and its key to the keyring only", async () => {
    const calls: Call[] = [];
    await open({ pages: pages() }, calls);
    expect(q('[data-testid="provider"][data-name="local"] [data-testid="key-state"]').textContent).toBe("no key set");
    await type('[data-testid="provider-name"]', "cloud");
    await type('[data-testid="provider-model"]', "claude-sonnet-4-6");
    (q('[data-testid="provider-form"]') as HTMLFormElement).requestSubmit();
    await settle();
    expect(calls[0]).toEqual({ cmd: "set_setting", args: ["user", ["providers", "cloud"], { model: "claude-sonnet-4-6" }] });
    expect(q('[data-testid="settings-notice"]').textContent).toContain(`Saved to ${USER}`);
    await type('[data-testid="provider"][data-name="local"] [data-testid="key-input"]', "sk-secret-1");
    await click('[data-testid="provider"][data-name="local"] [data-testid="save-key"]');
    expect(calls[1]).toEqual({ cmd: "set_provider_key", args: ["local", "sk-secret-1"] });
    // The field is cleared and the key appears nowhere in the page.
    expect((q('[data-testid="provider"][data-name="local"] [data-testid="key-input"]') as HTMLInputElement).value).toBe("");
    expect(root.innerHTML).not.toContain("sk-secret-1");
  });

  it("shows a refused value on its field, as tools check prints it, and writes the project when picked", async () => {
    const calls: Call[] = [];
    const refused = { file: PROJECT, line: 2, column: 14, field: "exec.writable_roots", message: "`/` is too broad<b>x</b>" };
    await open({ pages: pages(), answer: { written: null, problems: [refused] } }, calls);
    await click('[data-testid="settings-tab-exec"]');
    await click('[data-testid="level-project"]');
    expect(q('[data-testid="level-file"]').textContent).toBe(PROJECT);
    const roots = q("#f-writable_roots") as HTMLTextAreaElement;
    expect(roots.value).toBe("~/.cargo");
    await type("#f-writable_roots", "~/.cargo\n/\n");
    await click('[data-testid="save-writable_roots"]');
    expect(calls[0]).toEqual({ cmd: "set_setting", args: ["project", ["exec", "writable_roots"], ["~/.cargo", "/"]] });
    const shown = root.querySelectorAll('[data-testid="field-writable_roots"] [data-testid="field-problem"]');
    expect([...shown].map((e) => e.textContent)).toEqual([`${PROJECT}:2:14: \`exec.writable_roots\`: \`/\` is too broad<b>x</b>`]);
    expect(root.querySelector('[data-testid="field-writable_roots"] b')).toBeNull();
    expect(q('[data-testid="settings-notice"]').textContent).toContain("Not saved");
    await click('[data-testid="network-off"]');
    expect(calls[1]).toEqual({ cmd: "set_setting", args: ["project", ["exec", "network"], false] });
  });

  it("shows the process cap of a level, checks it before sending, saves and unsets it", async () => {
    const calls: Call[] = [];
    await open({ pages: pages({ user: { exec: { max_processes: 512 } } }) }, calls);
    await click('[data-testid="settings-tab-exec"]');
    const input = () => q("#f-max_processes") as HTMLInputElement;
    expect(input().value).toBe("512");
    expect(q('[data-testid="field-max_processes"]').textContent).toContain("Default 4096");
    // Not a whole number in range: said on the field, nothing sent.
    for (const bad of ["0", "4194305", "12.5", "-3", "lots"]) {
      await type("#f-max_processes", bad);
      await click('[data-testid="save-max_processes"]');
      expect(q('[data-testid="max_processes-invalid"]').textContent).toBe("Enter a whole number from 1 to 4,194,304.");
    }
    expect(calls).toEqual([]);
    await type("#f-max_processes", " 256 ");
    await click('[data-testid="save-max_processes"]');
    expect(calls[0]).toEqual({ cmd: "set_setting", args: ["user", ["exec", "max_processes"], 256] });
    expect(root.querySelector('[data-testid="max_processes-invalid"]')).toBeNull();
    await click('[data-testid="unset-max_processes"]');
    expect(calls[1]).toEqual({ cmd: "set_setting", args: ["user", ["exec", "max_processes"], undefined] });
    // The project level has none: empty, Unset disabled.
    await click('[data-testid="level-project"]');
    expect(input().value).toBe("");
    expect((q('[data-testid="unset-max_processes"]') as HTMLButtonElement).disabled).toBe(true);
    expect(q('[data-testid="field-max_processes"]').textContent).toContain("Not set at this level.");
  });

  it("shows the agent's time limits of a level with the default as placeholder, checks, saves and unsets them", async () => {
    const calls: Call[] = [];
    await open({ pages: pages({ user: { agent: { step_timeout_secs: 600 } }, problems: [problem("agent.idle_timeout_secs")] }) }, calls);
    const input = (f: string) => q(`#f-${f}`) as HTMLInputElement;
    // On the providers page (the model settings), in seconds with the unit said.
    expect(input("step_timeout_secs").value).toBe("600");
    expect(q('[data-testid="step_timeout_secs-as-time"]').textContent).toBe("= 10 min");
    expect(input("keepalive_timeout_secs").value).toBe("");
    expect(input("keepalive_timeout_secs").placeholder).toBe("900 (default)");
    expect(q('[data-testid="keepalive_timeout_secs-as-time"]').textContent).toBe("default: 15 min");
    expect(input("idle_timeout_secs").placeholder).toBe("90 (default)");
    expect(q('[data-testid="field-step_timeout_secs"]').textContent).toContain("(seconds)");
    expect(q('[data-testid="field-step_timeout_secs"]').textContent).toContain("Default 1800 s (30 min)");
    expect(q('[data-testid="field-idle_timeout_secs"] [data-testid="field-problem"]').textContent).toContain("`agent.idle_timeout_secs`");
    // Out of range or not a time: said on the field, nothing sent.
    for (const bad of ["0", "86401", "25 h", "1.5", "soon"]) {
      await type("#f-step_timeout_secs", bad);
      await click('[data-testid="save-step_timeout_secs"]');
      expect(q('[data-testid="step_timeout_secs-invalid"]').textContent).toContain("from 1 to 86,400 (24 h)");
    }
    expect(calls).toEqual([]);
    await type("#f-step_timeout_secs", "45 min");
    expect(q('[data-testid="step_timeout_secs-as-time"]').textContent).toBe("= 45 min");
    await click('[data-testid="save-step_timeout_secs"]');
    expect(calls[0]).toEqual({ cmd: "set_setting", args: ["user", ["agent", "step_timeout_secs"], 2700] });
    expect(root.querySelector('[data-testid="step_timeout_secs-invalid"]')).toBeNull();
    // Enter saves too.
    await type("#f-idle_timeout_secs", "120");
    input("idle_timeout_secs").dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    await settle();
    expect(calls[1]).toEqual({ cmd: "set_setting", args: ["user", ["agent", "idle_timeout_secs"], 120] });
    await click('[data-testid="unset-step_timeout_secs"]');
    expect(calls[2]).toEqual({ cmd: "set_setting", args: ["user", ["agent", "step_timeout_secs"], undefined] });
    // The project level has none: empty, Unset disabled, written there when picked.
    await click('[data-testid="level-project"]');
    expect(input("step_timeout_secs").value).toBe("");
    expect((q('[data-testid="unset-step_timeout_secs"]') as HTMLButtonElement).disabled).toBe(true);
    expect(q('[data-testid="field-step_timeout_secs"]').textContent).toContain("Not set at this level.");
    await type("#f-step_timeout_secs", "60");
    await click('[data-testid="save-step_timeout_secs"]');
    expect(calls[3]).toEqual({ cmd: "set_setting", args: ["project", ["agent", "step_timeout_secs"], 60] });
  });

  it("adds an MCP server from the form and removes one at its own level", async () => {
    const calls: Call[] = [];
    await open({ pages: pages() }, calls);
    await click('[data-testid="settings-tab-mcp"]');
    expect(q('[data-testid="mcp-server"][data-name="files"]').textContent).toContain("npx -y srv");
    await type('[data-testid="mcp-name"]', "docs");
    await click('[data-testid="mcp-http"]');
    await type('[data-testid="mcp-url"]', "https://docs.example/mcp");
    (q('[data-testid="mcp-form"]') as HTMLFormElement).requestSubmit();
    await settle();
    expect(calls[0]).toEqual({ cmd: "put_mcp_server", args: ["user", "docs", { url: "https://docs.example/mcp" }] });
    await click('[data-testid="mcp-server"][data-name="files"] button[aria-label="Remove files"]');
    expect(calls[1]).toEqual({ cmd: "remove_mcp_server", args: ["user", "files"] });
  });

  it("chooses the network: off and the registries at once, custom lists saved and refused entries shown on the field", async () => {
    const calls: Call[] = [];
    const refused = { file: USER, line: 3, column: 16, field: "exec.network", message: "not a network entry: `http://x/`" };
    const state: { pages: SettingsPages; answer?: SettingsWrite } = { pages: pages({ user: { exec: { network: { allow: ["crates.io"], deny: [] } } } }) };
    await open(state, calls);
    await click('[data-testid="settings-tab-exec"]');
    expect(q('[data-testid="network-custom"]').getAttribute("aria-checked")).toBe("true");
    expect((q('[data-testid="network-allow"]') as HTMLTextAreaElement).value).toBe("crates.io");
    expect((q('[data-testid="save-network"]') as HTMLButtonElement).disabled).toBe(true);
    await type('[data-testid="network-allow"]', "crates.io\n*.npmjs.org\nlocalhost:5173\n");
    await type('[data-testid="network-deny"]', "evil.example:443");
    await click('[data-testid="save-network"]');
    expect(calls[0]).toEqual({
      cmd: "set_setting",
      args: ["user", ["exec", "network"], { allow: ["crates.io", "*.npmjs.org", "localhost:5173"], deny: ["evil.example:443"] }],
    });
    state.answer = { written: null, problems: [refused] };
    await type('[data-testid="network-allow"]', "http://x/");
    await click('[data-testid="save-network"]');
    const shown = root.querySelectorAll('[data-testid="field-network"] [data-testid="field-problem"]');
    expect([...shown].map((e) => e.textContent)).toEqual([`${USER}:3:16: \`exec.network\`: not a network entry: \`http://x/\``]);
    state.answer = undefined;
    // The default registries: saved at once, said, no lists.
    state.pages = pages({ user: { exec: { network: true } } });
    await click('[data-testid="network-on"]');
    expect(calls[2]).toEqual({ cmd: "set_setting", args: ["user", ["exec", "network"], true] });
    expect(q('[data-testid="network-on"]').getAttribute("aria-checked")).toBe("true");
    expect(q('[data-testid="network-registries"]').textContent).toContain("Rust, Node, Python, Go and Debian");
    expect(root.querySelector('[data-testid="network-allow"]')).toBeNull();
    await click('[data-testid="network-off"]');
    expect(calls[3]).toEqual({ cmd: "set_setting", args: ["user", ["exec", "network"], false] });
    await click('[data-testid="network-unset"]');
    expect(calls[4]).toEqual({ cmd: "set_setting", args: ["user", ["exec", "network"], undefined] });
  });

  it("shows every key the field table puts on a page, under its label, on that page", async () => {
    await open({ pages: pages() }, []);
    for (const page of ["providers", "exec"] as const) {
      await click(`[data-testid="settings-tab-${page}"]`);
      for (const f of pageFields(page)) {
        const el = root.querySelector(`[data-field="${f.path}"]`);
        expect(el, `${f.path} on the ${page} page`).not.toBeNull();
        expect(el?.textContent, f.path).toContain(f.label);
      }
    }
    await click('[data-testid="level-project"]');
    await click('[data-testid="settings-tab-exec"]');
    expect(q('[data-field="exec.max_processes"]').textContent).toContain(AUTHORITY_RULES.widens_above_user);
    expect(q('[data-field="exec.network"]').textContent).toContain(AUTHORITY_RULES.widens_by_network_beyond_user);
  });

  it("edits protected paths at both levels and removed built-ins only at the user level, with a warning", async () => {
    const calls: Call[] = [];
    await open({ pages: pages({ user: { exec: { protected_paths: ["Makefile"], unprotected_paths: [".idea"] } } }) }, calls);
    await click('[data-testid="settings-tab-exec"]');
    expect((q("#f-protected_paths") as HTMLTextAreaElement).value).toBe("Makefile");
    expect((q("#f-unprotected_paths") as HTMLTextAreaElement).value).toBe(".idea");
    expect(q('[data-testid="unprotected-warning"]').textContent).toContain("full authority");
    await type("#f-unprotected_paths", ".idea\n.vscode\n");
    await click('[data-testid="save-unprotected_paths"]');
    expect(calls[0]).toEqual({ cmd: "set_setting", args: ["user", ["exec", "unprotected_paths"], [".idea", ".vscode"]] });
    // The project level: protected paths may be added; removing built-ins is not offered.
    await click('[data-testid="level-project"]');
    expect(root.querySelector("#f-unprotected_paths")).toBeNull();
    expect(root.querySelector('[data-testid="unprotected-warning"]')).toBeNull();
    expect(q('[data-testid="unprotected-user-only"]').textContent).toContain("only possible in your own settings");
    expect((q("#f-protected_paths") as HTMLTextAreaElement).value).toBe("");
    await type("#f-protected_paths", ".github/workflows/\n");
    await click('[data-testid="save-protected_paths"]');
    expect(calls[1]).toEqual({ cmd: "set_setting", args: ["project", ["exec", "protected_paths"], [".github/workflows/"]] });
  });
});
