// The run view model and its reducer: pure functions from run events to what the conversation
// shows. No DOM, no IPC, no clock (the caller passes `now`), so every transition is unit-tested.
// Live command output is NOT kept here (it can be many megabytes): the reducer only counts it, and
// the output bus (output-bus.ts) carries the bytes straight to the card's terminal.
import type { CallStatus } from "../bindings/CallStatus";
import type { ConfirmRequest } from "../bindings/ConfirmRequest";
import type { HookRun } from "../bindings/HookRun";
import type { NetworkAsk } from "../bindings/NetworkAsk";
import type { Stage } from "../bindings/Stage";
import type { SyncView } from "../bindings/SyncView";
import { formatBytes, formatDuration } from "../lib/format";
import type { AskUserQuestion, RunEvent, RunStatus, Usage } from "../provisional/run-types";

export type CardStatus = "running" | "waiting_approval" | CallStatus;

export interface ToolCard {
  id: string;
  tool: string;
  /** What the call acts on (path, command, query), derived from its input for the card's title. */
  target: string;
  input: unknown;
  status: CardStatus;
  stage: Stage | null;
  startedAt: number;
  durationMs: number | null;
  /** The exact text the model sees, once the call finished. */
  model: string | null;
  outputBytes: number;
  /** When the last heartbeat arrived (a quiet "still running" indicator). */
  lastHeartbeat: number | null;
  exitCode: number | null;
  /** Output bytes the model's text leaves out (a cut command output); null when nothing was cut. */
  omittedBytes: number | null;
  /** `tool_search`: the tools it activated. */
  activated: string[];
  /** The person's hooks that ran for the call (`pre_tool_call`, `post_tool_call`), in order. */
  hooks: HookRun[];
  /**
   * `agent`: the subagent run this call started, as its own run view (its steps and tool calls,
   * live, from the `subagent` events that carry this card's id); null for other tools and
   * before the child's first event.
   */
  subagent: RunViewState | null;
  /** `execute`: where the command ran when not on this machine (a container), from its result. */
  sandbox: string | null;
  /** `execute` in a container with `project: "sync"`: the project sync around it, from its result. */
  sync: SyncView | null;
}

export type ConversationItem =
  | { kind: "user"; key: string; text: string }
  | { kind: "assistant"; key: string; text: string }
  | { kind: "tool"; key: string; card: ToolCard }
  | { kind: "notice"; key: string; text: string; tone: "info" | "warn" | "error" };

/**
 * `elsewhere`: a stored run opened from the list while it is still running in another process
 * (`aibuddy run` in a terminal, another window) or left `running` by one that died: shown as stored and
 * read again while shown (RunController.refreshElsewhere), view only; this window gets none of
 * its events and cannot stop or continue it until it has ended.
 */
export type RunPhase = "idle" | "starting" | "running" | "elsewhere" | RunStatus;

/** An MCP server's form waiting for the person (the `elicitation` run event without its tag). */
export type ElicitationRequest = Omit<Extract<RunEvent, { type: "elicitation" }>, "type">;

/** The context meter's numbers (the latest `usage` run event without its tag). */
export type ContextUsage = Omit<Extract<RunEvent, { type: "usage" }>, "type">;

export interface RunViewState {
  runId: string | null;
  provider: string | null;
  model: string | null;
  phase: RunPhase;
  stage: Stage | null;
  items: ConversationItem[];
  /** Confirmations waiting for the person, oldest first (the dialog shows the first). */
  confirms: ConfirmRequest[];
  /** Network questions of running commands (a host on no list), oldest first. */
  networkAsks: NetworkAsk[];
  /** Questions waiting for the person, oldest first. */
  questions: AskUserQuestion[];
  /** MCP elicitation forms waiting for the person, oldest first. */
  elicitations: ElicitationRequest[];
  usage: Usage | null;
  /** How much of the model's context window the conversation takes (latest step). */
  context: ContextUsage | null;
  retry: { attempt: number; delayMs: number; reason: string } | null;
  /** Monotonic counter for item keys. */
  seq: number;
}

export function emptyRun(): RunViewState {
  return {
    runId: null,
    provider: null,
    model: null,
    phase: "idle",
    stage: null,
    items: [],
    confirms: [],
    networkAsks: [],
    questions: [],
    elicitations: [],
    usage: null,
    context: null,
    retry: null,
    seq: 0,
  };
}

