// Glue between the run API and the run view: owns the reactive run state (Svelte 5 runes), feeds
// every `run-event` of the open run through the pure reducer (state.ts), routes live output to the
// output bus, and sends the person's answers back by id. Decisions are the shell's.
import { toCommandError } from "../api";
import type { HumanAnswer } from "../bindings/HumanAnswer";
import type { NetworkAnswer } from "../bindings/NetworkAnswer";
import { type AskUserAnswer, detailEvents, type RunDetail, type RunEvent, type RunEventEnvelope, type RunSummary } from "../provisional/run-types";
import type { RunApi } from "./api";
import { OutputBus } from "./output-bus";
import {
  addNotice,
  addPrompt,
  answeredConfirm,
  answeredElicitation,
  answeredNetwork,
  answeredQuestion,
  applyRunEvent,
  emptyRun,
  isActive,
  reopenConfirm,
  reopenElicitation,
  reopenNetwork,
  reopenQuestion,
  replay,
  type RunViewState,
} from "./state";

/** Events of runs not (yet) adopted are kept briefly, in case start_run resolves after them. */
const MAX_ORPHAN_EVENTS = 2000;

const ELSEWHERE_NOTICE = "This run is still running elsewhere (a terminal or another window): view only. New steps appear here while it runs.";

const INTERRUPTED_NOTICE = "The process that was running this run ended before it finished (it crashed or was stopped): shown as stored, interrupted. Continue resumes it here.";

export class RunController {
  // Raw (not deeply proxied): the reducer replaces it immutably on every event.
  state: RunViewState = $state.raw(emptyRun());
  runs: RunSummary[] = $state.raw([]);
  runsError: string | null = $state(null);
  busy = $state(false);
  eventsError: string | null = $state(null);
  /** Why the last read of the run shown view only failed (what is shown may be out of date), or
   * null; cleared by the next read that succeeds or when another run is shown. */
  elsewhereError: string | null = $state(null);
  readonly output: OutputBus;
  private orphans = new Map<string, RunEvent[]>();
  private unlisten: (() => void) | null = null;
  /** The stored run last read for the "running elsewhere" view, to skip unchanged reads. */
  private elsewhereSeen = "";
  private refreshing = false;

  constructor(
    private readonly api: RunApi,
    private readonly now: () => number = () => Date.now(),
    output?: OutputBus,
  ) {
    this.output = output ?? new OutputBus();
  }

  /** Subscribes to `run-event`; a refusal (e.g. no event permission) is shown, not thrown. */
  async connect(): Promise<void> {
    try {
      this.unlisten = await this.api.onRunEvent((envelope) => this.receive(envelope));
      this.eventsError = null;
    } catch (error) {
      this.eventsError = `Live run events are unavailable: ${toCommandError(error).message}`;
    }
  }

  disconnect(): void {
    this.unlisten?.();
    this.unlisten = null;
  }

  /** One `run-event` from the shell. */
  receive(envelope: RunEventEnvelope): void {
    const current = this.state.runId;
    if (current === null && this.state.phase === "starting" && envelope.event.type === "run_started") {
      this.apply(envelope.event);
      return;
    }
    if (envelope.run_id !== current) {
      const list = this.orphans.get(envelope.run_id) ?? [];
      if (list.length < MAX_ORPHAN_EVENTS) list.push(envelope.event);
      this.orphans.set(envelope.run_id, list);
      if (envelope.event.type === "run_finished") void this.loadRuns();
      return;
    }
    this.apply(envelope.event);
  }

  private apply(event: RunEvent): void {
    if (event.type === "tool_output") this.output.publish(event.tool_call_id, event.chunk);
    this.state = applyRunEvent(this.state, event, this.now());
    if (event.type === "run_finished") void this.loadRuns();
  }

  private adopt(runId: string): void {
    if (this.state.runId === null) this.state = { ...this.state, runId };
    const early = this.orphans.get(runId) ?? [];
    this.orphans.delete(runId);
    for (const event of early) this.apply(event);
  }

  /** Sends a prompt: a new run, or a continuation of the open, finished run. */
  async send(prompt: string): Promise<void> {
    const text = prompt.trim();
    if (text === "" || isActive(this.state) || this.busy || this.state.phase === "elsewhere") return;
    this.busy = true;
    const continuing = this.state.runId;
    if (continuing === null) this.output.clear();
    this.state = addPrompt(this.state, text);
    try {
      if (continuing !== null) {
        const handle = await this.api.continueRun(continuing, text);
        this.adopt(handle.run_id);
        if (this.state.phase === "starting") this.state = { ...this.state, phase: "running" };
      } else {
        const started = await this.api.startRun({ prompt: text });
        this.adopt(started.run_id);
        if (this.state.phase === "starting") this.state = { ...this.state, phase: "running" };
      }
    } catch (error) {
      this.state = { ...addNotice(this.state, `Could not start: ${toCommandError(error).message}`, "error"), phase: "error" };
    } finally {
      this.busy = false;
    }
    void this.loadRuns();
  }

