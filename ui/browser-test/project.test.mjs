// The project flow of the BUILT UI in headless Chromium, IPC and events mocked, under the app's CSP,
// keyboard only: the window starts with no project (welcome view with the recent list, a missing
// folder flagged), Ctrl+O picks a folder, the trust dialog shows what the project asks for (focus
// on "Don't trust", Esc declines), Tab + Enter trusts at the digest shown, and the provider picker
// sends its entry with the next run. Screenshot: target/e2e-screenshots/trust-dialog.png.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { argsOf, browserSuite, callCount, emitRunEvent, openPage, projectInfo, repo, startRun, unexpected, waitForCall } from "./harness.mjs";

const shots = join(repo, "target/e2e-screenshots");

const PROJECT = projectInfo();

const STATUS = {
  project: PROJECT.root,
  state: "untrusted",
  digest: "9f2c",
  problems: [],
  grants: {
    servers: [
      {
        name: "docs",
        transport: "stdio",
        command: "npx",
        args: ["-y", "@acme/docs-mcp", "--root", "<b>docs</b>"],
        url: null,
        cwd: PROJECT.root,
        env: ["DOCS_TOKEN"],
        headers: [],
        replaces_user_server: false,
        scope: "project",
        pins: [],
        variables: [{ name: "HOME", set: true, value: "/home/p" }, { name: "GH_TOKEN", set: true, value: null }],
      },
    ],
    settings: [
      { file: `${PROJECT.root}/.aibuddy/settings.json`, line: 4, field: "exec.writable_roots", value: ["/home/me/.cache/build"] },
      { file: `${PROJECT.root}/.aibuddy/settings.json`, line: 7, field: "confirm.auto_approve_writes", value: true },
    ],
  },
};

// A small state machine: no project until pick_project, untrusted until trust_project.
const DYNAMIC = `{
  project_info: () => {
    if (!window.__opened) throw { code: "project", stage: null, message: "no project is open: open a project folder first" };
    return ${JSON.stringify(PROJECT)};
  },
  pick_project: () => { window.__opened = true; return ${JSON.stringify(PROJECT)}; },
  trust_status: () => window.__trusted
    ? { ask: false, applied: "trusted", status: { ...${JSON.stringify(STATUS)}, state: "trusted" } }
    : { ask: true, applied: "untrusted", status: ${JSON.stringify(STATUS)} },
  trust_project: (args) => {
    if (args.digest !== "9f2c") throw { code: "project", stage: "Authorization", message: "changed since it was shown" };
    window.__trusted = true;
    return { ask: false, applied: "trusted", status: { ...${JSON.stringify(STATUS)}, state: "trusted" } };
  },
  distrust_project: () => ({ ask: false, applied: "untrusted", status: ${JSON.stringify(STATUS)} }),
}`;

const RESPONSES = {
  list_tools: { resolve: [] },
  list_runs: { resolve: [] },
  list_recent: {
    resolve: [
      { path: "/home/me/work/api", display: "/home/me/work/api", name: "api", missing: false, current: false, opened_at_ms: 2 },
      { path: "/home/me/old", display: "/home/me/old", name: "old", missing: true, current: false, opened_at_ms: 1 },
    ],
  },
  list_providers: {
    resolve: {
      providers: [
        { name: "local", kind: "openai-chat", model: "qwen3:8b", host: "127.0.0.1:11434", has_key: false, problem: null },
        { name: "anthropic", kind: "anthropic", model: "claude-sonnet-4-6", host: "api.anthropic.com", has_key: true, problem: null },
      ],
      default: "local",
      chosen: null,
      chosen_model: null,
    },
  },
  choose_provider: { resolve: null },
  start_run: { resolve: { run_id: "run_01PICKED" } },
};

