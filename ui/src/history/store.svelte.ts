// The state of the history browser (the History tab), apart from its view
// (../components/HistoryBrowser.svelte, which only renders it and owns the DOM: the virtualized
// list, scrolling, focus). Every stored call of the open project (the shell scopes every command
// to it; a project switch remounts the view and so makes a new store), newest first, with filters
// and full-text search; older pages by keyset paging (no limit on how far back); the detail of one
// call; and staying current: `poll` asks the shell's `history_head` how many calls matching the
// filters were stored after the newest one shown (by this window or by any process writing the
// data directory) and how the running rows stand now. Running rows take their new status and
// duration in place, or leave the list when that no longer matches the status or stage filter (as
// a fresh load would leave them out); new calls go on top when the list is at its top (the view
// says, `atTop`), otherwise `newer` counts them for the "N new calls" pill, so scroll position,
// selection and the open detail never move under the person.
import { toCommandError } from "../lib/invoke";
import type { CallRecordView } from "../bindings/CallRecordView";
import type { HistoryFacets } from "../bindings/HistoryFacets";
import type { HistoryItem } from "../bindings/HistoryItem";
import type { RewindTargetArg } from "../bindings/RewindTargetArg";
import { emptyForm, type HistoryForm, queryOf } from "../run/history-filters";
import { applyUpdates, mergeNewer, POLL_MS, runningIds, stillMatches } from "../run/history-live";
import type { RawOutputApi } from "../run/raw-output";

/** Rows per page. */
export const PAGE = 500;

export class HistoryStore {
  /** The filters as typed (applied by `refresh`). */
  form: HistoryForm = $state(emptyForm());
  // The filters of the list shown (taken from the form when it lists again): older pages and the
  // probe use these, never what is typed but not yet applied.
  applied: HistoryForm = $state.raw(emptyForm());
  // Rows, choices and the record are replaced whole, never edited: raw state (no deep proxy over
  // up to 100,000 rows; an appended page is one new array).
  facets: HistoryFacets | null = $state.raw(null);
  rows: HistoryItem[] = $state.raw([]);
  /** The cursor of the next (older) page; null at the end. */
  next: string | null = $state(null);
  loading = $state(false);
  loaded = $state(false);
  error: string | null = $state(null);
  // Why the last probe (or the newer page it asked for) failed: the list shown may be out of date,
  // said until a probe succeeds (the next one tries again).
  stale: string | null = $state(null);
  selected: CallRecordView | null = $state.raw(null);
  detailError: string | null = $state(null);
  /** Calls stored after the newest row shown that the list does not show yet (the pill). */
  newer = $state(0);
  /** The rewind whose preview (then outcome) is open, from the detail's change list. */
  rewindOpen: RewindTargetArg | null = $state.raw(null);
  /** Whether any applied filter narrows the list (the empty state says which case it is). */
  readonly filtered = $derived(Object.values(this.applied).some((v) => v.trim() !== ""));

  /** Whether the list is scrolled to (or near) its top; set by the view. */
  atTop: () => boolean = () => true;

  private generation = 0;
  // Where the newest row shown stands (the page's `head`): what the probe counts newer calls from.
  private head: string | null = null;
  private probing = false;
  private selecting = 0;

  constructor(private readonly api: RawOutputApi) {}

  /** Lists from the newest call again with the current filters. */
  async refresh(): Promise<void> {
    const mine = ++this.generation;
    this.loading = true;
    try {
      const filters = { ...this.form };
      const page = await this.api.historyPage(queryOf(filters, null, PAGE));
      if (mine !== this.generation) return;
      this.applied = filters;
      this.rows = page.rows;
      this.next = page.next;
      this.head = page.head;
      this.newer = 0;
      this.error = null;
      this.stale = null;
    } catch (e) {
      if (mine !== this.generation) return;
      this.rows = [];
      this.next = null;
      this.head = null;
      this.newer = 0;
      this.error = toCommandError(e).message;
    } finally {
      if (mine === this.generation) {
        this.loading = false;
        this.loaded = true;
      }
    }
  }

