import { describe, expect, it } from "vitest";
import type { CallRecordView } from "../src/bindings/CallRecordView";
import type { HistoryItem } from "../src/bindings/HistoryItem";
import type { HistoryPageQuery } from "../src/bindings/HistoryPageQuery";
import { emptyForm, localTimeMs, queryOf } from "../src/run/history-filters";
import type { RawOutputApi } from "../src/run/raw-output";
import { createHistoryBrowser } from "../src/view/history";

const item = (i: number): HistoryItem => ({
  tool_call_id: `c${i}`,
  run_id: "r1",
  tool: i % 2 ? "read" : "execute",
  status: i % 3 ? "ok" : "interrupted",
  stage: null,
  error_message: null,
  started_at: "2026-11-30T07:22:01.456Z",
  duration_ms: 5,
  target: `target ${i}`,
  compaction_state: "none",
});

function fakeApi(total: number) {
  const queries: HistoryPageQuery[] = [];
  const raw = new TextEncoder().encode("raw <b>out</b>\u001b[2J put");
  const api: RawOutputApi = {
    historyPage: async (q) => {
      queries.push(q);
      const start = q.cursor === null ? 0 : Number(q.cursor);
      const end = Math.min(total, start + (q.limit ?? 200));
      return { rows: Array.from({ length: end - start }, (_, k) => item(total - 1 - (start + k))), next: end < total ? String(end) : null };
    },
    historyFacets: async () => ({ tools: ["execute", "read"], runs: ["r1"], statuses: ["ok", "interrupted"], stages: ["Execution"] }),
    callRecord: async (id) =>
      ({
        item: { ...item(Number(id.slice(1))), compaction_state: "compacted" },
        error_code: null,
        finished_at: null,
        input: { command: "ls" },
        model: "model text",
        client: { exit_code: 0 },
        display_text: null,
        compaction_strategy: "head_tail",
        compaction_error: null,
        raw_format: "bytes",
        raw_total_bytes: raw.length,
        raw_partial: false,
      }) satisfies CallRecordView,
    rawRange: async (_id, offset, length) => raw.slice(offset, offset + length),
    saveRawOutput: async () => "/tmp/x.out",
  };
  return { api, queries };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("history filters", () => {
  it("turn the form into a query: one value per filter, blank ones left out, times in ms", () => {
    const form = { ...emptyForm(), status: "interrupted", stage: "Execution", search: "  cargo  ", since: "2026-11-30T08:00" };
    const q = queryOf(form, "5.7", 100);
    expect(q).toMatchObject({ statuses: ["interrupted"], stages: ["Execution"], tools: [], run_id: null, search: "cargo", cursor: "5.7", limit: 100, until_ms: null });
    expect(q.since_ms).toBe(new Date("2026-11-30T08:00").getTime());
    expect(localTimeMs("not a date")).toBeNull();
  });
});

describe("history browser", () => {
  it("lists newest first, pages backward by cursor, and shows a call's detail with its raw output as text", async () => {
    const { api, queries } = fakeApi(1200);
    const view = createHistoryBrowser(api);
    document.body.append(view.element);
    await view.refresh();
    expect(queries.at(-1)?.cursor).toBeNull();
    expect(view.element.querySelector('[data-testid="hb-count"]')?.textContent).toContain("500 loaded, more below");
    await view.older();
    await view.older();
    expect(queries.slice(-2).map((q) => q.cursor)).toEqual(["500", "1000"]);
    expect(view.element.querySelector('[data-testid="hb-count"]')?.textContent).toBe("1200 loaded");
    const first = view.element.querySelector<HTMLElement>('[data-testid="hb-row"]');
    expect(first?.dataset.id).toBe("c1199");
    first?.click();
    for (let i = 0; i < 5; i++) await tick();
    expect(view.element.querySelector('[data-testid="hb-compaction"]')?.textContent).toBe("compacted (head_tail)");
    const rawText = view.element.querySelector('[data-testid="raw-text"]');
    expect(rawText?.textContent).toBe("raw <b>out</b>\u001b[2J put");
    expect(rawText?.querySelector("b")).toBeNull();
    view.element.remove();
  });
});
