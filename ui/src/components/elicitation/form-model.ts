// MCP elicitation forms, pure: the restricted JSON Schema an MCP server may request
// (`elicitation/create`, form mode) turned into form fields, the person's input validated against
// it, and the content sent back with `accept`. No DOM, no IPC.
//
// What the spec allows (2025-06-18, with the enum forms of 2025-11-25 that servers already send):
// a flat `type: "object"` whose properties are each
//   - string: `title`, `description`, `minLength`, `maxLength`, `format` (email, uri, date,
//     date-time), `default`;
//   - number / integer: `minimum`, `maximum`, `default`;
//   - boolean: `default`;
//   - single choice: string with `enum` (+ legacy `enumNames`) or `oneOf: [{const, title}]`;
//   - multiple choice: array whose `items` are a string `enum` or `anyOf: [{const, title}]`, with
//     `minItems` / `maxItems`;
// plus `required`. Anything else (nested objects, other arrays, `$ref`, unknown types or
// formats) makes the whole form unsupported: nothing editable is shown, only decline / cancel.
// Every string in a schema is the server's: the dialog shows it as text.

export type StringFormat = "email" | "uri" | "date" | "date-time";

export interface Choice {
  value: string;
  label: string;
}

interface BaseField {
  /** The property name (the key of the submitted content). */
  name: string;
  /** `title`, else the property name. */
  label: string;
  description: string | null;
  required: boolean;
}

export type FormField =
  | (BaseField & { kind: "text"; format: StringFormat | null; minLength: number | null; maxLength: number | null; initial: string })
  | (BaseField & { kind: "number" | "integer"; minimum: number | null; maximum: number | null; initial: string })
  | (BaseField & { kind: "boolean"; initial: boolean })
  | (BaseField & { kind: "choice"; options: Choice[]; initial: string })
  | (BaseField & { kind: "multi"; options: Choice[]; minItems: number | null; maxItems: number | null; initial: string[] });

export type FormModel = { ok: true; fields: FormField[] } | { ok: false; reason: string };

/** What the person entered, by property name: text as typed, a checkbox, picked options. */
export type FormValues = Record<string, string | boolean | string[]>;

export type FormResult = { ok: true; content: Record<string, unknown> } | { ok: false; errors: Record<string, string> };

/** More fields than this is not a form a person fills in a dialog. */
export const MAX_FIELDS = 50;

const FORMATS: readonly string[] = ["email", "uri", "date", "date-time"];

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function text(v: unknown): string | null {
  return typeof v === "string" && v.trim() !== "" ? v : null;
}

function count(v: unknown): number | null {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : null;
}

