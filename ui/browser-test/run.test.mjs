// The run view of the BUILT UI in headless Chromium, IPC and the `run-event` event mocked
// (@tauri-apps/api/mocks with shouldMockEvents), under the app's CSP. A scripted run plays streamed
// Markdown, an `execute` card with live terminal output, an approval dialog answered from the
// keyboard, and a question dialog; each state is saved under target/e2e-screenshots/.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { argsOf, browserSuite, checkpointsMock, confirmRequest, openPage, projectInfo, readyApproval, repo, runEmitter, startRun as startRunAs, unexpected, waitForCall } from "./harness.mjs";

const shots = join(repo, "target/e2e-screenshots");

const RUN = "run_01JDESKTOP";

const PROJECT = projectInfo();
const RUNS = [
  { run_id: "run_00OLDER", title: "Explain the build script", status: "completed", started_at: "2026-11-30T09:12:00.000Z", provider: "anthropic", model: "claude-sonnet-4-5", steps: 3, tool_calls: 2 },
];
const RESPONSES = {
  project_info: { resolve: PROJECT },
  list_tools: { resolve: [] },
  list_runs: { resolve: RUNS },
  start_run: { resolve: { run_id: RUN } },
  stop_run: { resolve: null },
  answer_confirm: { resolve: true },
  answer_ask_user: { resolve: true },
  cancel_call: { resolve: true },
};

const DIFF = `--- a/src/main.rs
+++ b/src/main.rs
@@ -1,5 +1,6 @@
 fn main() {
-    let top = 10;
+    let args: Vec<String> = std::env::args().collect();
+    let top = parse_top(&args).unwrap_or(10);
     println!("top {top}");
     report(top);
 }
`;

