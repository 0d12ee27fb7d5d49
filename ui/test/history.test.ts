import { beforeEach, describe, expect, it } from "vitest";
import type { Api, HistoryQuery } from "../src/api";
import { ApiError } from "../src/api";
import type { CallDetail } from "../src/bindings/CallDetail";
import type { HistoryEntry } from "../src/bindings/HistoryEntry";
import { createHistory, formatDuration, RAW_PAGE_BYTES } from "../src/view/history";

function entry(partial: Partial<HistoryEntry> & Pick<HistoryEntry, "tool_call_id">): HistoryEntry {
  return {
    run_id: "desktop_1",
    tool: "read_file",
    status: "ok",
    stage: null,
    error_message: null,
    started_at: "2026-11-30T07:22:01.456Z",
    duration_ms: 12,
    ...partial,
  };
}

const ROWS: HistoryEntry[] = [
  entry({ tool_call_id: "call_2", tool: "write_file", status: "rejected", stage: "Authorization", duration_ms: 2400 }),
  entry({ tool_call_id: "call_1" }),
];

function detail(id: string, offset: number): CallDetail {
  const row = ROWS.find((r) => r.tool_call_id === id) as HistoryEntry;
  return {
    entry: row,
    input: { path: "notes.txt" },
    model: "1: first line",
    raw_text: offset === 0 ? "first line\n" : "second line\n",
    raw_offset: offset,
    raw_next_offset: offset === 0 ? 11 : null,
    raw_total_bytes: 23,
    raw_partial: false,
  };
}

function fakeApi() {
  const queries: HistoryQuery[] = [];
  const shows: Array<[string, number | undefined, number | undefined]> = [];
  let rows = ROWS;
  let fail: ApiError | null = null;
  const api: Api = {
    projectInfo: async () => ({ root: "/p", data_dir: "/d", settings_files: [], settings_problems: [], event_version: 1 }),
    listTools: async () => [],
    callTool: async () => {
      throw new Error("no call expected");
    },
    cancelCall: async () => false,
    answerConfirm: async () => false,
    listHistory: async (query = {}) => {
      queries.push(query);
      if (fail) throw fail;
      const text = query.search?.toLowerCase();
      return text ? rows.filter((r) => r.tool.includes(text)) : rows;
    },
    showCall: async (id, offset, limit) => {
      shows.push([id, offset, limit]);
      if (id === "call_missing") throw new ApiError({ code: "project", stage: null, message: "no stored call has the id `call_missing`" });
      return detail(id, offset ?? 0);
    },
  };
  return {
    api,
    queries,
    shows,
    setRows: (r: HistoryEntry[]) => (rows = r),
    setFail: (e: ApiError | null) => (fail = e),
  };
}

const flush = () => new Promise((r) => setTimeout(r, 0));
const texts = (sel: string) => [...document.querySelectorAll(sel)].map((e) => e.textContent);

let host: HTMLElement;
beforeEach(() => {
  document.body.innerHTML = "<div id=host></div>";
  host = document.getElementById("host") as HTMLElement;
});

