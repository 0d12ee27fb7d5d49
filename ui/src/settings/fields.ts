// The core's settings field table (`src/settings/fields.rs`, generated into the bindings): one row
// per settings key with its label, meaning, authority rule, page and whether only your own
// settings may set it. The settings pages, their authority hints and the trust dialog's meanings
// read it here; nothing about a field's meaning or rule is written twice in the UI.
import type { FieldSpec } from "../bindings/FieldSpec";
import type { Level } from "../bindings/Level";
import type { SettingsPage } from "../bindings/SettingsPage";
import { AUTHORITY_RULES, SETTINGS_FIELDS } from "../bindings/settingsFields";

/** The row of a dotted key (`exec.network`, `providers.local`, `exec.network.allow`): its own,
 * else the one of the field it lies under, else its section's `section.*` row. */
export function fieldSpec(path: string, fields: readonly FieldSpec[] = SETTINGS_FIELDS): FieldSpec | undefined {
  const [section = "", field = ""] = path.split(".");
  const key = `${section}.${field}`;
  return fields.find((f) => f.path === key) ?? (field === "" ? undefined : fields.find((f) => f.path === `${section}.*`));
}

/** The row of a key the pages show; a missing row is a bug of the page (the table's tests in the
 * core and the panel's test here keep them together). */
export function shownField(path: string): FieldSpec {
  const spec = fieldSpec(path);
  if (!spec) throw new Error(`no settings field row for \`${path}\``);
  return spec;
}

/** The rows a page shows, in table order. */
export function pageFields(page: SettingsPage, fields: readonly FieldSpec[] = SETTINGS_FIELDS): FieldSpec[] {
  return fields.filter((f) => f.page === page);
}

/** What a project's value of the key needs before it applies (one sentence), or why a project
 * cannot set it at all. */
export function authorityHint(path: string): string {
  const spec = fieldSpec(path);
  if (!spec) return "";
  return spec.user_only ? "Only your own settings may set it; a project's is ignored." : AUTHORITY_RULES[spec.rule];
}

/** A page field's hint: its meaning, what the input takes, and, when writing the project's file,
 * what trust it needs. */
export function fieldHint(path: string, level: Level, input = ""): string {
  const parts = [shownField(path).meaning];
  if (input !== "") parts.push(input);
  if (level === "project") parts.push(authorityHint(path));
  return parts.join(" ");
}

/** The plain-language meaning of a field a project widens (the trust dialog). */
export function fieldMeaning(path: string): string {
  return fieldSpec(path)?.meaning ?? "Gives more than your own settings.";
}