function bound(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** Thrown inside the parser with the reason the form is unsupported. */
class Unsupported extends Error {}

function unsupported(reason: string): never {
  throw new Unsupported(reason);
}

/** `[{const, title}]` (oneOf / anyOf) as choices. */
function titledChoices(list: unknown, field: string): Choice[] {
  if (!Array.isArray(list) || list.length === 0) unsupported(`field "${field}" has no options`);
  return list.map((entry) => {
    if (!isObj(entry) || typeof entry.const !== "string") unsupported(`field "${field}" has an option that is not a string`);
    return { value: entry.const, label: text(entry.title) ?? entry.const };
  });
}

/** `enum` (+ `enumNames`) as choices. */
function enumChoices(values: unknown, names: unknown, field: string): Choice[] {
  if (!Array.isArray(values) || values.length === 0) unsupported(`field "${field}" has no options`);
  if (!values.every((v) => typeof v === "string")) unsupported(`field "${field}" has an option that is not a string`);
  if (names !== undefined && (!Array.isArray(names) || names.length !== values.length || !names.every((n) => typeof n === "string"))) {
    unsupported(`field "${field}" names its options inconsistently`);
  }
  return (values as string[]).map((value, i) => ({ value, label: (names as string[] | undefined)?.[i] ?? value }));
}

function field(name: string, prop: unknown, required: boolean): FormField {
  if (!isObj(prop)) unsupported(`field "${name}" is not described by a schema`);
  if ("$ref" in prop) unsupported(`field "${name}" refers to another schema ($ref)`);
  const base: BaseField = { name, label: text(prop.title) ?? name, description: text(prop.description), required };
  const def = prop.default;
  switch (prop.type) {
    case "string": {
      if (prop.enum !== undefined || prop.oneOf !== undefined) {
        const options = prop.oneOf !== undefined ? titledChoices(prop.oneOf, name) : enumChoices(prop.enum, prop.enumNames, name);
        const initial = typeof def === "string" && options.some((o) => o.value === def) ? def : "";
        return { ...base, kind: "choice", options, initial };
      }
      let format: StringFormat | null = null;
      if (prop.format !== undefined) {
        if (typeof prop.format !== "string" || !FORMATS.includes(prop.format)) unsupported(`field "${name}" asks for a format this window does not know`);
        format = prop.format as StringFormat;
      }
      return { ...base, kind: "text", format, minLength: count(prop.minLength), maxLength: count(prop.maxLength), initial: typeof def === "string" ? def : "" };
    }
    case "number":
    case "integer":
      return { ...base, kind: prop.type, minimum: bound(prop.minimum), maximum: bound(prop.maximum), initial: typeof def === "number" && Number.isFinite(def) ? String(def) : "" };
    case "boolean":
      return { ...base, kind: "boolean", initial: def === true };
    case "array": {
      const items = prop.items;
      if (!isObj(items)) unsupported(`field "${name}" is a list of values this window cannot edit`);
      let options: Choice[];
      if (items.anyOf !== undefined) options = titledChoices(items.anyOf, name);
      else if (items.type === "string" && items.enum !== undefined) options = enumChoices(items.enum, items.enumNames, name);
      else unsupported(`field "${name}" is a list of values this window cannot edit`);
      const initial = Array.isArray(def) ? def.filter((v): v is string => typeof v === "string" && options.some((o) => o.value === v)) : [];
      return { ...base, kind: "multi", options, minItems: count(prop.minItems), maxItems: count(prop.maxItems), initial };
    }
    case "object":
      return unsupported(`field "${name}" is a nested object`);
    default:
      return unsupported(`field "${name}" has a type this window cannot edit`);
  }
}

/** The form a requested schema describes, or why it cannot be shown. Never throws. */
export function formModel(schema: unknown): FormModel {
  try {
    if (!isObj(schema) || schema.type !== "object") unsupported("the requested schema is not a flat object");
    if ("$ref" in schema || "$defs" in schema || "definitions" in schema) unsupported("the requested schema refers to other schemas ($ref)");
    const props = schema.properties ?? {};
    if (!isObj(props)) unsupported("the requested schema lists no fields");
    const required = schema.required ?? [];
    if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) unsupported("the requested schema's required list is not a list of names");
    const names = Object.keys(props);
    const missing = required.find((r) => !names.includes(r));
    if (missing !== undefined) unsupported(`the required field "${missing}" is not described`);
    if (names.length > MAX_FIELDS) unsupported(`the form has ${names.length} fields (at most ${MAX_FIELDS} are shown)`);
    return { ok: true, fields: names.map((name) => field(name, props[name], required.includes(name))) };
  } catch (error) {
    if (error instanceof Unsupported) return { ok: false, reason: error.message };
    return { ok: false, reason: "the requested schema could not be read" };
  }
}