export function isActive(state: RunViewState): boolean {
  return state.phase === "starting" || state.phase === "running";
}

const TARGET_KEYS = ["command", "path", "file_path", "pattern", "query", "url", "name", "skill", "dir", "description"];

/** The call's target for display: the first well-known string argument, else a short JSON. */
export function toolTarget(input: unknown): string {
  if (typeof input === "object" && input !== null && !Array.isArray(input)) {
    const record = input as Record<string, unknown>;
    for (const key of TARGET_KEYS) {
      const value = record[key];
      if (typeof value === "string" && value !== "") return value;
      if (Array.isArray(value) && value.every((v) => typeof v === "string") && value.length > 0) return value.join(" ");
    }
  }
  const json = JSON.stringify(input) ?? "";
  return json.length > 80 ? `${json.slice(0, 79)}…` : json;
}

/** Calls the catalog treats specially, shown as what they are. */
export function toolKind(tool: string): "execute" | "search" | "skill" | "mcp" | "tool" {
  if (tool === "execute") return "execute";
  if (tool === "tool_search") return "search";
  if (tool === "view_skill") return "skill";
  if (tool.startsWith("mcp__")) return "mcp";
  return "tool";
}

type Unkeyed<T> = T extends unknown ? Omit<T, "key"> : never;

function push(state: RunViewState, item: Unkeyed<ConversationItem>, prefix: string): RunViewState {
  const seq = state.seq + 1;
  return { ...state, seq, items: [...state.items, { ...item, key: `${prefix}${seq}` } as ConversationItem] };
}

function updateCard(state: RunViewState, id: string, change: (card: ToolCard) => ToolCard): RunViewState {
  const index = state.items.findIndex((it) => it.kind === "tool" && it.card.id === id);
  if (index < 0) return state;
  const item = state.items[index] as Extract<ConversationItem, { kind: "tool" }>;
  const items = state.items.slice();
  items[index] = { ...item, card: change(item.card) };
  return { ...state, items };
}

/** The person's prompt, shown at once (before the shell answers). */
export function addPrompt(state: RunViewState, text: string): RunViewState {
  const next = push(state, { kind: "user", text }, "u");
  return { ...next, phase: "starting", stage: null, retry: null };
}

export function addNotice(state: RunViewState, text: string, tone: "info" | "warn" | "error"): RunViewState {
  return push(state, { kind: "notice", text, tone }, "n");
}

/**
 * What the view says when a run ended on an answer the model did not finish normally (the
 * `stop_reason` of `run_finished`); unknown reasons are shown as the provider's word.
 */
export function stopReasonNote(reason: string): string {
  switch (reason) {
    case "max_tokens":
      return "The model's answer was cut at its output limit (max_tokens).";
    case "refusal":
      return "The model refused.";
    case "pause_turn":
      return "The model's turn is still paused after the automatic continuations (pause_turn); continue the run to resume it.";
    default:
      return `The model stopped for a reason other than finishing: ${reason}.`;
  }
}

