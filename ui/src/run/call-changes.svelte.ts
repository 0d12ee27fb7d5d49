// What a finished call changed, as its card shows it, apart from the view
// (../components/run/CallChanges.svelte, which renders it): the call's change view read from the
// shell (`call_changes`), or why it could not be read. A call without a checkpoint (read-only, or
// refused before it ran) shows nothing. An answer for a call no longer shown is dropped.
import type { ChangesView } from "../bindings/ChangesView";
import { toCommandError } from "../lib/invoke";
import type { CheckpointsApi } from "./checkpoints-api";

export class CallChangesStore {
  view: ChangesView | null = $state.raw(null);
  error: string | null = $state(null);
  /** The read whose answer is shown; an answer to any other is dropped. */
  #current = 0;

  constructor(private readonly api: CheckpointsApi) {}

  /** Reads what call `callId` changed (again after a rewind: the files may have changed since). */
  async load(callId: string): Promise<void> {
    const n = ++this.#current;
    this.view = null;
    this.error = null;
    try {
      const view = await this.api.callChanges(callId);
      if (n === this.#current) this.view = view;
    } catch (e) {
      if (n !== this.#current) return;
      const err = toCommandError(e);
      // No checkpoint (a read-only call, or one refused before it ran): nothing to show.
      if (err.code === "checkpoint" && err.stage === "Parameters") return;
      // No shell to ask (the browser preview): nothing to show.
      if (err.code === "ipc") return;
      this.error = err.message;
    }
  }
}
