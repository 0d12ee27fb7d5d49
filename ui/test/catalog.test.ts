// The catalog's servers and skills: the pure model (state labels, what each state offers,
// filtering) and the panel against a scripted fake shell (reconnect and log in by name, errors
// shown, server text inserted as text).
import { flushSync, mount, unmount } from "svelte";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../src/api";
import type { CatalogServer } from "../src/bindings/CatalogServer";
import type { CatalogApi } from "../src/catalog/api";
import { createCatalogApi } from "../src/catalog/api";
import { canReconnect, filterServers, filterSkills, needsLogin, sandboxLine, serverStatus } from "../src/catalog/model";
import ToolsPanel from "../src/components/ToolsPanel.svelte";
import { TOOLS } from "./fixtures";

const server = (name: string, state: CatalogServer["state"], tool_count = 0): CatalogServer => ({
  name,
  state,
  tool_count,
  server_info: null,
  rejected_tools: [],
  sandbox: null,
});

const SERVERS: CatalogServer[] = [
  server("docs", { kind: "connected" }, 3),
  server("github", { kind: "needs_login" }),
  server("flaky", { kind: "failed", reason: "exited with status 1: <img src=x onerror=alert(1)>", retry_in_ms: 2000 }),
  server("proj", { kind: "untrusted" }),
  server("off", { kind: "disabled" }),
];

describe("catalog model", () => {
  it("says whether and how a server runs sandboxed", () => {
    expect(sandboxLine(server("plain", { kind: "connected" }))).toEqual({ label: "not sandboxed", sandboxed: false });
    const boxed: CatalogServer = {
      ...server("boxed", { kind: "connected" }, 2),
      sandbox: { confinement: "namespaces+landlock-v7+nonet", network: "off", writable_roots: [], refused_hosts: [], refused_more: 0 },
    };
    expect(sandboxLine(boxed)).toEqual({
      label: "sandboxed: namespaces+landlock-v7+nonet · network off · writes only its temp dir",
      sandboxed: true,
    });
    const waiting: CatalogServer = {
      ...boxed,
      sandbox: {
        confinement: null,
        network: "allow: api.example.com",
        writable_roots: ["/p", "/c"],
        refused_hosts: [],
        refused_more: 0,
      },
    };
    expect(sandboxLine(waiting).label).toBe("sandboxed: not started yet · network allow: api.example.com · writes /p, /c");
    // Hosts it tried that its proxy refused are listed (with how many more beyond the first 20).
    const refused: CatalogServer = {
      ...boxed,
      sandbox: {
        confinement: "namespaces+landlock-v7",
        network: "allow: api.example.com",
        writable_roots: [],
        refused_hosts: ["evil.example:443", "[::1]:80"],
        refused_more: 3,
      },
    };
    expect(sandboxLine(refused).label).toBe(
      "sandboxed: namespaces+landlock-v7 · network allow: api.example.com · writes only its temp dir · refused evil.example:443, [::1]:80 and 3 more",
    );
  });

  it("labels each state and offers reconnect and login where they apply", () => {
    expect(serverStatus(SERVERS[0]!).label).toBe("connected · 3 tools");
    expect(serverStatus(SERVERS[2]!)).toMatchObject({ label: "failed · retry in 2 s", tone: "bad" });
    expect(serverStatus(server("c", { kind: "connecting" })).label).toBe("connecting");
    expect(serverStatus(server("r", { kind: "reconnecting", attempt: 2, reason: "eof" }))).toMatchObject({ label: "reconnecting (attempt 2)", detail: "eof" });
    expect(serverStatus(server("b", { kind: "bad_config", reason: "mcp.json:3:5: x" })).detail).toBe("mcp.json:3:5: x");
    expect(SERVERS.map(canReconnect)).toEqual([true, true, true, false, false]);
    expect(SERVERS.map(needsLogin)).toEqual([false, true, false, false, false]);
  });

  it("filters servers by name, info or state and skills by name, description or root", () => {
    expect(filterServers(SERVERS, "LOGIN").map((s) => s.name)).toEqual(["github"]);
    expect(filterServers(SERVERS, " ").length).toBe(5);
    const skills = [{ name: "pdf", description: "Read PDFs", root: "bundled" }, { name: "deploy", description: "Ship", root: "project" }];
    expect(filterSkills(skills, "project").map((s) => s.name)).toEqual(["deploy"]);
  });

  it("calls the shell's commands by name, mcp_login with the server", async () => {
    const seen: [string, unknown][] = [];
    const api = createCatalogApi(async <T>(cmd: string, args?: Record<string, unknown>) => {
      seen.push([cmd, args]);
      if (cmd === "mcp_login") throw "command mcp_login not found";
      return true as T;
    });
    expect(await api.reconnectServer("docs")).toBe(true);
    await expect(api.mcpLogin("github")).rejects.toBeInstanceOf(ApiError);
    await api.cancelMcpLogin("github");
    await api.mcpLogout("github");
    await api.mcpLogins();
    expect(seen).toEqual([
      ["reconnect_server", { name: "docs" }],
      ["mcp_login", { server: "github" }],
      ["cancel_mcp_login", { server: "github" }],
      ["mcp_logout", { server: "github" }],
      ["mcp_logins", undefined],
    ]);
  });
});

