// Responsiveness of the built UI in headless Chromium (mocked IPC), printed, not asserted against a
// clock (the machine is shared): (1) 50 MB of command output streamed into an execute card's
// terminal through run events: the longest main-thread task and frame gap while it streams; (2) the
// history with 100,000 rows (served in pages by the shell's history_page, as the real command
// does) scrolled back to the oldest frame by frame, then jumped around: frame times. Each is printed beside an idle
// baseline measured in the same page, and the functional side is asserted (every byte reached the
// terminal; only a window of the 100,000 rows is in the DOM).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { argsOf, browserSuite, historyMock, historyRowsSource, openPage, projectInfo, runEmitter, waitForCall } from "./harness.mjs";

const RUN = "run_perf";
const BASE = {
  project_info: { resolve: projectInfo("/p", { data_dir: "/d" }) },
  list_tools: { resolve: [] },
  list_runs: { resolve: [] },
  start_run: { resolve: { run_id: RUN } },
};
const HISTORY_ROWS = 100_000;
/** The shell's history commands over 100,000 rows, paged as the shell pages them (harness.mjs). */
const HISTORY = `{ ...${historyMock(historyRowsSource(HISTORY_ROWS))} }`;

/** In the page: max rAF gap and max long task over `ms` of doing nothing (the noise floor). */
const IDLE = (ms) =>
  new Promise((resolve) => {
    let last = performance.now();
    let maxGap = 0;
    const start = last;
    const tick = (t) => {
      maxGap = Math.max(maxGap, t - last);
      last = t;
      if (t - start < ms) requestAnimationFrame(tick);
      else resolve(maxGap);
    };
    requestAnimationFrame(tick);
  });

