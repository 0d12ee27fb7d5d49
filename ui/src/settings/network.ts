// Pure view-model of the `exec.network` field: `false` (no egress), `true` (the default package
// registries), or `{"allow": [...], "deny": [...]}` (host, `*.suffix`, `*`, or an IP address, each
// with an optional `:port`; deny wins). Entries are checked by the core's loader when saved; its
// problems come back on the field.
import { linesToList, listToLines } from "./model";

export type NetworkMode = "unset" | "off" | "registries" | "custom";

function asObject(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** Which choice a value as written is. */
export function networkModeOf(value: unknown): NetworkMode {
  if (value === undefined) return "unset";
  if (value === false) return "off";
  if (value === true) return "registries";
  return "custom";
}

/** The allow and deny lists of a written value, one entry a line (empty for `true`/`false`). A
 * missing `allow` means the default registries, said by `allowDefault`. */
export function networkListsOf(value: unknown): { allow: string; deny: string; allowDefault: boolean } {
  const o = asObject(value);
  if (!o) return { allow: "", deny: "", allowDefault: false };
  return { allow: listToLines(o.allow), deny: listToLines(o.deny), allowDefault: o.allow === undefined };
}

/** The value to write from the lists' text. */
export function networkValue(allowText: string, denyText: string): { allow: string[]; deny: string[] } {
  return { allow: linesToList(allowText), deny: linesToList(denyText) };
}