describe("run view in Chromium with mocked IPC and run events", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  const emit = runEmitter(RUN);
  const shot = async (page, name) => writeFileSync(join(shots, name), await page.screenshot());

  const startRun = (page, prompt) => startRunAs(page, RUN, prompt, { model: "claude-sonnet-4-5", waitForRuns: true });

  it("streams Markdown, shows an execute card with live terminal output, approves by keyboard and answers a question", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 });
    await startRun(page, "Add a --top N option\nand run the tests");
    assert.deepEqual(await argsOf(page, "start_run"), [{ prompt: "Add a --top N option\nand run the tests", provider: null, model: null, maxSteps: null }]);
    assert.equal(await page.locator('[data-testid="msg-user"]').textContent(), "Add a --top N option\nand run the tests");

    // Streamed Markdown: deltas join into one message; hostile markup stays inert.
    for (const text of ["I'll look at **src/main.rs** first, then run ", "`cargo test`.\n\n", "- parse `--top`\n- keep the default [docs](https://example.com/x) ", "<img src=x onerror=alert(1)>", " [run](javascript:alert(1))<script>alert(2)</script>"]) {
      await emit(page, { type: "text_delta", text });
    }
    const md = page.locator('[data-testid="assistant-md"]');
    await md.locator("li").nth(1).waitFor();
    assert.equal(await md.locator("strong").textContent(), "src/main.rs");
    assert.equal(await md.locator("img, script").count(), 0);
    const attrs = await md.evaluate((el) => [...el.querySelectorAll("*")].flatMap((n) => [...n.attributes].map((a) => `${a.name}=${a.value}`)));
    assert.deepEqual(attrs.filter((a) => /^on|javascript:|^style=|^href=/i.test(a)), []);
    assert.equal(await md.locator("a[href]").count(), 0, "links open nothing");
    assert.equal(await md.locator(".md-link").getAttribute("title"), "https://example.com/x");
    assert.match(await md.textContent(), /<img src=x onerror=alert\(1\)>/);

    // Fenced code is highlighted for known languages; only highlight.js and language classes stay,
    // and a hostile fence language or code text stays inert.
    await emit(page, { type: "text_delta", text: "\n\n```rust\nfn main() { let s = \"<b>hi</b>\"; } // done\n```\n\n```x\" onclick=\"alert(1)\ncode <script>alert(3)</script>\n```\n" });
    await md.locator("code.language-rust .hljs-keyword").first().waitFor();
    assert.equal(await md.locator("code.language-rust .hljs-keyword").first().textContent(), "fn");
    assert.equal(await md.locator("code.language-rust .hljs-string").textContent(), '"<b>hi</b>"');
    assert.equal(await md.locator("b, script").count(), 0);
    const keyword = await md.locator("code.language-rust .hljs-keyword").first().evaluate((el) => getComputedStyle(el).color);
    const plain = await md.locator("code.language-rust").evaluate((el) => getComputedStyle(el).color);
    assert.notEqual(keyword, plain, "keywords are coloured");
    const classes = await md.evaluate((el) => [...el.querySelectorAll("[class]")].flatMap((n) => [...n.classList]));
    assert.deepEqual(classes.filter((c) => !/^(hljs|language-|md-link$)/.test(c)), []);
    const after = await md.evaluate((el) => [...el.querySelectorAll("*")].flatMap((n) => [...n.attributes].map((a) => `${a.name}=${a.value}`)));
    assert.deepEqual(after.filter((a) => /^on|javascript:|^style=|^href=/i.test(a)), []);

    // execute: a card with a live terminal, heartbeat indicator, its own Stop.
    await emit(page, { type: "tool_call", tool_call_id: "call_exec", tool: "execute", input: { command: "cargo test --quiet" } });
    const lines = ["\x1b[1m   Compiling\x1b[0m sample v0.1.0", "running 3 tests", "test parse_top ... \x1b[31mFAILED\x1b[0m", "test report ... \x1b[32mok\x1b[0m"];
    for (const line of lines) await emit(page, { type: "tool_output", tool_call_id: "call_exec", stream: "stdout", chunk: `${line}\n` });
    await emit(page, { type: "heartbeat", tool_call_id: "call_exec" });
    const card = page.locator('[data-testid="tool-card"][data-id="call_exec"]');
    assert.equal(await card.locator('[data-testid="tool-target"]').textContent(), "cargo test --quiet");
    assert.equal(await card.getAttribute("data-status"), "running");
    await card.locator('[data-testid="heartbeat"]').waitFor();
    await page.waitForFunction(() => (document.querySelector('[data-testid="tool-card"][data-id="call_exec"] .xterm-rows')?.textContent ?? "").includes("test report"));
    const rows = await card.locator(".xterm-rows").textContent();
    assert.match(rows, /Compiling sample v0\.1\.0/);
    assert.doesNotMatch(rows, /\x1b|\[31m/, "escape sequences are interpreted, not shown");
    // The terminal's own CSS (xterm's <style> elements, blocked by the CSP and mirrored into a
    // constructed stylesheet) applies: ANSI red is the theme's red (#cf222e).
    const red = await card.locator(".xterm-rows span.xterm-fg-1").first().evaluate((el) => getComputedStyle(el).color);
    assert.equal(red, "rgb(207, 34, 46)");
    assert.ok(await card.locator('[data-testid="tool-stop"]').isVisible());
    await shot(page, "run-live-output.png");

    await emit(page, { type: "tool_result", tool_call_id: "call_exec", status: "ok", stage: null, model: "exit code 0\n3 passed", duration_ms: 1830, exit_code: 0 });
    await card.locator('[data-testid="exit-code"]').waitFor();
    assert.equal(await card.locator('[data-testid="exit-code"]').textContent(), "exit code 0");
    assert.equal(await card.locator('[data-testid="tool-duration"]').textContent(), "exit 0 · 1.8 s");
    assert.equal(await card.locator('[data-testid="tool-stop"]').count(), 0);

    // A write asks for approval: the dialog shows target, scope, consequence and the diff; A approves.
    await emit(page, { type: "tool_call", tool_call_id: "call_edit", tool: "edit_file", input: { path: "src/main.rs" } });
    await emit(page, {
      type: "confirm_request",
      tool_call_id: "call_edit",
      request: confirmRequest({
        call_id: "call_edit",
        tool: "edit_file",
        risk: "writes",
        digest: "sha256:1",
        target: "src/main.rs",
        scope: ["project root /home/me/work/sample-project"],
        consequence: "edits src/main.rs: 5 lines -> 6 lines",
        diff: DIFF,
      }),
    });
    const dialog = page.locator('[data-testid="approval-dialog"]');
    await dialog.waitFor();
    assert.equal(await dialog.getAttribute("role"), "alertdialog");
    assert.equal(await dialog.locator('[data-testid="approval-target"]').textContent(), "src/main.rs");
    assert.equal(await dialog.locator('[data-testid="approval-consequence"]').textContent(), "edits src/main.rs: 5 lines -> 6 lines");
    assert.deepEqual(await dialog.locator('.diff-line[data-kind="add"] .diff-text').allTextContents(), [
      "added:     let args: Vec<String> = std::env::args().collect();",
      "added:     let top = parse_top(&args).unwrap_or(10);",
    ]);
    assert.equal(await dialog.locator('.diff-line[data-kind="del"]').count(), 1);
    // The person was typing in the prompt box: the dialog leaves the focus there (issue 22), and
    // what they type goes into the box and never answers the dialog.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "prompt");
    await page.keyboard.type("add a test");
    await page.waitForTimeout(800);
    await page.keyboard.type("and a note");
    assert.equal(await page.locator('[data-testid="prompt"]').inputValue(), "add a testand a note");
    assert.deepEqual(await argsOf(page, "answer_confirm"), []);
    await page.locator('[data-testid="prompt"]').fill("");
    // Tab moves into the dialog (on Reject), and Tab stays inside it.
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "approval-reject");
    for (let i = 0; i < 4; i++) await page.keyboard.press("Tab");
    assert.ok(await page.evaluate(() => document.querySelector('[data-testid="approval-dialog"]').contains(document.activeElement)));
    await shot(page, "approval-dialog.png");
    await page.keyboard.press("a");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_confirm"), [{ callId: "call_edit", approve: true }]);
    await emit(page, { type: "tool_result", tool_call_id: "call_edit", status: "ok", stage: null, model: "edited src/main.rs", duration_ms: 9 });

    // ask_user: options (several), free text; answered from the keyboard.
    await emit(page, {
      type: "ask_user",
      tool_call_id: "call_ask",
      question: "Which behaviours should --top keep?",
      options: ["Default to 10", "Reject 0", "Allow --top=all"],
      multi_select: true,
      allow_other: true,
    });
    const q = page.locator('[data-testid="question-dialog"]');
    await q.waitFor();
    assert.equal(await q.locator('[data-testid="question-text"]').textContent(), "Which behaviours should --top keep?");
    await page.keyboard.press("Space"); // first option has focus
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Space"); // third option
    await page.keyboard.press("Tab");
    await page.keyboard.type("and print a usage line");
    await shot(page, "question-dialog.png");
    await page.keyboard.press("Enter");
    await q.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_ask_user"), [
      { id: "call_ask", answer: { kind: "answer", selected: ["Default to 10", "Allow --top=all"], text: "and print a usage line" } },
    ]);

    await emit(page, { type: "text_delta", text: "Done: `--top N` is parsed and the tests pass." });
    await emit(page, { type: "run_finished", run_id: RUN, status: "completed", stage: null, usage: { input_tokens: 12_400, output_tokens: 860, cache_read_tokens: 0, cache_write_tokens: 0 }, stop_reason: null });
    await page.locator('[data-testid="run-phase"][data-phase="completed"]').waitFor();
    assert.equal(await page.locator('[data-testid="prompt-send"]').textContent(), "Continue");
    await shot(page, "run-finished.png");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("the processes panel shows a background process with its output as text and stops it", async () => {
    // A table of one running process; stop_process ends it, as the shell does.
    const table = `{
      list_processes: () => [{ process_id: "bg1", run_id: "${RUN}", command: "npm run dev <b>x</b>", running: !window.__stopped, kept: false,
        status: window.__stopped ? "ended (stopped, signal 9) after 1200 ms" : "running", output_bytes: 40,
        tail: "ready on http://localhost:3000\\n<img src=x onerror=alert(1)>" }],
      stop_process: () => { window.__stopped = true; return true; },
    }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 }, "light", table);
    await startRun(page, "Start the dev server");
    const row = page.locator('[data-testid="process"][data-process-id="bg1"]');
    await row.waitFor();
    assert.match(await row.locator('[data-testid="process-output"]').textContent(), /ready on http:\/\/localhost:3000\n<img src=x onerror=alert\(1\)>/);
    assert.equal(await page.locator('[data-testid="processes-panel"] img').count(), 0, "output is text, never markup");
    await row.locator('[data-testid="process-stop"]').click();
    await page.locator('[data-testid="process"][data-running="false"]').waitFor();
    assert.equal(await row.locator('[data-testid="process-status"]').textContent(), "ended (stopped, signal 9) after 1200 ms");
    assert.deepEqual(await argsOf(page, "stop_process"), [{ processId: "bg1" }]);
    await shot(page, "run-processes.png");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("an approval the shell did not receive is asked again, and answered again from the keyboard", async () => {
    // answer_confirm fails once (the IPC refused it), then the shell takes the answer.
    const flaky = `{ answer_confirm: () => { window.__answers = (window.__answers ?? 0) + 1; if (window.__answers === 1) throw { code: "ipc", stage: null, message: "the answer could not be delivered" }; return true; } }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 }, "light", flaky);
    await startRun(page, "Write the notes");
    const request = confirmRequest({ call_id: "call_w", tool: "write_file", risk: "writes", digest: "d", target: "notes.md", scope: ["project"], consequence: "creates notes.md", diff: null });
    await emit(page, { type: "tool_call", tool_call_id: "call_w", tool: "write_file", input: { path: "notes.md" } });
    await emit(page, { type: "confirm_request", tool_call_id: "call_w", request });
    const dialog = page.locator('[data-testid="approval-dialog"][data-call="call_w"]');
    await dialog.waitFor();
    await readyApproval(page);
    await page.keyboard.press("a");
    await page.locator('[data-testid="notice"]', { hasText: "Could not send the answer: the answer could not be delivered" }).waitFor();
    // Asked again, with live buttons and the keyboard shortcuts.
    await dialog.waitFor();
    assert.equal(await page.locator('[data-testid="tool-card"][data-id="call_w"]').getAttribute("data-status"), "waiting_approval");
    await readyApproval(page);
    assert.equal(await dialog.locator('[data-testid="approval-approve"]').isDisabled(), false);
    await page.keyboard.press("a");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_confirm"), [
      { callId: "call_w", approve: true },
      { callId: "call_w", approve: true },
    ]);
    assert.equal(await page.locator('[data-testid="tool-card"][data-id="call_w"]').getAttribute("data-status"), "running");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("a click on the backdrop keeps the keyboard in the approval dialog: Esc rejects the call, not the run", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 });
    await startRun(page, "Remove the cache");
    const request = confirmRequest({ call_id: "call_x", tool: "delete_path", risk: "high_impact", digest: "d", target: ".cache", scope: ["project"], consequence: "deletes 3 files", diff: null });
    await emit(page, { type: "tool_call", tool_call_id: "call_x", tool: "delete_path", input: { path: ".cache" } });
    await emit(page, { type: "confirm_request", tool_call_id: "call_x", request });
    const dialog = page.locator('[data-testid="approval-dialog"][data-call="call_x"]');
    await dialog.waitFor();
    await readyApproval(page);
    // The person clicks beside the dialog (on the dimmed backdrop), then presses Esc.
    await page.mouse.click(8, 8);
    assert.equal(await page.evaluate(() => document.querySelector('[data-testid="approval-dialog"]')?.contains(document.activeElement)), true, "focus stays in the dialog");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_confirm"), [{ callId: "call_x", approve: false }]);
    assert.deepEqual(await argsOf(page, "stop_run"), []);
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("the approval dialog shows a hostile command verbatim: a second line, invisible characters as codes, a look-alike marked", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 });
    await startRun(page, "Clean up");
    const request = confirmRequest({
      call_id: "call_h",
      tool: "execute",
      risk: "high_impact",
      digest: "d",
      target: "echo cleaning\nrm -rf src\u200B ＃; touch x",
      scope: ["project"],
      consequence: "runs the target command in the project root: its effect is what the command does",
      diff: null,
      model_says: "prints a word",
    });
    // As the core's term::reveal sends it.
    request.display.target = [
      { kind: "text", text: "echo cleaning" },
      { kind: "line_break" },
      { kind: "text", text: "rm -rf src" },
      { kind: "code", code: "U+200B" },
      { kind: "text", text: " " },
      { kind: "non_ascii", text: "＃" },
      { kind: "text", text: "; touch x" },
    ];
    request.display.target_non_ascii = ["＃ U+FF03"];
    await emit(page, { type: "tool_call", tool_call_id: "call_h", tool: "execute", input: { command: request.target } });
    await emit(page, { type: "confirm_request", tool_call_id: "call_h", request });
    const dialog = page.locator('[data-testid="approval-dialog"][data-call="call_h"]');
    await dialog.waitFor();
    const target = dialog.locator('[data-testid="approval-target"]');
    assert.equal(await target.textContent(), "echo cleaning⏎\nrm -rf src<U+200B> ＃; touch x");
    assert.equal(await target.evaluate((el) => getComputedStyle(el).whiteSpace), "pre-wrap");
    // Two lines on screen, not one: the break is real.
    const lineHeight = await target.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight) || 16);
    assert.ok((await target.evaluate((el) => el.getBoundingClientRect().height)) > 1.5 * lineHeight, "the second command is on its own line");
    assert.equal(await dialog.locator('[data-testid="approval-non-ascii"]').textContent(), "Contains non-ASCII characters: ＃ U+FF03");
    assert.equal(await dialog.locator('[data-testid="approval-model-says"] q').textContent(), "prints a word");
    await shot(page, "approval-dialog-hostile.png");
    await readyApproval(page);
    await page.keyboard.press("r");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_confirm"), [{ callId: "call_h", approve: false }]);
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("Esc stops the run; closing the approval dialog rejects; the dark theme follows the OS", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 }, "dark");
    await startRun(page, "Delete the build outputs");
    await emit(page, { type: "tool_call", tool_call_id: "call_rm", tool: "delete_path", input: { path: "target" } });
    await emit(page, {
      type: "confirm_request",
      tool_call_id: "call_rm",
      request: confirmRequest({ call_id: "call_rm", tool: "delete_path", risk: "high_impact", digest: "d", target: "target", scope: ["project"], consequence: "deletes 1,204 files", diff: null }),
    });
    const dialog = page.locator('[data-testid="approval-dialog"]');
    await dialog.waitFor();
    await shot(page, "approval-dialog-dark.png");
    const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    assert.equal(bg, "rgb(20, 23, 28)");
    // Esc inside the dialog closes it = rejects this call, and does not stop the run.
    await readyApproval(page);
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_confirm"), [{ callId: "call_rm", approve: false }]);
    assert.deepEqual(await argsOf(page, "stop_run"), []);
    // Esc outside a dialog stops the run.
    await page.keyboard.press("Escape");
    await waitForCall(page, "stop_run");
    assert.deepEqual(await argsOf(page, "stop_run"), [{ runId: RUN }]);
    assert.deepEqual(problems, []);
    await page.close();
  });
  it("a subagent's steps nest live under the agent card; its confirmation is answered by the child's call id", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 });
    await startRun(page, "Survey the project with a subagent");
    const PARENT = `${RUN}:call_a1`;
    const child = (event) => emit(page, { type: "subagent", parent_tool_call_id: PARENT, event });
    await emit(page, { type: "tool_call", tool_call_id: PARENT, tool: "agent", input: { description: "survey the project", prompt: "List it." } });
    await child({ type: "run_started", run_id: "run_CHILD", provider: "anthropic", model: "claude-sonnet-4-5", presentation: "native" });
    await child({ type: "text_delta", text: "Looking <img src=x onerror=alert(1)>" });
    await child({ type: "tool_call", tool_call_id: "run_CHILD:c1", tool: "ls", input: { path: "<b>src</b>" } });
    await child({ type: "tool_result", tool_call_id: "run_CHILD:c1", status: "ok", stage: null, model: "a.rs", duration_ms: 2, exit_code: null, omitted_bytes: null, activated: [], hooks: [] });
    const request = confirmRequest({ call_id: "run_CHILD:c2", tool: "execute", risk: "high_impact", digest: "d", target: "cargo test", scope: ["project"], consequence: "runs the target command in the project root: its effect is what the command does", diff: null });
    await child({ type: "tool_call", tool_call_id: "run_CHILD:c2", tool: "execute", input: { command: "cargo test" } });
    await child({ type: "confirm_request", tool_call_id: "run_CHILD:c2", request });
    const card = page.locator(`[data-testid="tool-card"][data-id="${PARENT}"]`);
    const steps = card.locator('[data-testid="subagent-step"]');
    await steps.nth(1).waitFor();
    assert.deepEqual(await steps.evaluateAll((els) => els.map((e) => [e.dataset.tool, e.dataset.status])), [["ls", "ok"], ["execute", "waiting_approval"]]);
    assert.equal(await card.locator('[data-testid="subagent-text"]').textContent(), "Looking <img src=x onerror=alert(1)>");
    assert.equal(await card.locator("img, b").count(), 0, "the child's text and targets stay text");
    assert.equal(await card.locator('[data-testid="tool-target"]').textContent(), "survey the project");
    // The child's own calls are no cards of the parent's conversation.
    assert.equal(await page.locator('[data-testid="tool-card"]').count(), 1);
    const dialog = page.locator('[data-testid="approval-dialog"][data-call="run_CHILD:c2"]');
    await dialog.waitFor();
    await readyApproval(page);
    await page.keyboard.press("a");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_confirm"), [{ callId: "run_CHILD:c2", approve: true }]);
    // The approved child call runs from now on, as a parent's card would say.
    await card.locator('[data-testid="subagent-step"][data-tool="execute"][data-status="running"]').waitFor({ timeout: 5_000 });
    // While the parent runs, the child run cannot be opened yet.
    assert.equal(await card.locator('[data-testid="subagent-open"]').isDisabled(), true);
    await shot(page, "subagent-card.png");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });
  it("a stored parent opened from the run list shows its child run's calls and answer under the agent card", async () => {
    const usage = { input_tokens: 10, output_tokens: 5, cache_read_tokens: 0, cache_write_tokens: 0 };
    const common = { provider: "anthropic", model: "claude", presentation: "native", stage: null, error_message: null, stop_reason: null, finished_at_ms: 1, usage, meter: null };
    const parent = {
      ...common, run_id: "run_PARENT", title: "delegate", status: "completed", started_at: "2026-12-01T10:00:00.000Z", steps: 2, tool_calls: 1,
      parent_run_id: null, parent_call_id: null, children: [{ run_id: "run_KID", parent_call_id: "run_PARENT:a1", status: "completed" }],
      messages: [
        { seq: 1, role: "user", text: "delegate", tool_calls: [], result: null, usage: null },
        { seq: 2, role: "assistant", text: "", tool_calls: [{ tool_call_id: "run_PARENT:a1", tool: "agent", input: { description: "survey", prompt: "List it." } }], result: null, usage },
        { seq: 3, role: "tool", text: "", tool_calls: [], result: { tool_call_id: "run_PARENT:a1", tool: "agent", status: "ok", stage: null, error_message: null, model: "two files", compacted: false, hooks: [] }, usage: null },
        { seq: 4, role: "assistant", text: "The subagent found two files.", tool_calls: [], result: null, usage },
      ],
    };
    const kid = {
      ...common, run_id: "run_KID", title: "survey", status: "completed", started_at: "2026-12-01T10:00:01.000Z", steps: 2, tool_calls: 1,
      parent_run_id: "run_PARENT", parent_call_id: "run_PARENT:a1", children: [],
      messages: [
        { seq: 1, role: "user", text: "List it.", tool_calls: [], result: null, usage: null },
        { seq: 2, role: "assistant", text: "Looking <img src=x onerror=alert(1)>", tool_calls: [{ tool_call_id: "run_KID:l1", tool: "ls", input: { path: "." } }], result: null, usage },
        { seq: 3, role: "tool", text: "", tool_calls: [], result: { tool_call_id: "run_KID:l1", tool: "ls", status: "ok", stage: null, error_message: null, model: "a\nb", compacted: false, hooks: [] }, usage: null },
        { seq: 4, role: "assistant", text: "two files", tool_calls: [], result: null, usage },
      ],
    };
    const listed = [parent, kid].map(({ messages: _m, children: _c, ...row }) => row);
    const dynamic = `{
      list_runs: () => ${JSON.stringify(listed)},
      show_run: (args) => (${JSON.stringify({ run_PARENT: parent, run_KID: kid })})[args.runId],
    }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 }, "light", dynamic);
    await page.locator('[data-testid="run-item"][data-id="run_PARENT"]').click();
    const card = page.locator('[data-testid="tool-card"][data-id="run_PARENT:a1"]');
    const steps = card.locator('[data-testid="subagent-step"]');
    await steps.first().waitFor({ timeout: 5_000 });
    assert.deepEqual(await steps.evaluateAll((els) => els.map((e) => [e.dataset.tool, e.dataset.status])), [["ls", "ok"]]);
    assert.deepEqual(await card.locator('[data-testid="subagent-text"]').allTextContents(), ["Looking <img src=x onerror=alert(1)>", "two files"]);
    assert.equal(await card.locator("img").count(), 0, "the stored child's text stays text");
    assert.equal(await card.locator('[data-testid="subagent-summary"]').textContent(), "subagent: 1 tool call · completed");
    // The parent's conversation holds only its own card; the child run opens from the card.
    assert.equal(await page.locator('[data-testid="tool-card"]').count(), 1);
    const open = card.locator('[data-testid="subagent-open"]');
    assert.equal(await open.isDisabled(), false);
    await shot(page, "subagent-stored-parent.png");
    await open.click();
    await page.locator('[data-testid="run-item"][data-id="run_KID"][aria-current="true"]').waitFor({ timeout: 5_000 });
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });
  it("a call the model sent without a tool name says '(no name)' on its card, styled as missing", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 860 });
    await startRun(page, "Look around");
    await emit(page, { type: "tool_call", tool_call_id: "call_named", tool: "read_file", input: { path: "a.txt" } });
    await emit(page, { type: "tool_result", tool_call_id: "call_named", status: "ok", stage: null, model: "a", duration_ms: 3 });
    await emit(page, { type: "tool_call", tool_call_id: "call_nameless", tool: "", input: {} });
    await emit(page, { type: "tool_result", tool_call_id: "call_nameless", status: "error", stage: "Discovery", model: "a tool call must name a tool", duration_ms: 0 });
    const nameless = page.locator('[data-testid="tool-card"][data-id="call_nameless"] [data-testid="tool-name"]');
    const named = page.locator('[data-testid="tool-card"][data-id="call_named"] [data-testid="tool-name"]');
    await nameless.waitFor();
    assert.equal(await nameless.textContent(), "(no name)");
    assert.equal(await named.textContent(), "read_file");
    const look = (l) => l.evaluate((el) => { const s = getComputedStyle(el); return { style: s.fontStyle, color: s.color, width: el.getBoundingClientRect().width }; });
    const [missing, real] = [await look(nameless), await look(named)];
    assert.equal(missing.style, "italic");
    assert.equal(real.style, "normal");
    assert.notEqual(missing.color, real.color, "the placeholder is muted, not shown as a name");
    assert.ok(missing.width > 0, "the placeholder takes room on the card");
    await shot(page, "tool-card-no-name.png");
    assert.deepEqual(problems, []);
    await page.close();
  });
  it("a card shows what its call changed; Undo previews the rewind with its conflict before anything is written", async () => {
    // A hostile name: markup, and a right-to-left override that would reorder what follows it.
    const HOSTILE = "notes/<img src=x onerror=alert(1)>\u202Edm.txt";
    const HOSTILE_SHOWN = [{ kind: "text", text: "notes/<img src=x onerror=alert(1)>" }, { kind: "code", code: "U+202E" }, { kind: "text", text: "dm.txt" }];
    const HOSTILE_TEXT = "notes/<img src=x onerror=alert(1)><U+202E>dm.txt";
    const changes = {
      call_w: {
        call_id: "call_w", run_id: RUN, tool: "execute", complete: true,
        files: [
          { path: "src/main.rs", change: "modified", from: null, before: { kind: "file", mode: "644", size: 120 }, after: { kind: "file", mode: "644", size: 168 }, binary: false, diff: DIFF, note: null },
          { path: HOSTILE, path_shown: HOSTILE_SHOWN, change: "added", from: null, before: null, after: { kind: "file", mode: "644", size: 9 }, binary: false, diff: "--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+<b>bold</b>\n", note: null },
          { path: "assets/logo.png", change: "modified", from: null, before: { kind: "file", mode: "644", size: 2048 }, after: { kind: "file", mode: "644", size: 4096 }, binary: true, diff: null, note: "binary file" },
          { path: "run.sh", change: "mode_changed", from: null, before: { kind: "file", mode: "644", size: 30 }, after: { kind: "file", mode: "755", size: 30 }, binary: false, diff: "", note: null },
          { path: "docs/new.md", change: "renamed", from: "docs/old.md", before: null, after: { kind: "file", mode: "644", size: 12 }, binary: false, diff: null, note: null },
        ],
        skipped: [{ path: "data/big.bin", reason: "too_large" }],
        not_covered: "Checkpoints cover files inside the project only: paths its ignore rules leave out (.gitignore, .ignore, .git), files over the size cap, special files and anything outside the project are not checkpointed and are never put back.",
      },
    };
    // The person edited src/main.rs after the call: a conflict, put back only when forced.
    const preview = `(target, force) => ({
      calls: [{
        call_id: target.kind === "call" ? target.call_id : "call_w", tool: "execute", complete: true,
        actions: [{ path: "run.sh", action: "restore", forced: false }, { path: ${JSON.stringify(HOSTILE)}, path_shown: ${JSON.stringify(HOSTILE_SHOWN)}, action: "remove", forced: false },
          ...(force ? [{ path: "src/main.rs", action: "restore", forced: true }] : [])],
        conflicts: [{ path: "src/main.rs", expected: "file of 168 bytes (mode 644, 1a2b)", found: "file of 171 bytes (mode 644, 9f9f)" }],
        not_restorable: ["data/big.bin"], failures: [],
      }],
      unresolved_conflicts: force ? 0 : 1, failures: 0, not_covered: "Checkpoints cover files inside the project only.",
    })`;
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1280, height: 900 }, "light", checkpointsMock(changes, preview));
    await startRun(page, "Add a --top N option");
    await emit(page, { type: "tool_call", tool_call_id: "call_read", tool: "read_file", input: { path: "src/main.rs" } });
    await emit(page, { type: "tool_result", tool_call_id: "call_read", status: "ok", stage: null, model: "fn main() {}", duration_ms: 2, exit_code: null, omitted_bytes: null, activated: [], hooks: [] });
    await emit(page, { type: "tool_call", tool_call_id: "call_w", tool: "execute", input: { command: "./fix.sh" } });
    await emit(page, { type: "tool_result", tool_call_id: "call_w", status: "ok", stage: null, model: "exit code 0", duration_ms: 40, exit_code: 0, omitted_bytes: null, activated: [], hooks: [] });
    const card = page.locator('[data-testid="tool-card"][data-id="call_w"]');
    const panel = card.locator('[data-testid="call-changes"]');
    await panel.waitFor();
    // A read-only call is not asked about; the execute card is, once.
    assert.deepEqual(await argsOf(page, "call_changes"), [{ callId: "call_w" }]);
    assert.equal(await page.locator('[data-testid="tool-card"][data-id="call_read"] [data-testid="call-changes"]').count(), 0);
    assert.equal(await panel.locator('[data-testid="changes-summary"]').textContent(), "5 files changed, 1 not checkpointed");
    assert.deepEqual(await panel.locator('[data-testid="change-kind"]').allTextContents(), ["modified", "added", "modified", "mode changed", "renamed"]);
    assert.deepEqual(await panel.locator('[data-testid="change-size"]').allTextContents(), ["120 B → 168 B", "new, 9 B", "2.0 KiB → 4.0 KiB", "mode 644 → 755", "new, 12 B"]);
    assert.equal(await panel.locator('[data-testid="change-binary"]').count(), 1);
    assert.equal(await panel.locator('[data-testid="change-from"]').textContent(), "docs/old.md");
    assert.match(await panel.locator('[data-testid="changed-skipped"]').textContent(), /data\/big\.bin: larger than the checkpoint size cap/);
    assert.match(await panel.locator('[data-testid="changes-not-covered"]').textContent(), /ignore rules/);
    // Untrusted paths and contents are text, never markup.
    assert.equal(await panel.locator('[data-testid="change-path"]').nth(1).textContent(), HOSTILE_TEXT, "the override is shown as its code");
    assert.ok(!(await panel.textContent()).includes("\u202E"), "never obeyed");
    await panel.locator('[data-testid="changed-file"]').nth(1).locator("summary").click();
    await panel.locator('[data-testid="changed-file"]').nth(0).locator("summary").click();
    assert.equal(await panel.locator("img, b").count(), 0);
    assert.ok((await panel.locator('.diff-line[data-kind="add"] .diff-text').allTextContents()).includes("added: <b>bold</b>"));
    assert.equal(await panel.locator('[data-testid="changed-file"]').nth(0).locator('.diff-line[data-kind="del"]').count(), 1);

    // Undo this call: a preview first, with the conflict, nothing written.
    await panel.locator('[data-testid="undo-call"]').click();
    const dialog = page.locator('[data-testid="rewind-dialog"][data-step="preview"]');
    await dialog.waitFor();
    assert.deepEqual(await argsOf(page, "rewind_preview"), [{ target: { kind: "call", call_id: "call_w" }, force: false }]);
    assert.deepEqual(await argsOf(page, "rewind"), [], "nothing is written before the person confirms");
    assert.deepEqual(await dialog.locator('[data-testid="rewind-action"] code').allTextContents(), ["run.sh", HOSTILE_TEXT]);
    assert.match(await dialog.locator('[data-testid="rewind-conflict"]').textContent(), /src\/main\.rs: the call left file of 168 bytes.*now file of 171 bytes/);
    assert.match(await dialog.locator('[data-testid="rewind-not-restorable"]').textContent(), /data\/big\.bin: not checkpointed/);
    assert.equal(await dialog.locator('[data-testid="rewind-force"]').isChecked(), false, "conflicts are left alone by default");
    assert.equal(await dialog.locator("img").count(), 0);
    await shot(page, "rewind-preview-with-conflict.png");

    await dialog.locator('[data-testid="rewind-confirm"]').click();
    const done = page.locator('[data-testid="rewind-dialog"][data-step="done"]');
    await done.waitFor();
    assert.deepEqual(await argsOf(page, "rewind"), [{ target: { kind: "call", call_id: "call_w" }, force: false }]);
    assert.equal(await done.locator('[data-testid="rewind-result"]').textContent(), "2 paths put back, 1 conflicting path left alone.");
    assert.match(await done.locator('[data-testid="rewind-recorded"]').textContent(), /call_rewind_1: it can be undone/);
    await shot(page, "rewind-done-conflict-left-alone.png");
    // The rewind is a call of its own: it can be undone (previewed first, again).
    await done.locator('[data-testid="rewind-undo"]').click();
    await page.locator('[data-testid="rewind-dialog"][data-step="preview"]').waitFor();
    assert.deepEqual((await argsOf(page, "rewind_preview")).at(-1), { target: { kind: "call", call_id: "call_rewind_1" }, force: false });
    await page.locator('[data-testid="rewind-close"]').click();
    await page.locator('[data-testid="rewind-dialog"]').waitFor({ state: "detached" });
    assert.equal((await argsOf(page, "rewind")).length, 1, "cancel writes nothing");

    // Undo the run from here, overwriting the conflict by the person's explicit choice.
    await panel.locator('[data-testid="undo-run-from"]').click();
    const runDialog = page.locator('[data-testid="rewind-dialog"][data-step="preview"]');
    await runDialog.waitFor();
    assert.deepEqual((await argsOf(page, "rewind_preview")).at(-1), { target: { kind: "run", run_id: RUN, from: "call_w" }, force: false });
    await runDialog.locator('[data-testid="rewind-force"]').check();
    await shot(page, "rewind-preview-overwrite-chosen.png");
    await runDialog.locator('[data-testid="rewind-confirm"]').click();
    await page.locator('[data-testid="rewind-dialog"][data-step="done"]').waitFor();
    assert.deepEqual((await argsOf(page, "rewind")).at(-1), { target: { kind: "run", run_id: RUN, from: "call_w" }, force: true });
    assert.equal(await page.locator('[data-testid="rewind-result"]').textContent(), "3 paths put back.");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });
});
