import { describe, expect, it } from "vitest";
import type { CallRecordView } from "../src/bindings/CallRecordView";
import type { HistoryItem } from "../src/bindings/HistoryItem";
import type { HistoryPageQuery } from "../src/bindings/HistoryPageQuery";
import { emptyForm, localTimeMs, queryOf } from "../src/run/history-filters";
import type { RawOutputApi } from "../src/run/raw-output";
import { ApiError } from "../src/api";
import { createHistoryBrowser, formatDuration } from "../src/view/history";

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

/** Types into the search box and submits the filters (happy-dom cannot drive a select's binding:
 * it has no `option:checked`; the selects are driven in Chromium, ui/browser-test/history.test.mjs). */
async function search(view: { element: HTMLElement }, text: string): Promise<void> {
  const box = view.element.querySelector<HTMLInputElement>('[data-testid="hb-search"]');
  expect(box).not.toBeNull();
  if (box) box.value = text;
  box?.dispatchEvent(new Event("input", { bubbles: true }));
  view.element.querySelector<HTMLButtonElement>('[data-testid="hb-apply"]')?.click();
  for (let i = 0; i < 3; i++) await tick();
}

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

  it("offers the shell's tools as choices, lists again on a search, and reload() asks for the choices again", async () => {
    const { api, queries } = fakeApi(10);
    let facetCalls = 0;
    const counted: RawOutputApi = { ...api, historyFacets: async () => (facetCalls++, api.historyFacets()) };
    const view = createHistoryBrowser(counted);
    document.body.append(view.element);
    await view.reload();
    for (let i = 0; i < 3; i++) await tick();
    const tool = view.element.querySelector<HTMLSelectElement>('[data-testid="hb-tool"]');
    expect([...(tool?.options ?? [])].map((o) => o.value)).toEqual(["", "execute", "read"]);
    const before = queries.length;
    await search(view, "cargo test");
    expect(queries.length).toBeGreaterThan(before);
    expect(queries.at(-1)).toMatchObject({ tools: [], search: "cargo test", cursor: null });
    // reload() asks for the choices again (a run may have used a new tool meanwhile).
    const facetsBefore = facetCalls;
    await view.reload();
    expect(facetCalls).toBe(facetsBefore + 1);
    view.element.remove();
  });

  it("says whether the project has no call or the filters match none", async () => {
    const { api } = fakeApi(0);
    const view = createHistoryBrowser(api);
    document.body.append(view.element);
    await view.refresh();
    const empty = () => view.element.querySelector('[data-testid="hb-empty"]')?.textContent;
    expect(empty()).toBe("No calls recorded for this project yet.");
    await search(view, "nothing like this");
    expect(empty()).toBe("No stored call matches the filters.");
    view.element.remove();
  });

  it("shows the shell's typed error instead of rows, and a detail error in the pane", async () => {
    const { api } = fakeApi(3);
    const failing: RawOutputApi = {
      ...api,
      historyPage: async () => {
        throw new ApiError({ code: "project", stage: null, message: "not a history cursor: `zz`" });
      },
    };
    const view = createHistoryBrowser(failing);
    document.body.append(view.element);
    await view.refresh();
    expect(view.element.querySelector('[data-testid="hb-error"]')?.textContent).toContain("not a history cursor");
    expect(view.element.querySelector('[data-testid="hb-row"]')).toBeNull();
    view.element.remove();
  });

  it("keeps untrusted text (tool, target, model text) as text", async () => {
    const { api } = fakeApi(1);
    const hostile = "<img src=x onerror=alert(1)>";
    const evil: RawOutputApi = {
      ...api,
      historyPage: async () => ({ rows: [{ ...item(0), tool: hostile, target: `<b>${hostile}</b>` }], next: null }),
      callRecord: async (id) => ({ ...(await api.callRecord(id)), model: `<script>${hostile}</script>` }),
    };
    const view = createHistoryBrowser(evil);
    document.body.append(view.element);
    await view.refresh();
    const row = view.element.querySelector<HTMLElement>('[data-testid="hb-row"]');
    expect(row?.querySelector(".history-tool")?.textContent).toBe(hostile);
    expect(row?.dataset.tool).toBe(hostile);
    row?.click();
    for (let i = 0; i < 5; i++) await tick();
    expect(view.element.querySelector('[data-testid="hb-model"]')?.textContent).toBe(`<script>${hostile}</script>`);
    expect(view.element.querySelector("img, b, script")).toBeNull();
    view.element.remove();
  });

  it("formats durations", () => {
    expect(formatDuration(null)).toBe("–");
    expect(formatDuration(999)).toBe("999 ms");
    expect(formatDuration(1500)).toBe("1.5 s");
  });
});