describe("history panel", () => {
  it("lists stored calls newest first with tool, status pill, duration and id", async () => {
    const f = fakeApi();
    const history = createHistory(f.api);
    host.appendChild(history.element);
    await history.refresh();

    const rows = [...host.querySelectorAll('[data-testid="history-row"]')];
    expect(rows.map((r) => r.getAttribute("data-id"))).toEqual(["call_2", "call_1"]);
    expect(texts('[data-testid="history-row"] .history-tool')).toEqual(["write_file", "read_file"]);
    expect(texts('[data-testid="history-status"]')).toEqual(["rejected", "ok"]);
    expect(host.querySelector('[data-testid="history-status"]')?.className).toContain("status-rejected");
    expect(texts('[data-testid="history-row"] .history-duration')).toEqual(["2.4 s", "12 ms"]);
    expect(texts('[data-testid="history-row"] .history-id')).toEqual(["call_2", "call_1"]);
    expect(f.queries).toEqual([{ search: undefined }]);
  });

  it("searches through the shell and refreshes on the button", async () => {
    const f = fakeApi();
    const history = createHistory(f.api);
    host.appendChild(history.element);
    await history.refresh();

    const search = host.querySelector('[data-testid="history-search"]') as HTMLInputElement;
    search.value = "write";
    search.dispatchEvent(new Event("input"));
    await flush();
    expect(f.queries.at(-1)).toEqual({ search: "write" });
    expect(texts('[data-testid="history-row"] .history-tool')).toEqual(["write_file"]);

    search.value = "nothing";
    search.dispatchEvent(new Event("input"));
    await flush();
    expect(host.querySelector('[data-testid="history-empty"]')?.textContent).toContain("No stored call matches");

    search.value = "";
    f.setRows([entry({ tool_call_id: "call_3", tool: "ls" }), ...ROWS]);
    (host.querySelector('[data-testid="history-refresh"]') as HTMLButtonElement).click();
    await flush();
    expect(texts('[data-testid="history-row"] .history-tool')).toEqual(["ls", "write_file", "read_file"]);
  });

  it("shows the input, model text and a raw output page of the clicked call, and pages on", async () => {
    const f = fakeApi();
    const history = createHistory(f.api);
    host.appendChild(history.element);
    await history.refresh();

    (host.querySelector('[data-id="call_1"] .history-tool') as HTMLElement).click();
    await flush();
    expect(f.shows).toEqual([["call_1", 0, RAW_PAGE_BYTES]]);
    expect(host.querySelector('[data-id="call_1"]')?.getAttribute("aria-pressed")).toBe("true");
    const card = host.querySelector('[data-testid="history-detail"]') as HTMLElement;
    expect(card.getAttribute("data-id")).toBe("call_1");
    expect(JSON.parse(host.querySelector('[data-testid="detail-input"]')?.textContent ?? "")).toEqual({ path: "notes.txt" });
    expect(host.querySelector('[data-testid="detail-model"]')?.textContent).toBe("1: first line");
    expect(host.querySelector('[data-testid="detail-raw"]')?.textContent).toBe("first line\n");
    expect(card.textContent).toContain("bytes 0–11 of 23");

    (host.querySelector('[data-testid="detail-more"]') as HTMLButtonElement).click();
    await flush();
    expect(f.shows.at(-1)).toEqual(["call_1", 11, RAW_PAGE_BYTES]);
    expect(host.querySelector('[data-testid="detail-raw"]')?.textContent).toBe("second line\n");
    expect(host.querySelector('[data-testid="detail-more"]')).toBeNull();
  });

  it("shows the shell's typed error instead of rows", async () => {
    const f = fakeApi();
    f.setFail(new ApiError({ code: "project", stage: null, message: "unknown status `bogus`" }));
    const history = createHistory(f.api);
    host.appendChild(history.element);
    await history.refresh();
    expect(host.querySelector('[data-testid="history-error"]')?.textContent).toContain("unknown status");
    expect(host.querySelector('[data-testid="history-row"]')).toBeNull();
  });

  it("keeps untrusted text as text", async () => {
    const f = fakeApi();
    f.setRows([entry({ tool_call_id: "call_x", tool: "<img src=x onerror=alert(1)>" })]);
    const history = createHistory(f.api);
    host.appendChild(history.element);
    await history.refresh();
    expect(host.querySelector("img")).toBeNull();
    expect(texts('[data-testid="history-row"] .history-tool')).toEqual(["<img src=x onerror=alert(1)>"]);
  });

  it("formats durations", () => {
    expect(formatDuration(null)).toBe("–");
    expect(formatDuration(999)).toBe("999 ms");
    expect(formatDuration(1500)).toBe("1.5 s");
  });
});
