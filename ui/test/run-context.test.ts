import { confirmRequest } from "./fixtures";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../src/provisional/run-types";
import { compactTokens, meterView } from "../src/run/context-meter";
import { atBottom } from "../src/run/follow";
import { answeredConfirm, answeredElicitation, applyRunEvent, type ContextUsage, emptyRun, type RunViewState } from "../src/run/state";

const play = (events: RunEvent[], from: RunViewState = emptyRun()) => events.reduce((s, e) => applyRunEvent(s, e, 1000), from);

const usage = (context: number, window: number, known = true, threshold = 0.8): ContextUsage => ({
  input_tokens: context - 100,
  output_tokens: 100,
  context_tokens: context,
  window_tokens: window,
  window_known: known,
  compaction_threshold: threshold,
});

describe("context meter", () => {
  it("keeps the latest usage event of the run", () => {
    const s = play([
      { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" },
      { type: "usage", ...usage(1200, 200_000) },
      { type: "usage", ...usage(41_000, 200_000) },
    ]);
    expect(s.context).toEqual(usage(41_000, 200_000));
  });

  it("shows tokens of the window compactly, with an accessible full-number label", () => {
    expect([999, 1000, 1234, 9_940, 9_999, 41_000, 200_000, 1_047_576].map(compactTokens)).toEqual(["999", "1k", "1.2k", "9.9k", "10k", "41k", "200k", "1.05M"]);
    const view = meterView(usage(41_000, 200_000));
    expect(view).toMatchObject({ text: "41k / 200k", fraction: 0.205, level: "ok" });
    expect(view.label).toBe("Context: 41,000 of 200,000 tokens (21%); older turns are summarized past 80%");
  });

  it("warns past the compaction threshold and clamps the bar", () => {
    expect(meterView(usage(160_000, 200_000)).level).toBe("ok");
    const over = meterView(usage(170_000, 200_000));
    expect(over.level).toBe("warn");
    expect(over.label).toMatch(/past the compaction threshold of 80%/);
    expect(meterView(usage(250_000, 200_000)).fraction).toBe(1);
    expect(meterView(usage(60_000, 100_000, true, 0.5)).level).toBe("warn");
  });

  it("says the window is unknown instead of inventing one", () => {
    const view = meterView(usage(12_000, 32_768, false));
    expect(view).toMatchObject({ text: "12k / unknown window", fraction: null, level: "unknown" });
    expect(view.label).toMatch(/not known \(compaction assumes 32,768 tokens/);
  });
});

describe("approval card state", () => {
  const waiting = play([
    { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" },
    { type: "tool_call", tool_call_id: "c1", tool: "write_file", input: { path: "a.txt" } },
    { type: "confirm_request", tool_call_id: "c1", request: confirmRequest({ call_id: "c1", tool: "write_file", risk: "writes", digest: "d", target: "a.txt", scope: [], consequence: "creates a.txt", diff: null }) },
  ]);
  const status = (s: RunViewState) => (s.items[0]?.kind === "tool" ? s.items[0].card.status : null);

  it("approved: running until its result; rejected: rejected at once", () => {
    expect(status(waiting)).toBe("waiting_approval");
    const approved = answeredConfirm(waiting, "c1", true);
    expect(status(approved)).toBe("running");
    expect(status(play([{ type: "tool_result", tool_call_id: "c1", status: "ok", stage: null, model: "wrote", duration_ms: 5, exit_code: null, omitted_bytes: null, activated: [], hooks: [] }], approved))).toBe("ok");
    expect(status(answeredConfirm(waiting, "c1", false))).toBe("rejected");
    // A card that already finished keeps its status.
    const done = play([{ type: "tool_result", tool_call_id: "c1", status: "error", stage: "Execution", model: "x", duration_ms: 5, exit_code: null, omitted_bytes: null, activated: [], hooks: [] }], waiting);
    expect(status(answeredConfirm(done, "c1", true))).toBe("error");
  });
});

describe("elicitation queue", () => {
  it("queues forms once each, closes the answered one, and a finished run closes the rest", () => {
    const form = (id: string) => ({ type: "elicitation" as const, elicitation_id: id, server: "everything", message: "Who?", schema: { type: "object" } });
    let s = play([{ type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" }, form("e1"), form("e1"), form("e2")]);
    expect(s.elicitations.map((e) => e.elicitation_id)).toEqual(["e1", "e2"]);
    s = answeredElicitation(s, "e1");
    expect(s.elicitations.map((e) => e.elicitation_id)).toEqual(["e2"]);
    s = play([{ type: "run_finished", run_id: "r1", status: "cancelled", stage: null, usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 }, stop_reason: null }], s);
    expect(s.elicitations).toEqual([]);
  });
});

describe("following the conversation", () => {
  it("is at the bottom within a small slack only", () => {
    expect(atBottom(1000, 600, 400)).toBe(true);
    expect(atBottom(1000, 580, 400)).toBe(true);
    expect(atBottom(1000, 560, 400)).toBe(false);
    expect(atBottom(300, 0, 400)).toBe(true);
  });
});
