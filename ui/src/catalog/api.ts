// Typed wrappers over the shell's catalog commands: MCP servers with their state, skills with
// their problems, reconnect, and the MCP login of a remote server (issue 14's `mcp_login`, which
// the shell answers once it is merged; until then it fails with an unknown-command error).
// Types come from the generated bindings only.
import { invoke } from "@tauri-apps/api/core";
import { ApiError, type InvokeFn, toCommandError } from "../api";
import type { CatalogServer } from "../bindings/CatalogServer";
import type { CatalogSkills } from "../bindings/CatalogSkills";

export interface CatalogApi {
  listServers(): Promise<CatalogServer[]>;
  listSkills(): Promise<CatalogSkills>;
  /** Closes the server's connection and starts it again; true once the new attempt started. */
  reconnectServer(name: string): Promise<boolean>;
  /** Starts the OAuth login of a server whose state is `needs_login` (system browser). */
  mcpLogin(name: string): Promise<unknown>;
}

export const CATALOG_COMMANDS = {
  listServers: "list_servers",
  listSkills: "list_skills",
  reconnectServer: "reconnect_server",
  mcpLogin: "mcp_login",
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
    mcpLogin: (name) => run<unknown>(CATALOG_COMMANDS.mcpLogin, { server: name }),
  };
}

const defaultApi = createCatalogApi();

/** The "Log in" button of a server that needs login: a thin call of the shell's `mcp_login`. */
export function mcpLogin(name: string): Promise<unknown> {
  return defaultApi.mcpLogin(name);
}
