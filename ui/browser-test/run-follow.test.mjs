// The run view's context meter, approval card state and auto-scroll in the BUILT UI in headless
// Chromium (IPC and `run-event` mocked, the app's CSP): the meter follows each `usage` event
// ("41k / 200k", amber past the compaction threshold, "unknown window" when nothing knows it); an
// approved card says "running" and a rejected one "rejected" before their results arrive; the
// conversation follows new text and cards while the person is at the bottom, stays put when they
// scrolled up (offering "Jump to latest"), and follows again after the jump; the runs list is
// read again when the conversation is shown again and every 2 s while it stays shown (a run
// started from a terminal appears), never while it is hidden.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { browserSuite, callCount, confirmRequest, openPage, projectInfo, readyApproval, repo, runEmitter, startRun as startRunAs, unexpected } from "./harness.mjs";

const shots = join(repo, "target/ui-screenshots");
const RUN = "run_01JFOLLOW";
const RESPONSES = {
  project_info: { resolve: projectInfo() },
  list_tools: { resolve: [] },
  list_runs: { resolve: [] },
  start_run: { resolve: { run_id: RUN } },
  stop_run: { resolve: null },
  answer_confirm: { resolve: true },
};

const usage = (context, window, known = true) => ({
  type: "usage",
  input_tokens: context - 500,
  output_tokens: 500,
  context_tokens: context,
  window_tokens: window,
  window_known: known,
  compaction_threshold: 0.8,
});

