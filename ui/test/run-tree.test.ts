// The runs list nests a subagent's child run under its parent (src/run/run-tree.ts), and the
// sidebar shows it so: after the parent, indented, still marked "↳ subagent".
import { flushSync, mount, unmount } from "svelte";
import { describe, expect, it } from "vitest";
import type { RunSummary } from "../src/bindings/RunSummary";
import RunsSidebar from "../src/components/run/RunsSidebar.svelte";
import { nestRuns } from "../src/run/run-tree";

const run = (run_id: string, parent_run_id: string | null = null): RunSummary => ({
  run_id,
  title: `title ${run_id}`,
  provider: null,
  model: null,
  status: "completed",
  started_at: "2026-12-04T04:00:00.000Z",
  steps: 1,
  tool_calls: 0,
  parent_run_id,
  parent_call_id: parent_run_id === null ? null : "call",
});

const shape = (runs: RunSummary[]) => nestRuns(runs).map((r) => `${"  ".repeat(r.depth)}${r.run.run_id}`);

describe("the runs list's nesting", () => {
  it("puts each child run after its parent, one level deeper, with the order of the parents unchanged", () => {
    // Newest first, as list_runs answers: children started after their parents come first.
    const listed = [run("c2", "p1"), run("p3"), run("c1", "p1"), run("g1", "c1"), run("p1"), run("d1", "p2"), run("p2")];
    expect(shape(listed)).toEqual(["p3", "p1", "  c2", "  c1", "    g1", "p2", "  d1"]);
  });

  it("keeps a child whose parent is not in the loaded page at the top level, in its place", () => {
    expect(shape([run("p2"), run("c9", "p-older"), run("p1")])).toEqual(["p2", "c9", "p1"]);
  });

  it("shows every run once, even when parent links loop or name the run itself", () => {
    const rows = shape([run("a", "b"), run("b", "a"), run("s", "s"), run("p")]);
    expect(rows.map((r) => r.trim()).sort()).toEqual(["a", "b", "p", "s"]);
    expect(rows).toContain("s");
    expect(rows).toContain("p");
  });

  it("leaves a list without subagent runs as it is", () => {
    expect(shape([run("3"), run("2"), run("1")])).toEqual(["3", "2", "1"]);
    expect(nestRuns([])).toEqual([]);
  });
});

describe("the runs sidebar", () => {
  it("shows a child run nested under its parent, marked, and an orphan child at the top level, marked", () => {
    const host = document.createElement("div");
    document.body.append(host);
    const c = mount(RunsSidebar, {
      target: host,
      props: {
        runs: [run("child", "parent"), run("other"), run("orphan", "gone"), run("parent")],
        error: null,
        currentId: null,
        disabled: false,
        onopen: () => {},
        onnew: () => {},
      },
    });
    flushSync();
    const items = [...host.querySelectorAll<HTMLElement>('[data-testid="run-item"]')];
    expect(items.map((i) => i.dataset.id)).toEqual(["other", "orphan", "parent", "child"]);
    const depth = (id: string) => host.querySelector(`[data-id="${id}"]`)?.closest("li")?.dataset.depth;
    expect(depth("child")).toBe("1");
    expect(depth("orphan")).toBe("0");
    const marked = (id: string) => host.querySelector(`[data-id="${id}"] [data-testid="run-child"]`)?.textContent;
    expect(marked("child")).toBe("↳ subagent");
    expect(marked("orphan")).toBe("↳ subagent");
    expect(marked("parent")).toBeUndefined();
    expect(host.querySelector('[data-id="child"]')?.classList.contains("runs-child")).toBe(true);
    expect(host.querySelector('[data-id="orphan"]')?.classList.contains("runs-child")).toBe(false);
    unmount(c);
    host.remove();
  });
});
