// The history browser's filter form as a query (pure): the form's values -> HistoryPageQuery.
import type { HistoryPageQuery } from "../bindings/HistoryPageQuery";

export interface HistoryForm {
  tool: string;
  status: string;
  stage: string;
  run: string;
  /** `datetime-local` values (local time), "" when unset. */
  since: string;
  until: string;
  search: string;
  /** Only calls that changed this project-relative path (or a path beneath it); "" when unset. */
  changedPath: string;
}

export function emptyForm(): HistoryForm {
  return { tool: "", status: "", stage: "", run: "", since: "", until: "", search: "", changedPath: "" };
}

/** Unix ms of a `datetime-local` value; null when blank or not a date. */
export function localTimeMs(value: string): number | null {
  if (value.trim() === "") return null;
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? null : ms;
}

/** The query for a form and a cursor (null: the newest page). */
export function queryOf(form: HistoryForm, cursor: string | null, limit: number): HistoryPageQuery {
  const one = (v: string) => (v === "" ? [] : [v]);
  return {
    tools: one(form.tool),
    statuses: one(form.status),
    stages: one(form.stage),
    run_id: form.run === "" ? null : form.run,
    since_ms: localTimeMs(form.since),
    until_ms: localTimeMs(form.until),
    search: form.search.trim() === "" ? null : form.search.trim(),
    changed_path: form.changedPath.trim() === "" ? null : form.changedPath.trim(),
    limit,
    cursor,
  };
}
