// The BUILT web UI (ui/dist) in headless Chromium, with the Tauri IPC mocked by
// @tauri-apps/api/mocks and the app's CSP (from tauri.conf.json) sent as a header, so a build that
// needs inline script or style, or that calls anything but its commands, fails here.
// Needs CHROMIUM_BIN (scripts/test-ui.sh installs Debian's chromium).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { browserSuite, callNames, openPage, projectInfo, repo } from "./harness.mjs";

const artifacts = join(repo, "target/ui");

const PROJECT = projectInfo("/home/me/work/sample-project", {
  settings_files: ["/home/me/work/sample-project/.aibuddy/settings.json"],
  settings_problems: [{ file: "/home/me/work/sample-project/.aibuddy/settings.json", line: 4, field: "sandbox.kind", message: "expected a string" }],
});
const TOOL = { source: "core", exposure: "active", risk: "read_only", description: "", category: "files" };
const TOOLS = [
  { ...TOOL, name: "read_file", config: "filesystem", display_name: "Filesystem" },
  { ...TOOL, name: "write_file", config: "filesystem", display_name: "Filesystem", risk: "writes" },
  {
    ...TOOL,
    name: "execute",
    config: "execute",
    display_name: "Execute",
    category: "commands",
    risk: "high_impact",
    exposure: "absent",
    absent_reason: "sandbox kind `e2b` is unavailable",
  },
  { ...TOOL, name: "mcp__docs__lookup", config: "mcp:docs", display_name: "docs", source: "mcp:docs", exposure: "deferred" },
];

describe("built UI in Chromium with mocked IPC", () => {
  let browser;
  let base;
  browserSuite(artifacts, (s) => ({ browser, base } = s));

  /** The window opens on the conversation; these checks are about the Tools view. */
  async function open(responses) {
    const opened = await openPage(browser, base, { list_runs: { resolve: [] }, ...responses });
    await opened.page.locator('[data-testid="tab-tools"]').click();
    return opened;
  }

  it("lists the tools grouped by config with risk, state and absent reason, under the app's CSP", async () => {
    const { page, problems } = await open({ project_info: { resolve: PROJECT }, list_tools: { resolve: TOOLS } });
    await page.locator('[data-testid="tool-list"]').waitFor({ timeout: 10_000 });

    assert.equal(await page.title(), "aibuddy");
    assert.equal(await page.locator('[data-testid="project-path"]').textContent(), PROJECT.root);
    assert.deepEqual(await page.locator('[data-testid="tool-group"] h3').allTextContents(), ["Execute", "Filesystem", "docs"]);
    assert.deepEqual(await page.locator('[data-testid="risk"]').allTextContents(), ["high impact", "writes", "read-only"]);
    const states = await page
      .locator('[data-testid="tool"]')
      .evaluateAll((els) => els.map((el) => `${el.getAttribute("data-tool")}:${el.getAttribute("data-state")}`));
    assert.deepEqual(states, ["execute:absent", "read_file:active", "write_file:active", "mcp__docs__lookup:deferred"]);
    assert.deepEqual(await page.locator('[data-testid="absent-reason"]').allTextContents(), [
      "Absent: sandbox kind `e2b` is unavailable",
    ]);
    // Styles applied (the stylesheet loaded under the CSP): the risk badge is coloured.
    const badge = await page.locator(".risk-high_impact").evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.notEqual(badge, "rgba(0, 0, 0, 0)");

    assert.deepEqual(await page.locator('[data-testid="settings-problem"]').allTextContents(), [
      "/home/me/work/sample-project/.aibuddy/settings.json:4 sandbox.kind: expected a string",
    ]);

    await page.locator("input.search").fill("write");
    assert.deepEqual(await page.locator('[data-testid="tool"] .tool-name').allTextContents(), ["write_file"]);

    assert.deepEqual((await callNames(page)).sort(), ["approvals_view", "history_facets", "history_page", "list_processes", "list_providers", "list_recent", "list_runs", "list_servers", "list_skills", "list_tools", "model_setup", "project_info", "trust_status"]);
    assert.deepEqual(problems, []);
    await page.locator("input.search").fill("");
    writeFileSync(join(artifacts, "panel.png"), await page.screenshot());
    await page.close();
  });

  it("shows the shell's typed error when list_tools fails", async () => {
    const error = { code: "project", stage: null, message: ".aibuddy/settings.json: line 2: unknown field `toolz`" };
    const { page } = await open({ project_info: { resolve: PROJECT }, list_tools: { reject: error } });
    await page.locator('[data-testid="tools-error"]').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-testid="tools-error"] .error-message').textContent(), error.message);
    await page.close();
  });
});
