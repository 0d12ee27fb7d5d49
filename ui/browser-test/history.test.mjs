// The History tab in the BUILT UI (headless Chromium, mocked IPC served like the shell's commands by
// harness.mjs, the app's CSP): the call found THROUGH the filters (tool and status selects, then
// full-text search), its detail opened from the keyboard with model text and raw output, and a
// project switch re-scoping the list and its choices. Screenshot:
// target/e2e-screenshots/history-browser.png.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { browserSuite, historyMock, historyRowsSource, openPage, repo } from "./harness.mjs";

const shots = join(repo, "target/e2e-screenshots");
const info = (root) => ({ root, data_dir: "/home/me/.local/share/aibuddy", settings_files: [], settings_problems: [], event_version: 1 });
const ALPHA = info("/home/me/work/alpha");
const BETA = info("/home/me/work/beta");
const BETA_ROW = {
  tool_call_id: "beta_call",
  run_id: "run_beta",
  tool: "write_file",
  status: "ok",
  stage: null,
  error_message: null,
  started_at: "2026-11-30T09:00:00.000Z",
  duration_ms: 12,
  target: "notes/beta.md",
  compaction_state: "none",
};

// Two projects sharing the data dir: the shell answers for the open one (window.__project).
const DYNAMIC = `{
  ...(() => {
    const alpha = ${historyMock(historyRowsSource(2000))};
    const beta = ${historyMock(JSON.stringify([BETA_ROW]))};
    const open = () => (window.__project === "beta" ? beta : alpha);
    return {
      project_info: () => (window.__project === "beta" ? ${JSON.stringify(BETA)} : ${JSON.stringify(ALPHA)}),
      history_page: (a) => open().history_page(a),
      history_facets: (a) => open().history_facets(a),
      call_record: (a) => open().call_record(a),
      raw_output_range: (a) => open().raw_output_range(a),
    };
  })(),
}`;

describe("history browser in Chromium with mocked IPC", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  const rows = (page) => page.locator('[data-testid="hb-row"]').evaluateAll((els) => els.map((e) => ({ id: e.dataset.id, tool: e.dataset.tool, status: e.dataset.status })));
  const lastQuery = (page) => page.evaluate(() => window.__ipcArgs.filter((a) => a.cmd === "history_page").at(-1)?.args.query);

  it("finds a call through the tool and status filters and the search, opens it from the keyboard, and follows a project switch", async () => {
    const { page, problems } = await openPage(browser, base, { list_tools: { resolve: [] }, list_runs: { resolve: [] } }, { width: 1280, height: 860 }, "light", DYNAMIC);
    await page.keyboard.press("Alt+3");
    await page.locator('[data-testid="hb-row"]').first().waitFor({ timeout: 15_000 });
    assert.equal(await page.locator('[data-testid="hb-count"]').textContent(), "500 loaded, more below");
    assert.equal((await rows(page))[0].id, "call_002000", "newest first");

    // Tool filter: the choices are the project's tools.
    const tools = await page.locator('[data-testid="hb-tool"] option').evaluateAll((os) => os.map((o) => o.value));
    assert.deepEqual(tools, ["", "edit_file", "execute", "grep", "ls", "read_file"]);
    await page.locator('[data-testid="hb-tool"]').selectOption("execute");
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="hb-row"]')].every((r) => r.dataset.tool === "execute"));
    assert.deepEqual((await lastQuery(page)).tools, ["execute"]);

    // Status filter (with its failure stage shown on each row).
    await page.locator('[data-testid="hb-status"]').selectOption("error");
    await page.waitForFunction(() => {
      const r = [...document.querySelectorAll('[data-testid="hb-row"]')];
      return r.length > 0 && r.every((e) => e.dataset.tool === "execute" && e.dataset.status === "error");
    });
    assert.ok((await page.locator('[data-testid="hb-row"] .badge').allTextContents()).every((t) => t === "Execution"));

    // Full text narrows to the one call.
    await page.locator('[data-testid="hb-search"]').fill("1949");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="hb-row"]').length === 1);
    assert.deepEqual(await rows(page), [{ id: "call_001949", tool: "execute", status: "error" }]);
    assert.deepEqual(await lastQuery(page), { tools: ["execute"], statuses: ["error"], stages: [], run_id: null, since_ms: null, until_ms: null, search: "1949", limit: 500, cursor: null });

    // The detail, from the keyboard: focus the row, Enter.
    await page.locator('[data-testid="hb-row"]').focus();
    await page.keyboard.press("Enter");
    await page.locator('[data-testid="hb-detail"][data-id="call_001949"]').waitFor();
    assert.equal(await page.locator('[data-testid="hb-model"]').textContent(), "model text of call_001949");
    await page.waitForFunction(() => document.querySelector('[data-testid="raw-text"]')?.textContent === "raw output of call_001949\n");
    writeFileSync(join(shots, "history-browser.png"), await page.screenshot());

    // Clearing the filters lists everything again; arrows move between rows.
    await page.locator('[data-testid="hb-tool"]').selectOption("");
    await page.locator('[data-testid="hb-status"]').selectOption("");
    await page.locator('[data-testid="hb-search"]').fill("");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector('[data-testid="hb-count"]')?.textContent === "500 loaded, more below");
    await page.locator('[data-testid="hb-row"][data-index="0"]').focus();
    await page.keyboard.press("ArrowDown");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-index")), "1");

    // Another project opens: the list and its choices are that project's.
    await page.evaluate((beta) => {
      window.__project = "beta";
      return window.__emit("project-changed", beta);
    }, BETA);
    await page.waitForFunction(() => {
      const r = [...document.querySelectorAll('[data-testid="hb-row"]')];
      return r.length === 1 && r[0].dataset.id === "beta_call";
    });
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="hb-tool"] option')].map((o) => o.value).join() === ",write_file");
    assert.equal(await page.locator('[data-testid="project-path"]').textContent(), BETA.root);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
