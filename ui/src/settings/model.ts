// Pure view-model of the settings pages: reading a level's values from the files as written,
// the problems of one field (as `aibuddy tools check` prints them), list and map fields as text,
// the MCP entry form, and what to tell the person after a write.
import type { Level } from "../bindings/Level";
import type { SettingsPages } from "../bindings/SettingsPages";
import type { SettingsProblem } from "../bindings/SettingsProblem";
import type { Written } from "../bindings/Written";

export function fileOf(pages: SettingsPages, level: Level, kind: "settings" | "mcp"): string {
  if (kind === "settings") return level === "user" ? pages.files.user_settings : pages.files.project_settings;
  return level === "user" ? pages.files.user_mcp : pages.files.project_mcp;
}

type Json = Record<string, unknown>;

function asObject(value: unknown): Json {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

/** `section.field` as written at `level` (undefined when not set there). */
export function valueAt(pages: SettingsPages, level: Level, section: string, field: string): unknown {
  const file = level === "user" ? pages.user : pages.project;
  return asObject(asObject(file)[section])[field];
}

/** The problem line exactly as `aibuddy tools check` prints it (`SettingsProblem`'s Display). */
export function problemText(p: SettingsProblem): string {
  const at = p.line === null ? "" : p.column === null ? `:${p.line}` : `:${p.line}:${p.column}`;
  return `${p.file}${at}: \`${p.field}\`: ${p.message}`;
}

/** Problems of `field` (dotted) in `file`: the field, what lies under it, or the whole file. */
export function problemsFor(problems: readonly SettingsProblem[], file: string, field: string): SettingsProblem[] {
  return problems.filter(
    (p) => p.file === file && (p.field === field || p.field.startsWith(`${field}.`) || p.field === "(file)"),
  );
}

/** One entry a line; blank lines dropped. */
export function linesToList(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

export function listToLines(value: unknown): string {
  return Array.isArray(value) ? value.map(String).join("\n") : "";
}

/** `KEY=value` (env) or `Name: value` (headers) lines to an object; malformed lines are reported. */
export function linesToMap(text: string, separator: "=" | ":"): { map: Record<string, string>; bad: string[] } {
  const map: Record<string, string> = {};
  const bad: string[] = [];
  for (const line of linesToList(text)) {
    const at = line.indexOf(separator);
    const key = at > 0 ? line.slice(0, at).trim() : "";
    if (key === "") bad.push(line);
    else map[key] = line.slice(at + 1).trim();
  }
  return { map, bad };
}

export function mapToLines(value: unknown, separator: "=" | ":"): string {
  const sep = separator === "=" ? "=" : ": ";
  return Object.entries(asObject(value))
    .map(([k, v]) => `${k}${sep}${String(v)}`)
    .join("\n");
}

export interface McpForm {
  name: string;
  transport: "stdio" | "http";
  command: string;
  args: string;
  env: string;
  cwd: string;
  url: string;
  headers: string;
  enabled: boolean;
}

export function emptyMcpForm(): McpForm {
  return { name: "", transport: "stdio", command: "", args: "", env: "", cwd: "", url: "", headers: "", enabled: true };
}

export function mcpFormOf(name: string, entry: Json): McpForm {
  return {
    name,
    transport: typeof entry.url === "string" && typeof entry.command !== "string" ? "http" : "stdio",
    command: typeof entry.command === "string" ? entry.command : "",
    args: listToLines(entry.args),
    env: mapToLines(entry.env, "="),
    cwd: typeof entry.cwd === "string" ? entry.cwd : "",
    url: typeof entry.url === "string" ? entry.url : "",
    headers: mapToLines(entry.headers, ":"),
    enabled: entry.enabled !== false && entry.disabled !== true,
  };
}

/**
 * The entry to write: the original's other keys kept (other tools' fields, timeouts, ...), the
 * form's fields replacing theirs, the other transport's fields dropped.
 */
export function mcpEntryOf(form: McpForm, original: Json = {}): { entry: Json; bad: string[] } {
  const entry: Json = { ...original };
  for (const k of ["command", "args", "env", "cwd", "url", "headers", "type", "enabled", "disabled"]) delete entry[k];
  const bad: string[] = [];
  if (form.transport === "stdio") {
    entry.command = form.command.trim();
    const args = linesToList(form.args);
    if (args.length > 0) entry.args = args;
    const env = linesToMap(form.env, "=");
    bad.push(...env.bad.map((l) => `env line \`${l}\` is not KEY=value`));
    if (Object.keys(env.map).length > 0) entry.env = env.map;
    if (form.cwd.trim() !== "") entry.cwd = form.cwd.trim();
  } else {
    entry.url = form.url.trim();
    const headers = linesToMap(form.headers, ":");
    bad.push(...headers.bad.map((l) => `header line \`${l}\` is not Name: value`));
    if (Object.keys(headers.map).length > 0) entry.headers = headers.map;
  }
  if (!form.enabled) entry.enabled = false;
  return { entry, bad };
}

/** What the person is told after a write. */
export function writtenNotice(written: Written): string {
  if (!written.changed) return `Nothing changed in ${written.file}.`;
  const base = `Saved to ${written.file}. This window keeps the settings it was opened with: the change applies when the project is opened again (the CLI reads it at its next command).`;
  switch (written.trust.kind) {
    case "not_concerned":
      return base;
    case "kept":
      return `${base} The project stays trusted at its new content.`;
    case "not_recorded":
      return written.trust.state === "not_needed"
        ? base
        : `${base} The project is not trusted: its fields that widen authority stay ignored until you trust it.`;
    case "changed_meanwhile":
      return `${base} Other changes to the project's files were found, so trust was not kept: the trust dialog will ask.`;
  }
}

export interface ProviderRow {
  name: string;
  level: Level;
  kind: string;
  model: string;
  baseUrl: string;
  isDefault: boolean;
}

/** Provider entries at both levels (a project entry shadows a user entry of the same name). */
export function providerRows(pages: SettingsPages): ProviderRow[] {
  const rows: ProviderRow[] = [];
  for (const level of ["project", "user"] as const) {
    const providers = asObject(asObject(level === "user" ? pages.user : pages.project).providers);
    const def = typeof providers.default === "string" ? providers.default : null;
    for (const [name, raw] of Object.entries(providers)) {
      if (name === "default") continue;
      const e = asObject(raw);
      rows.push({
        name,
        level,
        kind: typeof e.kind === "string" ? e.kind : "",
        model: typeof e.model === "string" ? e.model : "",
        baseUrl: typeof e.base_url === "string" ? e.base_url : "",
        isDefault: def === name,
      });
    }
  }
  return rows;
}

/** A provider entry to write from the form (blank fields left out, other keys kept). */
export function providerEntry(kind: string, model: string, baseUrl: string, original: Json = {}): Json {
  const entry: Json = { ...original };
  for (const [key, value] of [
    ["kind", kind],
    ["model", model],
    ["base_url", baseUrl],
  ] as const) {
    if (value.trim() === "") delete entry[key];
    else entry[key] = value.trim();
  }
  return entry;
}

/**
 * `providers.NAME.images` of an entry being saved: set (`true`) only for an `openai-chat` entry
 * whose endpoint takes images, removed otherwise (Anthropic and Responses always take them).
 */
export function withImages(entry: Json, kind: string, images: boolean): Json {
  const out: Json = { ...entry };
  if (kind === "openai-chat" && images) out.images = true;
  else delete out.images;
  return out;
}

/** `exec.max_processes` bounds, as the loader checks them (`src/settings/parse.rs`). */
export const MAX_PROCESSES_LIMIT = 4_194_304;
export const MAX_PROCESSES_DEFAULT = 4096;

/** The process cap typed in its field: a whole number from 1 to the limit, or why not. */
export function parseProcessCap(text: string): { value: number } | { error: string } {
  const t = text.trim();
  const n = /^[0-9]+$/.test(t) ? Number(t) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_PROCESSES_LIMIT) {
    return { error: `Enter a whole number from 1 to ${MAX_PROCESSES_LIMIT.toLocaleString("en-US")}.` };
  }
  return { value: n };
}

/** The agent's time limits (`agent.*_timeout_secs`), bounds and defaults as the loader checks
 * them (`src/settings/parse.rs`, `src/agent/mod.rs`); labels and meanings are the field table's
 * (`settings/fields.ts`). */
export const TIME_LIMIT_MAX_SECS = 86_400;
export const TIME_LIMITS = [
  { field: "step_timeout_secs", defaultSecs: 1800 },
  { field: "keepalive_timeout_secs", defaultSecs: 900 },
  { field: "idle_timeout_secs", defaultSecs: 90 },
] as const;

/** Seconds as the person reads them: `90 s`, `30 min`, `1 h 30 min`, `2 h 0 min 5 s`. */
export function formatSeconds(secs: number): string {
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  const s = secs % 60;
  if (h === 0 && m === 0) return `${s} s`;
  const parts = h > 0 ? [`${h} h`, `${m} min`] : [`${m} min`];
  if (s > 0) parts.push(`${s} s`);
  else if (h > 0 && m === 0) parts.pop();
  return parts.join(" ");
}

const UNIT_SECS: Record<string, number> = { "": 1, s: 1, sec: 1, secs: 1, second: 1, seconds: 1, m: 60, min: 60, mins: 60, minute: 60, minutes: 60, h: 3600, hour: 3600, hours: 3600 };

/** A time limit typed in its field: a whole number of seconds, or of minutes or hours with the
 * unit given (`90`, `90 s`, `30 min`, `2 h`), from 1 s to 24 h; or why not. */
export function parseTimeLimit(text: string): { value: number } | { error: string } {
  const m = /^([0-9]+)\s*([a-z]*)$/i.exec(text.trim());
  const unit = m ? UNIT_SECS[(m[2] ?? "").toLowerCase()] : undefined;
  const n = m && unit !== undefined ? Number(m[1]) * unit : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > TIME_LIMIT_MAX_SECS) {
    return { error: "Enter a whole number of seconds from 1 to 86,400 (24 h), or minutes or hours with the unit (30 min, 2 h)." };
  }
  return { value: n };
}
