// Shared by the browser tests: serve the BUILT ui/dist with the app's CSP (from tauri.conf.json) as
// a header, launch Debian's headless chromium, and build an init script that installs mockIPC
// before the app's own script runs; and the helpers every test page uses (a project's
// `project_info`, playing `run-event`s, the commands called and their arguments, starting a run,
// the console problems that are expected), so no test file keeps its own copy.
import { createServer } from "node:http";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, normalize, resolve } from "node:path";
import assert from "node:assert/strict";
import { after, before } from "node:test";
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

/**
 * Registers a suite's set-up and clean-up: the built UI served with the app's CSP, Chromium
 * launched, `dir` (screenshots) created; `ready` receives `{ browser, base }` once they are up.
 */
export function browserSuite(dir, ready) {
  let server;
  let browser;
  before(async () => {
    server = await serveDist();
    browser = await launchChromium();
    if (dir) mkdirSync(dir, { recursive: true });
    ready({ browser, base: `http://127.0.0.1:${server.address().port}/` });
  });
  after(async () => {
    await browser?.close();
    server?.close();
    // A screenshot of a page that called something nobody answered shows that error, not the
    // state it is named for.
    assert.deepEqual(ipcMisses, [], "commands the mocked shell did not answer");
  });
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
 * JS source of `count` history rows (`HistoryItem`s) newest first, one per second back from
 * 2026-11-30 12:00 UTC: tools, statuses (error at stage Execution, rejected, interrupted), runs of
 * 40 calls, ids `call_<count - i>` zero-padded to 6 digits (the oldest is `call_000001`).
 */
export function historyRowsSource(count) {
  return `Array.from({ length: ${count} }, (_, i) => ({
    tool_call_id: "call_" + String(${count} - i).padStart(6, "0"),
    run_id: "run_" + Math.floor(i / 40),
    tool: ["read_file", "execute", "edit_file", "ls", "grep"][i % 5],
    status: i % 17 === 0 ? "error" : i % 29 === 0 ? "rejected" : i % 31 === 0 ? "interrupted" : "ok",
    stage: i % 17 === 0 ? "Execution" : null,
    error_message: i % 17 === 0 ? "exit status 1" : null,
    started_at: new Date(Date.UTC(2026, 10, 30, 12) - i * 1000).toISOString(),
    duration_ms: (i * 37) % 4000,
    target: ["src/main.rs", "cargo test --all", "README.md", ".", "TODO"][i % 5] + " #" + (${count} - i),
    compaction_state: "none",
  }))`;
}

/**
 * JS source of the shell's history commands over `rowsSource` (JS source of `HistoryItem[]`, newest
 * first; default none), served as the shell serves them (src-tauri/src/history_browser.rs):
 * `history_page {query}` applies tools/statuses/stages/run/time/full-text, pages by an opaque
 * keyset cursor `<started_at ms>.<seq>` with `limit` (default 200, at most 1000) and answers
 * `{rows, next, head}`; `history_head {query, since, watch}` counts the matching rows newer than
 * the cursor `since` (all of them, at most 1000, without one) and answers the `watch`ed rows;
 * `history_facets` lists the rows' tools and runs (newest run first);
 * `call_record` and `raw_output_range` answer for a listed row (its raw output is
 * `raw output of <id>\n`), a typed `project` error for any other id. Every test page gets this
 * unless it answers these commands itself. Not commands: `__add(row)` stores a new newest call and
 * `__update(id, fields)` changes one (a call finishing), as another process writing the store would.
 */
export function historyMock(rowsSource = "[]") {
  return `(() => {
    const rows = ${rowsSource};
    const seq = (i) => rows.length - i;
    const ms = (r) => Date.parse(r.started_at);
    const notFound = (id) => ({ code: "project", stage: null, message: "no stored call has the id \`" + id + "\`" });
    const raw = (id) => new TextEncoder().encode("raw output of " + id + "\\n");
    let cached = { key: null, list: null };
    const matching = (q) => {
      const key = JSON.stringify([q.tools, q.statuses, q.stages, q.run_id, q.since_ms, q.until_ms, q.search]);
      if (cached.key === key) return cached.list;
      const words = (q.search ?? "").toLowerCase().split(/\\s+/).filter(Boolean);
      const list = [];
      rows.forEach((r, i) => {
        if (q.tools?.length && !q.tools.includes(r.tool)) return;
        if (q.statuses?.length && !q.statuses.includes(r.status)) return;
        if (q.stages?.length && !q.stages.includes(r.stage)) return;
        if (q.run_id && r.run_id !== q.run_id) return;
        if (q.since_ms != null && ms(r) < q.since_ms) return;
        if (q.until_ms != null && ms(r) >= q.until_ms) return;
        const text = (r.tool + " " + (r.target ?? "")).toLowerCase();
        if (!words.every((w) => text.includes(w))) return;
        list.push(i);
      });
      cached = { key, list };
      return list;
    };
    const byId = (id) => rows.findIndex((r) => r.tool_call_id === id);
    const cursorOf = (i) => ms(rows[i]) + "." + seq(i);
    const parseCursor = (text) => {
      const [t, s] = String(text).split(".").map(Number);
      if (!Number.isFinite(t) || !Number.isFinite(s)) throw { code: "project", stage: null, message: "not a history cursor: \`" + text + "\`" };
      return [t, s];
    };
    // How many of \`list\` (newest first) are newer than the cursor (t, s) (binary search).
    const newerThan = (list, t, s) => {
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const r = rows[list[mid]];
        const older = ms(r) < t || (ms(r) === t && seq(list[mid]) <= s);
        if (older) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    };
    return {
      __add: (row) => {
        rows.unshift(row);
        cached = { key: null, list: null };
      },
      __update: (id, fields) => {
        const i = byId(id);
        if (i >= 0) rows[i] = { ...rows[i], ...fields };
        cached = { key: null, list: null };
      },
      history_head: ({ query = {}, since = null, watch = [] } = {}) => {
        const list = matching(query ?? {});
        const newer = since == null ? list.length : newerThan(list, ...parseCursor(since));
        const ids = new Set(watch ?? []);
        return { newer: Math.min(newer, 1000), rows: rows.filter((r) => ids.has(r.tool_call_id)) };
      },
      history_page: ({ query = {} } = {}) => {
        const q = query ?? {};
        const limit = Math.min(Math.max(q.limit ?? 200, 1), 1000);
        const list = matching(q);
        let start = 0;
        if (q.cursor != null) {
          const [t, s] = String(q.cursor).split(".").map(Number);
          if (!Number.isFinite(t) || !Number.isFinite(s)) throw { code: "project", stage: null, message: "not a history cursor: \`" + q.cursor + "\`" };
          // Newest first: the first row strictly older than the cursor (binary search).
          let lo = 0;
          let hi = list.length;
          while (lo < hi) {
            const mid = (lo + hi) >> 1;
            const r = rows[list[mid]];
            const older = ms(r) < t || (ms(r) === t && seq(list[mid]) < s);
            if (older) hi = mid;
            else lo = mid + 1;
          }
          start = lo;
        }
        const page = list.slice(start, start + limit);
        const last = page.at(-1);
        const more = start + limit < list.length;
        return {
          rows: page.map((i) => rows[i]),
          next: more && last !== undefined ? cursorOf(last) : null,
          head: page.length > 0 ? cursorOf(page[0]) : null,
        };
      },
      history_facets: () => ({
        tools: [...new Set(rows.map((r) => r.tool))].sort().slice(0, 500),
        runs: [...new Set(rows.map((r) => r.run_id))].slice(0, 500),
        statuses: ["running", "ok", "error", "cancelled", "rejected", "interrupted"],
        stages: ["Discovery", "Parameters", "Authorization", "Execution", "Projection", "Verification"],
      }),
      call_record: ({ toolCallId }) => {
        const i = byId(toolCallId);
        if (i < 0) throw notFound(toolCallId);
        const r = rows[i];
        return {
          item: r, error_code: r.status === "error" ? "exit_status" : null, finished_at: r.started_at,
          input: { target: r.target }, model: "model text of " + r.tool_call_id, client: { status: r.status },
          display_text: r.target, compaction_strategy: null, compaction_error: null, raw_format: "text",
          raw_total_bytes: raw(r.tool_call_id).length, raw_partial: false,
        };
      },
      raw_output_range: ({ toolCallId, offset, length }) => {
        if (byId(toolCallId) < 0) throw notFound(toolCallId);
        return Array.from(raw(toolCallId).slice(offset, offset + length));
      },
    };
  })()`;
}

// ---- Default answers for the reads the views make on their own ----

/**
 * JS source of answers to every command a view calls without the person asking (on opening, on
 * showing a tab), as the shell answers a plain project: nothing to trust (`trust_status`
 * `not_needed`), approval mode `ask` already chosen, one Anthropic provider with a key, no runs,
 * tools, servers, skills, logins, recent projects or offered approval rule, empty settings files. Every test page gets them
 * unless it answers a command itself, so no screenshot shows an error only because a test left a
 * read out. A command that is answered by neither is reported (see `ipcMisses`).
 */
export function viewDefaults(root = "/home/me/work/sample-project") {
  const aibuddy = "/home/me/.local/share/aibuddy";
  const defaults = {
    project_info: projectInfo(root),
    list_tools: [],
    list_runs: [],
    list_recent: [],
    trust_status: {
      ask: false,
      applied: "not_needed",
      status: { project: root, state: "not_needed", digest: "", grants: { servers: [], settings: [], hooks: [] }, problems: [] },
    },
    list_providers: {
      providers: [{ name: "anthropic", kind: "anthropic", model: "claude-sonnet-4-6", host: "api.anthropic.com", has_key: true, problem: null }],
      default: "anthropic",
      chosen: null,
      chosen_model: null,
    },
    approvals_view: {
      mode: "ask",
      next_mode: "ask",
      chosen_for_project: "ask",
      chosen: true,
      project_narrows: null,
      rules: [],
      modes: [
        // As src/approvals/mode.rs says them.
        { mode: "ask", sentence: "ask: every command and every change to a file is shown to you before it runs" },
        {
          mode: "auto",
          sentence:
            "auto: commands confined by the sandbox and file edits inside the project run without asking; writes outside the project, MCP tools that change things and commands on a weaker sandbox are still asked",
        },
        { mode: "read-only", sentence: "read-only: nothing may change the project: file writes are refused and commands see the project read-only, with no network" },
      ],
    },
    // Asked by the approval dialog: the command-prefix rule it may offer (none here).
    confirm_offer: null,
    list_servers: [],
    // The run view's processes panel polls this (no background processes here).
    list_processes: [],
    list_skills: { skills: [], problems: [] },
    mcp_logins: [],
    // The run view's first-run check: a model is set up, nothing probed.
    model_setup: { needs_setup: false, local_servers: [] },
    // A card's images (none unless a test answers them).
    call_images: [],
    settings_pages: {
      files: {
        user_settings: `${aibuddy}/settings.json`,
        project_settings: `${root}/.aibuddy/settings.json`,
        user_mcp: `${aibuddy}/mcp.json`,
        project_mcp: `${root}/.aibuddy/mcp.json`,
      },
      user: null,
      project: null,
      problems: [],
      mcp_servers: [],
      mcp_problems: [],
      provider_keys: [{ name: "anthropic", key: "set" }],
      trust: "not_needed",
    },
  };
  return JSON.stringify(defaults);
}

/**
 * The commands the shell registers, read from the clients generated from its command table
 * (ui/src/bindings/commands.ts): the mocked shell answers nothing else, as the real one refuses an
 * unknown command, and a test cannot answer a command that does not exist.
 */
export const COMMAND_NAMES = (() => {
  const text = readFileSync(join(repo, "ui/src/bindings/commands.ts"), "utf8");
  const list = /export const COMMAND_NAMES = \[([\s\S]*?)\] as const;/.exec(text);
  assert.ok(list, "ui/src/bindings/commands.ts has no COMMAND_NAMES");
  const names = [...list[1].matchAll(/"([a-z_]+)"/g)].map((m) => m[1]);
  assert.ok(names.length > 0);
  return names;
})();

/** Fails when `names` holds a command the shell does not register. */
function assertRegistered(names, where) {
  const unknown = names.filter((n) => !COMMAND_NAMES.includes(n));
  assert.deepEqual(unknown, [], `${where} answers commands the shell does not register`);
}

/**
 * Commands a page called that nothing answered (`{cmd, url}`), across every page opened through
 * `openPage`; `browserSuite` fails the suite when any is left at its end.
 */
export const ipcMisses = [];

/**
 * An init script that installs mockIPC (events mocked too) answering `responses[cmd]` (`{resolve}`
 * or `{reject}`), records every call in `window.__ipcCalls` / `window.__ipcArgs`, and exposes
 * `window.__emit(event, payload)` to play shell events. `dynamicSource` is JS source of an object of
 * functions `cmd -> (args) => result` for answers too large to inline (e.g. `historyMock(...)` over
 * 100,000 rows). The history commands fall back to an empty `historyMock()`, the views' own reads
 * to `viewDefaults()`, a card's `call_changes` to `checkpointsDefault()`; anything else is an "unexpected command", logged as a console error.
 */
export async function mockScript(responses, dynamicSource = "{}") {
  assertRegistered(Object.keys(responses), "a test");
  assertRegistered(Object.keys(JSON.parse(viewDefaults())), "viewDefaults()");
  const conf = JSON.parse(readFileSync(join(repo, "tauri.conf.json"), "utf8"));
  // As Tauri does with \`freezePrototype\`: a library that assigns over an Object.prototype
  // property (the "override mistake") fails here as it would in the window.
  const freeze = conf.app.security.freezePrototype ? "Object.freeze(Object.prototype);" : "";
  const source = `
    import { mockIPC } from "@tauri-apps/api/mocks";
    import { emit } from "@tauri-apps/api/event";
    const responses = ${JSON.stringify(responses)};
    const dynamic = ${dynamicSource};
    const history = ${historyMock()};
    const defaults = ${viewDefaults()};
    const checkpoints = ${checkpointsDefault()};
    const registered = new Set(${JSON.stringify(COMMAND_NAMES)});
    window.__ipcCalls = [];
    window.__ipcArgs = [];
    window.__emit = (event, payload) => emit(event, payload);
    mockIPC((cmd, args) => {
      window.__ipcCalls.push(cmd);
      window.__ipcArgs.push({ cmd, args });
      // As the shell: a command it does not register is refused, whatever a test answers.
      if (!cmd.startsWith("plugin:") && !registered.has(cmd)) {
        console.error("unexpected command " + cmd);
        throw "Command " + cmd + " not found";
      }
      if (dynamic[cmd]) return dynamic[cmd](args);
      const r = responses[cmd];
      if (!r && history[cmd]) return history[cmd](args);
      if (!r && cmd in defaults) return structuredClone(defaults[cmd]);
      if (!r && checkpoints[cmd]) return checkpoints[cmd](args);
      if (!r) {
        console.error("unexpected command " + cmd);
        throw { code: "ipc", stage: null, message: "unexpected command " + cmd };
      }
      if ("reject" in r) throw r.reject;
      return r.resolve;
    }, { shouldMockEvents: true });`;
  const out = await build({ stdin: { contents: source, resolveDir: repo, loader: "js" }, bundle: true, format: "iife", write: false });
  return out.outputFiles[0].text + freeze;
}

/** A page of the built UI with the given IPC responses; collects console errors and page errors. */
export async function openPage(browser, base, responses, viewport = { width: 1180, height: 780 }, colorScheme = "light", dynamicSource = "{}", { clock = false } = {}) {
  const page = await browser.newPage({ viewport, colorScheme });
  // `clock`: the page's timers are Playwright's (time still flows on its own), so a test can run
  // the polls of many seconds at once (`page.clock.runFor(ms)`) instead of sleeping through them.
  if (clock) await page.clock.install();
  const problems = [];
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    problems.push(`console: ${msg.text()}`);
    const miss = /^unexpected command (\S+)$/.exec(msg.text());
    if (miss) ipcMisses.push({ cmd: miss[1], url: page.url() });
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  await page.addInitScript({ content: await mockScript(responses, dynamicSource) });
  await page.goto(base);
  return { page, problems };
}

// ---- Helpers of the test pages (every browser test uses these rather than its own copy) ----

/**
 * The shell's `project_info` answer for a project at `root` (no settings file, no problem);
 * `extra` overrides or adds fields.
 */
export function projectInfo(root = "/home/me/work/sample-project", extra = {}) {
  return { root, data_dir: "/home/me/.local/share/aibuddy", settings_files: [], settings_problems: [], ...extra };
}

/** Plays one shell `run-event` of run `runId` in the page (through `window.__emit` of mockScript). */
export function emitRunEvent(page, runId, event) {
  return page.evaluate((payload) => window.__emit("run-event", payload), { run_id: runId, event });
}

/** `(page, event) => ...`: plays `run-event`s of run `runId`. */
export function runEmitter(runId) {
  return (page, event) => emitRunEvent(page, runId, event);
}

/** The arguments of every `cmd` the page called so far, oldest first. */
export function argsOf(page, cmd) {
  return page.evaluate((c) => window.__ipcArgs.filter((a) => a.cmd === c).map((a) => a.args), cmd);
}

/** Every call so far of any of `cmds`, oldest first, as `{cmd, args}`. */
export function callsOf(page, cmds) {
  return page.evaluate((cs) => window.__ipcArgs.filter((a) => cs.includes(a.cmd)), cmds);
}

/** The names of every command the page called so far, oldest first. */
export function callNames(page) {
  return page.evaluate(() => [...window.__ipcCalls]);
}

/** How many times the page called `cmd` so far. */
export function callCount(page, cmd) {
  return page.evaluate((c) => window.__ipcCalls.filter((x) => x === c).length, cmd);
}

/** Waits until the page has called `cmd`. */
export function waitForCall(page, cmd, options = {}) {
  return page.waitForFunction((c) => window.__ipcCalls.includes(c), cmd, options);
}

/**
 * xterm.js writes its renderer CSS into <style> elements; the CSP blocks them (and the browser
 * reports each block) and lib/csp-styles.ts mirrors them into constructed stylesheets. Those reports
 * are expected: `problems` (of openPage) without them; anything else fails a test.
 */
export function unexpected(problems) {
  return problems.filter((p) => !/^console: Applying inline style violates the following Content Security Policy directive 'style-src 'self''/.test(p));
}

/**
 * Starts run `runId` as the person does: the prompt typed in the conversation (a line break by
 * Shift+Enter), Enter; once the page called `start_run`, the shell's `run_started` is played.
 * `waitForRuns`: the runs sidebar has listed a run first.
 */
export async function startRun(page, runId, prompt, { model = "claude-sonnet-4-6", waitForRuns = false } = {}) {
  await page.locator('[data-testid="run-view"]').waitFor({ timeout: 10_000 });
  if (waitForRuns) await page.locator('[data-testid="run-item"]').first().waitFor({ timeout: 10_000 });
  const box = page.locator('[data-testid="prompt"]');
  await box.click();
  const [first, ...rest] = prompt.split("\n");
  await box.type(first);
  if (rest.length > 0) {
    await page.keyboard.press("Shift+Enter");
    await box.type(rest.join("\n"));
  }
  await page.keyboard.press("Enter");
  await waitForCall(page, "start_run");
  await emitRunEvent(page, runId, { type: "run_started", run_id: runId, provider: "anthropic", model, presentation: "native" });
}

/** ASCII text as the core's `term::reveal` segments it (line breaks apart). */
function asciiSegments(s) {
  return s.split("\n").flatMap((line, i) => [...(i > 0 ? [{ kind: "line_break" }] : []), ...(line === "" ? [] : [{ kind: "text", text: line }])]);
}

/** A confirm request as the core sends it, for fixtures of ASCII text (`display` filled). */
export function confirmRequest(r) {
  const model_says = r.model_says ?? null;
  return {
    ...r,
    model_says,
    display: {
      tool: asciiSegments(r.tool),
      target: asciiSegments(r.target),
      target_non_ascii: [],
      scope: r.scope.map(asciiSegments),
      consequence: asciiSegments(r.consequence),
      model_says: model_says === null ? null : asciiSegments(model_says),
      diff: r.diff == null ? null : (r.diff.endsWith("\n") ? r.diff.slice(0, -1) : r.diff).split("\n").map(asciiSegments),
    },
  };
}

/**
 * Waits until the open approval dialog's shortcuts are armed, and moves the keyboard into it with
 * Tab when the focus was left in the prompt box (the dialog never takes it from a text field).
 */
export async function readyApproval(page) {
  await page.locator('[data-testid="approval-dialog"][data-armed="true"]').waitFor();
  const inside = await page.evaluate(() => document.querySelector('[data-testid="approval-dialog"]')?.contains(document.activeElement) ?? false);
  if (!inside) await page.keyboard.press("Tab");
}

// ---- Checkpoints and rewind (issue 23): the shell's checkpoint commands, kept in their own block ----

/**
 * JS source of the shell's checkpoint commands (src-tauri/src/checkpoints_view.rs) over `changes`
 * (an object `callId -> ChangesView`): `call_changes {callId}` answers the call's view or the
 * core's typed "no checkpoint" error (code `checkpoint`, stage Parameters); `rewind_preview
 * {target, force}` answers `preview(target, force)` with `dry_run: true`; `rewind {target, force}`
 * the same with `dry_run: false` and `rewind_call_id` set (`call_rewind_<n>`). `previewSource` is
 * JS source of that function: `(target, force) => RewindView` without `dry_run` / `rewind_call_id`.
 * The revealed forms the shell adds (`path_shown`, `from_shown`, `diff_shown`, a preview's paths)
 * are filled in as plain text segments where a fixture leaves them out.
 */
export function checkpointsMock(changes, previewSource) {
  return `(() => {
    const changes = ${JSON.stringify(changes)};
    const preview0 = ${previewSource};
    const seg = (t) => (t === "" ? [] : [{ kind: "text", text: t }]);
    const lines = (t) => (t.endsWith("\\n") ? t.slice(0, -1) : t).split("\\n").map(seg);
    const shown = (v) => ({
      ...v,
      files: v.files.map((f) => ({ path_shown: seg(f.path), from_shown: f.from == null ? null : seg(f.from), diff_shown: f.diff == null ? null : lines(f.diff), ...f })),
      skipped: v.skipped.map((s) => ({ path_shown: seg(s.path), ...s })),
    });
    const preview = (target, force) => {
      const p = preview0(target, force);
      return {
        ...p,
        calls: p.calls.map((c) => ({
          ...c,
          actions: c.actions.map((a) => ({ path_shown: seg(a.path), ...a })),
          conflicts: c.conflicts.map((k) => ({ path_shown: seg(k.path), ...k })),
          not_restorable: c.not_restorable.map((x) => (typeof x === "string" ? seg(x) : x)),
          failures: c.failures.map((f) => ({ path_shown: seg(f.path), ...f })),
        })),
      };
    };
    let n = 0;
    return {
      call_changes: ({ callId }) => {
        if (changes[callId]) return shown(changes[callId]);
        throw { code: "checkpoint", stage: "Parameters", message: "call \`" + callId + "\` has no checkpoint (it was read-only, or it ran before checkpoints existed)" };
      },
      rewind_preview: ({ target, force }) => ({ ...preview(target, force), dry_run: true, force, rewind_call_id: null }),
      rewind: ({ target, force }) => ({ ...preview(target, force), dry_run: false, force, rewind_call_id: "call_rewind_" + ++n }),
    };
  })()`;
}

/**
 * JS source of the default answer to `call_changes`, which every card of a finished call that may
 * change files asks on its own: the core's typed "no checkpoint" rejection (code `checkpoint`, stage
 * Parameters), as for a call that changed nothing checkpointed; the card then shows no change list.
 */
export function checkpointsDefault() {
  return `(() => {
    const all = ${checkpointsMock({}, "() => ({ calls: [], unresolved_conflicts: 0, failures: 0, not_covered: '' })")};
    return { call_changes: all.call_changes };
  })()`;
}
