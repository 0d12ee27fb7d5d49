// What a call changed, as the window shows it, and the rewind dialog's steps (pure: no IPC, no
// DOM). The dialog always previews first; a rewind is sent only from a preview, with `force` only
// when the person ticked "overwrite" on a preview that listed conflicts.
import type { ChangeKindView } from "../bindings/ChangeKindView";
import type { ChangedFileView } from "../bindings/ChangedFileView";
import type { ChangesView } from "../bindings/ChangesView";
import type { RewindTargetArg } from "../bindings/RewindTargetArg";
import type { RewindView } from "../bindings/RewindView";
import { formatBytes } from "../lib/format";
import { toolKind } from "./state";

/** Tools that never change the project (their calls have no checkpoint): no changes are asked for. */
const READ_ONLY = new Set(["read_file", "glob", "grep", "ls", "tool_search", "view_skill", "view_tool_call", "ask_user_question", "agent"]);

/**
 * Whether a finished call of `tool` may have changed files (so its changes are worth asking for):
 * every tool but the core's read-only ones (the core checkpoints each call that is not read-only).
 */
export function mayChangeFiles(tool: string): boolean {
  if (tool.trim() === "" || READ_ONLY.has(tool)) return false;
  const kind = toolKind(tool);
  return kind !== "search" && kind !== "skill";
}

const KIND_LABELS: Record<ChangeKindView, string> = {
  added: "added",
  modified: "modified",
  deleted: "deleted",
  renamed: "renamed",
  mode_changed: "mode changed",
  symlink_changed: "symlink changed",
  type_changed: "type changed",
};

export function changeLabel(kind: ChangeKindView): string {
  return KIND_LABELS[kind];
}

/** "12 B → 40 B", "mode 644 → 755", "new, 40 B", "was 12 B". */
export function sizeSummary(f: ChangedFileView): string {
  const { before, after } = f;
  if (f.change === "mode_changed" && before && after) return `mode ${before.mode} → ${after.mode}`;
  if (before && after) {
    const sizes = `${formatBytes(before.size)} → ${formatBytes(after.size)}`;
    return before.mode !== after.mode ? `${sizes}, mode ${before.mode} → ${after.mode}` : sizes;
  }
  if (after) return after.kind === "dir" ? "new folder" : `new, ${formatBytes(after.size)}`;
  if (before) return before.kind === "dir" ? "folder removed" : `was ${formatBytes(before.size)}`;
  return "";
}

/** Why a changed path was not checkpointed, in words. */
export function skippedReason(reason: string): string {
  switch (reason) {
    case "too_large":
      return "larger than the checkpoint size cap: not recorded, cannot be put back";
    case "special":
      return "a special file (fifo, socket or device): not recorded";
    case "unreadable":
      return "could not be read: not recorded";
    default:
      return `not recorded (${reason})`;
  }
}

/** Whether a call's change view has anything to show. */
export function hasChanges(v: ChangesView | null): v is ChangesView {
  return v !== null && (v.files.length > 0 || v.skipped.length > 0);
}

/** "2 files changed", "1 file changed, 1 not checkpointed". */
export function changesSummary(v: ChangesView): string {
  const n = v.files.length;
  const parts = [`${n} file${n === 1 ? "" : "s"} changed`];
  if (v.skipped.length > 0) parts.push(`${v.skipped.length} not checkpointed`);
  if (!v.complete) parts.push("the call never finished: changes up to now");
  return parts.join(", ");
}

/** The target of "Undo this call" and of "Undo the run from here". */
export function callTarget(callId: string): RewindTargetArg {
  return { kind: "call", call_id: callId };
}
export function runFromTarget(runId: string, callId: string): RewindTargetArg {
  return { kind: "run", run_id: runId, from: callId };
}

/** The rewind dialog's state. */
export type RewindStep =
  | { step: "previewing"; target: RewindTargetArg }
  | { step: "preview"; target: RewindTargetArg; preview: RewindView; overwrite: boolean }
  | { step: "rewinding"; target: RewindTargetArg; preview: RewindView; force: boolean }
  | { step: "done"; target: RewindTargetArg; result: RewindView }
  | { step: "failed"; target: RewindTargetArg; message: string; stage: string | null };

export function startPreview(target: RewindTargetArg): RewindStep {
  return { step: "previewing", target };
}

export function previewed(s: RewindStep, preview: RewindView): RewindStep {
  if (s.step !== "previewing") return s;
  return { step: "preview", target: s.target, preview, overwrite: false };
}

export function failed(s: RewindStep, message: string, stage: string | null): RewindStep {
  return { step: "failed", target: s.target, message, stage };
}

/** How many conflicts a preview lists (paths changed since the call). */
export function conflictCount(v: RewindView): number {
  return v.calls.reduce((n, c) => n + c.conflicts.length, 0);
}

/** How many paths a preview would put back (conflicts left out unless forced). */
export function actionCount(v: RewindView): number {
  return v.calls.reduce((n, c) => n + c.actions.length, 0);
}

/** Ticks or unticks "overwrite the conflicting files"; only on a preview that has conflicts. */
export function setOverwrite(s: RewindStep, overwrite: boolean): RewindStep {
  if (s.step !== "preview" || conflictCount(s.preview) === 0) return s;
  return { ...s, overwrite };
}

/**
 * The rewind to send from the dialog: only from a preview, with `force` only when the person
 * ticked "overwrite" and the preview listed conflicts; null otherwise (nothing is sent).
 */
export function confirmRewind(s: RewindStep): { next: RewindStep; force: boolean } | null {
  if (s.step !== "preview") return null;
  const force = s.overwrite && conflictCount(s.preview) > 0;
  if (actionCount(s.preview) === 0 && !force) return null;
  return { next: { step: "rewinding", target: s.target, preview: s.preview, force }, force };
}

export function rewound(s: RewindStep, result: RewindView): RewindStep {
  if (s.step !== "rewinding") return s;
  return { step: "done", target: s.target, result };
}

/** The outcome in one sentence. */
export function resultSummary(v: RewindView): string {
  const put = actionCount(v);
  const parts = [`${put} path${put === 1 ? "" : "s"} put back`];
  if (v.unresolved_conflicts > 0) parts.push(`${v.unresolved_conflicts} conflicting path${v.unresolved_conflicts === 1 ? "" : "s"} left alone`);
  if (v.failures > 0) parts.push(`${v.failures} could not be written`);
  return parts.join(", ");
}
