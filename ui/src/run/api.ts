// Typed wrappers over the shell's run commands and its `run-event` event. Types: the generated
// bindings, through ../provisional/run-types.ts (which names their parts and adds the UI-only
// replay events).
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import { ApiError, type InvokeFn, toCommandError } from "../api";
import type { NetworkAnswer } from "../bindings/NetworkAnswer";
import type { AskUserAnswer, RunDetail, RunEventEnvelope, RunHandle, RunSummary } from "../provisional/run-types";

export interface StartRunArgs {
  prompt: string;
  provider?: string;
  model?: string;
  maxSteps?: number;
}

export interface RunApi {
  startRun(args: StartRunArgs): Promise<RunHandle>;
  stopRun(runId: string): Promise<unknown>;
  continueRun(runId: string, prompt?: string): Promise<RunHandle>;
  listRuns(limit?: number, before?: string): Promise<RunSummary[]>;
  showRun(runId: string): Promise<RunDetail>;
  answerConfirm(callId: string, approve: boolean): Promise<boolean>;
  /** Answers a running command's network question by its `ask_id`; false if it is no longer open. */
  answerNetwork(askId: string, answer: NetworkAnswer): Promise<boolean>;
  /** Answers the pending question `id` (an `ask_user` tool_call_id); false if it was not accepted. */
  answerAskUser(id: string, answer: AskUserAnswer): Promise<boolean>;
  /** Stops one running tool call of a run (its own Stop button). */
  cancelCall(callId: string): Promise<boolean>;
  /** Subscribes to `run-event`; resolves to the unsubscribe function. */
  onRunEvent(handler: (envelope: RunEventEnvelope) => void): Promise<() => void>;
}

export const RUN_COMMANDS = {
  startRun: "start_run",
  stopRun: "stop_run",
  continueRun: "continue_run",
  listRuns: "list_runs",
  showRun: "show_run",
  answerConfirm: "answer_confirm",
  answerNetwork: "answer_network",
  answerAskUser: "answer_ask_user",
  cancelCall: "cancel_call",
} as const;

export const RUN_EVENT = "run-event";

export type ListenFn = (handler: (envelope: RunEventEnvelope) => void) => Promise<() => void>;

const tauriListen: ListenFn = (handler) => listen<RunEventEnvelope>(RUN_EVENT, (e) => handler(e.payload));

export function createRunApi(call: InvokeFn = invoke, subscribe: ListenFn = tauriListen): RunApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  return {
    startRun: (a) =>
      run<RunHandle>(RUN_COMMANDS.startRun, {
        prompt: a.prompt,
        provider: a.provider ?? null,
        model: a.model ?? null,
        maxSteps: a.maxSteps ?? null,
      }),
    stopRun: (runId) => run(RUN_COMMANDS.stopRun, { runId }),
    continueRun: (runId, prompt) => run<RunHandle>(RUN_COMMANDS.continueRun, { runId, prompt: prompt ?? null }),
    listRuns: (limit, before) => run<RunSummary[]>(RUN_COMMANDS.listRuns, { limit: limit ?? null, before: before ?? null }),
    showRun: (runId) => run<RunDetail>(RUN_COMMANDS.showRun, { runId }),
    answerConfirm: (callId, approve) => run<boolean>(RUN_COMMANDS.answerConfirm, { callId, approve }),
    answerNetwork: (askId, answer) => run<boolean>(RUN_COMMANDS.answerNetwork, { askId, answer }),
    answerAskUser: (id, answer) => run<boolean>(RUN_COMMANDS.answerAskUser, { id, answer }),
    cancelCall: (callId) => run<boolean>(RUN_COMMANDS.cancelCall, { callId }),
    onRunEvent: subscribe,
  };
}
