// Shared by the browser tests: serve the BUILT ui/dist with the app's CSP (from tauri.conf.json) as
// a header, launch Debian's headless chromium, and build an init script that installs mockIPC
// before the app's own script runs.
import { createServer } from "node:http";
import { readFileSync, statSync } from "node:fs";
import { extname, join, normalize, resolve } from "node:path";
import assert from "node:assert/strict";
import { build } from "esbuild";
import { chromium } from "playwright-core";

export const repo = resolve(import.meta.dirname, "../..");
export const dist = join(repo, "ui/dist");

export function cspHeader() {
  const conf = JSON.parse(readFileSync(join(repo, "tauri.conf.json"), "utf8"));
  const csp = conf.app.security.csp;
  assert.ok(csp && typeof csp === "object", "tauri.conf.json sets no CSP");
  return Object.entries(csp)
    .map(([directive, value]) => `${directive} ${value}`)
    .join("; ");
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png" };

export function serveDist() {
  assert.ok(statSync(join(dist, "index.html"), { throwIfNoEntry: false }), "ui/dist is missing: run `npm run build`");
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

export function launchChromium() {
  return chromium.launch({
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
}

/**
 * An init script that installs mockIPC (events mocked too) answering `responses[cmd]` (`{resolve}`
 * or `{reject}`), records every call in `window.__ipcCalls` / `window.__ipcArgs`, and exposes
 * `window.__emit(event, payload)` to play shell events. `dynamicSource` is JS source of an object of
 * functions `cmd -> (args) => result` for answers too large to inline (e.g. 100,000 history rows).
 */
export async function mockScript(responses, dynamicSource = "{}") {
  const conf = JSON.parse(readFileSync(join(repo, "tauri.conf.json"), "utf8"));
  // As Tauri does with \`freezePrototype\`: a library that assigns over an Object.prototype
  // property (the "override mistake") fails here as it would in the window.
  const freeze = conf.app.security.freezePrototype ? "Object.freeze(Object.prototype);" : "";
  const source = `
    import { mockIPC } from "@tauri-apps/api/mocks";
    import { emit } from "@tauri-apps/api/event";
    const responses = ${JSON.stringify(responses)};
    const dynamic = ${dynamicSource};
    window.__ipcCalls = [];
    window.__ipcArgs = [];
    window.__emit = (event, payload) => emit(event, payload);
    mockIPC((cmd, args) => {
      window.__ipcCalls.push(cmd);
      window.__ipcArgs.push({ cmd, args });
      if (dynamic[cmd]) return dynamic[cmd](args);
      const r = responses[cmd];
      if (!r) throw { code: "ipc", stage: null, message: "unexpected command " + cmd };
      if ("reject" in r) throw r.reject;
      return r.resolve;
    }, { shouldMockEvents: true });`;
  const out = await build({ stdin: { contents: source, resolveDir: repo, loader: "js" }, bundle: true, format: "iife", write: false });
  return out.outputFiles[0].text + freeze;
}

/** A page of the built UI with the given IPC responses; collects console errors and page errors. */
export async function openPage(browser, base, responses, viewport = { width: 1180, height: 780 }, colorScheme = "light", dynamicSource = "{}") {
  const page = await browser.newPage({ viewport, colorScheme });
  const problems = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  await page.addInitScript({ content: await mockScript(responses, dynamicSource) });
  await page.goto(base);
  return { page, problems };
}
