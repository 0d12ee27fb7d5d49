// A stored call's raw output as a view shows it, apart from the views
// (../components/run/RawOutput.svelte, RawOutputDialog.svelte, which render it): the call's record
// (its total size), the ranges loaded so far as text (./raw-output.ts `RawReader`), Load more,
// Copy (what is loaded) and Save (the whole output, through the shell's native save dialog), and
// what the person is told. The text is shown as a text node: escape sequences and markup stay inert.
import { toCommandError } from "../lib/invoke";
import { formatBytes } from "../lib/format";
import { type RawOutputApi, RawReader } from "./raw-output";

export class RawOutputStore {
  chunks: string[] = $state([]);
  /** Bytes loaded so far. */
  loaded = $state(0);
  /** A range is being read. */
  busy = $state(false);
  error: string | null = $state(null);
  /** The outcome of Copy or Save. */
  note: string | null = $state(null);
  #reader: RawReader | null = null;

  constructor(private readonly api: RawOutputApi) {}

  /** Shows the raw output of `toolCallId` (`total` bytes) from its start: the first range is read. */
  open(toolCallId: string, total: number): Promise<void> {
    this.#reader = new RawReader(this.api, toolCallId, total);
    this.chunks = [];
    this.loaded = 0;
    this.busy = false;
    return this.more();
  }

  /** The next range (a range still being read, or one of an output no longer shown, adds nothing). */
  async more(): Promise<void> {
    const reader = this.#reader;
    if (this.busy || reader === null) return;
    this.busy = true;
    try {
      const text = await reader.next();
      if (reader !== this.#reader) return;
      this.chunks = [...this.chunks, text];
      this.loaded = reader.offset;
      this.error = null;
    } catch (e) {
      if (reader === this.#reader) this.error = toCommandError(e).message;
    } finally {
      if (reader === this.#reader) this.busy = false;
    }
  }

  /** Copies what is loaded (`write`: the clipboard). */
  async copy(write: (text: string) => Promise<void> = (text) => navigator.clipboard.writeText(text)): Promise<void> {
    const total = this.#reader?.total ?? 0;
    try {
      await write(this.chunks.join(""));
      this.note = this.loaded < total ? `copied the first ${formatBytes(this.loaded)}` : "copied";
    } catch (e) {
      this.note = `could not copy: ${e instanceof Error ? e.message : String(e)}`;
    }
  }

  /** Saves the whole output to a file the person picks. */
  async save(): Promise<void> {
    const reader = this.#reader;
    if (reader === null) return;
    try {
      const path = await this.api.saveRawOutput(reader.toolCallId);
      this.note = path === null ? "not saved" : `saved to ${path}`;
    } catch (e) {
      this.note = `could not save: ${toCommandError(e).message}`;
    }
  }
}

/** The record of a call whose raw output a dialog opens: its total size, or why it cannot be read. */
export class RawOutputRecord {
  total: number | null = $state(null);
  error: string | null = $state(null);

  constructor(private readonly api: RawOutputApi) {}

  async load(toolCallId: string): Promise<void> {
    try {
      this.total = (await this.api.callRecord(toolCallId)).raw_total_bytes;
    } catch (e) {
      this.error = toCommandError(e).message;
    }
  }
}