describe("responsiveness (printed)", () => {
  let browser;
  let base;
  browserSuite(null, (s) => ({ browser, base } = s));

  it("streams 50 MB of command output into the terminal without long stalls", async () => {
    const { page } = await openPage(browser, base, BASE, { width: 1280, height: 860 });
    await page.locator('[data-testid="prompt"]').fill("stream");
    await page.keyboard.press("Enter");
    await waitForCall(page, "start_run");
    const emitRun = runEmitter(RUN);
    const emit = (event) => emitRun(page, event);
    await emit({ type: "run_started", run_id: RUN, provider: "fake", model: "m", presentation: "native" });
    await emit({ type: "tool_call", tool_call_id: "call_big", tool: "execute", input: { command: "yes | head -c 50M" } });
    await page.locator('[data-testid="tool-card"] .xterm-rows').waitFor();
    const idleGap = await page.evaluate(IDLE, 1500);
    const result = await page.evaluate(async (run) => {
      const longTasks = [];
      const observer = new PerformanceObserver((list) => list.getEntries().forEach((e) => longTasks.push(e.duration)));
      observer.observe({ type: "longtask", buffered: false });
      const line = "y".repeat(79) + "\n";
      const chunk = line.repeat(Math.floor(65536 / 80)); // ~64 KiB per event, as the shell's pump reads
      const total = 50 * 1024 * 1024;
      const events = Math.ceil(total / chunk.length);
      let maxGap = 0;
      let last = performance.now();
      let frames = 0;
      let done = false;
      const tick = (t) => {
        maxGap = Math.max(maxGap, t - last);
        last = t;
        frames++;
        if (!done) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      const start = performance.now();
      for (let i = 0; i < events; i++) {
        window.__emit("run-event", { run_id: run, event: { type: "tool_output", tool_call_id: "call_big", stream: "stdout", chunk } });
        // IPC messages arrive as separate tasks.
        if (i % 4 === 3) await new Promise((r) => setTimeout(r, 0));
      }
      const card = document.querySelector('[data-testid="tool-card"] [data-testid="terminal"]');
      while (Number(card.getAttribute("data-written")) < events * chunk.length) await new Promise((r) => setTimeout(r, 20));
      const elapsed = performance.now() - start;
      done = true;
      observer.disconnect();
      return { events, chars: events * chunk.length, written: Number(card.getAttribute("data-written")), elapsed, maxGap, frames, maxLongTask: Math.max(0, ...longTasks), longTasks: longTasks.length };
    }, RUN);
    console.log(
      `[perf] 50 MB output: ${result.events} events, ${(result.chars / 1048576).toFixed(1)} MiB in ${(result.elapsed / 1000).toFixed(2)} s; ` +
        `longest task ${result.maxLongTask.toFixed(0)} ms (${result.longTasks} over 50 ms), longest frame gap ${result.maxGap.toFixed(0)} ms ` +
        `vs idle baseline ${idleGap.toFixed(0)} ms (ratio ${(result.maxGap / Math.max(idleGap, 1)).toFixed(1)}x); goal: no stall over 100 ms`,
    );
    assert.equal(result.written, result.chars, "the terminal received every character");
    await page.close();
  });

  it("scrolls 100,000 history rows, paged backward as it goes, with only a window of them in the DOM", async () => {
    const { page } = await openPage(browser, base, BASE, { width: 1280, height: 860 }, "light", HISTORY);
    await page.locator('[data-testid="tab-history"]').click();
    await page.locator('[data-testid="hb-row"]').first().waitFor({ timeout: 60_000 });
    const idleGap = await page.evaluate(IDLE, 1000);
    const result = await page.evaluate(async (total) => {
      const scroller = document.querySelector('[data-testid="history-browser"] .history-scroll');
      const loaded = () => Number.parseInt(document.querySelector('[data-testid="hb-count"]')?.textContent ?? "0", 10);
      const rowsInDom = () => document.querySelectorAll('[data-testid="hb-row"]').length;
      const stats = (frames) => {
        const sorted = [...frames].sort((a, b) => a - b);
        const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
        return { p50: at(0.5), p95: at(0.95), max: sorted.at(-1), frames: sorted.length };
      };
      let maxRows = 0;
      // 1. Reading backward: 14,000 px a frame (about 400 rows), older pages fetched as the end nears.
      const reading = [];
      let last = performance.now();
      const start = last;
      while (loaded() < total || scroller.scrollTop + scroller.clientHeight < scroller.scrollHeight - 1) {
        scroller.scrollTop += 14_000;
        await new Promise((r) => requestAnimationFrame(r));
        const t = performance.now();
        reading.push(t - last);
        last = t;
        maxRows = Math.max(maxRows, rowsInDom());
        if (t - start > 120_000) break;
      }
      const readSeconds = (performance.now() - start) / 1000;
      const oldest = [...document.querySelectorAll('[data-testid="hb-row"]')].at(-1)?.getAttribute("data-id");
      // 2. Everything loaded: jumps anywhere in the 100,000 rows.
      const jumping = [];
      last = performance.now();
      for (let i = 0; i < 240; i++) {
        scroller.scrollTop = (i * 1_234_567) % scroller.scrollHeight;
        await new Promise((r) => requestAnimationFrame(r));
        const t = performance.now();
        jumping.push(t - last);
        last = t;
        maxRows = Math.max(maxRows, rowsInDom());
      }
      return { reading: stats(reading), jumping: stats(jumping), readSeconds, loaded: loaded(), maxRows, oldest };
    }, HISTORY_ROWS);
    const line = (s) => `p50 ${s.p50.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms, max ${s.max.toFixed(1)} ms over ${s.frames} frames`;
    console.log(
      `[perf] history ${HISTORY_ROWS} rows (pages of 500 via history_page): scrolling back through all of them in ${result.readSeconds.toFixed(1)} s: ${line(result.reading)}; ` +
        `then jumping anywhere: ${line(result.jumping)}; idle baseline max gap ${idleGap.toFixed(1)} ms; at most ${result.maxRows} rows in the DOM; goal: 60 fps-equivalent (16.7 ms)`,
    );
    assert.equal(result.loaded, HISTORY_ROWS, "every page was fetched");
    assert.ok(result.maxRows < 200, `virtualized: ${result.maxRows} rows in the DOM`);
    assert.equal(result.oldest, "call_000001", "the last (oldest) row is reachable");
    const calls = (await argsOf(page, "history_page")).map((a) => a.query);
    assert.ok(calls.length >= HISTORY_ROWS / 500, `paged: ${calls.length} history_page calls`);
    assert.ok(calls.every((q) => q.limit <= 1000), "no page over the shell's cap");
    await page.close();
  });
});