/** The form's starting values: the schema's defaults, else empty. */
export function initialValues(fields: readonly FormField[]): FormValues {
  const values: FormValues = {};
  for (const f of fields) values[f.name] = Array.isArray(f.initial) ? [...f.initial] : f.initial;
  return values;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/i;

function validDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

function formatError(format: StringFormat, s: string): string | null {
  switch (format) {
    case "email":
      return EMAIL.test(s) ? null : "Enter an email address, like name@example.com.";
    case "uri":
      return /^[a-z][a-z0-9+.-]*:\S+$/i.test(s) && URL.canParse(s) ? null : "Enter a full address, like https://example.com.";
    case "date":
      return validDate(s) ? null : "Enter a date as YYYY-MM-DD.";
    case "date-time": {
      const m = DATE_TIME.exec(s);
      return m && validDate(m[1] as string) ? null : "Enter a date and time like 2026-12-01T09:30:00Z.";
    }
  }
}

function chars(s: string): number {
  return [...s].length;
}

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? "" : "s"}`;
}

/** One field's value as the content carries it (undefined: left out), or its problem. */
function check(f: FormField, raw: string | boolean | string[] | undefined): { value?: unknown; error?: string } {
  switch (f.kind) {
    case "boolean":
      return { value: raw === true };
    case "text": {
      const s = typeof raw === "string" ? raw : "";
      if (s === "") return f.required ? { error: "Required." } : {};
      if (f.minLength !== null && chars(s) < f.minLength) return { error: `At least ${plural(f.minLength, "character")}.` };
      if (f.maxLength !== null && chars(s) > f.maxLength) return { error: `At most ${plural(f.maxLength, "character")}.` };
      const problem = f.format ? formatError(f.format, s) : null;
      return problem ? { error: problem } : { value: s };
    }
    case "number":
    case "integer": {
      const s = typeof raw === "string" ? raw.trim() : "";
      if (s === "") return f.required ? { error: "Required." } : {};
      const n = Number(s);
      if (!Number.isFinite(n)) return { error: "Enter a number." };
      if (f.kind === "integer" && !Number.isInteger(n)) return { error: "Enter a whole number." };
      if (f.minimum !== null && n < f.minimum) return { error: `At least ${f.minimum}.` };
      if (f.maximum !== null && n > f.maximum) return { error: `At most ${f.maximum}.` };
      return { value: n };
    }
    case "choice": {
      const s = typeof raw === "string" ? raw : "";
      if (s === "") return f.required ? { error: "Choose one." } : {};
      return f.options.some((o) => o.value === s) ? { value: s } : { error: "Choose one of the options." };
    }
    case "multi": {
      const picked = Array.isArray(raw) ? raw.filter((v) => f.options.some((o) => o.value === v)) : [];
      const unique = [...new Set(picked)];
      if (unique.length === 0 && !f.required && f.minItems === null) return {};
      const min = Math.max(f.minItems ?? 0, f.required ? 1 : 0);
      if (unique.length < min) return { error: `Choose at least ${min}.` };
      if (f.maxItems !== null && unique.length > f.maxItems) return { error: `Choose at most ${f.maxItems}.` };
      // In the order the server listed them.
      return { value: f.options.map((o) => o.value).filter((v) => unique.includes(v)) };
    }
  }
}

/** The content to accept with, or each field's problem (keyed by property name). */
export function formContent(fields: readonly FormField[], values: FormValues): FormResult {
  const content: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of fields) {
    const { value, error } = check(f, values[f.name]);
    if (error !== undefined) errors[f.name] = error;
    else if (value !== undefined) content[f.name] = value;
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, content };
}

/** A field's constraints in words, for its hint ("required · 1 to 100"). */
export function constraintText(f: FormField): string {
  const parts: string[] = [];
  if (f.required) parts.push("required");
  if (f.kind === "text") {
    if (f.minLength !== null && f.maxLength !== null) parts.push(`${f.minLength} to ${plural(f.maxLength, "character")}`);
    else if (f.minLength !== null) parts.push(`at least ${plural(f.minLength, "character")}`);
    else if (f.maxLength !== null) parts.push(`at most ${plural(f.maxLength, "character")}`);
    if (f.format === "date-time") parts.push("like 2026-12-01T09:30:00Z");
  }
  if (f.kind === "number" || f.kind === "integer") {
    if (f.kind === "integer") parts.push("whole number");
    if (f.minimum !== null && f.maximum !== null) parts.push(`${f.minimum} to ${f.maximum}`);
    else if (f.minimum !== null) parts.push(`at least ${f.minimum}`);
    else if (f.maximum !== null) parts.push(`at most ${f.maximum}`);
  }
  if (f.kind === "multi") {
    if (f.minItems !== null && f.maxItems !== null) parts.push(`choose ${f.minItems} to ${f.maxItems}`);
    else if (f.minItems !== null) parts.push(`choose at least ${f.minItems}`);
    else if (f.maxItems !== null) parts.push(`choose at most ${f.maxItems}`);
  }
  return parts.join(" · ");
}
