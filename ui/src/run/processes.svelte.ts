// The background processes panel's state, apart from its view
// (../components/run/ProcessesPanel.svelte, which renders it): the rows read from the shell, what
// went wrong, which Stop is under way, and the polling while the panel is shown. An answer to an
// older read that arrives after a newer one is dropped (the list never steps back).
import type { ProcessRow } from "../bindings/ProcessRow";
import { toCommandError } from "../lib/invoke";
import type { ProcessesApi } from "./processes-api";

/** How often the list is read again while shown. */
export const PROCESSES_POLL_MS = 1_000;

/** The window is hidden (minimized, another workspace): nothing is polled then. */
const windowHidden = (): boolean => typeof document !== "undefined" && document.visibilityState === "hidden";

export class ProcessesStore {
  rows: ProcessRow[] = $state([]);
  error: string | null = $state(null);
  /** Process ids whose Stop is under way. */
  stopping: Record<string, boolean> = $state({});
  /** Reads started so far; an answer to an older one than the last shown is dropped. */
  #asked = 0;
  #shownRead = 0;

  constructor(
    private readonly api: ProcessesApi,
    private readonly hidden: () => boolean = windowHidden,
  ) {}

  /** Reads the list again. */
  async refresh(): Promise<void> {
    const n = ++this.#asked;
    try {
      const rows = await this.api.listProcesses();
      if (n < this.#shownRead) return;
      this.#shownRead = n;
      this.rows = rows;
      this.error = null;
    } catch (e) {
      if (n < this.#shownRead) return;
      this.#shownRead = n;
      this.error = toCommandError(e).message;
    }
  }

  /**
   * The panel was shown (`visible`) or hidden: shown, the list is read now and every `intervalMs`
   * (not while the window is hidden). Returns what stops the polling.
   */
  shown(visible: boolean, intervalMs: number = PROCESSES_POLL_MS): () => void {
    if (!visible) return () => undefined;
    void this.refresh();
    const timer = setInterval(() => {
      if (!this.hidden()) void this.refresh();
    }, intervalMs);
    return () => clearInterval(timer);
  }

  /** Keeps a process running after its run ends (or not), then reads the list again. */
  async keep(id: string, on: boolean): Promise<void> {
    try {
      await this.api.keepProcess(id, on);
    } catch (e) {
      this.error = toCommandError(e).message;
    }
    await this.refresh();
  }

  /** Stops a process (its Stop is disabled meanwhile), then reads the list again. */
  async stop(id: string): Promise<void> {
    this.stopping = { ...this.stopping, [id]: true };
    try {
      await this.api.stopProcess(id);
    } catch (e) {
      this.error = toCommandError(e).message;
    }
    const rest = { ...this.stopping };
    delete rest[id];
    this.stopping = rest;
    await this.refresh();
  }
}
