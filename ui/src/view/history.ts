// The history browser as a standalone element (tests mount it alone); the component is
// ../components/HistoryBrowser.svelte, mounted by the History tab of App.svelte.
import { flushSync, mount } from "svelte";
import HistoryBrowser from "../components/HistoryBrowser.svelte";
import type { RawOutputApi } from "../run/raw-output";

export { formatDuration, formatTime } from "../lib/format";

export interface HistoryBrowserView {
  element: HTMLElement;
  /** Lists from the newest call again with the current filters. */
  refresh(): Promise<void>;
  /** The filter choices and the list, both again. */
  reload(): Promise<void>;
  /** Appends the next (older) page. */
  older(): Promise<void>;
}

/** The history browser (filters, keyset paging, detail with raw output) as a standalone element. */
export function createHistoryBrowser(api: RawOutputApi): HistoryBrowserView {
  const element = document.createElement("div");
  element.className = "history-host";
  const instance = mount(HistoryBrowser, { target: element, props: { api } }) as { refresh(): Promise<void>; reload(): Promise<void>; older(): Promise<void> };
  flushSync();
  const settled = (p: Promise<void>) => p.then(() => flushSync());
  return { element, refresh: () => settled(instance.refresh()), reload: () => settled(instance.reload()), older: () => settled(instance.older()) };
}
