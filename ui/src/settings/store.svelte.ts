// The settings pages' state, apart from their views (../components/settings/, which render it):
// the page and level shown, the pages as the shell read them, the write in progress and what the
// person is told after it, the values a write refused; the provider and MCP entry forms; the
// approval mode; and a field's draft text (typed, checked before sending, back to the written
// value when that changes). Every write goes through the shell (./api.ts), which keeps the rest
// of the file and refuses what the loader would refuse.
import type { ApprovalMode } from "../bindings/ApprovalMode";
import type { ApprovalsView } from "../bindings/ApprovalsView";
import type { CommandError } from "../bindings/CommandError";
import type { Level } from "../bindings/Level";
import type { McpServerEntry } from "../bindings/McpServerEntry";
import type { SettingsPage } from "../bindings/SettingsPage";
import type { SettingsPages } from "../bindings/SettingsPages";
import type { SettingsProblem } from "../bindings/SettingsProblem";
import type { SettingsWrite } from "../bindings/SettingsWrite";
import { toCommandError } from "../lib/invoke";
import type { ApprovalsApi } from "../run/approvals-api";
import type { SettingsApi } from "./api";
import {
  emptyMcpForm,
  fileOf,
  mcpEntryOf,
  mcpFormOf,
  type McpForm,
  providerEntry,
  type ProviderRow,
  valueAt,
  withImages,
  writtenNotice,
} from "./model";
import { networkListsOf, networkModeOf, type NetworkMode, networkValue } from "./network";

/** The pages of settings keys (the field table's `page`) and the MCP servers' page. */
export type Page = SettingsPage | "mcp";

export const PAGES: { id: Page; label: string }[] = [
  { id: "providers", label: "Providers" },
  { id: "mcp", label: "MCP servers" },
  { id: "exec", label: "Commands and approvals" },
];

/** The page after (`step` 1) or before (`step` -1) `page`, wrapping around. */
export function stepPage(page: Page, step: 1 | -1): Page {
  const i = PAGES.findIndex((p) => p.id === page);
  return PAGES[(i + step + PAGES.length) % PAGES.length]?.id ?? page;
}

export class SettingsStore {
  page: Page = $state("providers");
  /** Where writes go: the person's own settings unless they pick this project. */
  level: Level = $state("user");
  /** The pages as last read; null until the first read answers. */
  pages: SettingsPages | null = $state(null);
  error: CommandError | null = $state(null);
  /** A write is in progress (every button waits). */
  busy = $state(false);
  notice: string | null = $state(null);
  noticeWarn = $state(false);
  /** The problems that refused the last write (shown on their fields). */
  refused: SettingsProblem[] = $state([]);
  /** Every problem a field may show: the refused write's, then the files' as read. */
  readonly problems = $derived([...this.refused, ...(this.pages ? [...this.pages.problems, ...this.pages.mcp_problems] : [])]);
  /** The file the current page writes at the current level. */
  readonly levelFile = $derived(this.pages ? fileOf(this.pages, this.level, this.page === "mcp" ? "mcp" : "settings") : null);

  constructor(readonly api: SettingsApi) {}

  async load(): Promise<void> {
    try {
      this.pages = await this.api.settingsPages();
      this.error = null;
    } catch (e) {
      this.error = toCommandError(e);
    }
  }

  /** `section.field` (`path`) at the current level; `value` undefined removes the key. */
  save(path: string[], value: unknown): Promise<void> {
    const level = this.level;
    return this.write(() => this.api.setSetting(level, path, value));
  }

  putMcpServer(name: string, entry: Record<string, unknown>): Promise<void> {
    const level = this.level;
    return this.write(() => this.api.putMcpServer(level, name, entry));
  }

  removeMcpServer(level: Level, name: string): Promise<void> {
    return this.write(() => this.api.removeMcpServer(level, name));
  }

  setProviderKey(name: string, key: string): Promise<void> {
    return this.keyring(() => this.api.setProviderKey(name, key), `The key of ${name} is stored in the OS keyring.`);
  }

  removeProviderKey(name: string): Promise<void> {
    return this.keyring(() => this.api.removeProviderKey(name), `The key of ${name} was removed from the OS keyring.`);
  }

  private async write(action: () => Promise<SettingsWrite>): Promise<void> {
    this.busy = true;
    this.notice = null;
    try {
      const out = await action();
      this.refused = out.problems;
      this.noticeWarn = out.written === null;
      this.notice = out.written ? writtenNotice(out.written) : "Not saved: the value is refused (see the field).";
      await this.load();
    } catch (e) {
      this.error = toCommandError(e);
    } finally {
      this.busy = false;
    }
  }

  private async keyring(action: () => Promise<unknown>, done: string): Promise<void> {
    this.busy = true;
    this.notice = null;
    try {
      await action();
      this.noticeWarn = false;
      this.notice = done;
      this.error = null;
      await this.load();
    } catch (e) {
      this.error = toCommandError(e);
    } finally {
      this.busy = false;
    }
  }
}

/** The project's approval mode: what is in force, and the person's choice for this project (kept
 * at the user level, never in the project; it applies when the project is opened again). */
