// The state of the call console (the Tools tab's "Run a tool"), apart from its view
// (../components/Console.svelte, which renders it and owns the DOM: the tool select and the
// arguments box). One call at a time through the core's full pipeline: its live events (log,
// output chunks), the confirmation it waits on and the network questions of its command, its
// result or typed failure. Every decision is the core's; the console only shows events and sends
// the person's answers back by call id. The inline Approve arms like the approval dialog's
// (lib/arming.svelte.ts: ARM_DELAY_MS after the request is shown and after the window comes back),
// so a click meant for Run, or made as the request appears, approves nothing; Reject works at once.
import type { Api } from "../api";
import type { CallResult } from "../bindings/CallResult";
import type { CommandError } from "../bindings/CommandError";
import type { ConfirmRequest } from "../bindings/ConfirmRequest";
import type { Event } from "../bindings/Event";
import type { NetworkAnswer } from "../bindings/NetworkAnswer";
import type { NetworkAsk } from "../bindings/NetworkAsk";
import type { OutputStream } from "../bindings/OutputStream";
import type { ToolListing } from "../bindings/ToolListing";
import { Arming } from "../lib/arming.svelte";
import { toCommandError } from "../lib/invoke";
import { toolState } from "../model";

export class ConsoleStore {
  /** The active tools, by name (what the select offers). */
  callable: string[] = $state([]);
  /** The running call's id once it started (Stop needs it). */
  callId: string | null = $state(null);
  /** A call was started in this console (the hint gives way to the log). */
  started = $state(false);
  running = $state(false);
  log: string[] = $state([]);
  chunks: { stream: OutputStream; text: string }[] = $state([]);
  confirm: ConfirmRequest | null = $state(null);
  /** An answer to `confirm` is on its way (the buttons wait). */
  deciding = $state(false);
  networkAsks: NetworkAsk[] = $state([]);
  result: CallResult | null = $state(null);
  failure: CommandError | null = $state(null);
  readonly arming = new Arming();

  /** Told when a call starts and ends (the window's switch rule); set by the view. */
  onRunning: (running: boolean) => void = () => undefined;

  constructor(
    private readonly api: Api,
    /** Runs after every call ends (recorded or failed), e.g. to refresh the history. */
    private readonly onFinished: () => void = () => undefined,
  ) {}

  get armed(): boolean {
    return this.arming.armed;
  }

  setTools(tools: readonly ToolListing[]): void {
    this.callable = tools
      .filter((t) => toolState(t) === "active")
      .map((t) => t.name)
      .sort();
  }

  private setRunning(running: boolean): void {
    this.running = running;
    this.onRunning(running);
  }

  private onEvent(event: Event): void {
    switch (event.type) {
      case "tool_started":
        this.callId = event.call_id;
        this.log.push(`Started ${event.tool}`);
        break;
      case "tool_output_delta":
        this.chunks.push({ stream: event.stream, text: event.chunk });
        break;
      case "tool_progress":
        this.log.push(`Progress ${event.progress}${event.total !== null ? ` / ${event.total}` : ""}${event.message ? `: ${event.message}` : ""}`);
        break;
      case "confirm_requested":
        this.confirm = event.request;
        this.deciding = false;
        this.arming.arm();
        break;
      case "confirm_resolved":
        this.log.push(event.approved ? "Approved" : "Rejected");
        this.confirm = null;
        this.arming.disarm();
        break;
      case "network_ask_requested":
        if (!this.networkAsks.some((a) => a.ask_id === event.ask.ask_id)) this.networkAsks.push(event.ask);
        break;
      case "network_ask_resolved":
        this.networkAsks = this.networkAsks.filter((a) => a.ask_id !== event.ask_id);
        this.log.push(`Network ${event.answer === "deny" ? "refused" : event.answer === "once" ? "allowed once" : "allowed for this project"}`);
        break;
      case "tool_compacted":
        this.log.push(`Compacted for the model (${event.strategy}): ${event.tokens_before} → ${event.tokens_after} tokens`);
        break;
      default:
        break;
    }
  }

  /** Runs `tool` with the JSON arguments `text`; resolves when the call ended. */
  async start(tool: string, text: string): Promise<void> {
    this.setRunning(true);
    this.started = true;
    this.callId = null;
    this.log = [];
    this.chunks = [];
    this.confirm = null;
    this.result = null;
    this.failure = null;
    try {
      this.result = await this.api.callTool(tool, text, (event) => this.onEvent(event));
    } catch (error) {
      this.failure = toCommandError(error);
    } finally {
      this.confirm = null;
      this.networkAsks = [];
      this.setRunning(false);
      this.callId = null;
      this.onFinished();
    }
  }

  /**
   * Sends the decision. A failed command leaves the call waiting in the core: the buttons come
   * back so the person can answer again; a `false` answer (nothing pending any more) is logged.
   */
  async answer(approve: boolean): Promise<void> {
    const request = this.confirm;
    if (!request || this.deciding || (approve && !this.armed)) return;
    this.deciding = true;
    try {
      const accepted = await this.api.answerConfirm(request.call_id, approve);
      if (!accepted) this.log.push("The answer was not taken: the confirmation is no longer open.");
    } catch (error) {
      this.log.push(`Could not send the answer: ${toCommandError(error).message}`);
      if (this.confirm === request) this.deciding = false;
    }
  }

  /** Sends the answer to a network question; the dialog closes at once (the core's resolution follows). */
  async answerNetwork(askId: string, what: NetworkAnswer): Promise<void> {
    this.networkAsks = this.networkAsks.filter((a) => a.ask_id !== askId);
    try {
      const accepted = await this.api.answerNetwork(askId, what);
      if (!accepted) this.log.push("The network answer was not taken: the question is no longer open.");
    } catch (error) {
      this.log.push(`Could not send the answer: ${toCommandError(error).message}`);
    }
  }

  /** Stops the call in progress, if any; a refusal is logged, not lost as an unhandled rejection. */
  async stop(): Promise<void> {
    const id = this.callId;
    if (!id) return;
    try {
      await this.api.cancelCall(id);
    } catch (error) {
      this.log.push(`Could not stop the call: ${toCommandError(error).message}`);
    }
  }

  /** Coming back to the window re-arms the inline Approve. */
  refocused(): void {
    if (this.confirm) this.arming.arm();
  }

  dispose(): void {
    this.arming.dispose();
  }
}
