// The history list that stays current (pure): which rows to watch, rows replaced by their newer
// state, and newer calls put on top of what is loaded. HistoryBrowser.svelte polls the shell's
// `history_head` while the History tab is open and applies these.
import type { HistoryItem } from "../bindings/HistoryItem";
import type { HistoryForm } from "./history-filters";

/** How often the open History tab asks whether something new was stored (ms). */
export const POLL_MS = 1500;
/** The most running rows one probe watches (the shell's cap). */
export const MAX_WATCH = 200;
/** Within this many pixels of the top the list counts as "at the top" and takes new calls in. */
export const TOP_SLACK_PX = 8;

/** The ids of loaded rows that are still running, newest first, at most `max`. */
export function runningIds(rows: readonly HistoryItem[], max = MAX_WATCH): string[] {
  const out: string[] = [];
  for (const r of rows) {
    if (r.status !== "running") continue;
    out.push(r.tool_call_id);
    if (out.length === max) break;
  }
  return out;
}

/** Whether two rows show the same thing (status, stage, error, duration, target, compaction). */
function same(a: HistoryItem, b: HistoryItem): boolean {
  return (
    a.status === b.status &&
    a.stage === b.stage &&
    a.error_message === b.error_message &&
    a.duration_ms === b.duration_ms &&
    a.target === b.target &&
    a.compaction_state === b.compaction_state
  );
}

/**
 * Whether a row, as stored now, still belongs to a list filtered by `form` (as a fresh load would
 * list it). Only what a call changes as it finishes is checked: its status and stage (its tool,
 * run and start never change, and the text it is searched by only grows).
 */
export function stillMatches(row: HistoryItem, form: HistoryForm): boolean {
  return (form.status === "" || row.status === form.status) && (form.stage === "" || row.stage === form.stage);
}

/**
 * `rows` with each row of `updated` (by id) replaced by its new state, and left out when that state
 * no longer passes `keep` (a running call that finished under the filter "running"); the same
 * array when nothing changed (so an idle probe re-renders nothing).
 */
export function applyUpdates(rows: HistoryItem[], updated: readonly HistoryItem[], keep: (row: HistoryItem) => boolean = () => true): HistoryItem[] {
  if (updated.length === 0) return rows;
  const byId = new Map(updated.map((u) => [u.tool_call_id, u]));
  let changed = false;
  const out: HistoryItem[] = [];
  for (const r of rows) {
    const u = byId.get(r.tool_call_id);
    if (u === undefined || same(r, u)) {
      out.push(r);
      continue;
    }
    changed = true;
    if (keep(u)) out.push(u);
  }
  return changed ? out : rows;
}

/**
 * The newest page `fresh` put on top of the loaded `rows`: the calls above the current first row,
 * then everything loaded (older pages and the cursor stay valid). `null` when `fresh` does not
 * reach the current first row (more new calls than a page): the list starts over from `fresh`.
 */
export function mergeNewer(rows: HistoryItem[], fresh: readonly HistoryItem[]): HistoryItem[] | null {
  if (rows.length === 0) return [...fresh];
  const top = rows[0]?.tool_call_id;
  const at = fresh.findIndex((r) => r.tool_call_id === top);
  if (at < 0) return null;
  if (at === 0) return applyUpdates(rows, fresh);
  const loaded = new Set(rows.map((r) => r.tool_call_id));
  const added = fresh.slice(0, at).filter((r) => !loaded.has(r.tool_call_id));
  return [...added, ...applyUpdates(rows, fresh.slice(at))];
}

/** The pill's text: "1 new call", "12 new calls", "1000+ new calls" at the shell's cap. */
export function newCallsText(n: number, cap = 1000): string {
  const count = n >= cap ? `${cap}+` : String(n);
  return `${count} new call${n === 1 ? "" : "s"}`;
}
