// A container's project sync (issue 26) on a command's card: the counts, every refused path with
// why (revealed: the paths come from the container), the skipped ones, and "incomplete"; the same
// on the live card and on a reopened run's card; nothing for a local command.
import { flushSync, mount, unmount } from "svelte";
import { afterEach, describe, expect, it } from "vitest";
import type { SyncView } from "../src/bindings/SyncView";
import ToolCardView from "../src/components/run/ToolCardView.svelte";
import { detailEvents, type RunEvent } from "../src/provisional/run-types";
import { OutputBus } from "../src/run/output-bus";
import { applyRunEvent, emptyRun, type ToolCard } from "../src/run/state";
import { storedExecuteRun } from "./fixtures";

const HOSTILE_SYNC: SyncView = {
  copied_in: 4,
  removed_in: 1,
  brought_back: 2,
  brought_back_bytes: 120,
  deleted: 1,
  refused: [
    { path: [{ kind: "text", text: ".git/hooks/pre-commit" }], why: [{ kind: "text", text: "protected path" }] },
    {
      path: [{ kind: "text", text: "evil" }, { kind: "code", code: "ESC" }, { kind: "text", text: "[2K" }, { kind: "non_ascii", text: "＃" }, { kind: "text", text: "<b>x</b>" }],
      why: [{ kind: "text", text: "a link leading out of the project" }],
    },
  ],
  skipped: [{ path: [{ kind: "text", text: "big.bin" }], why: [{ kind: "text", text: "over the size bound" }] }],
  more_notes: 3,
  incomplete: [{ kind: "text", text: "the engine stopped answering" }],
  read_only: false,
};

const call: RunEvent = { type: "tool_call", tool_call_id: "c1", tool: "execute", input: { command: "make" } };

function cardAfter(events: RunEvent[]): ToolCard {
  let s = emptyRun();
  for (const e of events) s = applyRunEvent(s, e, 1000);
  const item = s.items.find((i) => i.kind === "tool");
  if (!item || item.kind !== "tool") throw new Error("no card");
  return item.card;
}

const liveResult = (sync?: SyncView): RunEvent => ({
  type: "tool_result",
  tool_call_id: "c1",
  status: "ok",
  stage: null,
  model: "exit 0",
  duration_ms: 1200,
  exit_code: 0,
  omitted_bytes: null,
  activated: [],
  hooks: [],
  ...(sync ? { sync } : {}),
});

const cleanup: Array<() => void> = [];
afterEach(() => {
  while (cleanup.length) cleanup.pop()?.();
});

function shown(card: ToolCard): HTMLElement {
  const h = document.createElement("div");
  const c = mount(ToolCardView, { target: h, props: { card, bus: new OutputBus(), onstop: () => {} } });
  cleanup.push(() => unmount(c));
  flushSync();
  return h;
}

/** The card shows the counts, every refused path with why (revealed, as text), the skipped, incomplete. */
function expectHostileSyncShown(h: HTMLElement): void {
  const sync = h.querySelector('[data-testid="tool-sync"]') as HTMLElement;
  expect(sync).not.toBeNull();
  expect(sync.getAttribute("data-refused")).toBe("2");
  expect(sync.getAttribute("data-incomplete")).toBe("true");
  expect(h.querySelector('[data-testid="sync-counts"]')?.textContent).toBe(
    "project sync: 4 copied in, 1 removed in the container before; 2 brought back (120 B), 1 deleted here after",
  );
  expect(h.querySelector('[data-testid="sync-refused-head"]')?.textContent).toContain("REFUSED 2 changes");
  const refused = [...h.querySelectorAll('[data-testid="sync-refused"]')];
  expect(refused.map((e) => e.textContent)).toEqual([
    ".git/hooks/pre-commit protected path",
    "evil<ESC>[2K＃<b>x</b> a link leading out of the project",
  ]);
  // The escape is a visible code, the look-alike is marked, the markup stays text.
  expect(refused[1]!.querySelector(".reveal-code")?.textContent).toBe("<ESC>");
  expect(refused[1]!.querySelector("mark.reveal-non-ascii")?.textContent).toBe("＃");
  expect(refused[1]!.querySelector("b")).toBeNull();
  expect(sync.textContent).not.toContain("\u001b");
  expect([...h.querySelectorAll('[data-testid="sync-skipped"]')].map((e) => e.textContent)).toEqual(["big.bin over the size bound"]);
  expect(h.querySelector('[data-testid="sync-more"]')?.textContent).toBe("3 more not listed");
  expect(h.querySelector('[data-testid="sync-incomplete"]')?.textContent).toBe(
    "INCOMPLETE (the engine stopped answering): deletions in the container were not applied",
  );
}

describe("project sync on a command's card", () => {
  it("the live card shows the counts, the refused paths revealed, the skipped and incomplete", () => {
    expectHostileSyncShown(shown(cardAfter([call, liveResult(HOSTILE_SYNC)])));
  });

  it("a reopened run's card shows the same", () => {
    expectHostileSyncShown(shown(cardAfter(detailEvents(storedExecuteRun({ sync: HOSTILE_SYNC })))));
  });

  it("a local command, a running one and a complete sync with nothing refused show no alarm", () => {
    expect(shown(cardAfter([call, liveResult()])).querySelector('[data-testid="tool-sync"]')).toBeNull();
    expect(shown(cardAfter(detailEvents(storedExecuteRun()))).querySelector('[data-testid="tool-sync"]')).toBeNull();
    expect(shown(cardAfter([call])).querySelector('[data-testid="tool-sync"]')).toBeNull();
    const quiet: SyncView = { ...HOSTILE_SYNC, refused: [], skipped: [], more_notes: 0, incomplete: null, read_only: true };
    const h = shown(cardAfter([call, liveResult(quiet)]));
    expect(h.querySelector('[data-testid="tool-sync"]')?.getAttribute("data-refused")).toBe("0");
    expect(h.querySelector('[data-testid="sync-refused-head"]')).toBeNull();
    expect(h.querySelector('[data-testid="sync-incomplete"]')).toBeNull();
    expect(h.querySelector('[data-testid="sync-read-only"]')).not.toBeNull();
  });
});
