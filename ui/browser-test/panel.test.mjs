// The BUILT web UI (ui/dist) in headless Chromium, with the Tauri IPC mocked by
// @tauri-apps/api/mocks and the app's CSP (from tauri.conf.json) sent as a header, so a build that
// needs inline script or style, or that calls anything but its commands, fails here.
// Needs CHROMIUM_BIN (scripts/test-ui.sh installs Debian's chromium).
import { createServer } from "node:http";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { extname, join, normalize, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { build } from "esbuild";
import { chromium } from "playwright-core";

const repo = resolve(import.meta.dirname, "../..");
const dist = join(repo, "ui/dist");
const artifacts = join(repo, "target/ui");

const PROJECT = {
  root: "/home/me/work/sample-project",
  data_dir: "/home/me/.local/share/aibuddy",
  settings_files: ["/home/me/work/sample-project/.aibuddy/settings.json"],
  settings_problems: [{ file: "/home/me/work/sample-project/.aibuddy/settings.json", line: 4, field: "sandbox.kind", message: "expected a string" }],
};
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

function cspHeader() {
  const conf = JSON.parse(readFileSync(join(repo, "tauri.conf.json"), "utf8"));
  const csp = conf.app.security.csp;
  assert.ok(csp && typeof csp === "object", "tauri.conf.json sets no CSP");
  return Object.entries(csp)
    .map(([directive, value]) => `${directive} ${value}`)
    .join("; ");
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png" };

function serveDist() {
  const csp = cspHeader();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const rel = normalize(decodeURIComponent(url.pathname)).replace(/^([/\\])+/, "") || "index.html";
    const file = join(dist, rel);
    if (!file.startsWith(dist) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "content-security-policy": csp });
    res.end(readFileSync(file));
  });
  return new Promise((res) => server.listen(0, "127.0.0.1", () => res(server)));
}

/** An init script that installs mockIPC before the app's own script runs. */
async function mockScript(responses) {
  const source = `
    import { mockIPC } from "@tauri-apps/api/mocks";
    const responses = ${JSON.stringify(responses)};
    window.__ipcCalls = [];
    mockIPC((cmd, args) => {
      window.__ipcCalls.push(cmd);
      const r = responses[cmd];
      if (!r) throw { code: "ipc", stage: null, message: "unexpected command " + cmd };
      if ("reject" in r) throw r.reject;
      return r.resolve;
    });`;
  const out = await build({ stdin: { contents: source, resolveDir: repo, loader: "js" }, bundle: true, format: "iife", write: false });
  return out.outputFiles[0].text;
}

describe("built UI in Chromium with mocked IPC", () => {
  let server;
  let browser;
  let base;

  before(async () => {
    assert.ok(statSync(join(dist, "index.html"), { throwIfNoEntry: false }), "ui/dist is missing: run `npm run build`");
    server = await serveDist();
    base = `http://127.0.0.1:${server.address().port}/`;
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_BIN || "/usr/bin/chromium",
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    mkdirSync(artifacts, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    server?.close();
  });

  async function open(responses) {
    const page = await browser.newPage({ viewport: { width: 1180, height: 780 } });
    const problems = [];
    page.on("console", (msg) => {
      if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.addInitScript({ content: await mockScript(responses) });
    await page.goto(base);
    return { page, problems };
  }

  it("lists the tools grouped by config with risk, state and absent reason, under the app's CSP", async () => {
    const { page, problems } = await open({ project_info: { resolve: PROJECT }, list_tools: { resolve: TOOLS }, list_history: { resolve: [] } });
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

    assert.deepEqual((await page.evaluate(() => window.__ipcCalls)).sort(), ["list_history", "list_tools", "project_info"]);
    assert.deepEqual(problems, []);
    await page.locator("input.search").fill("");
    writeFileSync(join(artifacts, "panel.png"), await page.screenshot());
    await page.close();
  });

  it("shows the shell's typed error when list_tools fails", async () => {
    const error = { code: "project", stage: null, message: ".aibuddy/settings.json: line 2: unknown field `toolz`" };
    const { page } = await open({ project_info: { resolve: PROJECT }, list_tools: { reject: error }, list_history: { resolve: [] } });
    await page.locator('[data-testid="tools-error"]').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-testid="tools-error"] .error-message').textContent(), error.message);
    await page.close();
  });
});