/** Applies one run event. Unknown or out-of-order events never throw; they change nothing. */
export function applyRunEvent(state: RunViewState, event: RunEvent, now: number): RunViewState {
  switch (event.type) {
    case "run_started":
      return { ...state, runId: event.run_id, provider: event.provider, model: event.model, phase: "running", stage: null };
    case "user_prompt":
      return push(state, { kind: "user", text: event.text }, "u");
    case "text_delta": {
      const last = state.items.at(-1);
      const retry = null;
      if (last && last.kind === "assistant") {
        const items = state.items.slice();
        items[items.length - 1] = { ...last, text: last.text + event.text };
        return { ...state, items, retry };
      }
      return { ...push(state, { kind: "assistant", text: event.text }, "a"), retry };
    }
    case "tool_call": {
      if (state.items.some((it) => it.kind === "tool" && it.card.id === event.tool_call_id)) return state;
      const card: ToolCard = {
        id: event.tool_call_id,
        tool: event.tool,
        target: toolTarget(event.input),
        input: event.input,
        status: "running",
        stage: null,
        startedAt: now,
        durationMs: null,
        model: null,
        outputBytes: 0,
        lastHeartbeat: null,
        exitCode: null,
        omittedBytes: null,
        activated: [],
        hooks: [],
        subagent: null,
        sandbox: null,
        sync: null,
      };
      return push(state, { kind: "tool", card }, "t");
    }
    case "tool_output":
      return updateCard(state, event.tool_call_id, (c) => ({ ...c, outputBytes: c.outputBytes + utf8Length(event.chunk) }));
    case "heartbeat":
      return updateCard(state, event.tool_call_id, (c) => ({ ...c, lastHeartbeat: now }));
    case "confirm_request": {
      const withCard = updateCard(state, event.tool_call_id, (c) => ({ ...c, status: "waiting_approval" }));
      if (withCard.confirms.some((r) => r.call_id === event.request.call_id)) return withCard;
      return { ...withCard, confirms: [...withCard.confirms, event.request] };
    }
    case "network_ask": {
      if (state.networkAsks.some((a) => a.ask_id === event.ask.ask_id)) return state;
      return { ...state, networkAsks: [...state.networkAsks, event.ask] };
    }
    case "network_ask_resolved":
      return answeredNetwork(state, event.ask_id);
    case "tool_result":
    case "stored_result": {
      const live = event.type === "tool_result";
      const done = updateCard(state, event.tool_call_id, (c) => ({
        ...c,
        status: event.status,
        stage: event.stage,
        model: event.model,
        durationMs: live ? event.duration_ms : null,
        exitCode: live ? event.exit_code : null,
        omittedBytes: live ? event.omitted_bytes : null,
        activated: live ? event.activated : [],
        hooks: event.hooks ?? [],
        sandbox: event.sandbox ?? null,
        sync: event.sync ?? null,
      }));
      return {
        ...done,
        confirms: done.confirms.filter((r) => r.call_id !== event.tool_call_id),
        networkAsks: done.networkAsks.filter((a) => a.call_id !== event.tool_call_id),
        questions: done.questions.filter((q) => q.tool_call_id !== event.tool_call_id),
      };
    }
    case "ask_user": {
      if (state.questions.some((q) => q.tool_call_id === event.tool_call_id)) return state;
      const { type: _type, ...question } = event;
      return { ...state, questions: [...state.questions, question] };
    }
    case "elicitation": {
      if (state.elicitations.some((e) => e.elicitation_id === event.elicitation_id)) return state;
      const { type: _type, ...request } = event;
      return { ...state, elicitations: [...state.elicitations, request] };
    }
    case "usage": {
      const { type: _type, ...context } = event;
      return { ...state, context };
    }
    case "retry":
      return { ...state, retry: { attempt: event.attempt, delayMs: event.delay_ms, reason: event.reason } };
    case "hook":
      // A hook of the run itself (run_start, run_end, waiting_for_person): a line in the conversation.
      return push(state, { kind: "notice", text: hookSummary(event.hook), tone: event.hook.outcome === "ok" ? "info" : "warn" }, "n");
    case "compaction":
      return push(state, { kind: "notice", text: "Earlier turns were summarized to fit the model's context.", tone: "info" }, "n");
    case "subagent":
      return applySubagentEvent(state, event.parent_tool_call_id, event.event as RunEvent, now);
    case "stored_subagent": {
      // A stored run: the card links to its child run and, when it was read, shows its steps
      // and text nested as they were live.
      const nested = event.events ? replay(event.events, now) : emptyRun();
      return updateCard(state, event.parent_tool_call_id, (c) => ({
        ...c,
        subagent: c.subagent ?? { ...nested, runId: event.run_id, phase: event.status ?? "interrupted" },
      }));
    }
    case "run_finished": {
      // Calls still open when the run ends were interrupted: nothing more will arrive for them.
      const items = state.items.map((it) =>
        it.kind === "tool" && (it.card.status === "running" || it.card.status === "waiting_approval")
          ? { ...it, card: { ...it.card, status: "cancelled" as const } }
          : it,
      );
      // An answer cut, refused or otherwise not finished says so under it.
      const flagged = event.stop_reason ? push({ ...state, items }, { kind: "notice", text: stopReasonNote(event.stop_reason), tone: "warn" }, "n") : { ...state, items };
      return {
        ...flagged,
        runId: event.run_id,
        phase: event.status,
        stage: event.stage,
        usage: event.usage,
        confirms: [],
        networkAsks: [],
        questions: [],
        elicitations: [],
        retry: null,
      };
    }
  }
  return state;
}

/**
 * The events of a subagent's questions: shown in the run's own dialogs (answered by their ids like
 * the parent's), besides marking the nested card.
 */
const SUBAGENT_DIALOG_EVENTS = new Set(["confirm_request", "network_ask", "network_ask_resolved", "ask_user", "elicitation", "tool_result"]);