export class ApprovalModeStore {
  view: ApprovalsView | null = $state(null);
  error: CommandError | null = $state(null);
  busy = $state(false);

  constructor(private readonly api: ApprovalsApi) {}

  async load(): Promise<void> {
    try {
      this.view = await this.api.approvalsView();
    } catch (e) {
      this.error = toCommandError(e);
    }
  }

  async choose(mode: ApprovalMode): Promise<void> {
    this.busy = true;
    try {
      this.view = await this.api.setApprovalMode(mode);
      this.error = null;
    } catch (e) {
      this.error = toCommandError(e);
    } finally {
      this.busy = false;
    }
  }
}

type Json = Record<string, unknown>;

function entryAt(pages: SettingsPages, level: Level, name: string): Json {
  const raw = valueAt(pages, level, "providers", name);
  return typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Json) : {};
}

/** The provider entry form and the key boxes of the Providers page. */
export class ProviderForm {
  name = $state("");
  kind = $state("");
  model = $state("");
  baseUrl = $state("");
  /** An `openai-chat` endpoint that takes image input (`providers.NAME.images`). */
  images = $state(false);
  /** The key typed for each entry (cleared once handed over; never shown back). */
  keys: Record<string, string> = $state({});

  /** Fills the form from a listed entry. */
  edit(row: ProviderRow, pages: SettingsPages, level: Level): void {
    this.name = row.name;
    this.kind = row.kind;
    this.model = row.model;
    this.baseUrl = row.baseUrl;
    this.images = entryAt(pages, level, row.name).images === true;
  }

  /** The write the form asks for (the entry's other keys kept), or null without a name. */
  entry(pages: SettingsPages, level: Level): { path: string[]; value: Json } | null {
    const name = this.name.trim();
    if (name === "") return null;
    const value = withImages(providerEntry(this.kind, this.model, this.baseUrl, entryAt(pages, level, name)), this.kind, this.images);
    return { path: ["providers", name], value };
  }

  /** The key typed for `entry`, taken out of its box; null when nothing was typed. */
  takeKey(entry: string): string | null {
    const key = this.keys[entry] ?? "";
    this.keys[entry] = "";
    return key.trim() === "" ? null : key;
  }
}

/** The MCP server form: the entry being added or changed, its original (other keys kept), and
 * the lines the form itself refuses. */
export class McpServerForm {
  form: McpForm = $state(emptyMcpForm());
  original: Json = $state({});
  errors: string[] = $state([]);

  edit(server: McpServerEntry): void {
    this.form = mcpFormOf(server.name, server.entry);
    this.original = server.entry;
    this.errors = [];
  }

  reset(): void {
    this.form = emptyMcpForm();
    this.original = {};
    this.errors = [];
  }

  /** The server to write, or null when the form refuses it (its errors set) or has no name. */
  submit(): { name: string; entry: Json } | null {
    const { entry, bad } = mcpEntryOf(this.form, this.original);
    this.errors = bad;
    const name = this.form.name.trim();
    return bad.length === 0 && name !== "" ? { name, entry } : null;
  }
}

/**
 * A field's text as typed: the written value (`written()`, as text) until the person types, and
 * back to it whenever the written value changes (a save, another level); `submit` checks it with
 * the field's parser before anything is sent and says why not on the field.
 */
export class Draft<T> {
  text: string;
  /** Why the typed text cannot be saved (cleared when the written value changes). */
  error: string | null;
  /** The typed text (trimmed) differs from the written value. */
  readonly changed: boolean;
  readonly #parse: (text: string) => { value: T } | { error: string };

  constructor(written: () => string, parse: (text: string) => { value: T } | { error: string }) {
    this.#parse = parse;
    this.text = $derived(written());
    this.error = $derived.by(() => {
      written();
      return null;
    });
    this.changed = $derived(this.text.trim() !== written());
  }

  /** The value to save, or null (the reason in `error`). */
  submit(): T | null {
    const parsed = this.#parse(this.text);
    if ("error" in parsed) {
      this.error = parsed.error;
      return null;
    }
    this.error = null;
    return parsed.value;
  }
}

/**
 * The `exec.network` field as the person edits it: the choice shown and the lists' text, each
 * the written value's until changed and back to it whenever the written value changes.
 */
export class NetworkDraft {
  /** The choice as written at the level. */
  readonly written: NetworkMode;
  readonly lists: { allow: string; deny: string; allowDefault: boolean };
  mode: NetworkMode;
  allow: string;
  deny: string;
  /** "Save lists" would write something new. */
  readonly changed: boolean;

  constructor(value: () => unknown) {
    this.written = $derived(networkModeOf(value()));
    this.lists = $derived(networkListsOf(value()));
    this.mode = $derived.by(() => {
      void this.lists;
      return this.written;
    });
    this.allow = $derived(this.lists.allow);
    this.deny = $derived(this.lists.deny);
    this.changed = $derived(this.written !== "custom" || this.allow !== this.lists.allow || this.deny !== this.lists.deny || this.lists.allowDefault);
  }

  /** The value "Save lists" writes. */
  value(): { allow: string[]; deny: string[] } {
    return networkValue(this.allow, this.deny);
  }
}
