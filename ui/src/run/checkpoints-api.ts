// What a call changed and its rewind, over the shell's checkpoint commands (which call the core's
// use cases: the same as `aibuddy changes` and `aibuddy rewind`). The window names a call or a
// run, never a path; a preview writes nothing; `force` is the person's explicit choice to
// overwrite the conflicts of that one rewind.
import { invoke } from "@tauri-apps/api/core";
import { ApiError, type InvokeFn, toCommandError } from "../api";
import type { ChangesView } from "../bindings/ChangesView";
import type { RewindTargetArg } from "../bindings/RewindTargetArg";
import type { RewindView } from "../bindings/RewindView";

export const CHECKPOINT_COMMANDS = {
  callChanges: "call_changes",
  runChanges: "run_changes",
  rewindPreview: "rewind_preview",
  rewind: "rewind",
} as const;

export interface CheckpointsApi {
  /** What call `callId` changed (a `checkpoint` error at stage Parameters when it has no checkpoint). */
  callChanges(callId: string): Promise<ChangesView>;
  /** What each checkpointed call of run `runId` changed, oldest first. */
  runChanges(runId: string): Promise<ChangesView[]>;
  /** What a rewind of `target` would put back and its conflicts; writes nothing. */
  rewindPreview(target: RewindTargetArg, force: boolean): Promise<RewindView>;
  /** Puts back what `target` changed; conflicts only when `force`. */
  rewind(target: RewindTargetArg, force: boolean): Promise<RewindView>;
}

export function createCheckpointsApi(call: InvokeFn = invoke): CheckpointsApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  return {
    callChanges: (callId) => run<ChangesView>(CHECKPOINT_COMMANDS.callChanges, { callId }),
    runChanges: (runId) => run<ChangesView[]>(CHECKPOINT_COMMANDS.runChanges, { runId }),
    rewindPreview: (target, force) => run<RewindView>(CHECKPOINT_COMMANDS.rewindPreview, { target, force }),
    rewind: (target, force) => run<RewindView>(CHECKPOINT_COMMANDS.rewind, { target, force }),
  };
}
