// The catalog in the BUILT UI (headless Chromium, mocked IPC, the app's CSP): tools with exposure,
// deferral gate and absent reason; MCP servers with their states, Reconnect, Log in and Log out
// (servers holding a token), the step-up login of a server whose token lacked scope, by name;
// skills with their problems; one filter for all. Screenshot: target/e2e-screenshots/catalog.png.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { browserSuite, callsOf, openPage, projectInfo, repo, waitForCall } from "./harness.mjs";

const shots = join(repo, "target/e2e-screenshots");
const PROJECT = projectInfo();
const TOOL = { source: "core", exposure: "active", risk: "read_only", description: "", category: "files" };
const TOOLS = [
  { ...TOOL, name: "read_file", config: "filesystem", display_name: "Filesystem", description: "Read a text file" },
  { ...TOOL, name: "execute", config: "execute", display_name: "Execute", category: "commands", risk: "high_impact", confinement: "landlock-v7" },
  { ...TOOL, name: "mcp__docs__search", config: "mcp:docs", display_name: "docs", source: "mcp:docs", exposure: "deferred", deferred_reason: "deferred: 42 MCP tools exceed the 20-tool gate" },
  { ...TOOL, name: "mcp__github__issues", config: "mcp:github", display_name: "github", source: "mcp:github", exposure: "absent", absent_reason: "needs login" },
];
const SERVERS = [
  { name: "docs", state: { kind: "connected" }, tool_count: 42, server_info: "docs-server 1.2.0", rejected_tools: [{ tool: "bad<script>", reason: "input schema is not an object" }], sandbox: { confinement: "namespaces+landlock-v7", network: "through the allow list", writable_roots: [], refused_hosts: ["evil.example:443"], refused_more: 2 } },
  { name: "github", state: { kind: "needs_login" }, tool_count: 0, server_info: null, rejected_tools: [], sandbox: null },
  { name: "flaky", state: { kind: "failed", reason: "exited with status 1: <img src=x onerror=alert(1)>", retry_in_ms: 4000 }, tool_count: 0, server_info: null, rejected_tools: [], sandbox: null },
  { name: "starting", state: { kind: "connecting" }, tool_count: 0, server_info: null, rejected_tools: [], sandbox: null },
];
const SKILLS = { skills: [{ name: "pdf", description: "Read and fill PDF forms", root: "bundled" }], problems: ["/home/me/work/sample-project/.aibuddy/skills/broken/SKILL.md:1: missing `name` in the front matter"] };

describe("catalog in Chromium with mocked IPC", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  it("shows tools, servers and skills, reconnects and logs in by name", async () => {
    const responses = {
      list_runs: { resolve: [] },
      project_info: { resolve: PROJECT },
      list_tools: { resolve: TOOLS },
      list_servers: { resolve: SERVERS },
      list_skills: { resolve: SKILLS },
      reconnect_server: { resolve: true },
      mcp_login: { reject: "login to `github` failed: no redirect within 300s" },
      mcp_logins: { resolve: [{ server: "docs", more_scope_needed: true }] },
      mcp_logout: { resolve: true },
    };
    const { page, problems } = await openPage(browser, base, responses, { width: 1180, height: 900 });
    await page.keyboard.press("Alt+2");
    await page.locator('[data-testid="server"] >> nth=3').waitFor({ timeout: 10_000 });

    const states = await page.locator('[data-testid="server"]').evaluateAll((els) => els.map((e) => `${e.dataset.server}:${e.querySelector('[data-testid="server-state"]').textContent}`));
    assert.deepEqual(states, ["docs:connected · 42 tools", "github:needs login", "flaky:failed · retry in 4 s", "starting:connecting"]);
    assert.equal(await page.locator('[data-server="flaky"] img').count(), 0);
    assert.match(await page.locator('[data-server="flaky"] [data-testid="server-detail"]').textContent(), /<img src=x/);
    // A sandboxed server's line names the hosts its proxy refused.
    assert.match(await page.locator('[data-server="docs"] [data-testid="server-sandbox"]').textContent(), /refused evil\.example:443 and 2 more$/);
    assert.equal(await page.locator('[data-testid="deferred-reason"]').textContent(), "deferred: 42 MCP tools exceed the 20-tool gate");
    assert.equal(await page.locator('[data-testid="confinement"]').textContent(), "confinement: landlock-v7");
    assert.match(await page.locator('[data-testid="skill-problem"]').textContent(), /SKILL\.md:1: missing `name`/);

    // Keyboard: Tab reaches Reconnect of docs; Enter reconnects it by name.
    await page.locator('[data-server="docs"] [data-testid="reconnect"]').focus();
    await page.keyboard.press("Enter");
    await waitForCall(page, "reconnect_server");
    await page.locator('[data-server="github"] [data-testid="login"]').click();
    await page.locator('[data-server="github"] [data-testid="server-error"]').waitFor();
    assert.equal(await page.locator('[data-server="github"] [data-testid="server-error"]').textContent(), "login to `github` failed: no redirect within 300s");
    // Log out is offered beside the servers holding a token only, and reached by keyboard.
    assert.deepEqual(await page.locator('[data-testid="logout"]').evaluateAll((els) => els.map((e) => e.closest("[data-server]").dataset.server)), ["docs"]);
    assert.equal(await page.locator('[data-server="docs"] [data-testid="logout"]').getAttribute("aria-label"), "Log out of docs");
    // A server whose token lacked scope for a tool offers a step-up login and says why.
    assert.equal(await page.locator('[data-testid="step-up"]').count(), 1);
    assert.equal(await page.locator('[data-server="docs"] [data-testid="step-up"]').textContent(), "Grant more access");
    assert.match(await page.locator('[data-server="docs"] [data-testid="step-up-detail"]').textContent(), /needs more access than was granted/);
    await page.locator('[data-server="docs"] [data-testid="logout"]').focus();
    await page.keyboard.press("Enter");
    await waitForCall(page, "mcp_logout");
    const args = (await callsOf(page, ["reconnect_server", "mcp_login", "mcp_logout"])).map((a) => [a.cmd, a.args]);
    assert.deepEqual(args, [
      ["reconnect_server", { name: "docs" }],
      ["mcp_login", { server: "github" }],
      ["mcp_logout", { server: "docs" }],
    ]);
    writeFileSync(join(shots, "catalog.png"), await page.screenshot());

    await page.locator("input.search").fill("pdf");
    assert.equal(await page.locator('[data-testid="server"]').count(), 0);
    assert.deepEqual(await page.locator('[data-testid="skill"] .skill-name').allTextContents(), ["pdf"]);
    assert.deepEqual(problems, []);
    await page.close();
  });
});
