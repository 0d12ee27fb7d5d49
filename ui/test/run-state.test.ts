import { confirmRequest, networkAsk } from "./fixtures";
import { describe, expect, it } from "vitest";
import type { ConfirmRequest } from "../src/bindings/ConfirmRequest";
import { detailEvents, type RunDetail, type RunEvent } from "../src/provisional/run-types";
import {
  addPrompt,
  answeredConfirm,
  answeredNetwork,
  applyRunEvent,
  emptyRun,
  isActive,
  replay,
  type RunViewState,
  stopReasonNote,
  toolKind,
  toolTarget,
  utf8Length,
} from "../src/run/state";

const REQUEST: ConfirmRequest = confirmRequest({
  call_id: "call_w",
  tool: "write_file",
  risk: "writes",
  digest: "d",
  target: "notes.md",
  scope: ["project"],
  consequence: "creates notes.md",
  diff: "+hello",
});

function play(events: RunEvent[], start: RunViewState = emptyRun(), now = 1000): RunViewState {
  let state = start;
  for (const e of events) state = applyRunEvent(state, e, now);
  return state;
}

describe("run state reducer", () => {
  it("joins streamed text into one assistant message and starts a new one after a tool call", () => {
    const s = play([
      { type: "run_started", run_id: "r1", provider: "anthropic", model: "m", presentation: "native" },
      { type: "text_delta", text: "Hel" },
      { type: "text_delta", text: "lo" },
      { type: "tool_call", tool_call_id: "c1", tool: "read_file", input: { path: "a.txt" } },
      { type: "text_delta", text: "Done" },
    ], addPrompt(emptyRun(), "hi"));
    expect(s.runId).toBe("r1");
    expect(s.phase).toBe("running");
    expect(s.items.map((i) => i.kind)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(s.items[1]).toMatchObject({ kind: "assistant", text: "Hello" });
    expect(s.items[3]).toMatchObject({ kind: "assistant", text: "Done" });
    expect(new Set(s.items.map((i) => i.key)).size).toBe(4);
  });

  it("tracks a tool card from call to result: target, output bytes, heartbeat, duration, exit code", () => {
    let s = play([{ type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "make test" } }], emptyRun(), 1000);
    s = applyRunEvent(s, { type: "tool_output", tool_call_id: "c1", stream: "stdout", chunk: "é\n" }, 1100);
    s = applyRunEvent(s, { type: "heartbeat", tool_call_id: "c1" }, 1500);
    let card = s.items[0]?.kind === "tool" ? s.items[0].card : null;
    expect(card).toMatchObject({ tool: "execute", target: "make test", status: "running", outputBytes: 3, lastHeartbeat: 1500 });
    // The shell's duration and exit code are the card's (not the window's clock).
    const result: RunEvent = { type: "tool_result", tool_call_id: "c1", status: "error", stage: "Execution", model: "exit 2", duration_ms: 1234, exit_code: 2, omitted_bytes: null, activated: [], hooks: [] };
    s = applyRunEvent(s, result, 3400);
    card = s.items[0]?.kind === "tool" ? s.items[0].card : null;
    expect(card).toMatchObject({ status: "error", stage: "Execution", model: "exit 2", durationMs: 1234, exitCode: 2, omittedBytes: null });
  });

  it("queues network questions once each and drops them when answered, resolved or when the call ends", () => {
    const a = networkAsk({ ask_id: "net_1", call_id: "c1", host: "example.com", port: 443, target: "curl https://example.com" });
    const b = networkAsk({ ask_id: "net_2", call_id: "c1", host: "example.org", port: 80, target: "curl https://example.com" });
    let s = play([
      { type: "run_started", run_id: "r1", provider: "anthropic", model: "m", presentation: "native" },
      { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "curl https://example.com" } },
      { type: "network_ask", tool_call_id: "c1", ask: a },
      { type: "network_ask", tool_call_id: "c1", ask: a },
      { type: "network_ask", tool_call_id: "c1", ask: b },
    ]);
    expect(s.networkAsks.map((x) => x.ask_id)).toEqual(["net_1", "net_2"]);
    s = answeredNetwork(s, "net_1");
    expect(s.networkAsks.map((x) => x.ask_id)).toEqual(["net_2"]);
    s = applyRunEvent(s, { type: "network_ask_resolved", tool_call_id: "c1", ask_id: "net_2", answer: "deny" }, 1000);
    expect(s.networkAsks).toEqual([]);
    s = play([{ type: "network_ask", tool_call_id: "c1", ask: a }], s);
    s = applyRunEvent(s, { type: "tool_result", tool_call_id: "c1", status: "ok", stage: null, model: "ok", duration_ms: 1, exit_code: 0, omitted_bytes: null, activated: [], hooks: [] }, 1000);
    expect(s.networkAsks).toEqual([]);
  });

  it("queues confirmations and questions, and drops them when answered or when the call ends", () => {
    let s = play([
      { type: "tool_call", tool_call_id: "call_w", tool: "write_file", input: { path: "notes.md" } },
      { type: "confirm_request", tool_call_id: "call_w", request: REQUEST },
      { type: "confirm_request", tool_call_id: "call_w", request: REQUEST },
    ]);
    expect(s.confirms).toHaveLength(1);
    expect(s.items[0]?.kind === "tool" && s.items[0].card.status).toBe("waiting_approval");
    expect(answeredConfirm(s, "call_w").confirms).toEqual([]);
    const approved = answeredConfirm(s, "call_w", true);
    expect(approved.items[0]?.kind === "tool" && approved.items[0].card.status).toBe("running");
    // Rejected: the card says so at once (its tool_result follows).
    const rejected = answeredConfirm(s, "call_w", false);
    expect(rejected.items[0]?.kind === "tool" && rejected.items[0].card.status).toBe("rejected");
    expect(rejected.confirms).toEqual([]);
    s = applyRunEvent(s, { type: "tool_result", tool_call_id: "call_w", status: "rejected", stage: "Authorization", model: "rejected", duration_ms: 3, exit_code: null, omitted_bytes: null, activated: [], hooks: [] }, 2000);
    expect(s.confirms).toEqual([]);

    s = applyRunEvent(s, { type: "ask_user", tool_call_id: "q1", question: "Which?", options: ["a", "b"], multi_select: false, allow_other: true }, 2000);
    expect(s.questions).toEqual([{ tool_call_id: "q1", question: "Which?", options: ["a", "b"], multi_select: false, allow_other: true }]);
    s = applyRunEvent(s, { type: "elicitation", elicitation_id: "e1", server: "gh", message: "Pick a repo", schema: {} }, 2000);
    expect(s.elicitations).toEqual([{ elicitation_id: "e1", server: "gh", message: "Pick a repo", schema: {} }]);
  });

  it("finishing a run closes pending dialogs and marks open calls cancelled", () => {
    const s = play([
      { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" },
      { type: "tool_call", tool_call_id: "call_w", tool: "write_file", input: {} },
      { type: "confirm_request", tool_call_id: "call_w", request: REQUEST },
      { type: "run_finished", run_id: "r1", status: "cancelled", stage: null, usage: { input_tokens: 5, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 }, stop_reason: null },
    ]);
    expect(s.phase).toBe("cancelled");
    expect(isActive(s)).toBe(false);
    expect(s.confirms).toEqual([]);
    expect(s.items[0]?.kind === "tool" && s.items[0].card.status).toBe("cancelled");
    expect(s.usage?.input_tokens).toBe(5);
  });

  it("says under the answer when the model did not finish it (cut, refused, paused, other)", () => {
    const USAGE = { input_tokens: 5, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 };
    const finish = (stop_reason: string | null) =>
      play([
        { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" },
        { type: "text_delta", text: "The first half" },
        { type: "run_finished", run_id: "r1", status: "completed", stage: null, usage: USAGE, stop_reason },
      ]);
    const notices = (s: RunViewState) => s.items.filter((it) => it.kind === "notice").map((it) => (it.kind === "notice" ? [it.text, it.tone] : []));
    expect(notices(finish("max_tokens"))).toEqual([["The model's answer was cut at its output limit (max_tokens).", "warn"]]);
    expect(notices(finish("refusal"))).toEqual([["The model refused.", "warn"]]);
    expect(notices(finish("content_filter"))).toEqual([["The model stopped for a reason other than finishing: content_filter.", "warn"]]);
    expect(stopReasonNote("pause_turn")).toContain("pause_turn");
    expect(notices(finish(null))).toEqual([]);
    expect(finish("max_tokens").phase).toBe("completed");
    // The flag comes after the answer it is about.
    expect(finish("max_tokens").items.map((it) => it.kind)).toEqual(["assistant", "notice"]);
  });

  it("a stored run shows its stop reason like a live one", () => {
    const detail: RunDetail = {
      run_id: "r1",
      title: null,
      provider: "p",
      model: "m",
      presentation: "native",
      status: "completed",
      stage: null,
      error_message: null,
      stop_reason: "max_tokens",
      started_at: "2026-01-01T00:00:00.000Z",
      finished_at_ms: 1,
      usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 },
      meter: null,
      steps: 1,
      tool_calls: 0,
      parent_run_id: null,
      parent_call_id: null,
      children: [],
      messages: [{ seq: 1, role: "assistant", text: "cut", tool_calls: [], result: null, usage: null }],
    };
    const s = replay(detailEvents(detail), 0);
    expect(s.items.at(-1)).toMatchObject({ kind: "notice", tone: "warn", text: "The model's answer was cut at its output limit (max_tokens)." });
  });

  it("ignores events for unknown calls and duplicate tool calls", () => {
    const base = play([{ type: "tool_call", tool_call_id: "c1", tool: "ls", input: {} }]);
    expect(applyRunEvent(base, { type: "tool_output", tool_call_id: "nope", stream: "stdout", chunk: "x" }, 1)).toEqual(base);
    expect(applyRunEvent(base, { type: "tool_call", tool_call_id: "c1", tool: "ls", input: {} }, 1)).toBe(base);
  });

  it("shows retries until text flows again, and compaction as a notice", () => {
    let s = applyRunEvent(emptyRun(), { type: "retry", step: 1, attempt: 2, delay_ms: 1500, reason: "429 rate limited" }, 0);
    expect(s.retry).toEqual({ attempt: 2, delayMs: 1500, reason: "429 rate limited" });
    s = applyRunEvent(s, { type: "text_delta", text: "ok" }, 0);
    expect(s.retry).toBeNull();
    s = applyRunEvent(s, { type: "compaction", covers_from: 1, covers_to: 8 }, 0);
    expect(s.items.at(-1)).toMatchObject({ kind: "notice", tone: "info" });
  });

  it("replays a stored transcript, prompts included", () => {
    const s = replay([
      { type: "user_prompt", text: "first" },
      { type: "text_delta", text: "answer" },
      { type: "user_prompt", text: "second" },
    ], 0);
    expect(s.items.map((i) => (i.kind === "user" || i.kind === "assistant" ? i.text : i.kind))).toEqual(["first", "answer", "second"]);
  });

  it("derives targets and kinds for display", () => {
    expect(toolTarget({ command: "ls -la" })).toBe("ls -la");
    expect(toolTarget({ path: "src/a.rs", content: "x" })).toBe("src/a.rs");
    expect(toolTarget({ command: ["git", "status"] })).toBe("git status");
    expect(toolTarget({ x: "y".repeat(200) }).length).toBe(80);
    expect(toolTarget(null)).toBe("null");
    expect(toolKind("tool_search")).toBe("search");
    expect(toolKind("view_skill")).toBe("skill");
    expect(toolKind("mcp__gh__search")).toBe("mcp");
    expect(toolKind("execute")).toBe("execute");
    expect(utf8Length("aé€😀")).toBe(1 + 2 + 3 + 4);
  });
});
