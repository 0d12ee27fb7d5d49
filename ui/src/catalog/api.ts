// Typed wrappers over the shell's catalog commands (the generated clients, through
// ../lib/invoke.ts): MCP servers with their state, skills with their problems, reconnect, and the
// OAuth login of a remote server (`mcp_login`: system browser, loopback redirect;
// `cancel_mcp_login`, `mcp_logout`, `mcp_logins` names the servers holding a token). Types come
// from the generated bindings only.
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { CatalogServer } from "../bindings/CatalogServer";
import type { CatalogSkills } from "../bindings/CatalogSkills";
import type { McpLoginOutcome } from "../bindings/McpLoginOutcome";
import type { McpTokenState } from "../bindings/McpTokenState";

export interface CatalogApi {
  listServers(): Promise<CatalogServer[]>;
  listSkills(): Promise<CatalogSkills>;
  /** Closes the server's connection and starts it again; true once the new attempt started. */
  reconnectServer(name: string): Promise<boolean>;
  /** The OAuth login of a server whose state is `needs_login` (system browser); resolves once done. */
  mcpLogin(name: string): Promise<McpLoginOutcome>;
  /** Stops a login waiting for the browser; false when none was in progress. */
  cancelMcpLogin(name: string): Promise<boolean>;
  /** Forgets the server's token (it then needs login); false when none was stored. */
  mcpLogout(name: string): Promise<boolean>;
  /** The servers holding a stored token (never the token), each saying whether it lacks scope. */
  mcpLogins(): Promise<McpTokenState[]>;
}

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createCatalogApi(call?: InvokeFn): CatalogApi {
  const c = shellCommands(call);
  return {
    listServers: () => c.listServers(),
    listSkills: () => c.listSkills(),
    reconnectServer: (name) => c.reconnectServer({ name }),
    mcpLogin: (name) => c.mcpLogin({ server: name }),
    cancelMcpLogin: (name) => c.cancelMcpLogin({ server: name }),
    mcpLogout: (name) => c.mcpLogout({ server: name }),
    mcpLogins: () => c.mcpLogins(),
  };
}

const defaultApi = createCatalogApi();

/** The "Log in" button of a server that needs login: a thin call of the shell's `mcp_login`. */
export function mcpLogin(name: string): Promise<McpLoginOutcome> {
  return defaultApi.mcpLogin(name);
}
