// The history panel as a standalone element (tests mount it alone); the component is
// ../components/History.svelte.
import { flushSync, mount } from "svelte";
import type { Api } from "../api";
import HistoryView from "../components/History.svelte";

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
