// A call the model sent without a tool name (the agent answers it at Discovery and the run goes on)
// shows "(no name)", styled as missing, wherever a call's name is shown: the run view's card, the
// approval dialog, History rows and detail. A named call shows its name, not styled.
import { confirmRequest } from "./fixtures";
import { flushSync, mount, unmount } from "svelte";
import { describe, expect, it } from "vitest";
import type { ConfirmRequest } from "../src/bindings/ConfirmRequest";
import type { HistoryItem } from "../src/bindings/HistoryItem";
import ApprovalDialog from "../src/components/run/ApprovalDialog.svelte";
import ToolCardView from "../src/components/run/ToolCardView.svelte";
import { NO_TOOL_NAME, toolNameMissing, toolNameText } from "../src/lib/format";
import type { RunEvent } from "../src/provisional/run-types";
import { OutputBus } from "../src/run/output-bus";
import type { RawOutputApi } from "../src/run/raw-output";
import { applyRunEvent, emptyRun, type ToolCard } from "../src/run/state";
import { createHistoryBrowser } from "../src/view/history";

const tick = () => new Promise((r) => setTimeout(r, 0));

function cardOf(tool: string): ToolCard {
  const events: RunEvent[] = [
    { type: "tool_call", tool_call_id: "c1", tool, input: {} },
    { type: "tool_result", tool_call_id: "c1", status: "error", stage: "Discovery", model: "a tool call must name a tool", duration_ms: 0, exit_code: null, omitted_bytes: null, activated: [], hooks: [] },
  ];
  let s = emptyRun();
  for (const e of events) s = applyRunEvent(s, e, 1000);
  const item = s.items.find((i) => i.kind === "tool");
  if (!item || item.kind !== "tool") throw new Error("no card");
  return item.card;
}

function cardName(tool: string): { text: string | null | undefined; missing: boolean | undefined; label: string | null | undefined } {
  const host = document.createElement("div");
  document.body.append(host);
  const c = mount(ToolCardView, { target: host, props: { card: cardOf(tool), bus: new OutputBus(), onstop: () => {} } });
  flushSync();
  const name = host.querySelector('[data-testid="tool-name"]');
  const out = {
    text: name?.textContent,
    missing: name?.classList.contains("tool-name-missing"),
    label: host.querySelector('[data-testid="tool-card"]')?.getAttribute("aria-label"),
  };
  unmount(c);
  host.remove();
  return out;
}

describe("a call without a tool name", () => {
  it("is shown as '(no name)' (blank names too), a real name as itself", () => {
    expect(toolNameText("")).toBe(NO_TOOL_NAME);
    expect(toolNameText("  \t")).toBe("(no name)");
    expect(toolNameText(null)).toBe("(no name)");
    expect(toolNameText("read_file")).toBe("read_file");
    expect(toolNameMissing(" ")).toBe(true);
    expect(toolNameMissing("read_file")).toBe(false);
  });

  it("has a card in the run view that says '(no name)', styled as missing", () => {
    expect(cardName("")).toEqual({ text: "(no name)", missing: true, label: "(no name) {}" });
    expect(cardName("read_file")).toMatchObject({ text: "read_file", missing: false });
  });

  it("says '(no name)' in the approval dialog", () => {
    const host = document.createElement("div");
    document.body.append(host);
    const request: ConfirmRequest = confirmRequest({ call_id: "c1", tool: "", risk: "writes", digest: "d", target: "x", scope: [], consequence: "c", diff: null });
    const c = mount(ApprovalDialog, { target: host, props: { request, ondecide: () => {} } });
    flushSync();
    const name = host.querySelector('[data-testid="approval-tool"]');
    expect(name?.textContent).toBe("(no name)");
    expect(name?.classList.contains("tool-name-missing")).toBe(true);
    unmount(c);
    host.remove();
  });

  it("says '(no name)' in its History row and detail, and offers no blank tool filter", async () => {
    const row = (id: string, tool: string): HistoryItem => ({
      tool_call_id: id,
      run_id: "r1",
      tool,
      status: "error",
      stage: "Discovery",
      error_message: "a tool call must name a tool",
      started_at: "2026-11-30T07:22:01.456Z",
      duration_ms: 0,
      target: null,
      compaction_state: "none",
    });
    const api: RawOutputApi = {
      historyPage: async () => ({ rows: [row("c2", "read_file"), row("c1", "")], next: null, head: "h" }),
      historyHead: async () => ({ newer: 0, rows: [] }),
      historyFacets: async () => ({ tools: ["", "read_file"], runs: ["r1"], statuses: ["error"], stages: ["Discovery"] }),
      callRecord: async (id) => ({
        item: row(id, ""),
        error_code: "tool_not_found",
        finished_at: null,
        input: {},
        model: null,
        client: null,
        display_text: null,
        compaction_strategy: null,
        compaction_error: null,
        raw_format: null,
        raw_total_bytes: 0,
        raw_partial: false,
      }),
      rawRange: async () => new Uint8Array(),
      saveRawOutput: async () => "/tmp/x.out",
    };
    const view = createHistoryBrowser(api);
    document.body.append(view.element);
    await view.refresh();
    for (let i = 0; i < 3; i++) await tick();
    const names = [...view.element.querySelectorAll('[data-testid="hb-tool-name"]')].map((n) => [n.textContent, n.classList.contains("tool-name-missing")]);
    expect(names).toEqual([
      ["read_file", false],
      ["(no name)", true],
    ]);
    const options = [...view.element.querySelectorAll('[data-testid="hb-tool"] option')].map((o) => o.textContent);
    expect(options).toEqual(["any tool", "read_file"]);
    view.element.querySelector<HTMLElement>('[data-testid="hb-row"][data-id="c1"]')?.click();
    for (let i = 0; i < 5; i++) await tick();
    const detail = view.element.querySelector('[data-testid="hb-detail-tool"]');
    expect(detail?.textContent).toBe("(no name)");
    expect(detail?.classList.contains("tool-name-missing")).toBe(true);
    view.element.remove();
  });
});
