// Subagents (issue 25): a child run's events, wrapped in `subagent` events with the parent's
// `agent` call id, nest under that call's card: its tool calls and text appear live, its questions
// reach the run's dialogs, and the card links to the child run once it is stored.
import { flushSync, mount, unmount } from "svelte";
import { afterEach, describe, expect, it } from "vitest";
import ToolCardView from "../src/components/run/ToolCardView.svelte";
import { detailEvents, type RunDetail, type RunEvent } from "../src/provisional/run-types";
import { OutputBus } from "../src/run/output-bus";
import { answeredConfirm, applyRunEvent, emptyRun, replay, type RunViewState, subagentSummary, type ToolCard } from "../src/run/state";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup) c();
  cleanup = [];
});

const child = (event: unknown): RunEvent => ({ type: "subagent", parent_tool_call_id: "p:a1", event }) as RunEvent;

const childResult = (id: string, status: string, stage: string | null): unknown => ({
  type: "tool_result",
  tool_call_id: id,
  status,
  stage,
  model: "",
  duration_ms: 3,
  exit_code: null,
  omitted_bytes: null,
  activated: [],
  hooks: [],
});

function play(events: RunEvent[]): RunViewState {
  let s = emptyRun();
  for (const e of events) s = applyRunEvent(s, e, 1000);
  return s;
}

function agentCard(s: RunViewState): ToolCard {
  const item = s.items.find((i) => i.kind === "tool" && i.card.id === "p:a1");
  if (!item || item.kind !== "tool") throw new Error("no agent card");
  return item.card;
}

const start: RunEvent[] = [
  { type: "run_started", run_id: "p", provider: "anthropic", model: "m", presentation: "native" },
  { type: "tool_call", tool_call_id: "p:a1", tool: "agent", input: { description: "survey the project", prompt: "List it." } },
  child({ type: "run_started", run_id: "c7", provider: "anthropic", model: "m", presentation: "native" }),
  child({ type: "text_delta", text: "Looking." }),
  child({ type: "tool_call", tool_call_id: "c7:l1", tool: "ls", input: { path: "." } }),
  child({ type: "tool_call", tool_call_id: "c7:x1", tool: "execute", input: { command: "echo hi" } }),
];

