// Typed wrappers over the shell's catalog commands: MCP servers with their state, skills with
// their problems, reconnect, and the OAuth login of a remote server (`mcp_login`: system
// browser, loopback redirect; `cancel_mcp_login`, `mcp_logout`, `mcp_logins` names the servers
// holding a token). Types come from the generated bindings only.
import { invoke } from "@tauri-apps/api/core";
import { ApiError, type InvokeFn, toCommandError } from "../api";
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

export const CATALOG_COMMANDS = {
  listServers: "list_servers",
  listSkills: "list_skills",
  reconnectServer: "reconnect_server",
  mcpLogin: "mcp_login",
  cancelMcpLogin: "cancel_mcp_login",
  mcpLogout: "mcp_logout",
  mcpLogins: "mcp_logins",
} as const;

export function createCatalogApi(call: InvokeFn = invoke): CatalogApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  return {
    listServers: () => run<CatalogServer[]>(CATALOG_COMMANDS.listServers),
    listSkills: () => run<CatalogSkills>(CATALOG_COMMANDS.listSkills),
    reconnectServer: (name) => run<boolean>(CATALOG_COMMANDS.reconnectServer, { name }),
    mcpLogin: (name) => run<McpLoginOutcome>(CATALOG_COMMANDS.mcpLogin, { server: name }),
    cancelMcpLogin: (name) => run<boolean>(CATALOG_COMMANDS.cancelMcpLogin, { server: name }),
    mcpLogout: (name) => run<boolean>(CATALOG_COMMANDS.mcpLogout, { server: name }),
    mcpLogins: () => run<McpTokenState[]>(CATALOG_COMMANDS.mcpLogins),
  };
}

const defaultApi = createCatalogApi();

/** The "Log in" button of a server that needs login: a thin call of the shell's `mcp_login`. */
export function mcpLogin(name: string): Promise<McpLoginOutcome> {
  return defaultApi.mcpLogin(name);
}
