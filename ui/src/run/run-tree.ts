// The runs list as the window shows it (pure: no IPC, no DOM): `list_runs` answers newest first,
// and a subagent's child run (one with `parent_run_id`) is shown nested under its parent (after
// it, indented, newest child first) instead of among the top-level runs. The top-level runs keep
// their order; a child whose parent is not in the loaded page stays a top-level row (still marked
// as a subagent run by its view).
import type { RunSummary } from "../bindings/RunSummary";

/** One row of the runs list: the run and how deep it is nested (0: top level). */
export interface RunRow<T> {
  run: T;
  depth: number;
}

type Linked = Pick<RunSummary, "run_id" | "parent_run_id">;

/**
 * `runs` (in the order listed) as rows: each run followed by its children (and theirs), in the
 * order listed, one level deeper. A run appears once, even when the parent links loop.
 */
export function nestRuns<T extends Linked>(runs: readonly T[]): RunRow<T>[] {
  const ids = new Set(runs.map((r) => r.run_id));
  const children = new Map<string, T[]>();
  const roots: T[] = [];
  for (const run of runs) {
    const parent = run.parent_run_id;
    if (parent !== null && parent !== run.run_id && ids.has(parent)) {
      const siblings = children.get(parent) ?? [];
      siblings.push(run);
      children.set(parent, siblings);
    } else {
      roots.push(run);
    }
  }
  const rows: RunRow<T>[] = [];
  const placed = new Set<string>();
  const place = (run: T, depth: number): void => {
    if (placed.has(run.run_id)) return;
    placed.add(run.run_id);
    rows.push({ run, depth });
    for (const child of children.get(run.run_id) ?? []) place(child, depth + 1);
  };
  for (const run of roots) place(run, 0);
  // Runs whose parent links loop reach no top-level run: shown at the top level, in list order.
  for (const run of runs) place(run, 0);
  return rows;
}
