// Pure decisions of the project bar, the welcome view, the trust dialog and the provider picker.
// No I/O: the components and tests feed them what the shell answered.
import type { ProviderList } from "../bindings/ProviderList";
import type { RecentProject } from "../bindings/RecentProject";
import type { TrustPrompt } from "../bindings/TrustPrompt";
import type { TrustState } from "../bindings/TrustState";
import type { WideningField } from "../bindings/WideningField";

/** The recent list split for display: openable folders first (most recent first), missing last. */
export function recentRows(list: RecentProject[]): { openable: RecentProject[]; missing: RecentProject[] } {
  return {
    openable: list.filter((r) => !r.missing && !r.current),
    missing: list.filter((r) => r.missing),
  };
}

/** Whether the dialog should open for a prompt the shell sent (at load or on `trust-changed`). */
export function shouldOpenDialog(prompt: TrustPrompt | null): boolean {
  return prompt !== null && prompt.ask;
}

/** What the person chose in the trust dialog, and the command it becomes. */
export type TrustDecision = { kind: "trust"; digest: string } | { kind: "decline"; digest: string };

/** Trust binds to the digest the dialog showed; declining names it too (not asked again for it). */
export function decide(prompt: TrustPrompt, trust: boolean): TrustDecision {
  return trust ? { kind: "trust", digest: prompt.status.digest } : { kind: "decline", digest: prompt.status.digest };
}

const STATE_LABELS: Record<TrustState, string> = {
  trusted: "Trusted",
  untrusted: "Not trusted",
  not_needed: "Nothing to trust",
  changed_since_trusted: "Changed since trusted",
};

export function trustLabel(state: TrustState): string {
  return STATE_LABELS[state];
}

/** A settings field's value as one line of text (inserted as text, never HTML). */
export function fieldValue(field: WideningField): string {
  const v = field.value;
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(", ");
  return JSON.stringify(v);
}

/** The server's command line as the CLI shows it: each word quoted. */
export function commandLine(command: string | null, args: string[]): string | null {
  if (command === null) return null;
  return [command, ...args].map((a) => JSON.stringify(a)).join(" ");
}

/** A plain-language note for a widening field (what it lets the agent do): its meaning in the
 * core's settings field table. */
export { fieldMeaning } from "../settings/fields";

/** The picker's selection: the remembered choice if still configured, else the default. */
export interface PickerChoice {
  provider: string | null;
  model: string;
}

export function initialChoice(list: ProviderList): PickerChoice {
  return { provider: list.chosen ?? list.default ?? list.providers[0]?.name ?? null, model: list.chosen_model ?? "" };
}

/** What `start_run` gets: null fields keep today's behaviour (default entry, its model). */
export function startFields(choice: PickerChoice | null, list: ProviderList | null): { provider?: string; model?: string } {
  if (!choice || !list) return {};
  const out: { provider?: string; model?: string } = {};
  if (choice.provider !== null && choice.provider !== list.default) out.provider = choice.provider;
  const model = choice.model.trim();
  if (model !== "") out.model = model;
  return out;
}