describe("catalog panel", () => {
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

  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 0));
      flushSync();
    }
  };

  it("shows servers with their state, reconnects and logs in by name, and filters all sections", async () => {
    const calls: string[] = [];
    let listed = 0;
    const api: CatalogApi = {
      listServers: async () => {
        listed += 1;
        return SERVERS;
      },
      listSkills: async () => ({ skills: [{ name: "pdf", description: "Read PDFs", root: "bundled" }], problems: ["/p/.aibuddy/skills/x/SKILL.md:1: missing front matter"] }),
      reconnectServer: async (name) => {
        calls.push(`reconnect ${name}`);
        return true;
      },
      mcpLogin: async (name) => {
        calls.push(`login ${name}`);
        throw new ApiError({ code: "ipc", stage: null, message: "Command mcp_login not found" });
      },
      cancelMcpLogin: async () => false,
      mcpLogout: async (name) => {
        calls.push(`logout ${name}`);
        return true;
      },
      mcpLogins: async () => [{ server: "docs", more_scope_needed: false }],
    };
    let refreshed = 0;
    instance = mount(ToolsPanel, { target: root, props: { tools: TOOLS, error: null, loading: false, onrefresh: () => (refreshed += 1), catalog: api } });
    await settle();
    const states = [...root.querySelectorAll('[data-testid="server"]')].map((e) => `${e.getAttribute("data-server")}:${e.querySelector('[data-testid="server-state"]')?.textContent}`);
    expect(states).toEqual(["docs:connected · 3 tools", "github:needs login", "flaky:failed · retry in 2 s", "proj:not started", "off:disabled"]);
    expect(root.querySelector('[data-server="flaky"] [data-testid="server-detail"]')?.textContent).toContain("<img src=x");
    expect(root.querySelector('[data-server="flaky"] img')).toBeNull();
    expect(root.querySelectorAll('[data-testid="reconnect"]').length).toBe(3);
    (root.querySelector('[data-server="docs"] [data-testid="reconnect"]') as HTMLButtonElement).click();
    await settle();
    (root.querySelector('[data-server="github"] [data-testid="login"]') as HTMLButtonElement).click();
    await settle();
    expect(calls).toEqual(["reconnect docs", "login github"]);
    expect(root.querySelector('[data-server="github"] [data-testid="server-error"]')?.textContent).toBe("Command mcp_login not found");
    expect(listed).toBeGreaterThanOrEqual(3);
    expect(refreshed).toBe(2);
    // Log out is offered for the servers holding a token only.
    expect([...root.querySelectorAll('[data-testid="logout"]')].map((b) => b.closest("[data-server]")?.getAttribute("data-server"))).toEqual(["docs"]);
    (root.querySelector('[data-server="docs"] [data-testid="logout"]') as HTMLButtonElement).click();
    await settle();
    expect(calls).toEqual(["reconnect docs", "login github", "logout docs"]);
    expect(root.querySelector('[data-testid="skill-problem"]')?.textContent).toContain("SKILL.md:1");
    const filter = root.querySelector('input[aria-label="Filter tools"]') as HTMLInputElement;
    filter.value = "pdf";
    filter.dispatchEvent(new Event("input", { bubbles: true }));
    await settle();
    expect(root.querySelectorAll('[data-testid="server"]').length).toBe(0);
    expect(root.querySelectorAll('[data-testid="skill"]').length).toBe(1);
  });
});
