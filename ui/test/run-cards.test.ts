import { describe, expect, it } from "vitest";
import { detailEvents, type RunEvent } from "../src/provisional/run-types";
import { type RawOutputApi, RawReader, asBytes } from "../src/run/raw-output";
import { applyRunEvent, discoverySummary, emptyRun, exitSummary, hookSummary, omittedSummary, type ToolCard } from "../src/run/state";
import { storedExecuteRun } from "./fixtures";

function cardAfter(events: RunEvent[]): ToolCard {
  let s = emptyRun();
  for (const e of events) s = applyRunEvent(s, e, 1000);
  const item = s.items.find((i) => i.kind === "tool");
  if (!item || item.kind !== "tool") throw new Error("no card");
  return item.card;
}

const result = (over: Partial<Extract<RunEvent, { type: "tool_result" }>>): RunEvent => ({
  type: "tool_result",
  tool_call_id: "c1",
  status: "ok",
  stage: null,
  model: "",
  duration_ms: 1200,
  exit_code: null,
  omitted_bytes: null,
  activated: [],
  hooks: [],
  ...over,
});

describe("tool cards", () => {
  it("a finished command reads 'exit 0 · 1.2 s'; a stopped one 'stopped'; nothing while it runs", () => {
    const call: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "make" } };
    expect(exitSummary(cardAfter([call]))).toBeNull();
    expect(exitSummary(cardAfter([call, result({ exit_code: 0 })]))).toBe("exit 0 · 1.2 s");
    expect(exitSummary(cardAfter([call, result({ status: "cancelled", stage: "Execution", duration_ms: 40 })]))).toBe("stopped · 40 ms");
  });

  it("a cut output says how much was omitted, with the model text's line count when it has one", () => {
    const call: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "seq 1 100000" } };
    const cut = cardAfter([call, result({ omitted_bytes: 4096, model: "1\n[... 812 lines (4096 characters) omitted ...]\n100000" })]);
    expect(omittedSummary(cut)).toBe("4.0 KiB (812 lines) omitted from the model's text");
    expect(omittedSummary(cardAfter([call, result({ omitted_bytes: 2048 })]))).toBe("2.0 KiB omitted from the model's text");
    expect(omittedSummary(cardAfter([call, result({})]))).toBeNull();
  });

  it("tool_search and view_skill say what they did", () => {
    const search: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "tool_search", input: { query: "github issues" } };
    expect(discoverySummary(cardAfter([search]))).toBe("searched tools: 'github issues'");
    expect(discoverySummary(cardAfter([search, result({ activated: ["gh_list", "gh_get"] })]))).toBe(
      "searched tools: 'github issues' → 2 found, activated gh_list, gh_get",
    );
    expect(discoverySummary(cardAfter([search, result({})]))).toBe("searched tools: 'github issues' → nothing found");
    const skill: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "view_skill", input: { name: "pdf", reference: "forms.md" } };
    expect(discoverySummary(cardAfter([skill]))).toBe("viewed skill pdf (reference forms.md)");
    const read: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "read_file", input: { path: "a" } };
    expect(discoverySummary(cardAfter([read, result({})]))).toBeNull();
  });

  it("a command that ran in a container names it on its card; a local one names none", () => {
    const call: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "make" } };
    const where = "container 0123456789ab (image `debian:12`) on unix:///run/podman/podman.sock";
    expect(cardAfter([call, result({ exit_code: 0, sandbox: where })]).sandbox).toBe(where);
    expect(cardAfter([call, result({ exit_code: 0 })]).sandbox).toBeNull();
    expect(cardAfter([call]).sandbox).toBeNull();
  });

  it("a reopened run's stored command names the container it ran in, as the live card did", () => {
    const where = "container 0123456789ab (image `debian:12`) on unix:///run/podman/podman.sock";
    expect(cardAfter(detailEvents(storedExecuteRun({ sandbox: where }))).sandbox).toBe(where);
    expect(cardAfter(detailEvents(storedExecuteRun())).sandbox).toBeNull();
  });

  it("a replayed stored result has no live fields", () => {
    const call: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "ls" } };
    const card = cardAfter([call, { type: "stored_result", tool_call_id: "c1", status: "ok", stage: null, model: "x", hooks: [] }]);
    expect(card).toMatchObject({ status: "ok", durationMs: null, exitCode: null, omittedBytes: null });
  });
});

describe("raw output reader", () => {
  it("decodes ranges that split a multi-byte character, and stops at the end", async () => {
    const bytes = new TextEncoder().encode("aé€😀z".repeat(3));
    const calls: Array<[number, number]> = [];
    const api = {
      rawRange: async (_id: string, offset: number, length: number) => {
        calls.push([offset, length]);
        return bytes.slice(offset, offset + length);
      },
    } as unknown as RawOutputApi;
    const reader = new RawReader(api, "c1", bytes.length);
    let text = "";
    while (!reader.done) text += await reader.next(5);
    expect(text).toBe("aé€😀z".repeat(3));
    expect(calls.every(([, l]) => l === 5)).toBe(true);
    expect(await reader.next()).toBe("");
  });

  it("accepts the IPC's byte shapes and refuses anything else", () => {
    expect(Array.from(asBytes(new Uint8Array([1, 2]).buffer))).toEqual([1, 2]);
    expect(Array.from(asBytes([3, 255]))).toEqual([3, 255]);
    expect(() => asBytes("text")).toThrow();
  });
});

describe("hooks on a card", () => {
  const hook = {
    event: "pre_tool_call",
    level: "user" as const,
    matcher: "execute",
    command: "./guard.sh",
    outcome: "blocked" as const,
    exit_code: 2,
    duration_ms: 12,
    stdout: "",
    stderr: "no rm here",
    truncated: false,
    decision: "block",
    reason: "no rm here",
    note: null,
    problem: null,
  };
  it("a call's hooks stay on its card, each said in one line", () => {
    const call: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "rm -rf /" } };
    const card = cardAfter([call, result({ status: "rejected", stage: "Authorization", hooks: [hook] })]);
    expect(card.hooks).toHaveLength(1);
    expect(card.hooks.map(hookSummary)[0]).toBe("Hook pre_tool_call `./guard.sh` blocked · exit 2 · 12 ms: decision block; no rm here");
  });
  it("a stored run's card shows the hooks kept with its call", () => {
    const call: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "rm -rf /" } };
    const card = cardAfter([call, { type: "stored_result", tool_call_id: "c1", status: "rejected", stage: "Authorization", model: "blocked", hooks: [hook] }]);
    expect(card.hooks.map(hookSummary)).toEqual(["Hook pre_tool_call `./guard.sh` blocked · exit 2 · 12 ms: decision block; no rm here"]);
  });
  it("a timed-out hook says why it did not block", () => {
    const slow = { ...hook, outcome: "timed_out" as const, exit_code: null, decision: null, reason: null, stderr: "", problem: "timed out after 1 s; its process group was killed", duration_ms: 1004 };
    expect(hookSummary(slow)).toBe("Hook pre_tool_call `./guard.sh` timed out · 1.0 s: timed out after 1 s; its process group was killed");
  });
  it("a run's own hook is a line in the conversation", () => {
    const s = applyRunEvent(emptyRun(), { type: "hook", hook: { ...hook, event: "run_end", outcome: "ok", exit_code: 0, decision: null, reason: null, duration_ms: 3 } }, 0);
    const item = s.items.at(-1);
    expect(item?.kind === "notice" ? item.text : null).toBe("Hook run_end `./guard.sh` ok · exit 0 · 3 ms");
  });
});
