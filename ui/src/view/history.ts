// The history panel as a standalone element (tests mount it alone); the component is
// ../components/History.svelte.
import { flushSync, mount } from "svelte";
import type { Api } from "../api";
import HistoryBrowser from "../components/HistoryBrowser.svelte";
import HistoryView from "../components/History.svelte";
import type { RawOutputApi } from "../run/raw-output";

export { formatDuration, formatTime } from "../lib/format";

/** Raw output bytes fetched per page of the detail view (as History.svelte). */
export const RAW_PAGE_BYTES = 4096;

export interface History {
  element: HTMLElement;
  /** Lists the calls again with the current search text. */
  refresh(): Promise<void>;
}

export function createHistory(api: Api): History {
  const element = document.createElement("div");
  element.className = "history-host";
  const instance = mount(HistoryView, { target: element, props: { api } }) as { refresh(): Promise<void> };
  flushSync();
  return { element, refresh: () => instance.refresh().then(() => flushSync()) };
}

/** The history browser (filters, keyset paging, detail with raw output) as a standalone element. */
export function createHistoryBrowser(api: RawOutputApi): { element: HTMLElement; refresh(): Promise<void>; older(): Promise<void> } {
  const element = document.createElement("div");
  element.className = "history-host";
  const instance = mount(HistoryBrowser, { target: element, props: { api } }) as { refresh(): Promise<void>; older(): Promise<void> };
  flushSync();
  return { element, refresh: () => instance.refresh().then(() => flushSync()), older: () => instance.older().then(() => flushSync()) };
}
