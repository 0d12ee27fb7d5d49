// The history browser as a standalone element (tests mount it alone); the component is
// ../components/HistoryBrowser.svelte, mounted by the History tab of App.svelte.
import { flushSync, mount, unmount } from "svelte";
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
  /** One probe of `history_head` (what the open tab does every POLL_MS). */
  poll(): Promise<void>;
  /** Unmounts the component (stops its probe timer). */
  destroy(): void;
}

interface Instance {
  refresh(): Promise<void>;
  reload(): Promise<void>;
  older(): Promise<void>;
  poll(): Promise<void>;
}

/**
 * The history browser (filters, keyset paging, detail with raw output) as a standalone element.
 * `active` starts its own probe timer (as the shown tab); tests leave it off and call `poll()`.
 */
export function createHistoryBrowser(api: RawOutputApi, { active = false }: { active?: boolean } = {}): HistoryBrowserView {
  const element = document.createElement("div");
  element.className = "history-host";
  const component = mount(HistoryBrowser, { target: element, props: { api, active } });
  const instance = component as unknown as Instance;
  flushSync();
  const settled = (p: Promise<void>) => p.then(() => flushSync());
  return {
    element,
    refresh: () => settled(instance.refresh()),
    reload: () => settled(instance.reload()),
    older: () => settled(instance.older()),
    poll: () => settled(instance.poll()),
    destroy: () => void unmount(component),
  };
}