/**
 * A subagent's event: applied to the child's own run view on the parent's `agent` card (created
 * on its first event); its questions also reach the run's dialogs, and its result clears them.
 */
export function applySubagentEvent(state: RunViewState, parentCallId: string, inner: RunEvent, now: number): RunViewState {
  const nested = updateCard(state, parentCallId, (c) => ({ ...c, subagent: applyRunEvent(c.subagent ?? emptyRun(), inner, now) }));
  if (!SUBAGENT_DIALOG_EVENTS.has(inner.type)) return nested;
  // The parent has no card of the child's call: only the dialogs change.
  return applyRunEvent(nested, inner, now);
}

/** "3 steps · 2 tool calls · completed": what a subagent card says of its child run. */
export function subagentSummary(child: RunViewState): string {
  const calls = child.items.filter((it) => it.kind === "tool").length;
  const parts = calls > 0 ? [`${calls} tool call${calls === 1 ? "" : "s"}`] : [];
  const ended = child.phase !== "running" && child.phase !== "starting" && child.phase !== "idle";
  parts.push(ended ? phaseLabel(child.phase) : "working");
  return parts.join(" · ");
}

/**
 * The person answered a confirmation: the dialog closes and the card says what happens next (an
 * approved call runs from now on, a rejected one will not run); the shell's tool_result follows.
 */
export function answeredConfirm(state: RunViewState, callId: string, approved = false): RunViewState {
  const next = { ...state, confirms: state.confirms.filter((r) => r.call_id !== callId) };
  const status: CardStatus = approved ? "running" : "rejected";
  const answered = updateCard(next, callId, (c) => (c.status === "waiting_approval" ? { ...c, status } : c));
  // A subagent's call is a card nested under the parent's `agent` card: it says the same.
  if (!answered.items.some((it) => it.kind === "tool" && it.card.subagent !== null)) return answered;
  const items = answered.items.map((it) =>
    it.kind === "tool" && it.card.subagent !== null ? { ...it, card: { ...it.card, subagent: answeredConfirm(it.card.subagent, callId, approved) } } : it,
  );
  return { ...answered, items };
}

/**
 * The answer to a confirmation never reached the shell (the command failed): the call still waits
 * for one, so its request is asked again and its card waits again. Nothing changes when the run
 * is over or the call already has its result (only a card answered here, by `answeredConfirm`, and
 * still without the shell's result goes back).
 */
export function reopenConfirm(state: RunViewState, request: ConfirmRequest): RunViewState {
  if (!isActive(state) || state.confirms.some((r) => r.call_id === request.call_id)) return state;
  const item = state.items.find((it) => it.kind === "tool" && it.card.id === request.call_id);
  const card = item?.kind === "tool" ? item.card : null;
  if (card === null || card.model !== null || (card.status !== "running" && card.status !== "rejected")) return state;
  const next = updateCard(state, request.call_id, (c) => ({ ...c, status: "waiting_approval" }));
  return { ...next, confirms: [request, ...next.confirms] };
}

/** A network question was answered (here or by the core: ended, denied): its dialog closes. */
export function answeredNetwork(state: RunViewState, askId: string): RunViewState {
  if (!state.networkAsks.some((a) => a.ask_id === askId)) return state;
  return { ...state, networkAsks: state.networkAsks.filter((a) => a.ask_id !== askId) };
}

/** The answer to a network question never reached the shell: asked again while the run goes on. */
export function reopenNetwork(state: RunViewState, ask: NetworkAsk): RunViewState {
  if (!isActive(state) || state.networkAsks.some((a) => a.ask_id === ask.ask_id)) return state;
  const item = state.items.find((it) => it.kind === "tool" && it.card.id === ask.call_id);
  if (item?.kind === "tool" && item.card.model !== null) return state;
  return { ...state, networkAsks: [ask, ...state.networkAsks] };
}

/**
 * The answer to a question never reached the shell: it is asked again while the run goes on and
 * the asking call has no result yet.
 */
export function reopenQuestion(state: RunViewState, question: AskUserQuestion): RunViewState {
  if (!isActive(state) || state.questions.some((q) => q.tool_call_id === question.tool_call_id)) return state;
  const item = state.items.find((it) => it.kind === "tool" && it.card.id === question.tool_call_id);
  if (item?.kind === "tool" && item.card.model !== null) return state;
  return { ...state, questions: [question, ...state.questions] };
}

