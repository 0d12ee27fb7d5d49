import { describe, expect, it } from "vitest";
import type { CallRecordView } from "../src/bindings/CallRecordView";
import type { HistoryItem } from "../src/bindings/HistoryItem";
import type { HistoryPageQuery } from "../src/bindings/HistoryPageQuery";
import { emptyForm, localTimeMs, queryOf } from "../src/run/history-filters";
import { applyUpdates, mergeNewer, newCallsText, runningIds, stillMatches } from "../src/run/history-live";
import type { RawOutputApi } from "../src/run/raw-output";
import { ApiError } from "../src/api";
import { createHistoryBrowser, formatDuration } from "../src/view/history";
import { HistoryStore } from "../src/history/store.svelte";

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
      const rows = Array.from({ length: end - start }, (_, k) => item(total - 1 - (start + k)));
      return { rows, next: end < total ? String(end) : null, head: rows[0] ? `h${rows[0].tool_call_id}` : null };
    },
    historyHead: async () => ({ newer: 0, rows: [] }),
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

  it("filter by a path the call changed, trimmed; blank leaves it out", () => {
    expect(queryOf({ ...emptyForm(), changedPath: "  src/main.rs " }, null, 10).changed_path).toBe("src/main.rs");
    expect(queryOf({ ...emptyForm(), changedPath: "   " }, null, 10).changed_path).toBeNull();
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

  it("a call's detail names the container it ran in; a local call's names none", async () => {
    const { api } = fakeApi(2);
    const where = "container 0123456789ab (image `debian:12`) on unix:///run/podman/podman.sock";
    const inContainer: RawOutputApi = { ...api, callRecord: async (id) => ({ ...(await api.callRecord(id)), sandbox: where }) };
    const view = createHistoryBrowser(inContainer);
    document.body.append(view.element);
    await view.refresh();
    view.element.querySelector<HTMLElement>('[data-testid="hb-row"]')?.click();
    for (let i = 0; i < 5; i++) await tick();
    expect(view.element.querySelector('[data-testid="hb-sandbox"]')?.textContent).toBe(`Ran in ${where}`);
    view.element.remove();
    const local = createHistoryBrowser(api);
    document.body.append(local.element);
    await local.refresh();
    local.element.querySelector<HTMLElement>('[data-testid="hb-row"]')?.click();
    for (let i = 0; i < 5; i++) await tick();
    expect(local.element.querySelector('[data-testid="hb-detail"]')).not.toBeNull();
    expect(local.element.querySelector('[data-testid="hb-sandbox"]')).toBeNull();
    local.element.remove();
  });

  it("a synced command's detail shows its project sync with the refused paths revealed", async () => {
    const { api } = fakeApi(2);
    const sync = {
      copied_in: 1, removed_in: 0, brought_back: 2, brought_back_bytes: 3, deleted: 0, more_notes: 0, read_only: false, skipped: [],
      refused: [{ path: [{ kind: "text" as const, text: ".git/hooks/pre-commit" }, { kind: "code" as const, code: "ESC" }], why: [{ kind: "text" as const, text: "protected path" }] }],
      incomplete: null,
    };
    const synced: RawOutputApi = { ...api, callRecord: async (id) => ({ ...(await api.callRecord(id)), sync }) };
    const view = createHistoryBrowser(synced);
    document.body.append(view.element);
    await view.refresh();
    view.element.querySelector<HTMLElement>('[data-testid="hb-row"]')?.click();
    for (let i = 0; i < 5; i++) await tick();
    expect(view.element.querySelector('[data-testid="sync-counts"]')?.textContent).toContain("2 brought back");
    expect([...view.element.querySelectorAll('[data-testid="sync-refused"]')].map((e) => e.textContent)).toEqual([".git/hooks/pre-commit<ESC> protected path"]);
    view.element.remove();
  });

  it("marks the rows of calls that ran in a container with a badge naming it; local rows have none", async () => {
    const { api } = fakeApi(3);
    const where = "container 0123456789ab (image `debian:12`) on unix:///run/podman/podman.sock";
    const mixed: RawOutputApi = {
      ...api,
      historyPage: async (q) => {
        const page = await api.historyPage(q);
        return { ...page, rows: page.rows.map((r) => (r.tool_call_id === "c2" ? { ...r, sandbox: where } : r)) };
      },
    };
    const view = createHistoryBrowser(mixed);
    document.body.append(view.element);
    await view.refresh();
    const badges = [...view.element.querySelectorAll<HTMLElement>('[data-testid="hb-row-sandbox"]')];
    expect(badges.map((b) => b.closest<HTMLElement>('[data-testid="hb-row"]')?.dataset.id)).toEqual(["c2"]);
    expect(badges[0]?.textContent).toBe("container");
    expect(badges[0]?.title).toBe(`Ran in ${where}`);
    view.element.remove();
  });

  it("keeps untrusted text (tool, target, model text) as text", async () => {
    const { api } = fakeApi(1);
    const hostile = "<img src=x onerror=alert(1)>";
    const evil: RawOutputApi = {
      ...api,
      historyPage: async () => ({ rows: [{ ...item(0), tool: hostile, target: `<b>${hostile}</b>` }], next: null, head: "h0" }),
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

/**
 * A store that grows while the list is open, as the shell's is (newest first; a row's cursor is
 * its id): `add` stores a new call, `finish` ends a running one; `history_head` counts the calls
 * stored after `since` and answers the watched rows as stored now.
 */
function liveApi(initial: number) {
  let n = initial;
  const row = (i: number, status = "ok"): HistoryItem => ({ ...item(i), tool_call_id: `l${i}`, status, duration_ms: status === "running" ? null : 5 });
  const store: HistoryItem[] = Array.from({ length: initial }, (_, k) => row(initial - 1 - k));
  const probes: { since: string | null; watch: string[] }[] = [];
  let pages = 0;
  const base = fakeApi(0).api;
  const api: RawOutputApi = {
    ...base,
    historyPage: async (q) => {
      pages++;
      const start = q.cursor === null ? 0 : store.findIndex((r) => r.tool_call_id === q.cursor) + 1;
      const rows = store.slice(start, start + (q.limit ?? 200));
      const more = start + rows.length < store.length;
      return { rows, next: more ? (rows.at(-1)?.tool_call_id ?? null) : null, head: rows[0]?.tool_call_id ?? null };
    },
    historyHead: async (_q, since, watch) => {
      probes.push({ since, watch });
      const at = since === null ? store.length : store.findIndex((r) => r.tool_call_id === since);
      return { newer: Math.max(at, 0), rows: store.filter((r) => watch.includes(r.tool_call_id)) };
    },
    callRecord: async (id) => {
      const found = store.find((r) => r.tool_call_id === id);
      if (!found) throw new ApiError({ code: "project", stage: null, message: `no stored call has the id \`${id}\`` });
      return { ...(await base.callRecord("c0")), item: found };
    },
  };
  return {
    api,
    probes,
    pages: () => pages,
    add: (status = "ok") => {
      const r = row(n++, status);
      store.unshift(r);
      return r.tool_call_id;
    },
    finish: (id: string) => {
      const i = store.findIndex((r) => r.tool_call_id === id);
      const r = store[i];
      if (r) store[i] = { ...r, status: "ok", duration_ms: 1234 };
    },
  };
}

const rowIds = (view: { element: HTMLElement }) => [...view.element.querySelectorAll<HTMLElement>('[data-testid="hb-row"]')].map((r) => r.dataset.id);
const rowOf = (view: { element: HTMLElement }, id: string) => view.element.querySelector<HTMLElement>(`[data-testid="hb-row"][data-id="${id}"]`);
const settleAll = async () => {
  for (let i = 0; i < 5; i++) await tick();
};

describe("history that stays current (pure)", () => {
  const r = (id: string, status = "ok", duration_ms: number | null = 5): HistoryItem => ({ ...item(0), tool_call_id: id, status, duration_ms });

  it("watches only running rows, at most the cap", () => {
    expect(runningIds([r("a"), r("b", "running"), r("c", "running")], 1)).toEqual(["b"]);
    expect(runningIds([r("a")])).toEqual([]);
  });

  it("replaces changed rows and keeps the array when nothing changed", () => {
    const rows = [r("a"), r("b", "running", null)];
    expect(applyUpdates(rows, [r("b", "running", null)])).toBe(rows);
    const out = applyUpdates(rows, [r("b", "ok", 900), r("zz")]);
    expect(out).not.toBe(rows);
    expect(out.map((x) => [x.tool_call_id, x.status, x.duration_ms])).toEqual([
      ["a", "ok", 5],
      ["b", "ok", 900],
    ]);
  });

  it("drops an updated row that no longer matches the status or stage filter shown, as a fresh load would", () => {
    const rows = [r("a", "running", null), r("b", "running", null), r("c", "running", null)];
    const running = { ...emptyForm(), status: "running" };
    const out = applyUpdates(rows, [r("a", "ok", 900), r("b", "running", null)], (x) => stillMatches(x, running));
    expect(out.map((x) => [x.tool_call_id, x.status])).toEqual([
      ["b", "running"],
      ["c", "running"],
    ]);
    // Without a status filter the finished row stays, with its new status.
    const any = applyUpdates(rows, [r("a", "ok", 900)], (x) => stillMatches(x, emptyForm()));
    expect(any.map((x) => [x.tool_call_id, x.status])).toEqual([
      ["a", "ok"],
      ["b", "running"],
      ["c", "running"],
    ]);
    expect(stillMatches({ ...r("a", "error"), stage: "Execution" }, { ...emptyForm(), stage: "Execution" })).toBe(true);
    expect(stillMatches({ ...r("a", "error"), stage: "Execution" }, { ...emptyForm(), stage: "Authorization" })).toBe(false);
  });

  it("puts newer calls on top of what is loaded, or starts over when a page does not reach it", () => {
    const rows = [r("c"), r("b", "running", null), r("a")];
    const merged = mergeNewer(rows, [r("e"), r("d"), r("c"), r("b", "error", 7)]);
    expect(merged?.map((x) => x.tool_call_id)).toEqual(["e", "d", "c", "b", "a"]);
    expect(merged?.[3]?.status).toBe("error");
    expect(mergeNewer(rows, [r("z"), r("y")])).toBeNull();
    expect(mergeNewer([], [r("x")])?.map((x) => x.tool_call_id)).toEqual(["x"]);
    expect(newCallsText(1)).toBe("1 new call");
    expect(newCallsText(12)).toBe("12 new calls");
    expect(newCallsText(1000)).toBe("1000+ new calls");
  });
});

describe("the history store (no view)", () => {
  it("lists, counts calls stored meanwhile while the view is scrolled down, takes them in at the top", async () => {
    const live = liveApi(3);
    const store = new HistoryStore(live.api);
    await store.reload();
    expect(store.rows.map((r) => r.tool_call_id)).toEqual(["l2", "l1", "l0"]);
    expect(store.facets?.tools).toEqual(["execute", "read"]);
    expect(store.filtered).toBe(false);

    store.atTop = () => false;
    live.add();
    live.add();
    await store.poll();
    expect(store.newer).toBe(2);
    expect(store.rows).toHaveLength(3);

    store.atTop = () => true;
    await store.poll();
    expect(store.newer).toBe(0);
    expect(store.rows.map((r) => r.tool_call_id)).toEqual(["l4", "l3", "l2", "l1", "l0"]);

    await store.select("l3");
    expect(store.selected?.item.tool_call_id).toBe("l3");
    await store.select("nope");
    expect(store.selected).toBeNull();
    expect(store.detailError).toBe("no stored call has the id `nope`");
  });

  it("applies the typed filters only on refresh", async () => {
    const { api, queries } = fakeApi(5);
    const store = new HistoryStore(api);
    await store.refresh();
    store.form.search = "cargo";
    expect(store.filtered).toBe(false);
    await store.older();
    await store.refresh();
    expect(store.filtered).toBe(true);
    expect(queries.at(-1)?.search).toBe("cargo");
  });
});

describe("history that stays current (component)", () => {
  it("at the top: a call stored meanwhile appears on top; a running row and its open detail take the final status", async () => {
    const live = liveApi(3);
    const view = createHistoryBrowser(live.api);
    document.body.append(view.element);
    await view.refresh();
    expect(rowIds(view)).toEqual(["l2", "l1", "l0"]);
    await view.poll();
    expect(live.probes.at(-1)).toEqual({ since: "l2", watch: [] });
    expect(rowIds(view)).toEqual(["l2", "l1", "l0"]);
    const pagesBefore = live.pages();

    const running = live.add("running");
    await view.poll();
    await settleAll();
    expect(rowIds(view)).toEqual([running, "l2", "l1", "l0"]);
    expect(live.pages()).toBe(pagesBefore + 1);
    expect(rowOf(view, running)?.dataset.status).toBe("running");
    expect(view.element.querySelector('[data-testid="hb-count"]')?.textContent).toBe("4 loaded");
    rowOf(view, running)?.click();
    await settleAll();
    expect(view.element.querySelector<HTMLElement>('[data-testid="hb-detail"] .pill')?.textContent).toBe("running");

    live.finish(running);
    await view.poll();
    await settleAll();
    expect(live.probes.at(-1)).toEqual({ since: running, watch: [running] });
    expect(rowOf(view, running)?.dataset.status).toBe("ok");
    expect(rowOf(view, running)?.querySelector(".history-duration")?.textContent).toBe("1.2 s");
    expect(view.element.querySelector<HTMLElement>('[data-testid="hb-detail"]')?.dataset.id).toBe(running);
    expect(view.element.querySelector<HTMLElement>('[data-testid="hb-detail"] .pill')?.textContent).toBe("ok");
    expect(live.pages()).toBe(pagesBefore + 1);
    view.destroy();
    view.element.remove();
  });

  it("scrolled down: a pill counts the new calls and nothing moves; the pill takes them in", async () => {
    const live = liveApi(100);
    const view = createHistoryBrowser(live.api);
    document.body.append(view.element);
    await view.refresh();
    view.element.querySelector<HTMLElement>('[data-testid="hb-row"][data-id="l97"]')?.click();
    await settleAll();
    const scroller = view.element.querySelector<HTMLElement>(".history-scroll");
    if (scroller) scroller.scrollTop = 340;
    const before = rowIds(view);
    live.add();
    live.add();
    await view.poll();
    await settleAll();
    expect(view.element.querySelector('[data-testid="hb-newer"]')?.textContent).toBe("↑ 2 new calls");
    expect(rowIds(view)).toEqual(before);
    expect(view.element.querySelector<HTMLElement>('[data-testid="hb-detail"]')?.dataset.id).toBe("l97");
    expect(rowOf(view, "l97")?.getAttribute("aria-pressed")).toBe("true");

    view.element.querySelector<HTMLButtonElement>('[data-testid="hb-newer"]')?.click();
    await settleAll();
    expect(view.element.querySelector('[data-testid="hb-newer"]')).toBeNull();
    expect(rowIds(view).slice(0, 3)).toEqual(["l101", "l100", "l99"]);
    expect(view.element.querySelector('[data-testid="hb-count"]')?.textContent).toBe("102 loaded");
    expect(view.element.querySelector<HTMLElement>('[data-testid="hb-detail"]')?.dataset.id).toBe("l97");
    view.destroy();
    view.element.remove();
  });

  it("an empty list takes the first call in; a failed probe changes nothing but says the list may be out of date", async () => {
    const live = liveApi(0);
    let fail = false;
    const api: RawOutputApi = {
      ...live.api,
      historyHead: async (...args) => {
        if (fail) throw new ApiError({ code: "internal", stage: null, message: "call store: busy" });
        return live.api.historyHead(...args);
      },
    };
    const view = createHistoryBrowser(api);
    document.body.append(view.element);
    await view.refresh();
    expect(view.element.querySelector('[data-testid="hb-empty"]')).not.toBeNull();
    const id = live.add();
    fail = true;
    await view.poll();
    await settleAll();
    expect(rowIds(view)).toEqual([]);
    expect(view.element.querySelector('[data-testid="hb-error"]')).toBeNull();
    // The list kept may be out of date: said, not silently shown as current.
    expect(view.element.querySelector('[data-testid="hb-stale"]')?.textContent).toBe(
      "Possibly out of date: checking for new calls failed (call store: busy). Retrying.",
    );
    fail = false;
    await view.poll();
    await settleAll();
    expect(rowIds(view)).toEqual([id]);
    expect(view.element.querySelector('[data-testid="hb-stale"]')).toBeNull();
    expect(live.probes.at(-1)?.since).toBeNull();
    view.destroy();
    view.element.remove();
  });
});

describe("history filters typed but not applied", () => {
  it("leave older pages and the probe on the list shown", async () => {
    const { api, queries } = fakeApi(1200);
    const heads: HistoryPageQuery[] = [];
    const view = createHistoryBrowser({ ...api, historyHead: async (q) => (heads.push(q), { newer: 0, rows: [] }) });
    document.body.append(view.element);
    await view.refresh();
    const box = view.element.querySelector<HTMLInputElement>('[data-testid="hb-search"]');
    if (box) box.value = "typed, not applied";
    box?.dispatchEvent(new Event("input", { bubbles: true }));
    await view.older();
    await view.poll();
    expect(queries.at(-1)).toMatchObject({ cursor: "500", search: null });
    expect(heads.at(-1)).toMatchObject({ search: null });
    expect(view.element.querySelector('[data-testid="hb-count"]')?.textContent).toBe("1000 loaded, more below");
    view.destroy();
    view.element.remove();
  });
});
