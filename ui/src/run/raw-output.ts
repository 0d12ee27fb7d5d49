// A stored call's raw output, recovered by call id: its record (total size), byte ranges (as bytes,
// exactly as stored) and a save to a file the person picks in a native dialog. Decoding to text is
// done here, incrementally, so a multi-byte character split across two ranges stays whole.
import { ApiError, type InvokeFn, shellCommands } from "../lib/invoke";
import type { CallRecordView } from "../bindings/CallRecordView";
import type { HistoryFacets } from "../bindings/HistoryFacets";
import type { HistoryHeadView } from "../bindings/HistoryHeadView";
import type { HistoryPageQuery } from "../bindings/HistoryPageQuery";
import type { HistoryPageView } from "../bindings/HistoryPageView";

/** Bytes fetched per range (the shell caps a range at 1 MiB). */
export const RAW_RANGE_BYTES = 256 * 1024;

export interface RawOutputApi {
  callRecord(toolCallId: string): Promise<CallRecordView>;
  /** Bytes `offset..offset+length` of the raw output (fewer at its end). */
  rawRange(toolCallId: string, offset: number, length: number): Promise<Uint8Array>;
  /** Saves the whole raw output through a native save dialog; the path, or null if dismissed. */
  saveRawOutput(toolCallId: string): Promise<string | null>;
  historyPage(query: HistoryPageQuery): Promise<HistoryPageView>;
  historyFacets(): Promise<HistoryFacets>;
  /**
   * How many calls matching `query`'s filters were stored after `since` (a page's `head`; every
   * matching call when null), and the rows of `watch` (calls shown as running) as they are now.
   */
  historyHead(query: HistoryPageQuery, since: string | null, watch: string[]): Promise<HistoryHeadView>;
}

/** The bytes of an IPC answer: Tauri hands raw responses over as an ArrayBuffer. */
export function asBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (Array.isArray(value)) return Uint8Array.from(value as number[]);
  throw new ApiError({ code: "ipc", stage: null, message: "the raw output did not arrive as bytes" });
}

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createRawOutputApi(call?: InvokeFn): RawOutputApi {
  const c = shellCommands(call);
  return {
    callRecord: (toolCallId) => c.callRecord({ toolCallId }),
    rawRange: async (toolCallId, offset, length) => asBytes(await c.rawOutputRange({ toolCallId, offset, length })),
    saveRawOutput: (toolCallId) => c.saveRawOutput({ toolCallId }),
    historyPage: (query) => c.historyPage({ query }),
    historyFacets: () => c.historyFacets(),
    historyHead: (query, since, watch) => c.historyHead({ query, since, watch }),
  };
}

/** Reads a raw output range by range, decoding UTF-8 across range boundaries. */
export class RawReader {
  private readonly decoder = new TextDecoder("utf-8", { fatal: false });
  offset = 0;

  constructor(
    private readonly api: RawOutputApi,
    readonly toolCallId: string,
    readonly total: number,
  ) {}

  get done(): boolean {
    return this.offset >= this.total;
  }

  /** The next range as text ("" at the end). */
  async next(length = RAW_RANGE_BYTES): Promise<string> {
    if (this.done) return "";
    const bytes = await this.api.rawRange(this.toolCallId, this.offset, length);
    if (bytes.length === 0) {
      this.offset = this.total;
      return this.decoder.decode();
    }
    this.offset += bytes.length;
    return this.decoder.decode(bytes, { stream: !this.done });
  }
}
