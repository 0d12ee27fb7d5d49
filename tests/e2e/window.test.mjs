// End-to-end: starts the REAL desktop app (the binary scripts/test-e2e.sh built, with ui/dist embedded)
// through tauri-driver + WebKitWebDriver, under the X display the caller provides (xvfb-run), and checks
// that the window shows the project and the same tool list as `aibuddy tools list --json`, a console
// call in the history browser, and the settings pages (screenshots: target/e2e-screenshots/window-*.png).
//
// Inputs (environment): AIBUDDY_DESKTOP_BIN, AIBUDDY_CLI_BIN, TAURI_DRIVER; optional E2E_PROJECT
// (default examples/sample-project), E2E_ARTIFACTS (default target/e2e: screenshot and driver log).
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { need, openTab as selectTab, repo, saveScreenshot, screenshots, startApp } from "./app-session.mjs";

const desktopBin = need("AIBUDDY_DESKTOP_BIN");
const cliBin = need("AIBUDDY_CLI_BIN");
need("TAURI_DRIVER");
const project = realpathSync(process.env.E2E_PROJECT || join(repo, "examples/sample-project"));
const artifacts = process.env.E2E_ARTIFACTS || join(repo, "target/e2e");

/** The CLI's listing is the reference: the window must show exactly the same tools. */
function cliListing(dataDir) {
  const out = execFileSync(cliBin, ["--project", project, "--data-dir", dataDir, "tools", "list", "--json"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const parsed = JSON.parse(out);
  const tools = Array.isArray(parsed) ? parsed : parsed.tools;
  assert.ok(Array.isArray(tools), `unexpected tools list JSON: ${out.slice(0, 200)}`);
  return tools;
}

describe("desktop window (real app under Xvfb via tauri-driver)", () => {
  let app;
  let driver;
  let dataDir;
  let expected;

  before(async () => {
    assert.ok(process.env.DISPLAY, "no DISPLAY: run under xvfb-run");
    mkdirSync(artifacts, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), "aibuddy-e2e-"));
    expected = cliListing(dataDir);
    app = await startApp({
      application: desktopBin,
      args: [project, "--data-dir", dataDir],
      logFile: join(artifacts, "tauri-driver.log"),
    });
    driver = app.driver;
  });

  after(async () => {
    await app?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("shows the project it was started on", async () => {
    assert.equal(await driver.title(), "aibuddy");
    const path = await driver.poll("the project path in the header", async () => {
      const [el] = await driver.findAll('[data-testid="project-path"]');
      return el && (await driver.attribute(el, "title"));
    });
    assert.equal(path, project);
    assert.deepEqual(await driver.texts('[data-testid="project-path"]'), [project]);
  });

  /** The window opens on the conversation; the catalog, console and history are tabs. */
  const openTab = (name) => selectTab(driver, name);

  it("opens on the conversation view with a prompt box", async () => {
    await driver.poll("the run view", async () => {
      const [el] = await driver.findAll('[data-testid="prompt"]');
      return el ?? null;
    });
    // The shot is of the run view of the open project: the header names it (not "Opening project…").
    await driver.poll("the project path in the header", async () => {
      const [el] = await driver.findAll('[data-testid="project-path"]');
      return el ?? null;
    });
    await saveScreenshot(driver, "window-run-view.png");
  });

  it("lists the same tools as `aibuddy tools list --json`, with states and absent reasons", async () => {
    await openTab("tools");
    // The listing arrives asynchronously through the list_tools command: poll for it.
    const rows = await driver.poll("the tool list", async () => {
      const els = await driver.findAll('[data-testid="tool"]');
      if (els.length === 0) {
        const [error] = await driver.findAll('[data-testid="tools-error"]');
        if (error) throw new Error(`the window shows an error: ${(await driver.texts('[data-testid="tools-error"]')).join(" ")}`);
        return null;
      }
      return els;
    });
    const shown = [];
    for (const el of rows) {
      shown.push({ name: await driver.attribute(el, "data-tool"), state: await driver.attribute(el, "data-state") });
    }
    const want = expected.map((t) => ({ name: t.name, state: t.absent_reason ? "absent" : t.exposure }));
    const byName = (a, b) => a.name.localeCompare(b.name);
    assert.deepEqual([...shown].sort(byName), [...want].sort(byName));
    assert.ok(shown.length > 0, "the sample project lists no tool at all");

    const reasons = await driver.texts('[data-testid="absent-reason"]');
    const wantReasons = expected.filter((t) => t.absent_reason).map((t) => `Absent: ${t.absent_reason}`);
    assert.deepEqual(reasons.sort(), wantReasons.sort());

    const png = await driver.screenshot();
    if (png) {
      writeFileSync(join(artifacts, "window.png"), Buffer.from(png, "base64"));
      mkdirSync(screenshots, { recursive: true });
      writeFileSync(join(screenshots, "window-catalog.png"), Buffer.from(png, "base64"));
    }
    else console.error("the driver took no screenshot in time (not part of the check)");
  });

  it("runs read_file from the console through the real pipeline", async () => {
    // Fill the form through the page (WebDriver's element APIs are unreliable under Xvfb), then click
    // Run through WebDriver.
    await driver.execute(
      `const select = document.querySelector('[data-testid="console-tool"]');
       select.value = "read_file";
       document.querySelector('[data-testid="console-args"]').value = JSON.stringify({ path: "notes/todo.md" });`,
    );
    const [run] = await driver.findAll('[data-testid="console-run"]');
    assert.ok(run, "no Run button");
    await driver.click(run);
    const status = await driver.poll("the call result", async () => {
      const [el] = await driver.findAll('[data-testid="call-result"]');
      return el && (await driver.attribute(el, "data-status"));
    });
    const [model] = await driver.texts('[data-testid="call-model"]');
    assert.equal(status, "ok", model);
    assert.match(model, /Add a `--top N` option/);
    const png = await driver.screenshot();
    if (png) writeFileSync(join(artifacts, "window-call.png"), Buffer.from(png, "base64"));
  });

  it("lists that read_file call in the history browser, from the project's store", async () => {
    const [callId] = await driver.texts('[data-testid="call-result"] .result-meta');
    const id = callId.split(" · ").at(-1);
    assert.match(id, /^call_/);
    // The console's finished call lists the history again (the tab is still hidden).
    const top = await driver.poll("the call in the history", async () => {
      const [row] = await driver.execute(
        `const row = document.querySelector('[data-testid="hb-row"]');
         return row ? [{ id: row.getAttribute("data-id"), tool: row.getAttribute("data-tool"), status: row.getAttribute("data-status") }] : [null];`,
      );
      return row && row.id === id ? row : null;
    });
    assert.deepEqual(top, { id, tool: "read_file", status: "ok" });
    await openTab("history");
    const [row] = await driver.findAll(`[data-testid="hb-row"][data-id="${id}"]`);
    await driver.click(row);
    const raw = await driver.poll("the stored call's detail", async () => {
      const [text] = await driver.texts(`[data-testid="hb-detail"][data-id="${id}"] [data-testid="raw-text"]`);
      return text;
    });
    assert.match(raw, /Add a `--top N` option/);
    const [input] = await driver.texts('[data-testid="hb-input"]');
    assert.deepEqual(JSON.parse(input), { path: "notes/todo.md" });
    await saveScreenshot(driver, "window-history.png");
  });

  it("shows the settings pages, writing the CLI's user settings file of this data dir", async () => {
    await openTab("settings");
    const file = await driver.poll("the settings pages", async () => {
      const [error] = await driver.texts('[data-testid="settings-error"]');
      if (error) throw new Error(`the settings pages failed: ${error}`);
      const [text] = await driver.texts('[data-testid="level-file"]');
      return text ? text.trim() : null;
    });
    assert.equal(file, join(dataDir, "settings.json"));
    await saveScreenshot(driver, "window-settings.png");
  });
});
