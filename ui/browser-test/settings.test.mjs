// The settings pages in the BUILT UI (headless Chromium, mocked IPC, the app's CSP): a provider
// entry saved at the user level, its key sent to the keyring command and never shown back, a
// refused writable root shown on its field as `tools check` prints it, the project level picked
// from the keyboard, the process cap and the step time limit saved, an MCP server added. Screenshot: target/e2e-screenshots/settings.png.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { argsOf, browserSuite, callsOf, openPage, projectInfo, repo, waitForCall } from "./harness.mjs";

const shots = join(repo, "target/e2e-screenshots");
const USER = "/home/me/.local/share/aibuddy/settings.json";
const PROJECT_FILE = "/home/me/work/sample-project/.aibuddy/settings.json";

const PAGES = {
  files: {
    user_settings: USER,
    project_settings: PROJECT_FILE,
    user_mcp: "/home/me/.local/share/aibuddy/mcp.json",
    project_mcp: "/home/me/work/sample-project/.aibuddy/mcp.json",
  },
  user: {
    providers: { default: "anthropic", anthropic: { model: "claude-sonnet-4-6" }, local: { kind: "openai-chat", model: "qwen3:8b", base_url: "http://127.0.0.1:11434/v1" } },
    exec: { network: true, max_processes: 1024 },
    agent: { idle_timeout_secs: 120 },
  },
  project: { exec: { writable_roots: ["~/.cargo"] }, confirm: { auto_approve_writes: false } },
  problems: [{ file: PROJECT_FILE, line: 3, column: 23, field: "exec.writable_roots", message: "`~/.cargo` does not exist; ignored" }],
  mcp_servers: [
    { name: "files", level: "user", entry: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] }, shadowed: false },
    { name: "<b>docs</b>", level: "project", entry: { url: "https://docs.example/mcp" }, shadowed: false },
  ],
  mcp_problems: [],
  provider_keys: [
    { name: "anthropic", key: "set" },
    { name: "local", key: "not_set" },
  ],
  trust: "trusted",
};

const PROJECT = projectInfo();

const DYNAMIC = `{
  set_setting: (args) => {
    if (args.path[1] === "writable_roots") return { written: null, problems: [{ file: "${PROJECT_FILE}", line: 3, column: 23, field: "exec.writable_roots", message: "\`/\` contains the data directory; ignored" }] };
    return { written: { file: args.level === "user" ? "${USER}" : "${PROJECT_FILE}", changed: true, trust: args.level === "user" ? { kind: "not_concerned" } : { kind: "kept", digest: "d2" } }, problems: [] };
  },
  put_mcp_server: (args) => ({ written: { file: "/home/me/.local/share/aibuddy/mcp.json", changed: true, trust: { kind: "not_concerned" } }, problems: [] }),
  set_provider_key: () => "set",
}`;