describe("project flow in Chromium with mocked IPC", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  const focused = (page) => page.evaluate(() => document.activeElement?.getAttribute("data-testid"));

  async function welcomeThenPick(page) {
    await page.locator('[data-testid="welcome"]').waitFor({ timeout: 10_000 });
    assert.deepEqual(await page.locator('[data-testid="recent-open"] .recent-name').allTextContents(), ["api"]);
    assert.equal(await page.locator('[data-testid="recent-missing"]').count(), 1);
    await page.keyboard.press("Control+o");
    await page.locator('[data-testid="trust-dialog"]').waitFor({ timeout: 10_000 });
  }

  it("welcome -> Ctrl+O -> trust dialog -> Tab, Enter trusts at the digest shown (keyboard only)", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", DYNAMIC);
    await welcomeThenPick(page);
    assert.equal(await page.locator('[data-testid="project-path"]').textContent(), PROJECT.root);
    // What the project asks for, as text (the `<b>` in an argument stays text).
    assert.deepEqual(await page.locator('[data-testid="trust-server-name"]').allTextContents(), ["docs"]);
    assert.match(await page.locator('[data-testid="trust-command"]').textContent(), /"<b>docs<\/b>"/);
    assert.equal(await page.locator('[data-testid="trust-dialog"] b').count(), 0);
    assert.equal(await page.locator('[data-testid="trust-env"]').textContent(), "DOCS_TOKEN");
    assert.equal(await page.locator('[data-testid="trust-variables"]').textContent(), 'HOME="/home/p", GH_TOKEN (set, value hidden)');
    assert.equal(await page.locator('[data-testid="trust-setting"]').count(), 2);
    // No default action trusts: focus starts on "Don't trust", and stays inside the dialog.
    await page.waitForFunction(() => document.activeElement?.getAttribute("data-testid") === "trust-decline");
    writeFileSync(join(shots, "trust-dialog.png"), await page.screenshot());
    await page.keyboard.press("Tab");
    assert.equal(await focused(page), "trust-accept");
    await page.keyboard.press("Tab");
    assert.equal(await focused(page), "trust-decline");
    await page.keyboard.press("Shift+Tab");
    assert.equal(await focused(page), "trust-accept");
    await page.keyboard.press("Enter");
    await page.locator('[data-testid="trust-dialog"]').waitFor({ state: "detached", timeout: 10_000 });
    assert.deepEqual(await argsOf(page, "trust_project"), [{ digest: "9f2c" }]);
    assert.equal(await page.locator('[data-testid="trust-badge"]').textContent(), "Trusted");

    // The picker sends its entry with the next run, and the choice is remembered.
    await page.locator('[data-testid="provider-select"]').waitFor({ timeout: 10_000 });
    await page.locator('[data-testid="provider-select"]').focus();
    await page.keyboard.press("ArrowDown");
    await page.locator('[data-testid="provider-select"]').selectOption("anthropic");
    await waitForCall(page, "choose_provider");
    assert.deepEqual((await argsOf(page, "choose_provider")).at(-1), { provider: "anthropic", model: null });
    await page.locator('[data-testid="prompt"]').focus();
    await page.keyboard.type("list the files");
    await page.keyboard.press("Enter");
    await waitForCall(page, "start_run");
    const [start] = await argsOf(page, "start_run");
    assert.equal(start.provider, "anthropic");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("Esc in the trust dialog means don't trust", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "dark", DYNAMIC);
    await welcomeThenPick(page);
    await page.waitForFunction(() => document.activeElement?.getAttribute("data-testid") === "trust-decline");
    await page.keyboard.press("Escape");
    await page.locator('[data-testid="trust-dialog"]').waitFor({ state: "detached", timeout: 10_000 });
    assert.deepEqual(await argsOf(page, "distrust_project"), [{ digest: "9f2c" }]);
    assert.deepEqual(await argsOf(page, "trust_project"), []);
    assert.equal(await page.locator('[data-testid="trust-badge"]').textContent(), "Not trusted");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("a trust status that cannot be read is said in a banner with Retry; nothing shows the project trusted meanwhile", async () => {
    const dynamic = `{
      project_info: () => (${JSON.stringify(PROJECT)}),
      trust_status: () => {
        if (!window.__trustReadable) throw { code: "project", stage: "Discovery", message: "cannot read .aibuddy/settings.json: permission denied" };
        return { ask: false, applied: "trusted", status: { ...${JSON.stringify(STATUS)}, state: "trusted" } };
      },
    }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", dynamic);
    const banner = page.locator('[data-testid="trust-error"]');
    await banner.waitFor({ timeout: 10_000 });
    assert.match(await banner.textContent(), /permission denied/);
    assert.match(await banner.textContent(), /shown as not trusted/);
    assert.equal(await banner.getAttribute("role"), "alert");
    assert.equal(await page.locator('[data-testid="trust-badge"]').count(), 0);
    assert.equal(await page.locator('[data-testid="trust-dialog"]').count(), 0);
    // Not blocking: the conversation is usable under it.
    assert.equal(await page.locator('[data-testid="prompt"]').isEditable(), true);
    writeFileSync(join(shots, "trust-status-error.png"), await page.screenshot());
    await page.evaluate(() => (window.__trustReadable = true));
    await page.locator('[data-testid="trust-retry"]').click();
    await banner.waitFor({ state: "detached", timeout: 10_000 });
    assert.equal(await page.locator('[data-testid="trust-badge"]').textContent(), "Trusted");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("the stop-it-first notice goes as soon as the run ends; the next switch then asks the shell", async () => {
    const OTHER = projectInfo("/home/me/work/api");
    const dynamic = `{
      project_info: () => (${JSON.stringify(PROJECT)}),
      trust_status: () => ({ ask: false, applied: "trusted", status: { ...${JSON.stringify(STATUS)}, state: "trusted" } }),
      pick_project: () => (${JSON.stringify(OTHER)}),
      stop_run: () => null,
      start_run: (() => { let n = 0; return () => ({ run_id: "run_0" + ++n }); })(),
    }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", dynamic);
    const usage = { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 };
    await startRun(page, "run_01", "refactor everything");
    await page.locator('[data-testid="run-phase"][data-phase="running"]').waitFor({ timeout: 10_000 });
    await page.keyboard.press("Control+o");
    const refusal = page.locator('[data-testid="project-error"]');
    await refusal.waitFor({ timeout: 10_000 });
    assert.match(await refusal.textContent(), /run is in progress.*stop it first/);
    // Stopped: the run ends (as the shell reports it) and the notice goes by itself.
    await page.locator('[data-testid="project-error-stop"]').click();
    await waitForCall(page, "stop_run");
    await emitRunEvent(page, "run_01", { type: "run_finished", run_id: "run_01", status: "cancelled", stage: null, usage });
    await refusal.waitFor({ state: "detached", timeout: 10_000 });
    // A later run does not bring the old notice back.
    await page.locator('[data-testid="run-new"]').click();
    await startRun(page, "run_02", "something else");
    await page.locator('[data-testid="run-phase"][data-phase="running"]').waitFor({ timeout: 10_000 });
    assert.equal(await refusal.count(), 0);
    await emitRunEvent(page, "run_02", { type: "run_finished", run_id: "run_02", status: "completed", stage: null, usage });
    await page.locator('[data-testid="run-phase"][data-phase="completed"]').waitFor({ timeout: 10_000 });
    // Nothing active: Ctrl+O asks the shell and the project switches, nothing reopened.
    assert.equal(await callCount(page, "pick_project"), 0);
    await page.keyboard.press("Control+o");
    await waitForCall(page, "pick_project");
    await page.locator('[data-testid="project-path"]', { hasText: OTHER.root }).waitFor({ timeout: 10_000 });
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });

  it("switching project while this window's run is in progress asks to stop it first; a switch that happens anyway labels the dropped run", async () => {
    const OTHER = projectInfo("/home/me/work/api");
    const dynamic = `{
      project_info: () => (${JSON.stringify(PROJECT)}),
      trust_status: () => ({ ask: false, applied: "trusted", status: { ...${JSON.stringify(STATUS)}, state: "trusted" } }),
      pick_project: () => (${JSON.stringify(OTHER)}),
      stop_run: () => null,
    }`;
    const { page, problems } = await openPage(browser, base, RESPONSES, undefined, "light", dynamic);
    await startRun(page, "run_01PICKED", "refactor everything");
    await page.locator('[data-testid="run-phase"][data-phase="running"]').waitFor({ timeout: 10_000 });
    await page.keyboard.press("Control+o");
    const refusal = page.locator('[data-testid="project-error"]');
    await refusal.waitFor({ timeout: 10_000 });
    assert.match(await refusal.textContent(), /run is in progress.*stop it first/);
    assert.equal(await callCount(page, "pick_project"), 0, "the shell is not asked (it refuses while a run is in progress)");
    assert.equal(await page.locator('[data-testid="project-path"]').textContent(), PROJECT.root);
    await page.locator('[data-testid="project-error-stop"]').click();
    await waitForCall(page, "stop_run");
    assert.deepEqual(await argsOf(page, "stop_run"), [{ runId: "run_01PICKED" }]);

    // The shell switched anyway (work that slipped in is stopped with the old project): the run
    // is not shown as a run of the new project.
    await page.evaluate((info) => window.__emit("project-changed", info), OTHER);
    await page.locator('[data-testid="project-path"]', { hasText: OTHER.root }).waitFor({ timeout: 10_000 });
    const notice = page.locator('[data-testid="notice"]');
    await notice.waitFor({ timeout: 10_000 });
    assert.equal(await notice.textContent(), "Run run_01PICKED of the previous project was stopped when this project opened.");
    assert.equal(await page.locator('[data-testid="run-phase"]').getAttribute("data-phase"), "idle");
    await emitRunEvent(page, "run_01PICKED", { type: "text_delta", text: "late text of the old run" });
    await emitRunEvent(page, "run_01PICKED", { type: "run_finished", run_id: "run_01PICKED", status: "cancelled", stage: null, usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 } });
    assert.equal(await page.locator('[data-testid="msg-assistant"]').count(), 0);
    // Nothing active now: Ctrl+O asks the shell.
    await page.keyboard.press("Control+o");
    await waitForCall(page, "pick_project");
    assert.deepEqual(unexpected(problems), []);
    await page.close();
  });
});