  async stop(): Promise<void> {
    const id = this.state.runId;
    if (id === null || !isActive(this.state)) return;
    try {
      await this.api.stopRun(id);
    } catch (error) {
      this.state = addNotice(this.state, `Could not stop: ${toCommandError(error).message}`, "error");
    }
  }

  async stopCall(callId: string): Promise<void> {
    try {
      const stopped = await this.api.cancelCall(callId);
      if (!stopped) this.state = addNotice(this.state, "The call was not stopped: it is not running in this window (it ended, or it runs elsewhere).", "warn");
    } catch (error) {
      this.state = addNotice(this.state, `Could not stop the call: ${toCommandError(error).message}`, "error");
    }
  }

  /**
   * Sends the person's decision on a confirmation. The shell answering `false` (no such
   * confirmation is open any more: it was decided or ended meanwhile) is said, not swallowed; a
   * failed command leaves the call waiting in the shell, so the dialog is shown again to answer.
   */
  async answerConfirm(callId: string, approve: boolean): Promise<void> {
    const request = this.state.confirms.find((r) => r.call_id === callId);
    this.state = answeredConfirm(this.state, callId, approve);
    try {
      const accepted = await this.api.answerConfirm(callId, approve);
      if (!accepted) this.state = addNotice(this.state, `The ${approve ? "approval" : "rejection"} was not taken: the confirmation is no longer open.`, "warn");
    } catch (error) {
      this.state = addNotice(this.state, `Could not send the answer: ${toCommandError(error).message}`, "error");
      if (request) this.state = reopenConfirm(this.state, request);
    }
  }

  /**
   * Answers a running command's network question (a host on no list) by its `ask_id`: `once`,
   * `project` or `deny`. The host is the core's; the UI sends only the id and the answer.
   */
  async answerNetwork(askId: string, answer: NetworkAnswer): Promise<void> {
    const ask = this.state.networkAsks.find((a) => a.ask_id === askId);
    this.state = answeredNetwork(this.state, askId);
    try {
      const accepted = await this.api.answerNetwork(askId, answer);
      if (!accepted) this.state = addNotice(this.state, "The network answer was not taken: the question is no longer open.", "warn");
    } catch (error) {
      this.state = addNotice(this.state, `Could not send the answer: ${toCommandError(error).message}`, "error");
      if (ask) this.state = reopenNetwork(this.state, ask);
    }
  }

  /** Sends an answer to a question; a failed command asks it again (the call still waits). */
  async answerQuestion(toolCallId: string, answer: AskUserAnswer): Promise<void> {
    const question = this.state.questions.find((q) => q.tool_call_id === toolCallId);
    this.state = answeredQuestion(this.state, toolCallId);
    try {
      const accepted = await this.api.answerAskUser(toolCallId, answer);
      if (!accepted) this.state = addNotice(this.state, "The answer was not accepted (the question is no longer open or the answer does not fit it).", "warn");
    } catch (error) {
      this.state = addNotice(this.state, `Could not send the answer: ${toCommandError(error).message}`, "error");
      if (question) this.state = reopenQuestion(this.state, question);
    }
  }

  /**
   * Answers an MCP server's form by its `elicitation_id`, through the same command as questions:
   * `{kind: "form", content}` accepts, `declined` declines, `cancelled` cancels (MCP's three).
   */
  async answerElicitation(elicitationId: string, answer: HumanAnswer): Promise<void> {
    const request = this.state.elicitations.find((e) => e.elicitation_id === elicitationId);
    this.state = answeredElicitation(this.state, elicitationId);
    const server = request?.server ?? "the server";
    const what = answer.kind === "form" ? `Sent the form to ${server}.` : answer.kind === "declined" ? `Declined the form of ${server}.` : `Cancelled the form of ${server}.`;
    try {
      const accepted = await this.api.answerAskUser(elicitationId, answer);
      this.state = accepted
        ? addNotice(this.state, what, "info")
        : addNotice(this.state, `The form of ${server} was no longer open: the answer was not sent.`, "warn");
    } catch (error) {
      this.state = addNotice(this.state, `Could not send the answer: ${toCommandError(error).message}`, "error");
      // The server's form still waits in the shell: shown again.
      if (request) this.state = reopenElicitation(this.state, request);
    }
  }

