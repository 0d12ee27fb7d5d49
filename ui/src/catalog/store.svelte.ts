// The catalog's state, apart from its views (../components/ToolsPanel.svelte and ./Servers.svelte,
// which render it): the MCP servers and skills as the shell lists them with the person's filter
// text, and the person's actions on a server (Reconnect, Log in with Cancel while the browser is
// out, Log out) with which one is in progress, the failure of each, and which servers hold a token.
// Server names, errors and tool names come from servers and project files: the views show them as
// text only.
import type { CatalogServer } from "../bindings/CatalogServer";
import type { CatalogSkills } from "../bindings/CatalogSkills";
import type { CommandError } from "../bindings/CommandError";
import type { McpTokenState } from "../bindings/McpTokenState";
import { toCommandError } from "../lib/invoke";
import type { CatalogApi } from "./api";
import { filterServers, filterSkills } from "./model";

export class CatalogStore {
  /** The filter box: narrows tools, servers and skills as the person types. */
  query = $state("");
  servers: CatalogServer[] = $state([]);
  skills: CatalogSkills = $state({ skills: [], problems: [] });
  error: CommandError | null = $state(null);
  readonly shownServers = $derived(filterServers(this.servers, this.query));
  readonly shownSkills = $derived(filterSkills(this.skills.skills, this.query));

  constructor(readonly api: CatalogApi | null) {}

  /** Loads the servers and skills again (after a reconnect, on Refresh, when mounted). */
  async load(): Promise<void> {
    if (!this.api) return;
    try {
      [this.servers, this.skills] = await Promise.all([this.api.listServers(), this.api.listSkills()]);
      this.error = null;
    } catch (e) {
      this.error = toCommandError(e);
    }
  }
}

export class ServerActions {
  /** The server an action is in progress for (every action button waits). */
  pending: string | null = $state(null);
  /** The server whose login waits for the browser. */
  loggingIn: string | null = $state(null);
  failures: Record<string, CommandError> = $state({});
  tokens: McpTokenState[] = $state([]);

  constructor(
    private readonly api: CatalogApi,
    /** Told after every action (the lists are read again). */
    private readonly onChanged: () => void,
  ) {}

  holdsToken(name: string): boolean {
    return this.tokens.some((t) => t.server === name);
  }

  lacksScope(name: string): boolean {
    return this.tokens.some((t) => t.server === name && t.more_scope_needed);
  }

  /** Which servers hold a token (none without servers). */
  readTokens(serverCount: number): void {
    if (serverCount === 0) {
      this.tokens = [];
      return;
    }
    this.api.mcpLogins().then(
      (held) => (this.tokens = held),
      () => (this.tokens = []),
    );
  }

  async login(name: string): Promise<void> {
    this.loggingIn = name;
    try {
      await this.act(name, () => this.api.mcpLogin(name));
    } finally {
      this.loggingIn = null;
    }
  }

  async cancelLogin(name: string): Promise<void> {
    try {
      await this.api.cancelMcpLogin(name);
    } catch (e) {
      this.failures[name] = toCommandError(e);
    }
  }

  logout(name: string): Promise<void> {
    return this.act(name, () => this.api.mcpLogout(name));
  }

  reconnect(name: string): Promise<void> {
    return this.act(name, () => this.api.reconnectServer(name));
  }

  private async act(name: string, action: () => Promise<unknown>): Promise<void> {
    this.pending = name;
    delete this.failures[name];
    try {
      await action();
    } catch (e) {
      this.failures[name] = toCommandError(e);
    } finally {
      this.pending = null;
      this.onChanged();
    }
  }
}
