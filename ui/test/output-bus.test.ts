import { describe, expect, it } from "vitest";
import { MAX_BUFFERED_CHARS, MAX_WRITE_CHARS, OutputBus, pieces } from "../src/run/output-bus";

/** A scheduler the test runs by hand: one "frame" per call of run(). */
function manualFrames() {
  const queue: Array<() => void> = [];
  return { schedule: (f: () => void) => queue.push(f), run: () => queue.splice(0).forEach((f) => f()), pending: () => queue.length };
}

describe("output bus", () => {
  it("coalesces many chunks into one write per frame and keeps order", () => {
    const frames = manualFrames();
    const bus = new OutputBus(frames.schedule);
    const writes: string[] = [];
    bus.subscribe("c1", (t) => writes.push(t));
    for (let i = 0; i < 1000; i++) bus.publish("c1", `${i},`);
    expect(frames.pending()).toBe(1);
    frames.run();
    expect(writes).toHaveLength(1);
    expect(writes[0]?.split(",").slice(0, 3)).toEqual(["0", "1", "2"]);
    expect(writes[0]?.endsWith("999,")).toBe(true);
  });

  it("hands the terminal bounded pieces: small chunks joined, large ones split, nothing lost", () => {
    const big = "b".repeat(MAX_WRITE_CHARS * 2 + 10);
    const out = pieces(["a", "bb", big, "c"]);
    expect(out.join("")).toBe(`abb${big}c`);
    expect(out.every((p) => p.length <= MAX_WRITE_CHARS)).toBe(true);
    expect(out.map((p) => p.length)).toEqual([MAX_WRITE_CHARS, MAX_WRITE_CHARS, 14]);
    expect(pieces([])).toEqual([]);
  });

  it("keeps output that arrives before the terminal subscribes, bounded, and says what it dropped", () => {
    const frames = manualFrames();
    const bus = new OutputBus(frames.schedule);
    const big = "x".repeat(1024 * 1024);
    for (let i = 0; i < 20; i++) bus.publish("c1", big);
    const writes: string[] = [];
    bus.subscribe("c1", (t) => writes.push(t));
    frames.run();
    expect(writes[0]).toMatch(/^\[\d+ earlier characters were not kept/);
    expect(writes.slice(1).every((w) => w.length <= MAX_WRITE_CHARS)).toBe(true);
    const kept = writes.slice(1).join("").length;
    expect(kept).toBeLessThanOrEqual(MAX_BUFFERED_CHARS);
    expect(kept).toBeGreaterThan(MAX_BUFFERED_CHARS - big.length);
  });

  it("routes by call id and stops writing after detach", () => {
    const frames = manualFrames();
    const bus = new OutputBus(frames.schedule);
    const a: string[] = [];
    const b: string[] = [];
    const detachA = bus.subscribe("a", (t) => a.push(t));
    bus.subscribe("b", (t) => b.push(t));
    bus.publish("a", "1");
    bus.publish("b", "2");
    frames.run();
    detachA();
    bus.publish("a", "3");
    frames.run();
    expect(a).toEqual(["1"]);
    expect(b).toEqual(["2"]);
  });
});
