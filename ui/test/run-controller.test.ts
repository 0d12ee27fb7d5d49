import { confirmRequest } from "./fixtures";
import { describe, expect, it } from "vitest";
import { ApiError } from "../src/api";
import type { AskUserAnswer, RunDetail, RunEvent, RunEventEnvelope } from "../src/provisional/run-types";
import type { RunApi } from "../src/run/api";
import { RunController } from "../src/run/controller.svelte";
import { isActive } from "../src/run/state";
import { OutputBus } from "../src/run/output-bus";

/** A scripted shell: records commands; the test plays `run-event`s through `emit`. */
function fakeShell() {
  const calls: Array<[string, unknown]> = [];
  let handler: (e: RunEventEnvelope) => void = () => {};
  let resolveStart: (v: { run_id: string }) => void = () => {};
  const api: RunApi = {
    startRun: (a) => {
      calls.push(["start_run", a]);
      return new Promise((r) => (resolveStart = r));
    },
    stopRun: async (id) => calls.push(["stop_run", id]),
    continueRun: async (id, prompt) => {
      calls.push(["continue_run", [id, prompt]]);
      return { run_id: id };
    },
    listRuns: async () => [],
    showRun: async (id) => {
      if (id === "missing") throw new ApiError({ code: "project", stage: null, message: "no run `missing`" });
      const usage = { input_tokens: 3, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 };
      return {
        run_id: id,
        title: "old prompt",
        provider: "fake",
        model: "m",
        presentation: "native",
        status: "interrupted",
        stage: null,
        error_message: null,
        stop_reason: null,
        started_at: "2026-11-30T00:00:00.000Z",
        finished_at_ms: null,
        usage,
        meter: { type: "usage", input_tokens: 3, output_tokens: 2, context_tokens: 5, window_tokens: 200_000, window_known: true, compaction_threshold: 0.8 },
        steps: 1,
        tool_calls: 1,
        parent_run_id: null,
        parent_call_id: null,
        children: [],
        messages: [
          { seq: 1, role: "user", text: "old prompt", tool_calls: [], result: null, usage: null },
          { seq: 2, role: "assistant", text: "old answer", tool_calls: [{ tool_call_id: "c9", tool: "ls", input: { path: "." } }], result: null, usage },
          {
            seq: 3,
            role: "tool",
            text: "",
            tool_calls: [],
            result: { tool_call_id: "c9", tool: "ls", status: "ok", stage: null, error_message: null, model: "a.txt", compacted: false, hooks: [] },
            usage: null,
          },
        ],
      };
    },
    answerConfirm: async (id, ok) => {
      calls.push(["answer_confirm", [id, ok]]);
      return true;
    },
    answerNetwork: async (id, answer) => {
      calls.push(["answer_network", [id, answer]]);
      return true;
    },
    answerAskUser: async (id, answer: AskUserAnswer) => {
      calls.push(["answer_ask_user", [id, answer]]);
      return true;
    },
    cancelCall: async (id) => {
      calls.push(["cancel_call", id]);
      return true;
    },
    onRunEvent: async (h) => {
      handler = h;
      return () => (handler = () => {});
    },
  };
  const emit = (run_id: string, event: RunEvent) => handler({ run_id, event });
  return { api, calls, emit, resolveStart: (id: string) => resolveStart({ run_id: id }) };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("run controller", () => {
  it("adopts events that arrive before start_run answers, and ignores other runs", async () => {
    const shell = fakeShell();
    const bus = new OutputBus(() => {});
    const c = new RunController(shell.api, () => 0, bus);
    await c.connect();
    const sending = c.send("  do it  ");
    expect(c.state.phase).toBe("starting");
    expect(shell.calls[0]).toEqual(["start_run", { prompt: "do it" }]);
    shell.emit("run_A", { type: "tool_call", tool_call_id: "c1", tool: "ls", input: {} });
    shell.emit("run_other", { type: "text_delta", text: "not mine" });
    shell.emit("run_A", { type: "text_delta", text: "mine" });
    shell.resolveStart("run_A");
    await sending;
    expect(c.state.runId).toBe("run_A");
    expect(c.state.phase).toBe("running");
    expect(c.state.items.map((i) => i.kind)).toEqual(["user", "tool", "assistant"]);
    expect(c.state.items.some((i) => i.kind === "assistant" && i.text === "not mine")).toBe(false);
  });

  it("stops the run, answers by id, continues a finished run, and routes output to the bus", async () => {
    const shell = fakeShell();
    const written: string[] = [];
    const bus = new OutputBus((f) => f());
    const c = new RunController(shell.api, () => 0, bus);
    await c.connect();
    const sending = c.send("go");
    shell.emit("r1", { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" });
    shell.resolveStart("r1");
    await sending;
    bus.subscribe("c1", (t) => written.push(t));
    shell.emit("r1", { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "yes" } });
    shell.emit("r1", { type: "tool_output", tool_call_id: "c1", stream: "stdout", chunk: "y\n" });
    expect(written).toEqual(["y\n"]);
    await c.stopCall("c1");
    await c.answerConfirm("c1", false);
    await c.answerQuestion("q1", { kind: "answer", selected: ["a"], text: null });
    await c.stop();
    expect(shell.calls.slice(1)).toEqual([
      ["cancel_call", "c1"],
      ["answer_confirm", ["c1", false]],
      ["answer_ask_user", ["q1", { kind: "answer", selected: ["a"], text: null }]],
      ["stop_run", "r1"],
    ]);
    shell.emit("r1", { type: "run_finished", run_id: "r1", status: "cancelled", stage: null, usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 }, stop_reason: null });
    await c.send("and now this");
    expect(shell.calls.at(-1)).toEqual(["continue_run", ["r1", "and now this"]]);
  });

  it("asks again when an approval could not be sent, and says when the shell did not take it", async () => {
    const shell = fakeShell();
    let answer: () => Promise<boolean> = async () => {
      throw new ApiError({ code: "ipc", stage: null, message: "the window lost its project" });
    };
    const c = new RunController({ ...shell.api, answerConfirm: (id, ok) => (shell.calls.push(["answer_confirm", [id, ok]]), answer()) }, () => 0);
    await c.connect();
    const sending = c.send("write it");
    shell.emit("r1", { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" });
    shell.resolveStart("r1");
    await sending;
    const request = confirmRequest({ call_id: "c1", tool: "write_file", risk: "writes" as const, digest: "d", target: "a.txt", scope: [], consequence: "creates a.txt", diff: null });
    shell.emit("r1", { type: "tool_call", tool_call_id: "c1", tool: "write_file", input: { path: "a.txt" } });
    shell.emit("r1", { type: "confirm_request", tool_call_id: "c1", request });
    const card = () => c.state.items.find((it) => it.kind === "tool");
    const notices = () => c.state.items.flatMap((it) => (it.kind === "notice" ? [[it.tone, it.text]] : []));

    // The command fails: the shell never got the answer, the call still waits: asked again.
    await c.answerConfirm("c1", true);
    expect(notices()).toEqual([["error", "Could not send the answer: the window lost its project"]]);
    expect(c.state.confirms).toEqual([request]);
    expect(card()?.kind === "tool" && card()?.card.status).toBe("waiting_approval");

    // The shell answers false (the confirmation ended meanwhile): said; nothing is asked again.
    answer = async () => false;
    await c.answerConfirm("c1", false);
    expect(notices().at(-1)).toEqual(["warn", "The rejection was not taken: the confirmation is no longer open."]);
    expect(c.state.confirms).toEqual([]);

    // A failure after the call's result arrived asks nothing again.
    shell.emit("r1", { type: "confirm_request", tool_call_id: "c1", request });
    answer = async () => {
      throw new ApiError({ code: "ipc", stage: null, message: "gone" });
    };
    const late = c.answerConfirm("c1", true);
    shell.emit("r1", { type: "tool_result", tool_call_id: "c1", status: "ok", stage: null, model: "created a.txt", duration_ms: 3, exit_code: null, omitted_bytes: null, activated: [], hooks: [] });
    await late;
    expect(c.state.confirms).toEqual([]);
    expect(card()?.kind === "tool" && card()?.card.status).toBe("ok");
    expect(shell.calls.filter(([cmd]) => cmd === "answer_confirm").length).toBe(3);
  });

  it("asks a question and an MCP form again when the answer could not be sent", async () => {
    const shell = fakeShell();
    let fail = true;
    const c = new RunController(
      {
        ...shell.api,
        answerAskUser: async (id, answer) => {
          shell.calls.push(["answer_ask_user", [id, answer]]);
          if (fail) throw new ApiError({ code: "ipc", stage: null, message: "not delivered" });
          return true;
        },
      },
      () => 0,
    );
    await c.connect();
    const sending = c.send("ask me");
    shell.emit("r1", { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" });
    shell.resolveStart("r1");
    await sending;
    shell.emit("r1", { type: "tool_call", tool_call_id: "q1", tool: "ask_user", input: { question: "Which?" } });
    shell.emit("r1", { type: "ask_user", tool_call_id: "q1", question: "Which?", options: ["a", "b"], multi_select: false, allow_other: false });
    shell.emit("r1", { type: "elicitation", elicitation_id: "e1", server: "everything", message: "Who?", schema: { type: "object" } });
    await c.answerQuestion("q1", { kind: "answer", selected: ["a"], text: null });
    expect(c.state.questions.map((q) => q.tool_call_id)).toEqual(["q1"]);
    await c.answerElicitation("e1", { kind: "declined" });
    expect(c.state.elicitations.map((e) => e.elicitation_id)).toEqual(["e1"]);
    const errors = c.state.items.flatMap((it) => (it.kind === "notice" && it.tone === "error" ? [it.text] : []));
    expect(errors).toEqual(["Could not send the answer: not delivered", "Could not send the answer: not delivered"]);

    fail = false;
    await c.answerQuestion("q1", { kind: "answer", selected: ["b"], text: null });
    await c.answerElicitation("e1", { kind: "declined" });
    expect(c.state.questions).toEqual([]);
    expect(c.state.elicitations).toEqual([]);
    expect(shell.calls.filter(([cmd]) => cmd === "answer_ask_user").length).toBe(4);
  });

  it("opens a run still running elsewhere as view only: nothing waits on it, New run and the list stay usable", async () => {
    const shell = fakeShell();
    const api: RunApi = {
      ...shell.api,
      showRun: async (id) => ({ ...(await shell.api.showRun("old")), run_id: id, status: "running" }),
      cancelCall: async () => false,
    };
    const c = new RunController(api, () => 0);
    await c.connect();
    await c.open("r_terminal");
    expect(c.state.runId).toBe("r_terminal");
    expect(c.state.phase).toBe("elsewhere");
    expect(isActive(c.state)).toBe(false);
    expect(c.state.items.at(-1)).toMatchObject({ kind: "notice", tone: "info" });
    // Nothing is continued or stopped from here.
    await c.send("and then?");
    await c.stop();
    expect(shell.calls).toEqual([]);
    // A card's own Stop reaches a shell that does not run that call: said, not swallowed.
    await c.stopCall("c9");
    expect(c.state.items.at(-1)).toEqual({
      kind: "notice",
      key: expect.any(String),
      tone: "warn",
      text: "The call was not stopped: it is not running in this window (it ended, or it runs elsewhere).",
    });
    // Another run opens, and New run starts over.
    await c.open("r_other");
    expect(c.state.runId).toBe("r_other");
    c.newRun();
    expect(c.state.phase).toBe("idle");
  });

  it("opening a stored parent reads its subagent runs, whose steps nest under the agent card", async () => {
    const shell = fakeShell();
    const base = await shell.api.showRun("old");
    const parent: RunDetail = {
      ...base,
      run_id: "r_parent",
      status: "completed",
      children: [
        { run_id: "r_child", parent_call_id: "r_parent:a1", status: "completed" },
        { run_id: "r_gone", parent_call_id: "r_parent:a2", status: "cancelled" },
      ],
      messages: [
        { seq: 1, role: "user", text: "delegate", tool_calls: [], result: null, usage: null },
        {
          seq: 2,
          role: "assistant",
          text: "",
          tool_calls: [
            { tool_call_id: "r_parent:a1", tool: "agent", input: { description: "one", prompt: "p1" } },
            { tool_call_id: "r_parent:a2", tool: "agent", input: { description: "two", prompt: "p2" } },
          ],
          result: null,
          usage: null,
        },
      ],
    };
    const child: RunDetail = { ...base, run_id: "r_child", status: "completed", parent_run_id: "r_parent", parent_call_id: "r_parent:a1" };
    const asked: string[] = [];
    const api: RunApi = {
      ...shell.api,
      showRun: async (id) => {
        asked.push(id);
        if (id === "r_parent") return parent;
        if (id === "r_child") return child;
        throw new ApiError({ code: "project", stage: null, message: `no run ${id}` });
      },
    };
    const c = new RunController(api, () => 0);
    await c.open("r_parent");
    expect(asked.sort()).toEqual(["r_child", "r_gone", "r_parent"]);
    const subs = c.state.items.flatMap((i) => (i.kind === "tool" && i.card.subagent ? [i.card.subagent] : []));
    // The child read: its ls call and its answer; the unreadable one: a link with its status.
    expect(subs.map((s) => [s.runId, s.phase, s.items.filter((i) => i.kind === "tool").length])).toEqual([
      ["r_child", "completed", 1],
      ["r_gone", "cancelled", 0],
    ]);
    expect(c.state.phase).toBe("completed");
  });

  it("a view-only run read again shows its new steps, then the finished view when it ends", async () => {
    const shell = fakeShell();
    const base = await shell.api.showRun("old");
    let detail: RunDetail = { ...base, run_id: "r_terminal", status: "running" };
    let reads = 0;
    const api: RunApi = { ...shell.api, showRun: async () => (reads++, detail) };
    const c = new RunController(api, () => 0);
    await c.open("r_terminal");
    const cards = () => c.state.items.filter((i) => i.kind === "tool").length;
    expect(cards()).toBe(1);
    // Unchanged: nothing replaced.
    const before = c.state;
    await c.refreshElsewhere();
    expect(c.state).toBe(before);
    // A new step stored by the terminal's run.
    detail = {
      ...detail,
      messages: [
        ...detail.messages,
        { seq: 4, role: "assistant", text: "more", tool_calls: [{ tool_call_id: "c10", tool: "read_file", input: { path: "a.txt" } }], result: null, usage: null },
      ],
    };
    await c.refreshElsewhere();
    expect(c.state.phase).toBe("elsewhere");
    expect(cards()).toBe(2);
    expect(c.state.items.filter((i) => i.kind === "assistant").map((i) => (i.kind === "assistant" ? i.text : ""))).toEqual(["old answer", "more"]);
    // It ends: the normal finished view, which can be continued.
    detail = { ...detail, status: "completed" };
    await c.refreshElsewhere();
    expect(c.state.phase).toBe("completed");
    expect(c.state.items.some((i) => i.kind === "notice")).toBe(false);
    const n = reads;
    await c.refreshElsewhere();
    expect(reads).toBe(n);
    await c.send("and then?");
    expect(shell.calls).toEqual([["continue_run", ["r_terminal", "and then?"]]]);
  });

  it("a view-only run whose process died turns interrupted with a note, and is not read again", async () => {
    const shell = fakeShell();
    const base = await shell.api.showRun("old");
    let detail: RunDetail = { ...base, run_id: "r_dead", status: "running" };
    let reads = 0;
    const api: RunApi = { ...shell.api, showRun: async () => (reads++, detail) };
    const c = new RunController(api, () => 0);
    await c.open("r_dead");
    expect(c.state.phase).toBe("elsewhere");
    // The shell found its owner gone and marked it interrupted (what the store has stays).
    detail = { ...detail, status: "interrupted" };
    await c.refreshElsewhere();
    expect(c.state.phase).toBe("interrupted");
    const notes = c.state.items.filter((i) => i.kind === "notice").map((i) => (i.kind === "notice" ? i.text : ""));
    expect(notes).toEqual(["The process that was running this run ended before it finished (it crashed or was stopped): shown as stored, interrupted. Continue resumes it here."]);
    expect(c.state.items.some((i) => i.kind === "assistant")).toBe(true);
    const n = reads;
    await c.refreshElsewhere();
    expect(reads).toBe(n);
    await c.send("go on");
    expect(shell.calls).toEqual([["continue_run", ["r_dead", "go on"]]]);
  });

  it("a failed read of a view-only run keeps what is shown and says it may be out of date until a read succeeds", async () => {
    const shell = fakeShell();
    const base = await shell.api.showRun("old");
    let fail = false;
    const api: RunApi = {
      ...shell.api,
      showRun: async () => {
        if (fail) throw new ApiError({ code: "project", stage: null, message: "database is locked" });
        return { ...base, run_id: "r_t", status: "running" as const };
      },
    };
    const c = new RunController(api, () => 0);
    await c.open("r_t");
    const shown = c.state;
    fail = true;
    await c.refreshElsewhere();
    expect(c.state).toBe(shown);
    expect(c.elsewhereError).toBe("database is locked");
    fail = false;
    await c.refreshElsewhere();
    expect(c.elsewhereError).toBeNull();
    fail = true;
    await c.refreshElsewhere();
    expect(c.elsewhereError).toBe("database is locked");
    // Another run opened: the old failure is not shown for it.
    fail = false;
    await c.open("r_t2");
    expect(c.elsewhereError).toBeNull();
  });

  it("a read of a view-only run that answers after another run opened changes nothing", async () => {
    const shell = fakeShell();
    const base = await shell.api.showRun("old");
    let release: () => void = () => {};
    let slow = false;
    const api: RunApi = {
      ...shell.api,
      showRun: async (id) => {
        if (slow) await new Promise<void>((r) => (release = r));
        return { ...base, run_id: id, status: id === "r_terminal" ? ("completed" as const) : ("running" as const) };
      },
    };
    const c = new RunController(api, () => 0);
    await c.open("r_elsewhere");
    slow = true;
    const reading = c.refreshElsewhere();
    c.newRun();
    release();
    await reading;
    expect(c.state.phase).toBe("idle");
    expect(c.state.items).toEqual([]);
  });

  it("a project switch drops a run still shown as active here, saying it belonged to the previous project", async () => {
    const shell = fakeShell();
    const c = new RunController(shell.api, () => 0, new OutputBus(() => {}));
    await c.connect();
    const sending = c.send("go");
    shell.emit("r1", { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" });
    shell.resolveStart("r1");
    await sending;
    expect(isActive(c.state)).toBe(true);
    c.projectChanged();
    expect(isActive(c.state)).toBe(false);
    expect(c.state.runId).toBeNull();
    expect(c.state.items).toEqual([{ kind: "notice", key: expect.any(String), tone: "warn", text: "Run r1 of the previous project was stopped when this project opened." }]);
    // Its late events do not come back into this view.
    shell.emit("r1", { type: "text_delta", text: "late" });
    expect(c.state.items.length).toBe(1);
    // Without an active run, a switch is a plain new conversation.
    c.projectChanged();
    expect(c.state.items).toEqual([]);
  });

  it("answers an MCP form through answer_ask_user by its elicitation id, closing it and saying what was sent", async () => {
    const shell = fakeShell();
    const c = new RunController(shell.api, () => 0, new OutputBus(() => {}));
    await c.connect();
    const sending = c.send("go");
    shell.emit("r1", { type: "run_started", run_id: "r1", provider: "p", model: "m", presentation: "native" });
    shell.resolveStart("r1");
    await sending;
    for (const id of ["e1", "e2"]) shell.emit("r1", { type: "elicitation", elicitation_id: id, server: "everything", message: "Who?", schema: { type: "object" } });
    await c.answerElicitation("e1", { kind: "form", content: { name: "Ada" } });
    await c.answerElicitation("e2", { kind: "cancelled" });
    expect(shell.calls.filter(([cmd]) => cmd === "answer_ask_user")).toEqual([
      ["answer_ask_user", ["e1", { kind: "form", content: { name: "Ada" } }]],
      ["answer_ask_user", ["e2", { kind: "cancelled" }]],
    ]);
    expect(c.state.elicitations).toEqual([]);
    expect(c.state.items.filter((i) => i.kind === "notice").map((i) => (i.kind === "notice" ? i.text : ""))).toEqual(["Sent the form to everything.", "Cancelled the form of everything."]);
  });

  it("reopens a stored run and shows a typed error for an unknown one", async () => {
    const shell = fakeShell();
    const c = new RunController(shell.api, () => 0, new OutputBus(() => {}));
    await c.open("run_old");
    expect(c.state.runId).toBe("run_old");
    expect(c.state.phase).toBe("interrupted");
    expect(c.state.items.map((i) => (i.kind === "user" || i.kind === "assistant" ? i.text : i.kind))).toEqual(["old prompt", "old answer", "tool"]);
    const card = c.state.items[2]?.kind === "tool" ? c.state.items[2].card : null;
    expect(card).toMatchObject({ tool: "ls", target: ".", status: "ok", model: "a.txt" });
    expect(c.state.model).toBe("m");
    // A run only viewed shows the context meter it would continue with.
    expect(c.state.context).toMatchObject({ context_tokens: 5, window_tokens: 200_000, window_known: true });
    await c.open("missing");
    expect(c.state.items.at(-1)).toMatchObject({ kind: "notice", tone: "error", text: "Could not open the run: no run `missing`" });
    await tick();
  });
});

describe("run controller without the event permission", () => {
  it("says live events are unavailable instead of throwing", async () => {
    const shell = fakeShell();
    const api: RunApi = { ...shell.api, onRunEvent: async () => Promise.reject("event.listen not allowed") };
    const c = new RunController(api, () => 0, new OutputBus(() => {}));
    await c.connect();
    expect(c.eventsError).toBe("Live run events are unavailable: event.listen not allowed");
  });
});