  /** A fresh conversation (the open run, if any, keeps running in the shell). */
  newRun(): void {
    if (isActive(this.state)) return;
    this.output.clear();
    this.state = emptyRun();
  }

  async open(runId: string): Promise<void> {
    if (isActive(this.state)) return;
    this.elsewhereError = null;
    try {
      const detail = await this.api.showRun(runId);
      const children = await this.storedChildren(detail);
      this.output.clear();
      const state = replay(detailEvents(detail, children), this.now());
      // This window's own active run is always the one shown (open and newRun refuse while it
      // runs), so a stored run that says "running" is driven elsewhere: view only, never a run
      // this view waits on (its spinner and Stop would never end, the list and New run locked).
      this.elsewhereSeen = JSON.stringify(detail);
      this.state = this.shown(detail, state);
    } catch (error) {
      this.state = addNotice(this.state, `Could not open the run: ${toCommandError(error).message}`, "error");
    }
  }

  /**
   * The stored subagent runs of a stored run (read with show_run), so its `agent` cards show their
   * children's steps; a child that cannot be read stays a link to its run.
   */
  private async storedChildren(detail: RunDetail): Promise<Map<string, RunDetail>> {
    const read = await Promise.all(
      (detail.children ?? []).map((child) =>
        this.api.showRun(child.run_id).then(
          (d): [string, RunDetail] | null => [child.run_id, d],
          () => null,
        ),
      ),
    );
    return new Map(read.filter((r): r is [string, RunDetail] => r !== null));
  }

  /** A stored run as shown: view only while it still runs elsewhere, else as it ended. */
  private shown(detail: RunDetail, state: RunViewState): RunViewState {
    if (detail.parent_run_id) {
      state = addNotice(state, `A subagent run, started by run ${detail.parent_run_id} (call ${detail.parent_call_id ?? "-"}).`, "info");
    }
    if (detail.status === "running") {
      return addNotice({ ...state, runId: detail.run_id, phase: "elsewhere" }, ELSEWHERE_NOTICE, "info");
    }
    return { ...state, runId: detail.run_id, phase: detail.status ?? state.phase };
  }

  /**
   * Reads a run shown "view only" (running elsewhere) again: its new steps and cards appear, and
   * when it has ended it becomes the normal finished view (which can be continued). The run view
   * calls this every few seconds while it is shown and the window is visible. Nothing happens
   * unless such a run is shown, nor when the person opened something else meanwhile; a failed
   * read keeps what is shown (the next tick tries again).
   */
  async refreshElsewhere(): Promise<void> {
    const id = this.state.runId;
    if (id === null || this.state.phase !== "elsewhere" || this.refreshing) return;
    this.refreshing = true;
    try {
      const detail = await this.api.showRun(id);
      if (this.state.runId !== id || this.state.phase !== "elsewhere") return;
      this.elsewhereError = null;
      const seen = JSON.stringify(detail);
      if (seen === this.elsewhereSeen) return;
      this.elsewhereSeen = seen;
      const children = await this.storedChildren(detail);
      if (this.state.runId !== id || this.state.phase !== "elsewhere") return;
      this.state = this.shown(detail, replay(detailEvents(detail, children), this.now()));
      // The shell marks a run whose process is gone (crashed, killed) interrupted when it reads it.
      if (this.state.phase === "interrupted") this.state = addNotice(this.state, INTERRUPTED_NOTICE, "warn");
      if (this.state.phase !== "elsewhere") void this.loadRuns();
    } catch (error) {
      // Shown as last read, said to be possibly out of date; the next tick tries again.
      if (this.state.runId === id && this.state.phase === "elsewhere") this.elsewhereError = toCommandError(error).message;
    } finally {
      this.refreshing = false;
    }
  }

  /**
   * Another project is open (the shell switched): the conversation starts over. The shell refuses a
   * switch while this window's run is in progress and stops any that slipped in before the old
   * project closed, so a run still shown as active here belonged to the previous project: it is
   * dropped with a note saying so (its late events no longer reach this view).
   */
  projectChanged(): void {
    const wasActive = isActive(this.state);
    const previous = this.state.runId;
    this.output.clear();
    this.state = emptyRun();
    if (wasActive) {
      const which = previous === null ? "The run" : `Run ${previous}`;
      this.state = addNotice(this.state, `${which} of the previous project was stopped when this project opened.`, "warn");
    }
  }

  async loadRuns(): Promise<void> {
    try {
      this.runs = await this.api.listRuns(50);
      this.runsError = null;
    } catch (error) {
      this.runsError = toCommandError(error).message;
    }
  }
}
