// Carries live command output from the run-event listener to the terminal of each tool card,
// outside the reactive state (output can be tens of megabytes). Chunks are coalesced: at most one
// write per call per animation frame, so a flood of small events never stalls the UI thread. Output
// that arrives before its terminal mounts is kept (bounded) and written when it subscribes.

export type OutputSink = (text: string) => void;

/** Output kept per call while no terminal listens (older bytes are dropped and counted). */
export const MAX_BUFFERED_CHARS = 16 * 1024 * 1024;

interface Channel {
  pending: string[];
  pendingChars: number;
  dropped: number;
  sink: OutputSink | null;
}

/**
 * Largest piece handed to the terminal in one write. xterm.js parses each write in one go and
 * yields only between writes, so one huge coalesced string would block the UI thread.
 */
export const MAX_WRITE_CHARS = 16 * 1024;

export type Scheduler = (flush: () => void) => void;

const frame: Scheduler = (flush) => {
  if (typeof requestAnimationFrame === "function") requestAnimationFrame(() => flush());
  else setTimeout(flush, 16);
};

export class OutputBus {
  private channels = new Map<string, Channel>();
  private scheduled = false;
  constructor(private readonly schedule: Scheduler = frame) {}

  private channel(id: string): Channel {
    let ch = this.channels.get(id);
    if (!ch) {
      ch = { pending: [], pendingChars: 0, dropped: 0, sink: null };
      this.channels.set(id, ch);
    }
    return ch;
  }

  publish(id: string, chunk: string): void {
    const ch = this.channel(id);
    ch.pending.push(chunk);
    ch.pendingChars += chunk.length;
    while (ch.sink === null && ch.pendingChars > MAX_BUFFERED_CHARS && ch.pending.length > 1) {
      const old = ch.pending.shift() ?? "";
      ch.pendingChars -= old.length;
      ch.dropped += old.length;
    }
    if (ch.sink) this.request();
  }

  /** Attaches a terminal; returns the detach function. Buffered output is written first. */
  subscribe(id: string, sink: OutputSink): () => void {
    const ch = this.channel(id);
    ch.sink = sink;
    if (ch.dropped > 0) {
      sink(`[${ch.dropped} earlier characters were not kept before this view opened]\r\n`);
      ch.dropped = 0;
    }
    if (ch.pending.length > 0) this.request();
    return () => {
      if (ch.sink === sink) ch.sink = null;
    };
  }

  /** Forgets a call's buffered output (run closed). */
  clear(): void {
    this.channels.clear();
  }

  /** Writes everything pending now (tests, and before a run view is torn down). */
  flush(): void {
    this.scheduled = false;
    for (const ch of this.channels.values()) {
      if (!ch.sink || ch.pending.length === 0) continue;
      const chunks = ch.pending;
      ch.pending = [];
      ch.pendingChars = 0;
      for (const piece of pieces(chunks)) ch.sink(piece);
    }
  }

  private request(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => this.flush());
  }
}

/** Joins small chunks and splits large ones into pieces of at most MAX_WRITE_CHARS, in order. */
export function pieces(chunks: readonly string[]): string[] {
  const out: string[] = [];
  let buf: string[] = [];
  let size = 0;
  const push = () => {
    if (buf.length > 0) out.push(buf.length === 1 ? (buf[0] ?? "") : buf.join(""));
    buf = [];
    size = 0;
  };
  for (const chunk of chunks) {
    for (let at = 0; at < chunk.length; ) {
      const take = Math.min(chunk.length - at, MAX_WRITE_CHARS - size);
      buf.push(at === 0 && take === chunk.length ? chunk : chunk.slice(at, at + take));
      size += take;
      at += take;
      if (size >= MAX_WRITE_CHARS) push();
    }
  }
  push();
  return out;
}
