// Typed wrappers over the shell's run commands (the generated clients, through ../lib/invoke.ts)
// and its `run-event` event. Types: the generated bindings, through ../provisional/run-types.ts
// (which names their parts and adds the UI-only replay events).
import { listen } from "@tauri-apps/api/event";
import { type InvokeFn, shellCommands } from "../lib/invoke";
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

export const RUN_EVENT = "run-event";

export type ListenFn = (handler: (envelope: RunEventEnvelope) => void) => Promise<() => void>;

const tauriListen: ListenFn = (handler) => listen<RunEventEnvelope>(RUN_EVENT, (e) => handler(e.payload));

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createRunApi(call?: InvokeFn, subscribe: ListenFn = tauriListen): RunApi {
  const c = shellCommands(call);
  return {
    startRun: (a) =>
      c.startRun({
        prompt: a.prompt,
        provider: a.provider ?? null,
        model: a.model ?? null,
        maxSteps: a.maxSteps ?? null,
      }),
    stopRun: (runId) => c.stopRun({ runId }),
    continueRun: (runId, prompt) => c.continueRun({ runId, prompt: prompt ?? null }),
    listRuns: (limit, before) => c.listRuns({ limit: limit ?? null, before: before ?? null }),
    showRun: (runId) => c.showRun({ runId }),
    answerConfirm: (callId, approve) => c.answerConfirm({ callId, approve }),
    answerNetwork: (askId, answer) => c.answerNetwork({ askId, answer }),
    answerAskUser: (id, answer) => c.answerAskUser({ id, answer }),
    cancelCall: (callId) => c.cancelCall({ callId }),
    onRunEvent: subscribe,
  };
}