/** The answer to an MCP server's form never reached the shell: it is shown again while the run goes on. */
export function reopenElicitation(state: RunViewState, request: ElicitationRequest): RunViewState {
  if (!isActive(state) || state.elicitations.some((e) => e.elicitation_id === request.elicitation_id)) return state;
  return { ...state, elicitations: [request, ...state.elicitations] };
}

export function answeredQuestion(state: RunViewState, toolCallId: string): RunViewState {
  return { ...state, questions: state.questions.filter((q) => q.tool_call_id !== toolCallId) };
}

/** The person answered (accepted, declined or cancelled) an MCP server's form: its dialog closes. */
export function answeredElicitation(state: RunViewState, elicitationId: string): RunViewState {
  return { ...state, elicitations: state.elicitations.filter((e) => e.elicitation_id !== elicitationId) };
}

/** Replays a stored transcript (show_run) into a fresh view. */
export function replay(events: readonly RunEvent[], now: number): RunViewState {
  let state = emptyRun();
  for (const event of events) state = applyRunEvent(state, event, now);
  return state;
}

export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

export function phaseLabel(phase: RunPhase): string {
  switch (phase) {
    case "idle":
      return "ready";
    case "starting":
      return "starting…";
    case "max_steps":
      return "stopped at the step limit";
    case "elsewhere":
      return "running elsewhere (view only)";
    default:
      return phase;
  }
}

/** "exit 0 · 1.2 s": a finished command's exit code and time; null while it runs. */
export function exitSummary(card: ToolCard): string | null {
  if (card.status === "running" || card.status === "waiting_approval") return null;
  const parts: string[] = [];
  if (card.exitCode !== null) parts.push(`exit ${card.exitCode}`);
  else if (card.status === "cancelled") parts.push("stopped");
  if (card.durationMs !== null) parts.push(formatDuration(card.durationMs));
  return parts.length > 0 ? parts.join(" · ") : null;
}

/**
 * What a discovery call did, in words: "searched tools: 'query' → 3 found, activated a, b",
 * "viewed skill pdf (reference forms.md)"; null for other tools or while running.
 */
export function discoverySummary(card: ToolCard): string | null {
  const input = (typeof card.input === "object" && card.input !== null ? card.input : {}) as Record<string, unknown>;
  const text = (key: string) => (typeof input[key] === "string" ? (input[key] as string) : "");
  const kind = toolKind(card.tool);
  if (kind === "search") {
    const query = `searched tools: '${text("query")}'`;
    if (card.status === "running" || card.status === "waiting_approval") return query;
    if (card.status !== "ok") return `${query} → ${card.status}`;
    const n = card.activated.length;
    if (n === 0) return `${query} → nothing found`;
    return `${query} → ${n} found, activated ${card.activated.join(", ")}`;
  }
  if (kind === "skill") {
    const reference = text("reference");
    return `viewed skill ${text("name") || card.target}${reference ? ` (reference ${reference})` : ""}`;
  }
  return null;
}

/** "4.0 KiB (120 lines) omitted from the model's text": the model text's own cut marker, else bytes. */
export function omittedSummary(card: ToolCard): string | null {
  if (card.omittedBytes === null) return null;
  const lines = /\[\.\.\. (\d+) lines/.exec(card.model ?? "");
  return `${formatBytes(card.omittedBytes)}${lines ? ` (${lines[1]} lines)` : ""} omitted from the model's text`;
}

/**
 * One hook run as a line: event, command, outcome, exit code, time, and what it said (decision,
 * reason, note) or why it failed. Everything in it is the hook's or the person's text: shown as text.
 */
export function hookSummary(h: HookRun): string {
  const command = h.command.length > 80 ? `${h.command.slice(0, 79)}…` : h.command;
  const parts = [`${h.event} \`${command}\` ${h.outcome.replace("_", " ")}`];
  if (h.exit_code !== null) parts.push(`exit ${h.exit_code}`);
  parts.push(formatDuration(h.duration_ms));
  const said = [
    h.decision !== null ? `decision ${h.decision}` : null,
    h.reason,
    h.note !== null ? `note: ${h.note}` : null,
    h.problem,
  ].filter((x): x is string => x !== null && x !== "");
  return `Hook ${parts.join(" · ")}${said.length > 0 ? `: ${said.join("; ")}` : ""}`;
}