describe("settings pages in Chromium with mocked IPC", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  it("saves providers, keys, roots and servers through the shell's commands", async () => {
    const responses = {
      list_runs: { resolve: [] },
      project_info: { resolve: PROJECT },
      list_tools: { resolve: [] },
      list_servers: { resolve: [] },
      list_skills: { resolve: { skills: [], problems: [] } },
      settings_pages: { resolve: PAGES },
    };
    const { page, problems } = await openPage(browser, base, responses, { width: 1180, height: 820 }, "light", DYNAMIC);
    await page.keyboard.press("Alt+4");
    await page.locator('[data-testid="page-providers"]').waitFor({ timeout: 10_000 });

    // Keys: only their state is shown.
    assert.deepEqual(await page.locator('[data-testid="key-state"]').allTextContents(), ["key set", "no key set"]);
    await page.locator('[data-testid="provider"][data-name="local"] [data-testid="key-input"]').fill("sk-test-secret-77");
    await page.locator('[data-testid="provider"][data-name="local"] [data-testid="save-key"]').click();
    await page.locator('[data-testid="settings-notice"]').waitFor();
    assert.equal(await page.locator('[data-testid="provider"][data-name="local"] [data-testid="key-input"]').inputValue(), "");
    assert.ok(!(await page.content()).includes("sk-test-secret-77"));

    // An entry edited at the user level (the default): Edit fills the form from the file.
    await page.locator('button[aria-label="Edit local"]').click();
    assert.equal(await page.locator('[data-testid="provider-url"]').inputValue(), "http://127.0.0.1:11434/v1");
    assert.equal(await page.locator('[data-testid="provider-kind"]').inputValue(), "openai-chat");
    await page.locator('[data-testid="provider-form"] [data-testid="provider-model"]').fill("qwen3:14b");
    await page.locator('[data-testid="provider-save"]').click();
    await page.locator('[data-testid="settings-notice"]').waitFor();
    assert.match(await page.locator('[data-testid="settings-notice"]').textContent(), /Saved to .*settings\.json\. .*opened again/);

    // The time limits of a model response (user level): unset ones show their default, a value
    // typed in minutes is said back and saved in seconds.
    assert.equal(await page.locator("#f-idle_timeout_secs").inputValue(), "120");
    assert.equal(await page.locator("#f-step_timeout_secs").inputValue(), "");
    assert.equal(await page.locator("#f-step_timeout_secs").getAttribute("placeholder"), "1800 (default)");
    assert.equal(await page.locator('[data-testid="step_timeout_secs-as-time"]').textContent(), "default: 30 min");
    await page.locator("#f-step_timeout_secs").fill("0");
    await page.locator("#f-step_timeout_secs").press("Enter");
    await page.locator('[data-testid="step_timeout_secs-invalid"]').waitFor();
    await page.locator("#f-step_timeout_secs").fill("20 min");
    assert.equal(await page.locator('[data-testid="step_timeout_secs-as-time"]').textContent(), "= 20 min");
    await page.locator("#f-step_timeout_secs").press("Enter");
    await page.waitForFunction(() => window.__ipcArgs.some((a) => a.cmd === "set_setting" && a.args.path[1] === "step_timeout_secs"));

    // Commands and approvals, at the project level picked from the keyboard.
    await page.locator('[data-testid="settings-tab-providers"]').focus();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    await page.locator('[data-testid="page-exec"]').waitFor();
    await page.locator('[data-testid="level-project"]').check();
    assert.equal(await page.locator('[data-testid="level-file"]').textContent(), PROJECT_FILE);
    assert.equal(await page.locator("#f-writable_roots").inputValue(), "~/.cargo");
    assert.deepEqual(await page.locator('[data-testid="field-writable_roots"] [data-testid="field-problem"]').allTextContents(), [
      `${PROJECT_FILE}:3:23: \`exec.writable_roots\`: \`~/.cargo\` does not exist; ignored`,
    ]);
    await page.locator("#f-writable_roots").fill("~/.cargo\n/");
    await page.locator('[data-testid="save-writable_roots"]').click();
    await page.locator('[data-testid="field-writable_roots"] [data-testid="field-problem"] >> nth=0').waitFor();
    const rootProblems = await page.locator('[data-testid="field-writable_roots"] [data-testid="field-problem"]').allTextContents();
    assert.ok(rootProblems.includes(`${PROJECT_FILE}:3:23: \`exec.writable_roots\`: \`/\` contains the data directory; ignored`), rootProblems.join("\n"));
    await page.evaluate(() => document.querySelector(".settings-body")?.scrollTo(0, 0));
    writeFileSync(join(shots, "settings.png"), await page.screenshot());
    // The process cap: empty at the project level (the user level's 1024 applies), saved as a number.
    assert.equal(await page.locator("#f-max_processes").inputValue(), "");
    await page.locator("#f-max_processes").fill("512");
    await page.locator("#f-max_processes").press("Enter");
    await page.waitForFunction(() => window.__ipcArgs.some((a) => a.cmd === "set_setting" && a.args.path[1] === "max_processes"));
    await page.locator('[data-testid="auto-on"]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="settings-notice"]')?.textContent?.includes("stays trusted"));

    const args = await callsOf(page, ["set_setting", "set_provider_key", "put_mcp_server"]);
    assert.deepEqual(
      args.map((a) => [a.cmd, a.args.level ?? null, a.args.path ?? a.args.name]),
      [
        ["set_provider_key", null, "local"],
        ["set_setting", "user", ["providers", "local"]],
        ["set_setting", "user", ["agent", "step_timeout_secs"]],
        ["set_setting", "project", ["exec", "writable_roots"]],
        ["set_setting", "project", ["exec", "max_processes"]],
        ["set_setting", "project", ["confirm", "auto_approve_writes"]],
      ],
    );
    assert.deepEqual(args[1].args.value, { kind: "openai-chat", model: "qwen3:14b", base_url: "http://127.0.0.1:11434/v1" });
    assert.equal(args[2].args.value, 1200);
    assert.equal(args[4].args.value, 512);

    // MCP servers: names from a project file are text; a new server goes to the user level.
    await page.locator('[data-testid="settings-tab-mcp"]').click();
    await page.locator('[data-testid="level-user"]').check();
    assert.equal(await page.locator('[data-testid="mcp-server"] b').count(), 0);
    await page.locator('[data-testid="mcp-name"]').fill("memory");
    await page.locator('[data-testid="mcp-command"]').fill("npx");
    await page.locator('[data-testid="mcp-args"]').fill("-y\n@modelcontextprotocol/server-memory");
    await page.locator('[data-testid="mcp-save"]').click();
    await waitForCall(page, "put_mcp_server");
    const [put] = await argsOf(page, "put_mcp_server");
    assert.deepEqual(put, { level: "user", name: "memory", entry: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] } });
    writeFileSync(join(shots, "settings-mcp.png"), await page.screenshot());
    assert.deepEqual(problems, []);
    await page.close();
  });
});