describe("context meter, approval cards and auto-scroll in Chromium", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  const emit = runEmitter(RUN);
  /** Pixels between the bottom of the conversation and what is in view. */
  const gap = (page) => page.locator('[data-testid="messages"]').evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);

  const startRun = (page) => startRunAs(page, RUN, "Tidy the build");

  it("shows the context meter per step, warns past the threshold, and is honest about an unknown window", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES);
    await startRun(page);
    assert.equal(await page.locator('[data-testid="context-meter"]').count(), 0, "no meter before the first step");
    await emit(page, usage(41_000, 200_000));
    const meter = page.locator('[data-testid="context-meter"]');
    await meter.waitFor();
    assert.equal(await meter.locator('[data-testid="context-meter-text"]').textContent(), "41k / 200k");
    assert.equal(await meter.getAttribute("role"), "meter");
    assert.equal(await meter.getAttribute("aria-label"), "Context window use");
    assert.equal(await meter.getAttribute("aria-valuenow"), "41000");
    assert.equal(await meter.getAttribute("aria-valuemax"), "200000");
    assert.match(await meter.getAttribute("aria-valuetext"), /^Context: 41,000 of 200,000 tokens \(21%\)/);
    assert.equal(await meter.getAttribute("data-level"), "ok");
    const width = () => meter.locator('[data-testid="context-meter-fill"]').evaluate((el) => el.getBoundingClientRect().width / el.parentElement.getBoundingClientRect().width);
    assert.ok(Math.abs((await width()) - 0.205) < 0.02, `bar at ${await width()}`);
    writeFileSync(join(shots, "context-meter.png"), await page.locator(".run-bar").screenshot());

    await emit(page, usage(172_000, 200_000));
    await page.locator('[data-testid="context-meter"][data-level="warn"]').waitFor();
    assert.equal(await meter.locator('[data-testid="context-meter-text"]').textContent(), "172k / 200k");
    const amber = await meter.locator('[data-testid="context-meter-text"]').evaluate((el) => getComputedStyle(el).color);
    assert.equal(amber, "rgb(154, 91, 0)", "the theme's warning colour");
    writeFileSync(join(shots, "context-meter-warn.png"), await page.locator(".run-bar").screenshot());

    await emit(page, usage(12_000, 32_768, false));
    await page.locator('[data-testid="context-meter"][data-level="unknown"]').waitFor();
    assert.equal(await meter.locator('[data-testid="context-meter-text"]').textContent(), "12k / unknown window");
    assert.equal(await meter.locator('[data-testid="context-meter-fill"]').count(), 0);
    assert.equal(await meter.getAttribute("aria-valuemax"), null);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("an approved card runs and a rejected one says rejected before their results", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES);
    await startRun(page);
    const request = (id, path) => confirmRequest({ call_id: id, tool: "write_file", risk: "writes", digest: "d", target: path, scope: ["project"], consequence: `creates ${path}`, diff: null });
    for (const [id, path, key, status] of [["call_a", "a.txt", "a", "running"], ["call_b", "b.txt", "r", "rejected"]]) {
      await emit(page, { type: "tool_call", tool_call_id: id, tool: "write_file", input: { path } });
      await emit(page, { type: "confirm_request", tool_call_id: id, request: request(id, path) });
      const card = page.locator(`[data-testid="tool-card"][data-id="${id}"]`);
      await page.locator('[data-testid="approval-dialog"]').waitFor();
      assert.equal(await card.locator('[data-testid="tool-status"]').textContent(), "waiting for approval");
      await readyApproval(page);
      await page.keyboard.press(key);
      await page.locator('[data-testid="approval-dialog"]').waitFor({ state: "detached" });
      await page.locator(`[data-testid="tool-card"][data-id="${id}"][data-status="${status}"]`).waitFor();
      assert.equal(await card.locator('[data-testid="tool-status"]').textContent(), status);
    }
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("follows new content at the bottom, stays put when scrolled up, and jumps back on request", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1000, height: 640 });
    await startRun(page);
    const para = (i) => `Paragraph ${i}: ${"the build script copies the assets, then compiles each crate in turn. ".repeat(3)}\n\n`;
    for (let i = 0; i < 25; i++) await emit(page, { type: "text_delta", text: para(i) });
    await page.waitForFunction(() => document.querySelector('[data-testid="msg-assistant"]')?.textContent?.includes("Paragraph 24"));
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="messages"]');
      return el.scrollHeight > el.clientHeight * 2 && el.scrollHeight - el.scrollTop - el.clientHeight < 2;
    });
    // A new card while at the bottom: still followed.
    await emit(page, { type: "tool_call", tool_call_id: "call_ls", tool: "list_dir", input: { path: "." } });
    await page.locator('[data-testid="tool-card"][data-id="call_ls"]').waitFor();
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="messages"]');
      return el.scrollHeight - el.scrollTop - el.clientHeight < 2;
    });
    assert.equal(await page.locator('[data-testid="jump-latest"]').count(), 0);

    // The person scrolls up: new text and cards no longer move the view.
    await page.locator('[data-testid="messages"]').hover();
    await page.mouse.wheel(0, -900);
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="messages"]');
      return el.scrollHeight - el.scrollTop - el.clientHeight > 600;
    });
    const top = await page.locator('[data-testid="messages"]').evaluate((el) => el.scrollTop);
    await emit(page, { type: "tool_result", tool_call_id: "call_ls", status: "ok", stage: null, model: "Cargo.toml\nsrc/", duration_ms: 4, exit_code: null, omitted_bytes: null, activated: [], hooks: [] });
    await emit(page, { type: "text_delta", text: "More: the assets step can be skipped.\n\n" });
    const jump = page.locator('[data-testid="jump-latest"]');
    await jump.waitFor();
    assert.equal(await page.locator('[data-testid="messages"]').evaluate((el) => el.scrollTop), top, "the view did not move");
    assert.ok((await gap(page)) > 600);
    writeFileSync(join(shots, "jump-to-latest.png"), await page.screenshot());

    // Jump (keyboard): back at the bottom, the button goes, and new content is followed again.
    await jump.focus();
    await page.keyboard.press("Enter");
    await jump.waitFor({ state: "detached" });
    assert.ok((await gap(page)) < 2);
    await emit(page, { type: "tool_call", tool_call_id: "call_cat", tool: "read_file", input: { path: "build.rs" } });
    await page.locator('[data-testid="tool-card"][data-id="call_cat"]').waitFor();
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="messages"]');
      return el.scrollHeight - el.scrollTop - el.clientHeight < 2;
    });
    // Scrolling back down by hand also resumes following.
    await page.mouse.wheel(0, -900);
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="messages"]');
      return el.scrollHeight - el.scrollTop - el.clientHeight > 600;
    });
    await emit(page, { type: "text_delta", text: "Checking once more.\n\n" });
    await jump.waitFor();
    await page.mouse.wheel(0, 5000);
    await jump.waitFor({ state: "detached" });
    await emit(page, { type: "tool_call", tool_call_id: "call_last", tool: "read_file", input: { path: "Cargo.toml" } });
    await page.locator('[data-testid="tool-card"][data-id="call_last"]').waitFor();
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-testid="messages"]');
      return el.scrollHeight - el.scrollTop - el.clientHeight < 2;
    });
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("reads the runs list again when the conversation is shown again", async () => {
    const TERMINAL_RUN = {
      run_id: "run_01JTERMINAL", title: "started from a terminal", provider: "anthropic", model: "claude", status: "completed",
      started_at: "2026-11-30T12:00:00.000Z", steps: 2, tool_calls: 1,
    };
    const dynamic = `{ list_runs: () => (window.__terminalRun ? [${JSON.stringify(TERMINAL_RUN)}] : []) }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", dynamic, { clock: true });
    await page.locator('[data-testid="runs-empty"]').waitFor();
    const listed = () => callCount(page, "list_runs");
    assert.ok((await listed()) >= 1, "listed at start");
    // `aibuddy run` in a terminal stores a run: this window gets no event for it.
    await page.evaluate(() => (window.__terminalRun = true));
    const before = await listed();
    await page.keyboard.press("Alt+3");
    await page.keyboard.press("Alt+1");
    await page.locator('[data-testid="run-item"][data-id="run_01JTERMINAL"]').waitFor({ timeout: 5_000 });
    assert.ok((await listed()) > before, "listed again when shown");
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("opens a run still running in a terminal as view only, leaving New run and the list usable", async () => {
    const RUNNING = {
      run_id: "run_01JELSEWHERE", title: "long refactor", provider: "anthropic", model: "claude", status: "running",
      started_at: "2026-11-30T12:00:00.000Z", steps: 1, tool_calls: 1,
    };
    const DETAIL = {
      run_id: RUNNING.run_id, title: RUNNING.title, provider: "anthropic", model: "claude", presentation: "native", status: "running",
      stage: null, error_message: null, stop_reason: null, started_at: RUNNING.started_at, finished_at_ms: null,
      usage: { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0 }, meter: null, steps: 1, tool_calls: 1,
      messages: [
        { seq: 1, role: "user", text: "long refactor", tool_calls: [], result: null, usage: null },
        { seq: 2, role: "assistant", text: "Running the tests.", tool_calls: [{ tool_call_id: "call_t", tool: "execute", input: { command: "cargo test" } }], result: null, usage: null },
      ],
    };
    const { page, problems } = await openPage(browser, base, { ...RESPONSES, list_runs: { resolve: [RUNNING] }, show_run: { resolve: DETAIL } });
    await page.locator('[data-testid="run-item"][data-id="run_01JELSEWHERE"]').click();
    await page.locator('[data-testid="run-phase"][data-phase="elsewhere"]').waitFor({ timeout: 5_000 });
    assert.equal(await page.locator('[data-testid="run-phase"]').textContent(), "running elsewhere (view only)");
    assert.equal(await page.locator('[data-testid="run-phase"] .spinner').count(), 0);
    assert.equal(await page.locator('[data-testid="run-stop"]').isDisabled(), true);
    assert.equal(await page.locator('[data-testid="run-new"]').isDisabled(), false);
    await page.locator('[data-testid="prompt"]').fill("and then?");
    assert.equal(await page.locator('[data-testid="prompt-send"]').isDisabled(), true);
    await page.keyboard.press("Enter");
    // New run: a fresh conversation that sends.
    await page.locator('[data-testid="run-new"]').click();
    await page.locator('[data-testid="run-phase"][data-phase="idle"]').waitFor();
    await page.locator('[data-testid="prompt"]').fill("something else");
    assert.equal(await page.locator('[data-testid="prompt-send"]').isDisabled(), false);
    assert.deepEqual(await callCount(page, "continue_run"), 0);
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("reads the runs list again while the conversation stays shown", async () => {
    const TERMINAL_RUN = {
      run_id: "run_01JPOLLED", title: "started while the window watched", provider: "anthropic", model: "claude", status: "running",
      started_at: "2026-11-30T12:00:00.000Z", steps: 1, tool_calls: 0,
    };
    const dynamic = `{ list_runs: () => (window.__terminalRun ? [${JSON.stringify(TERMINAL_RUN)}] : []) }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", dynamic, { clock: true });
    await page.locator('[data-testid="runs-empty"]').waitFor();
    const listed = () => callCount(page, "list_runs");
    // No tab switch, no event: the poll (every 2 s) finds the run.
    await page.evaluate(() => (window.__terminalRun = true));
    await page.locator('[data-testid="run-item"][data-id="run_01JPOLLED"]').waitFor({ timeout: 6_000 });
    // Hidden behind another tab, the list is not read.
    await page.keyboard.press("Alt+3");
    const hidden = await listed();
    await page.clock.runFor(4_500);
    assert.equal(await listed(), hidden, "no polling while the conversation is hidden");
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("a view-only run updates itself while shown: new steps appear, and it becomes the finished view when it ends", async () => {
    const RUNNING = {
      run_id: "run_01JWATCHED", title: "terminal run", provider: "anthropic", model: "claude", status: "running",
      started_at: "2026-11-30T12:00:00.000Z", steps: 1, tool_calls: 1,
    };
    const first = [
      { seq: 1, role: "user", text: "terminal run", tool_calls: [], result: null, usage: null },
      { seq: 2, role: "assistant", text: "Running the tests.", tool_calls: [{ tool_call_id: "call_t", tool: "execute", input: { command: "cargo test" } }], result: null, usage: null },
    ];
    const later = [
      { seq: 3, role: "tool", text: "", tool_calls: [], result: { tool_call_id: "call_t", tool: "execute", status: "ok", stage: null, error_message: null, model: "ok", compacted: false, hooks: [] }, usage: null },
      { seq: 4, role: "assistant", text: "Reading the report.", tool_calls: [{ tool_call_id: "call_r", tool: "read_file", input: { path: "report.txt" } }], result: null, usage: null },
    ];
    const detail = {
      run_id: RUNNING.run_id, title: RUNNING.title, provider: "anthropic", model: "claude", presentation: "native", status: "running",
      stage: null, error_message: null, started_at: RUNNING.started_at, finished_at_ms: null,
      usage: { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0 }, meter: null, steps: 1, tool_calls: 1,
      messages: first,
    };
    const dynamic = `{
      list_runs: () => [${JSON.stringify(RUNNING)}],
      show_run: () => {
        const d = ${JSON.stringify(detail)};
        if (window.__step >= 1) d.messages = d.messages.concat(${JSON.stringify(later)});
        if (window.__step >= 2) d.status = "completed";
        return d;
      },
    }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", dynamic, { clock: true });
    await page.locator('[data-testid="run-item"][data-id="run_01JWATCHED"]').click();
    await page.locator('[data-testid="run-phase"][data-phase="elsewhere"]').waitFor({ timeout: 5_000 });
    const cards = page.locator('[data-testid="tool-card"]');
    assert.equal(await cards.count(), 1);
    // Hidden behind another tab, it is not read again.
    await page.keyboard.press("Alt+3");
    const reads = await callCount(page, "show_run");
    await page.evaluate(() => (window.__step = 1));
    await page.clock.runFor(4_500);
    assert.equal(await callCount(page, "show_run"), reads, "no reads while the conversation is hidden");
    // Shown: the terminal's new step appears without opening it again.
    await page.keyboard.press("Alt+1");
    await page.locator('[data-testid="tool-card"][data-id="call_r"]').waitFor({ timeout: 6_000 });
    assert.equal(await page.locator('[data-testid="run-phase"]').getAttribute("data-phase"), "elsewhere");
    assert.deepEqual((await page.locator('[data-testid="msg-assistant"]').allTextContents()).map((t) => t.trim()), ["Running the tests.", "Reading the report."]);
    // It ends: the normal finished view, which can be continued.
    await page.evaluate(() => (window.__step = 2));
    await page.locator('[data-testid="run-phase"][data-phase="completed"]').waitFor({ timeout: 6_000 });
    assert.equal(await page.locator('[data-testid="notice"]').count(), 0);
    await page.locator('[data-testid="prompt"]').fill("and then?");
    assert.equal(await page.locator('[data-testid="prompt-send"]').textContent(), "Continue");
    assert.equal(await page.locator('[data-testid="prompt-send"]').isDisabled(), false);
    // Finished: no more reads.
    const done = await callCount(page, "show_run");
    await page.clock.runFor(4_500);
    assert.equal(await callCount(page, "show_run"), done);
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("a view-only run says when a read fails; once its process died it becomes interrupted with a note, its open call ended, and is read no more", async () => {
    const RUNNING = {
      run_id: "run_01JDEAD", title: "killed terminal run", provider: "anthropic", model: "claude", status: "running",
      started_at: "2026-11-30T12:00:00.000Z", steps: 1, tool_calls: 1,
    };
    const detail = {
      run_id: RUNNING.run_id, title: RUNNING.title, provider: "anthropic", model: "claude", presentation: "native", status: "running",
      stage: null, error_message: null, started_at: RUNNING.started_at, finished_at_ms: null,
      usage: { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0 }, meter: null, steps: 1, tool_calls: 1,
      messages: [
        { seq: 1, role: "user", text: "killed terminal run", tool_calls: [], result: null, usage: null },
        { seq: 2, role: "assistant", text: "Building.", tool_calls: [{ tool_call_id: "call_b", tool: "execute", input: { command: "make" } }], result: null, usage: null },
      ],
    };
    // As the shell answers once the run's process is gone (its instance lock free): interrupted.
    const dynamic = `{
      list_runs: () => [{ ...${JSON.stringify(RUNNING)}, status: window.__dead ? "interrupted" : "running" }],
      show_run: () => {
        if (window.__failing) throw { code: "project", stage: null, message: "database is locked" };
        return { ...${JSON.stringify(detail)}, status: window.__dead ? "interrupted" : "running" };
      },
    }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", dynamic, { clock: true });
    await page.locator('[data-testid="run-item"][data-id="run_01JDEAD"]').click();
    await page.locator('[data-testid="run-phase"][data-phase="elsewhere"]').waitFor({ timeout: 5_000 });
    // A read that fails: what is shown stays, said to be possibly out of date.
    await page.evaluate(() => (window.__failing = true));
    const stale = page.locator('[data-testid="elsewhere-stale"]');
    await stale.waitFor({ timeout: 6_000 });
    assert.equal(await stale.textContent(), "Possibly out of date: this run could not be read again (database is locked). Retrying.");
    await page.evaluate(() => {
      window.__failing = false;
      window.__dead = true;
    });
    await page.locator('[data-testid="run-phase"][data-phase="interrupted"]').waitFor({ timeout: 6_000 });
    assert.equal(await stale.count(), 0);
    assert.deepEqual(await page.locator('[data-testid="notice"]').allTextContents(), [
      "The process that was running this run ended before it finished (it crashed or was stopped): shown as stored, interrupted. Continue resumes it here.",
    ]);
    assert.equal(await page.locator('[data-testid="tool-card"][data-id="call_b"]').getAttribute("data-status"), "cancelled");
    assert.equal(await page.locator('[data-testid="prompt-send"]').textContent(), "Continue");
    const reads = await callCount(page, "show_run");
    await page.clock.runFor(4_500);
    assert.equal(await callCount(page, "show_run"), reads, "not read again once it is known to have ended");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });
});