describe("subagent events", () => {
  it("nest under the agent card and never become the parent's own items", () => {
    const s = play([...start, child(childResult("c7:l1", "ok", null)), child(childResult("c7:x1", "error", "Discovery"))]);
    const sub = agentCard(s).subagent;
    expect(sub?.runId).toBe("c7");
    const steps = sub?.items.filter((i) => i.kind === "tool").map((i) => (i.kind === "tool" ? [i.card.tool, i.card.status, i.card.stage] : null));
    expect(steps).toEqual([
      ["ls", "ok", null],
      ["execute", "error", "Discovery"],
    ]);
    // The parent's conversation holds only its own card; its run id stays the parent's.
    expect(s.items.map((i) => i.kind)).toEqual(["tool"]);
    expect(s.runId).toBe("p");
    expect(agentCard(s).status).toBe("running");
    expect(agentCard(s).target).toBe("survey the project");
    expect(subagentSummary(sub as RunViewState)).toBe("2 tool calls · working");
    const done = play([...start, child({ type: "run_finished", run_id: "c7", status: "completed", stage: null, usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 }, stop_reason: null })]);
    expect(subagentSummary(agentCard(done).subagent as RunViewState)).toBe("2 tool calls · completed");
    expect(done.phase).toBe("running");
  });

  it("a child's confirmation reaches the run's dialog and its result clears it", () => {
    const request = { call_id: "c7:x1", tool: "execute" } as unknown;
    const asked = play([...start, child({ type: "confirm_request", tool_call_id: "c7:x1", request })]);
    expect(asked.confirms.map((r) => r.call_id)).toEqual(["c7:x1"]);
    const nested = agentCard(asked).subagent?.items.find((i) => i.kind === "tool" && i.card.id === "c7:x1");
    expect(nested?.kind === "tool" && nested.card.status).toBe("waiting_approval");
    const answered = applyRunEvent(asked, child(childResult("c7:x1", "ok", null)), 1000);
    expect(answered.confirms).toEqual([]);
  });

  it("the card shows the child's steps live and links to its run", () => {
    const h = document.createElement("div");
    const opened: string[] = [];
    const card = agentCard(play([...start, child(childResult("c7:l1", "ok", null))]));
    const c = mount(ToolCardView, {
      target: h,
      props: { card, bus: new OutputBus(), onstop: () => {}, onopenrun: (id: string) => opened.push(id), canopenrun: true },
    });
    cleanup.push(() => unmount(c));
    flushSync();
    const steps = [...h.querySelectorAll('[data-testid="subagent-step"]')].map((e) => [e.getAttribute("data-tool"), e.getAttribute("data-status")]);
    expect(steps).toEqual([
      ["ls", "ok"],
      ["execute", "running"],
    ]);
    expect(h.querySelector('[data-testid="subagent-text"]')?.textContent).toBe("Looking.");
    const open = h.querySelector('[data-testid="subagent-open"]') as HTMLButtonElement;
    expect(open.disabled).toBe(false);
    open.click();
    expect(opened).toEqual(["c7"]);
  });

  it("a stored run's agent card links to the child run it started", () => {
    const s = play([
      { type: "tool_call", tool_call_id: "p:a1", tool: "agent", input: { description: "d", prompt: "p" } },
      { type: "stored_result", tool_call_id: "p:a1", status: "ok", stage: null, model: "answer", hooks: [] },
      { type: "stored_subagent", parent_tool_call_id: "p:a1", run_id: "c7", status: "completed" },
    ]);
    const sub = agentCard(s).subagent as RunViewState;
    expect([sub.runId, sub.phase, subagentSummary(sub)]).toEqual(["c7", "completed", "completed"]);
  });

  it("an approved child call runs under the card at once, like a parent's", () => {
    const request = { call_id: "c7:x1", tool: "execute" } as unknown;
    const asked = play([...start, child({ type: "confirm_request", tool_call_id: "c7:x1", request })]);
    const status = (s: RunViewState) => {
      const nested = agentCard(s).subagent?.items.find((i) => i.kind === "tool" && i.card.id === "c7:x1");
      return nested?.kind === "tool" ? nested.card.status : null;
    };
    const approved = answeredConfirm(asked, "c7:x1", true);
    expect([status(approved), approved.confirms]).toEqual(["running", []]);
    expect(status(answeredConfirm(asked, "c7:x1", false))).toBe("rejected");
    // Another child call is left as it was.
    const other = agentCard(approved).subagent?.items.find((i) => i.kind === "tool" && i.card.id === "c7:l1");
    expect(other?.kind === "tool" && other.card.status).toBe("running");
  });

  it("a stored parent opened with its stored child shows the child's calls and answer nested", () => {
    const usage = { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 };
    const base = {
      title: null,
      provider: "anthropic",
      model: "m",
      presentation: "native",
      stage: null,
      error_message: null,
      stop_reason: null,
      started_at: "2026-12-01T00:00:00.000Z",
      finished_at_ms: 1,
      usage,
      meter: null,
      steps: 2,
      tool_calls: 1,
    };
    const parent: RunDetail = {
      ...base,
      run_id: "p",
      status: "completed",
      parent_run_id: null,
      parent_call_id: null,
      children: [{ run_id: "c7", parent_call_id: "p:a1", status: "completed" }],
      messages: [
        { seq: 1, role: "user", text: "Delegate.", tool_calls: [], result: null, usage: null },
        { seq: 2, role: "assistant", text: "", tool_calls: [{ tool_call_id: "p:a1", tool: "agent", input: { description: "survey", prompt: "List it." } }], result: null, usage },
        { seq: 3, role: "tool", text: "", tool_calls: [], result: { tool_call_id: "p:a1", tool: "agent", status: "ok", stage: null, error_message: null, model: "two files", compacted: false, hooks: [] }, usage: null },
        { seq: 4, role: "assistant", text: "The child found two files.", tool_calls: [], result: null, usage },
      ],
    };
    const stored: RunDetail = {
      ...base,
      run_id: "c7",
      status: "completed",
      parent_run_id: "p",
      parent_call_id: "p:a1",
      children: [],
      messages: [
        { seq: 1, role: "user", text: "List it.", tool_calls: [], result: null, usage: null },
        { seq: 2, role: "assistant", text: "Looking.", tool_calls: [{ tool_call_id: "c7:l1", tool: "ls", input: { path: "." } }], result: null, usage },
        { seq: 3, role: "tool", text: "", tool_calls: [], result: { tool_call_id: "c7:l1", tool: "ls", status: "ok", stage: null, error_message: null, model: "a\nb", compacted: false, hooks: [] }, usage: null },
        { seq: 4, role: "assistant", text: "two files", tool_calls: [], result: null, usage },
      ],
    };
    const s = replay(detailEvents(parent, new Map([["c7", stored]])), 1000);
    const sub = agentCard(s).subagent as RunViewState;
    expect([sub.runId, sub.phase, subagentSummary(sub)]).toEqual(["c7", "completed", "1 tool call · completed"]);
    // Only the parent's own items in its conversation; the child's are under the card.
    expect(s.items.map((i) => i.kind)).toEqual(["user", "tool", "assistant"]);
    const h = document.createElement("div");
    const c = mount(ToolCardView, { target: h, props: { card: agentCard(s), bus: new OutputBus(), onstop: () => {}, canopenrun: true } });
    cleanup.push(() => unmount(c));
    flushSync();
    const steps = [...h.querySelectorAll('[data-testid="subagent-step"]')].map((e) => [e.getAttribute("data-tool"), e.getAttribute("data-status")]);
    expect(steps).toEqual([["ls", "ok"]]);
    expect([...h.querySelectorAll('[data-testid="subagent-text"]')].map((e) => e.textContent)).toEqual(["Looking.", "two files"]);
    expect(h.querySelector('[data-testid="subagent-open"]')?.textContent).toBe("Open run c7");
    // Without the child's detail (it could not be read): a link only.
    const linkOnly = agentCard(replay(detailEvents(parent), 1000)).subagent as RunViewState;
    expect([linkOnly.runId, linkOnly.items.length]).toEqual(["c7", 0]);
  });

  it("other cards have no subagent section", () => {
    const h = document.createElement("div");
    const s = play([{ type: "tool_call", tool_call_id: "r1", tool: "read_file", input: { path: "a" } }]);
    const item = s.items[0];
    if (item?.kind !== "tool") throw new Error("no card");
    const c = mount(ToolCardView, { target: h, props: { card: item.card, bus: new OutputBus(), onstop: () => {} } });
    cleanup.push(() => unmount(c));
    flushSync();
    expect(h.querySelector('[data-testid="subagent"]')).toBeNull();
  });
});
