import { describe, expect, it } from "vitest";
import type { ChangedFileView } from "../src/bindings/ChangedFileView";
import type { ChangesView } from "../src/bindings/ChangesView";
import type { RewindView } from "../src/bindings/RewindView";
import {
  actionCount,
  callTarget,
  changeLabel,
  changesSummary,
  confirmRewind,
  conflictCount,
  failed,
  hasChanges,
  mayChangeFiles,
  previewed,
  resultSummary,
  rewound,
  runFromTarget,
  setOverwrite,
  sizeSummary,
  skippedReason,
  startPreview,
} from "../src/run/changes";
import { createCheckpointsApi } from "../src/run/checkpoints-api";

const file = (over: Partial<ChangedFileView>): ChangedFileView => ({
  path: "src/a.rs",
  path_shown: [{ kind: "text", text: "src/a.rs" }],
  from_shown: null,
  diff_shown: null,
  change: "modified",
  from: null,
  before: { kind: "file", mode: "644", size: 12 },
  after: { kind: "file", mode: "644", size: 40 },
  binary: false,
  diff: null,
  note: null,
  ...over,
});

const view = (over: Partial<ChangesView>): ChangesView => ({
  call_id: "call_1",
  run_id: "run_1",
  tool: "execute",
  complete: true,
  files: [],
  skipped: [],
  not_covered: "Checkpoints cover files inside the project only",
  ...over,
});

const report = (conflicts: number, actions: number, over: Partial<RewindView> = {}): RewindView => ({
  dry_run: true,
  force: false,
  calls: [
    {
      call_id: "call_2",
      tool: "write_file",
      complete: true,
      actions: Array.from({ length: actions }, (_, i) => ({ path: `f${i}`, path_shown: [], action: "restore", forced: false })),
      conflicts: Array.from({ length: conflicts }, (_, i) => ({ path: `c${i}`, path_shown: [], expected: "file", found: "file of 3 bytes" })),
      not_restorable: [],
      failures: [],
    },
  ],
  unresolved_conflicts: conflicts,
  failures: 0,
  rewind_call_id: null,
  not_covered: "…",
  ...over,
});

describe("what a call changed", () => {
  it("asks for changes of calls that may write, never of the read-only tools", () => {
    for (const t of ["write_file", "edit_file", "execute", "mcp__github__create_issue", "rewind"]) expect(mayChangeFiles(t), t).toBe(true);
    for (const t of ["read_file", "grep", "glob", "ls", "tool_search", "view_skill", "ask_user_question", "agent"]) expect(mayChangeFiles(t), t).toBe(false);
  });

  it("labels every kind of change and says sizes and modes", () => {
    expect(changeLabel("mode_changed")).toBe("mode changed");
    expect(changeLabel("symlink_changed")).toBe("symlink changed");
    expect(sizeSummary(file({}))).toBe("12 B → 40 B");
    expect(sizeSummary(file({ change: "added", before: null }))).toBe("new, 40 B");
    expect(sizeSummary(file({ change: "deleted", after: null }))).toBe("was 12 B");
    expect(sizeSummary(file({ change: "mode_changed", after: { kind: "file", mode: "755", size: 12 } }))).toBe("mode 644 → 755");
    expect(sizeSummary(file({ after: { kind: "file", mode: "755", size: 2048 } }))).toBe("12 B → 2.0 KiB, mode 644 → 755");
  });

  it("names what was not checkpointed and why", () => {
    expect(skippedReason("too_large")).toMatch(/size cap.*cannot be put back/);
    expect(skippedReason("special")).toMatch(/fifo, socket or device/);
    const v = view({ files: [file({})], skipped: [{ path: "big.bin", path_shown: [], reason: "too_large" }], complete: false });
    expect(hasChanges(v)).toBe(true);
    expect(changesSummary(v)).toBe("1 file changed, 1 not checkpointed, the call never finished: changes up to now");
    expect(hasChanges(view({}))).toBe(false);
    expect(hasChanges(null)).toBe(false);
  });
});

describe("the rewind dialog's steps", () => {
  it("previews first and sends nothing before a preview", () => {
    const s = startPreview(callTarget("call_2"));
    expect(confirmRewind(s)).toBeNull();
    expect(failed(s, "no stored call", "Parameters")).toEqual({ step: "failed", target: s.target, message: "no stored call", stage: "Parameters" });
  });

  it("leaves conflicts alone unless the person ticks overwrite", () => {
    const s = previewed(startPreview(runFromTarget("run_1", "call_1")), report(1, 2));
    expect(s.step).toBe("preview");
    expect(conflictCount(report(1, 2))).toBe(1);
    expect(actionCount(report(1, 2))).toBe(2);
    expect(confirmRewind(s)?.force).toBe(false);
    const ticked = setOverwrite(s, true);
    const c = confirmRewind(ticked);
    expect(c?.force).toBe(true);
    expect(c?.next.target).toEqual({ kind: "run", run_id: "run_1", from: "call_1" });
    expect(confirmRewind(setOverwrite(ticked, false))?.force).toBe(false);
  });

  it("cannot force a preview without conflicts, and has nothing to send when nothing would change", () => {
    const clean = previewed(startPreview(callTarget("c")), report(0, 1));
    expect(setOverwrite(clean, true)).toBe(clean);
    expect(confirmRewind(previewed(startPreview(callTarget("c")), report(0, 0)))).toBeNull();
    // Only conflicts: sent only when forced.
    const onlyConflicts = previewed(startPreview(callTarget("c")), report(2, 0));
    expect(confirmRewind(onlyConflicts)).toBeNull();
    expect(confirmRewind(setOverwrite(onlyConflicts, true))?.force).toBe(true);
  });

  it("ends with the outcome and the call it was recorded as", () => {
    const s = previewed(startPreview(callTarget("c")), report(1, 2));
    const sent = confirmRewind(s);
    if (!sent) throw new Error("nothing sent");
    const done = rewound(sent.next, report(1, 2, { dry_run: false, rewind_call_id: "call_rw" }));
    expect(done.step).toBe("done");
    if (done.step !== "done") return;
    expect(done.result.rewind_call_id).toBe("call_rw");
    expect(resultSummary(done.result)).toBe("2 paths put back, 1 conflicting path left alone");
    // A late answer for another step changes nothing.
    expect(rewound(s, report(0, 0))).toBe(s);
  });
});

describe("checkpoint commands", () => {
  it("sends the call, the target and the force choice as the shell expects", async () => {
    const calls: [string, unknown][] = [];
    const api = createCheckpointsApi(async <T>(cmd: string, args?: Record<string, unknown>) => {
      calls.push([cmd, args]);
      return null as T;
    });
    await api.callChanges("call_1");
    await api.runChanges("run_1");
    await api.rewindPreview(callTarget("call_1"), false);
    await api.rewind(runFromTarget("run_1", "call_1"), true);
    expect(calls).toEqual([
      ["call_changes", { callId: "call_1" }],
      ["run_changes", { runId: "run_1" }],
      ["rewind_preview", { target: { kind: "call", call_id: "call_1" }, force: false }],
      ["rewind", { target: { kind: "run", run_id: "run_1", from: "call_1" }, force: true }],
    ]);
  });

  it("a rejection keeps its code and stage", async () => {
    const api = createCheckpointsApi(async () => {
      throw { code: "checkpoint", stage: "Parameters", message: "call `x` has no checkpoint" };
    });
    await expect(api.callChanges("x")).rejects.toMatchObject({ detail: { code: "checkpoint", stage: "Parameters" } });
  });
});