  /** The next (older) page, appended. */
  async older(): Promise<void> {
    if (this.loading || this.next === null) return;
    const mine = this.generation;
    this.loading = true;
    try {
      const page = await this.api.historyPage(queryOf(this.applied, this.next, PAGE));
      if (mine !== this.generation) return;
      this.rows = [...this.rows, ...page.rows];
      this.next = page.next;
    } catch (e) {
      if (mine === this.generation) this.error = toCommandError(e).message;
    } finally {
      if (mine === this.generation) this.loading = false;
    }
  }

  /**
   * The newest page put on top of what is loaded (older pages, cursor, selection kept); when more
   * calls arrived than a page holds, the list starts over from the newest page.
   */
  async takeNewer(): Promise<void> {
    if (this.loading) return;
    const mine = this.generation;
    this.loading = true;
    try {
      const page = await this.api.historyPage(queryOf(this.applied, null, PAGE));
      if (mine !== this.generation) return;
      const merged = mergeNewer(this.rows, page.rows);
      if (merged === null) {
        this.rows = page.rows;
        this.next = page.next;
      } else {
        this.rows = merged;
      }
      this.head = page.head ?? this.head;
      this.newer = 0;
      this.error = null;
      this.stale = null;
    } catch (e) {
      // The list shown stays as it is (and the pill, if any), said to be possibly out of date;
      // the next probe asks again.
      if (mine === this.generation) this.stale = toCommandError(e).message;
    } finally {
      if (mine === this.generation) {
        this.loading = false;
        this.loaded = true;
      }
    }
  }

  /**
   * One probe: running rows take their stored state (and an open detail of such a call is read
   * again); calls stored after the newest one shown go on top when the list is at its top, else
   * the pill counts them. A failed probe changes nothing (the next one tries again).
   */
  async poll(): Promise<void> {
    if (this.probing || this.loading || this.error !== null) return;
    this.probing = true;
    const mine = this.generation;
    try {
      const probe = await this.api.historyHead(queryOf(this.applied, null, PAGE), this.head, runningIds(this.rows));
      if (mine !== this.generation) return;
      // A watched row that no longer matches the filters shown (it was running, the filter is
      // "running", it finished) leaves the list, as a fresh load would leave it out.
      const shown = this.applied;
      this.rows = applyUpdates(this.rows, probe.rows, (r) => stillMatches(r, shown));
      const open = this.selected;
      const now = open && probe.rows.find((r) => r.tool_call_id === open.item.tool_call_id);
      if (open && now && now.status !== open.item.status) void this.select(open.item.tool_call_id);
      this.stale = null;
      if (probe.newer === 0) this.newer = 0;
      else if (this.rows.length === 0 || this.atTop()) await this.takeNewer();
      else this.newer = probe.newer;
    } catch (e) {
      // Nothing shown changes but it may be out of date: said; the next probe asks again.
      if (mine === this.generation) this.stale = toCommandError(e).message;
    } finally {
      this.probing = false;
    }
  }

  /** Probes every POLL_MS while the window is visible; returns the stop. */
  startPolling(): () => void {
    const timer = setInterval(() => {
      if (typeof document === "undefined" || !document.hidden) void this.poll();
    }, POLL_MS);
    return () => clearInterval(timer);
  }

  /** The filter choices (tools and runs of the project) and the list, both again. */
  async reload(): Promise<void> {
    const choices = this.api.historyFacets().then(
      (f) => (this.facets = f),
      () => (this.facets = null),
    );
    await Promise.all([choices, this.refresh()]);
  }

  /**
   * The tab is shown again: the filter choices again, and a probe (the list itself is kept; a list
   * that failed to load lists again).
   */
  async resume(): Promise<void> {
    const choices = this.api.historyFacets().then(
      (f) => (this.facets = f),
      () => undefined,
    );
    await Promise.all([choices, this.loaded && this.error === null ? this.poll() : this.refresh()]);
  }

  /** Opens the detail of call `id`; a slower answer for a row chosen earlier never replaces a later choice. */
  async select(id: string): Promise<void> {
    const mine = ++this.selecting;
    try {
      const record = await this.api.callRecord(id);
      if (mine !== this.selecting) return;
      this.selected = record;
      this.detailError = null;
    } catch (e) {
      if (mine !== this.selecting) return;
      this.selected = null;
      this.detailError = toCommandError(e).message;
    }
  }
}
