// The history panel: past calls of this project, read from the core's store (the same rows as
// `aibuddy history`), newest first, with full-text search. Clicking a row shows what `aibuddy show`
// shows: the input, the exact text the model saw, and a bounded slice of the raw output.
import type { Api } from "../api";
import { toCommandError } from "../api";
import type { CallDetail } from "../bindings/CallDetail";
import type { CommandError } from "../bindings/CommandError";
import type { HistoryEntry } from "../bindings/HistoryEntry";
import { h, replaceChildren } from "./dom";

export interface History {
  element: HTMLElement;
  /** Lists the calls again with the current search text. */
  refresh(): Promise<void>;
}

/** Raw output bytes fetched per page of the detail view. */
export const RAW_PAGE_BYTES = 4096;

/** "07:22:01" from an RFC 3339 timestamp (local time), the full timestamp when it does not parse. */
export function formatTime(startedAt: string): string {
  const date = new Date(startedAt);
  if (Number.isNaN(date.getTime())) return startedAt;
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

export function formatDuration(ms: number | null): string {
  if (ms === null) return "–";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function renderError(error: CommandError, testid: string): HTMLElement {
  return h("div", { class: "error-card", role: "alert", "data-testid": testid }, h("p", { class: "error-message" }, error.message));
}

export function renderHistoryRow(entry: HistoryEntry, selected: boolean): HTMLElement {
  return h(
    "li",
    {
      class: `history-row${selected ? " selected" : ""}`,
      "data-testid": "history-row",
      "data-id": entry.tool_call_id,
      "data-tool": entry.tool,
      "data-status": entry.status,
      tabindex: "0",
      role: "button",
      "aria-pressed": selected ? "true" : "false",
    },
    h("span", { class: "history-time", title: entry.started_at }, formatTime(entry.started_at)),
    h("span", { class: "history-tool" }, entry.tool),
    h("span", { class: `pill status-${entry.status}`, "data-testid": "history-status" }, entry.status),
    h("span", { class: "history-duration" }, formatDuration(entry.duration_ms)),
    h("span", { class: "history-id" }, entry.tool_call_id),
  );
}

export function renderHistoryList(entries: readonly HistoryEntry[], selectedId: string | null, searching: boolean): HTMLElement {
  if (entries.length === 0) {
    return h(
      "p",
      { class: "history-empty", "data-testid": "history-empty" },
      searching ? "No stored call matches the search." : "No calls recorded for this project yet.",
    );
  }
  return h(
    "ul",
    { class: "history-list", "data-testid": "history-list" },
    ...entries.map((e) => renderHistoryRow(e, e.tool_call_id === selectedId)),
  );
}

export function renderCallDetail(detail: CallDetail, onMore: ((offset: number) => void) | null): HTMLElement {
  const e = detail.entry;
  const end = detail.raw_next_offset ?? detail.raw_total_bytes;
  const next = detail.raw_next_offset;
  let more: HTMLElement | null = null;
  if (next !== null && onMore) {
    more = h("button", { class: "button", type: "button", "data-testid": "detail-more" }, "Next page");
    more.addEventListener("click", () => onMore(next));
  }
  return h(
    "div",
    { class: "history-detail", "data-testid": "history-detail", "data-id": e.tool_call_id },
    h(
      "p",
      { class: "result-head" },
      h("span", { class: `pill status-${e.status}` }, e.status),
      e.stage ? h("span", { class: "badge" }, `stage: ${e.stage}`) : null,
      h("span", { class: "result-meta" }, `${e.tool} · ${formatDuration(e.duration_ms)} · ${e.tool_call_id}`),
    ),
    e.error_message ? h("p", { class: "error-message", "data-testid": "detail-error" }, e.error_message) : null,
    h("p", { class: "result-label" }, "Input"),
    h("pre", { class: "result-model", "data-testid": "detail-input" }, JSON.stringify(detail.input, null, 2)),
    h("p", { class: "result-label" }, "What the model saw"),
    h("pre", { class: "result-model", "data-testid": "detail-model" }, detail.model ?? "(no model text recorded)"),
    h(
      "p",
      { class: "result-label" },
      `Raw output, bytes ${detail.raw_offset}–${end} of ${detail.raw_total_bytes}${detail.raw_partial ? " (partial)" : ""}`,
    ),
    h("pre", { class: "result-model", "data-testid": "detail-raw" }, detail.raw_text),
    more,
  );
}

export function createHistory(api: Api): History {
  const search = h("input", {
    class: "input history-search",
    type: "search",
    placeholder: "Search calls",
    "aria-label": "Search call history",
    "data-testid": "history-search",
  });
  const refreshButton = h(
    "button",
    { class: "button", type: "button", title: "List the stored calls again", "data-testid": "history-refresh" },
    "Refresh",
  );
  const listSlot = h("div", { class: "history-list-slot", "aria-live": "polite" });
  const detailSlot = h("div", { class: "history-detail-slot" });

  let entries: HistoryEntry[] = [];
  let selectedId: string | null = null;
  let generation = 0;

  const showList = () => replaceChildren(listSlot, renderHistoryList(entries, selectedId, search.value.trim() !== ""));

  const refresh = async () => {
    const mine = ++generation;
    refreshButton.setAttribute("disabled", "");
    try {
      const rows = await api.listHistory({ search: search.value.trim() || undefined });
      if (mine !== generation) return;
      entries = rows;
      showList();
    } catch (error) {
      if (mine !== generation) return;
      entries = [];
      replaceChildren(listSlot, renderError(toCommandError(error), "history-error"));
    } finally {
      if (mine === generation) refreshButton.removeAttribute("disabled");
    }
  };

  const select = async (id: string, offset = 0) => {
    selectedId = id;
    showList();
    try {
      const detail = await api.showCall(id, offset, RAW_PAGE_BYTES);
      if (selectedId !== id) return;
      replaceChildren(detailSlot, renderCallDetail(detail, (next) => void select(id, next)));
    } catch (error) {
      if (selectedId !== id) return;
      replaceChildren(detailSlot, renderError(toCommandError(error), "detail-error-card"));
    }
  };

  listSlot.addEventListener("click", (event) => {
    const row = (event.target as Element | null)?.closest<HTMLElement>('[data-testid="history-row"]');
    const id = row?.getAttribute("data-id");
    if (id) void select(id);
  });
  listSlot.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const row = (event.target as Element | null)?.closest<HTMLElement>('[data-testid="history-row"]');
    const id = row?.getAttribute("data-id");
    if (id) {
      event.preventDefault();
      void select(id);
    }
  });
  search.addEventListener("input", () => void refresh());
  refreshButton.addEventListener("click", () => void refresh());

  const element = h(
    "section",
    { class: "history", "aria-labelledby": "history-title", "data-testid": "history" },
    h("div", { class: "panel-head" }, h("h2", { id: "history-title" }, "History"), h("div", { class: "toolbar" }, search, refreshButton)),
    listSlot,
    detailSlot,
  );
  return { element, refresh };
}
