// What a call changed and its rewind, over the shell's checkpoint commands (which call the core's
// use cases: the same as `aibuddy changes` and `aibuddy rewind`). The window names a call or a
// run, never a path; a preview writes nothing; `force` is the person's explicit choice to
// overwrite the conflicts of that one rewind.
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { ChangesView } from "../bindings/ChangesView";
import type { RewindTargetArg } from "../bindings/RewindTargetArg";
import type { RewindView } from "../bindings/RewindView";

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

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createCheckpointsApi(call?: InvokeFn): CheckpointsApi {
  const c = shellCommands(call);
  return {
    callChanges: (callId) => c.callChanges({ callId }),
    runChanges: (runId) => c.runChanges({ runId }),
    rewindPreview: (target, force) => c.rewindPreview({ target, force }),
    rewind: (target, force) => c.rewind({ target, force }),
  };
}
