// End-to-end flows of an agent run in the REAL window (the app scripts/test-e2e.sh built, under
// Xvfb through tauri-driver + WebKitWebDriver) against the protocol-checking fake provider
// (`fake-provider`, crates/provider/src/bin): the app is started with ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY pointing at it and a user settings file naming the `anthropic` entry, and is
// otherwise unchanged.
//
// One scripted run on a temp copy of examples/sample-project:
//   prompt -> execute (approved in the dialog, output live in the card's terminal)
//          -> write_file over notes/todo.md (rejected in the dialog; the file is byte-identical)
//          -> ask_user_question (answered in the question dialog)
//          -> read_file of a PNG (the card shows the image from the store, and the person's
//             pre_tool_call hook's line with its reason)
//          -> execute of a long command, stopped mid-command (its process is gone)
//   -> the History tab finds the first execute THROUGH its filters (tool, status, full text) and
//      shows its detail -> the raw output read back from the store by the CLI
//      (`aibuddy show ID --raw`, the SQLite file the window wrote) is byte-exact.
// At the end the fake provider must have answered every step and seen no protocol violation.
//
// Inputs (environment): AIBUDDY_DESKTOP_BIN, AIBUDDY_CLI_BIN, TAURI_DRIVER, FAKE_PROVIDER_BIN;
// optional E2E_ARTIFACTS (default target/e2e), E2E_KEEP_WORK=1 (keep the temp project and data dir).
import { execFileSync, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { need, openTab, repo, saveScreenshot, startApp } from "./app-session.mjs";
import { sleep } from "./webdriver.mjs";

const desktopBin = need("AIBUDDY_DESKTOP_BIN");
const cliBin = need("AIBUDDY_CLI_BIN");
const fakeProviderBin = need("FAKE_PROVIDER_BIN");
need("TAURI_DRIVER");
const artifacts = process.env.E2E_ARTIFACTS || join(repo, "target/e2e");

const KEY = "sk-ant-fake-e2e-0123456789abcdef";
/** Seconds of the long command: unique to this test process, so `ps` finds only ours. */
const LONG_SLEEP = `3141.${process.pid}`;
/** The first command: a few lines, slowly enough to be watched live; its bytes are checked. */
const SLOW_LINES = "for i in 1 2 3 4 5 6; do printf 'line %s \\342\\234\\223\\tdone\\n' \"$i\"; sleep 1; done; printf 'end\\n'";
const SLOW_LINES_BYTES = Buffer.concat([
  ...[1, 2, 3, 4, 5, 6].map((i) => Buffer.from(`line ${i} \u2713\tdone\n`, "utf8")),
  Buffer.from("end\n"),
]);
const NEW_TODO = "# TODO\n\n- everything is done (the agent says)\n";
const IDS = {
  exec: "toolu_e2e_exec_1",
  write: "toolu_e2e_write",
  ask: "toolu_e2e_ask",
  image: "toolu_e2e_image",
  long: "toolu_e2e_exec_2",
};
/** A 1x1 PNG the model reads with read_file: its card shows it, from the store. */
const PNG_1X1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
/** The person's hook on read_file: it allows, with a reason the card shows. */
const HOOK_REASON = "e2e guard looked";

/** The scripted conversation the fake provider serves, one step per model request. */
function scenario() {
  return {
    kind: "anthropic",
    key: KEY,
    steps: [
      {
        text: "I'll print a few lines first.",
        calls: [{ id: IDS.exec, name: "execute", input: { command: SLOW_LINES, description: "print six lines slowly" } }],
      },
      {
        text: "Now I'll rewrite the todo list.",
        calls: [{ id: IDS.write, name: "write_file", input: { path: "notes/todo.md", content: NEW_TODO } }],
      },
      {
        text: "One question before I go on.",
        calls: [
          {
            id: IDS.ask,
            name: "ask_user_question",
            input: { question: "Which file should I look at next?", options: ["src/wordcount.py", "README.md"], allow_other: true },
          },
        ],
      },
      {
        text: "Let me look at the logo.",
        calls: [{ id: IDS.image, name: "read_file", input: { path: "logo.png" } }],
      },
      {
        text: "Running the long check now.",
        calls: [{ id: IDS.long, name: "execute", input: { command: `echo started; sleep ${LONG_SLEEP}; echo never` } }],
      },
    ],
  };
}

/** Starts the fake provider on `file`; resolves with `{ baseUrl, finish }` once it listens. */
async function startFakeProvider(file, report) {
  const child = spawn(fakeProviderBin, [file, "--report", report], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (b) => (stderr += b));
  const exited = new Promise((res) => child.on("exit", (code) => res(code)));
  const lines = createInterface({ input: child.stdout });
  const baseUrl = await Promise.race([
    new Promise((res) => lines.once("line", res)),
    exited.then((code) => {
      throw new Error(`fake-provider exited (${code}) before listening: ${stderr}`);
    }),
  ]);
  /** Ends the server (closes its stdin); resolves with its exit code, summary and report. */
  const finish = async () => {
    child.stdin.end();
    const code = await exited;
    let parsed = null;
    try {
      parsed = JSON.parse(readFileSync(report, "utf8"));
    } catch {
      // no report: the exit code and stderr say why
    }
    return { code, stderr, report: parsed };
  };
  return { baseUrl, finish, kill: () => child.exitCode === null && child.kill("SIGKILL") };
}

/** Processes whose command line contains `needle` (ours: the long sleep). */
function processesWith(needle) {
  const out = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return out
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.includes(needle) && !l.includes("ps -eo"));
}

/** Ends a flow: the app, the fake provider, any leftover `sleep` of its commands (by its
 * distinctive command line), and its work folder (E2E_KEEP_WORK=1 keeps the project, data dir and
 * scenario for a look after a failure). */
async function teardown(app, fake, leftover, work) {
  await app?.stop();
  fake?.kill();
  for (const line of processesWith(leftover)) {
    try {
      process.kill(Number.parseInt(line, 10), "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  if (work && !process.env.E2E_KEEP_WORK) rmSync(work, { recursive: true, force: true });
  else if (work) console.error(`flows: kept ${work}`);
}

describe("agent run flows in the real window against the fake provider", () => {
  let work;
  let project;
  let dataDir;
  let fake;
  let app;
  let driver;
  let todoBefore;
  const cardIds = {};

  before(async () => {
    assert.ok(process.env.DISPLAY, "no DISPLAY: run under xvfb-run");
    mkdirSync(artifacts, { recursive: true });
    work = mkdtempSync(join(tmpdir(), "aibuddy-e2e-flows-"));
    project = join(work, "sample-project");
    cpSync(join(repo, "examples/sample-project"), project, { recursive: true });
    project = realpathSync(project);
    // The sample's own tool list narrows the user level (an untrusted project can only narrow);
    // the flows need ask_user_question in it.
    const settings = JSON.parse(readFileSync(join(project, ".aibuddy/settings.json"), "utf8"));
    assert.ok(settings.tools.enabled.includes("ask_user_question"), "the sample project enables ask_user_question");
    todoBefore = readFileSync(join(project, "notes/todo.md"));
    writeFileSync(join(project, "logo.png"), PNG_1X1);

    dataDir = join(work, "data");
    mkdirSync(dataDir);
    writeFileSync(
      join(dataDir, "settings.json"),
      JSON.stringify({
        providers: { default: "anthropic", anthropic: { model: "claude-sonnet-4-6" } },
        hooks: {
          pre_tool_call: [
            { match: "read_file", command: `echo '{"decision": "allow", "reason": "${HOOK_REASON}"}'` },
          ],
        },
      }),
    );
    const scenarioFile = join(work, "scenario.json");
    writeFileSync(scenarioFile, JSON.stringify(scenario(), null, 2));
    fake = await startFakeProvider(scenarioFile, join(work, "fake-report.json"));

    app = await startApp({
      application: desktopBin,
      args: [project, "--data-dir", dataDir],
      env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: KEY },
      logFile: join(artifacts, "tauri-driver-flows.log"),
    });
    driver = app.driver;
  });

  after(() => teardown(app, fake, `sleep ${LONG_SLEEP}`, work));

  /** The card of scripted call `id` (stored ids are `<run id>:<provider id>`). */
  async function card(id) {
    const [found] = await driver.execute(
      `const el = [...document.querySelectorAll('[data-testid="tool-card"]')].find((c) => c.getAttribute("data-id").endsWith(":" + arguments[0]) || c.getAttribute("data-id") === arguments[0]);
       if (!el) return [null];
       // xterm pauses rendering while the terminal is out of view: look at the card as a person would.
       el.scrollIntoView({ block: "nearest" });
       const term = el.querySelector('[data-testid="terminal"]');
       return [{ id: el.getAttribute("data-id"), status: el.getAttribute("data-status"),
                 written: term ? Number(term.getAttribute("data-written")) : 0,
                 screen: term ? (term.querySelector(".xterm-rows")?.textContent ?? "") : "" }];`,
      [id],
    );
    return found;
  }

  /**
   * Whether a card is still open: waiting for its approval, or running (an approved card shows
   * "running" at once, ui/src/run/state.ts `answeredConfirm`).
   */
  const open = (c) => c.status === "running" || c.status === "waiting_approval";

  /** Polls the card of `id` until `pred(card)`; a timeout names the card as last seen. */
  async function pollCard(what, id, pred, timeoutMs = 60_000) {
    let last = null;
    try {
      return await driver.poll(what, async () => {
        last = await card(id);
        return last && pred(last) ? last : null;
      }, timeoutMs);
    } catch (error) {
      throw new Error(`${error.message}; the card as last seen: ${JSON.stringify(last)}`);
    }
  }

  /**
   * The open approval dialog once it can be answered (its shortcuts and Approve button arm a
   * moment after it is shown): its call id, target, consequence and diff text.
   */
  async function approvalDialog() {
    const [found] = await driver.execute(
      `const d = document.querySelector('[data-testid="approval-dialog"][data-armed="true"]');
       return [d && { call: d.getAttribute("data-call"),
                      target: d.querySelector('[data-testid="approval-target"]')?.textContent ?? "",
                      consequence: d.querySelector('[data-testid="approval-consequence"]')?.textContent ?? "",
                      diff: d.querySelector('[data-testid="diff"]')?.textContent ?? null }];`,
    );
    return found;
  }

  async function clickTestId(testid) {
    const [el] = await driver.findAll(`[data-testid="${testid}"]`);
    assert.ok(el, `no ${testid}`);
    await driver.click(el);
  }

  it("sends a prompt; execute waits for approval, is approved, and shows its output live", async () => {
    await driver.poll("the prompt box", async () => (await driver.findAll('[data-testid="prompt"]'))[0] ?? null);
    await driver.execute(
      `const box = document.querySelector('[data-testid="prompt"]');
       box.value = arguments[0];
       box.dispatchEvent(new Event("input", { bubbles: true }));`,
      ["Print a few lines, then tidy up notes/todo.md."],
    );
    await clickTestId("prompt-send");

    const dialog = await driver.poll("the approval dialog for execute", async () => {
      const d = await approvalDialog();
      return d && d.call.endsWith(IDS.exec) ? d : null;
    }, 60_000);
    assert.match(dialog.target, /printf 'line %s/);
    await saveScreenshot(driver, "flow-approval-execute.png");
    await clickTestId("approval-approve");

    const live = await pollCard("live output in the execute card while it runs", IDS.exec, (c) => open(c) && c.screen.includes("line 2"));
    cardIds.exec = live.id;
    await saveScreenshot(driver, "flow-run-live-output.png");
    assert.ok(!live.screen.includes("end"), "the command had already finished: the output was not seen live");

    const done = await pollCard("the execute card finished", IDS.exec, (c) => !open(c));
    assert.equal(done.status, "ok");
    const all = await pollCard("the whole output in the terminal", IDS.exec, (c) => c.screen.includes("end"), 15_000);
    assert.match(all.screen, /line 6 ✓\s+done\s*end/);
  });

  it("a write_file shown with its diff is rejected, and the file is unchanged on disk", async () => {
    const dialog = await driver.poll("the approval dialog for write_file", async () => {
      const d = await approvalDialog();
      return d && d.call.endsWith(IDS.write) ? d : null;
    }, 60_000);
    assert.equal(dialog.target, "notes/todo.md");
    assert.match(dialog.consequence, /overwrites notes\/todo\.md/);
    assert.ok(dialog.diff && dialog.diff.includes("everything is done"), `no diff in the dialog: ${dialog.diff}`);
    await saveScreenshot(driver, "flow-approval-diff.png");
    await clickTestId("approval-reject");

    const c = await pollCard("the rejected write_file card", IDS.write, (got) => !open(got));
    assert.equal(c.status, "rejected");
    assert.ok(readFileSync(join(project, "notes/todo.md")).equals(todoBefore), "notes/todo.md changed on disk");
  });

  it("ask_user_question is answered in the question dialog", async () => {
    const text = await driver.poll("the question dialog", async () => {
      const [t] = await driver.texts('[data-testid="question-dialog"] [data-testid="question-text"]');
      return t || null;
    }, 60_000);
    assert.equal(text, "Which file should I look at next?");
    assert.deepEqual(await driver.texts('[data-testid="question-option"]'), ["src/wordcount.py", "README.md"]);
    await driver.execute(`document.querySelectorAll('[data-testid="question-option"] input')[1].click();`);
    await saveScreenshot(driver, "flow-question-dialog.png");
    await clickTestId("question-send");
    const c = await pollCard("the answered question card", IDS.ask, (got) => !open(got));
    assert.equal(c.status, "ok");
  });

  it("a read_file of an image shows the image and the person's hook on its card", async () => {
    const c = await pollCard("the image card", IDS.image, (got) => !open(got));
    assert.equal(c.status, "ok");
    const shown = await driver.poll("the image and the hook line on the card", async () => {
      const [found] = await driver.execute(
        `const el = [...document.querySelectorAll('[data-testid="tool-card"]')].find((c) => c.getAttribute("data-id").endsWith(":" + arguments[0]));
         const img = el?.querySelector('[data-testid="tool-image"]');
         const hook = el?.querySelector('[data-testid="tool-hook"]');
         return [img && hook ? { src: img.getAttribute("src").slice(0, 22), width: img.getAttribute("width"), hook: hook.textContent } : null];`,
        [IDS.image],
      );
      return found;
    }, 30_000);
    assert.equal(shown.src, "data:image/png;base64,");
    assert.equal(shown.width, "1");
    assert.match(shown.hook, /pre_tool_call/);
    assert.ok(shown.hook.includes(HOOK_REASON), shown.hook);
    await saveScreenshot(driver, "flow-image-and-hook.png");
  });

  it("the run is stopped mid-command and no process is left", async () => {
    await driver.poll("the approval dialog for the long command", async () => {
      const d = await approvalDialog();
      return d && d.call.endsWith(IDS.long) ? d : null;
    }, 60_000);
    await clickTestId("approval-approve");
    await pollCard("the long command started", IDS.long, (c) => open(c) && c.screen.includes("started"));
    const before = await driver.poll("the long command's process", async () => {
      const found = processesWith(`sleep ${LONG_SLEEP}`);
      return found.length > 0 ? found : null;
    });
    assert.ok(before.length > 0);

    await clickTestId("run-stop");
    const phase = await driver.poll("the run to end", async () => {
      const [el] = await driver.execute(`return [document.querySelector('[data-testid="run-phase"]')?.getAttribute("data-phase")];`);
      return el && !["starting", "running"].includes(el) ? el : null;
    });
    assert.ok(["cancelled", "interrupted"].includes(phase), `the run ended as ${phase}`);
    const left = await driver.poll("the long command's process to be gone", async () => {
      const found = processesWith(`sleep ${LONG_SLEEP}`);
      return found.length === 0 ? "none" : null;
    }, 20_000).catch(() => processesWith(`sleep ${LONG_SLEEP}`).join("\n"));
    assert.equal(left, "none", `processes left after stop:\n${left}`);
    const c = await card(IDS.long);
    assert.ok(["cancelled", "interrupted"].includes(c.status), `the long call ended as ${c.status}`);
    assert.ok(!c.screen.includes("never"));
    await saveScreenshot(driver, "flow-run-stopped.png");
  });

  /** Sets a filter control as a person would (WebDriver's element APIs are unreliable under Xvfb). */
  async function setFilter(testid, value) {
    const [ok] = await driver.execute(
      `const el = document.querySelector('[data-testid="' + arguments[0] + '"]');
       if (!el) return [false];
       if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === arguments[1])) return [false];
       el.value = arguments[1];
       el.dispatchEvent(new Event(el.tagName === "SELECT" ? "change" : "input", { bubbles: true }));
       return [true];`,
      [testid, value],
    );
    return ok;
  }

  /** The rows the history browser shows: id, tool, status. */
  async function historyRows() {
    const [rows] = await driver.execute(
      `return [[...document.querySelectorAll('[data-testid="hb-row"]')].map((r) => ({ id: r.getAttribute("data-id"), tool: r.getAttribute("data-tool"), status: r.getAttribute("data-status") }))];`,
    );
    return rows;
  }

  /**
   * Finds call `id` THROUGH the filters: the tool filter (its choices are the project's tools,
   * loaded when the tab opens), the status filter, then a full-text search for a word of its
   * command; the list must narrow to that one call.
   */
  async function findInHistory(id, { tool, status, search }) {
    await driver.poll(`${tool} among the tool filter's choices`, () => setFilter("hb-tool", tool));
    await driver.poll(`the list narrowed to ${tool}`, async () => {
      const rows = await historyRows();
      return rows.length > 0 && rows.every((r) => r.tool === tool) ? rows : null;
    });
    assert.ok(await setFilter("hb-status", status), `no status choice ${status}`);
    assert.ok(await setFilter("hb-search", search));
    await clickTestId("hb-apply");
    return driver.poll(`call ${id} found through the filters`, async () => {
      const rows = await historyRows();
      return rows.length === 1 && rows[0].id === id ? rows[0] : null;
    });
  }

  it("history finds the call through its filters, and the raw output read back from the store is byte-exact", async () => {
    assert.ok(cardIds.exec, "the execute call's id is unknown (an earlier step failed)");
    await openTab(driver, "history");
    // Before filtering, the run's calls are all listed (the stopped one too).
    await driver.poll("the run's calls in the history", async () => {
      const ids = (await historyRows()).map((r) => r.id);
      return [IDS.exec, IDS.write, IDS.ask, IDS.long].every((s) => ids.some((i) => i.endsWith(":" + s))) ? ids : null;
    });
    const row = await findInHistory(cardIds.exec, { tool: "execute", status: "ok", search: "printf" });
    assert.deepEqual(row, { id: cardIds.exec, tool: "execute", status: "ok" });
    const [el] = await driver.findAll(`[data-testid="hb-row"][data-id="${cardIds.exec}"]`);
    await driver.click(el);
    const shown = await driver.poll("the call's raw output in the detail pane", async () => {
      const [text] = await driver.texts(`[data-testid="hb-detail"][data-id="${cardIds.exec}"] [data-testid="raw-text"]`);
      return text;
    });
    assert.match(shown, /line 1 ✓\s+done/);
    await saveScreenshot(driver, "flow-history-filters.png");

    // The bytes the store kept for that call, read by the CLI from the same SQLite file.
    const raw = execFileSync(cliBin, ["--project", project, "--data-dir", dataDir, "show", cardIds.exec, "--raw"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    assert.ok(raw.equals(SLOW_LINES_BYTES), `stored raw output differs:\n${JSON.stringify(raw.toString("utf8"))}`);
  });

  it("the fake provider answered every step and saw no protocol violation", async () => {
    await app.stop();
    app = null;
    await sleep(200);
    const { code, stderr, report } = await fake.finish();
    assert.equal(code, 0, `fake-provider: ${stderr}`);
    assert.deepEqual(report && { unanswered: report.unanswered, violations: report.violations }, { unanswered: 0, violations: [] });
  });
});

// Subagents in the real window (issue 25), a second app session on its own project copy (whose
// tool list adds `agent`) and its own fake provider serving the parent and its child runs as
// separate conversations (`conversations_by_first_user_text`):
//   prompt -> parent calls `agent` -> the child runs `execute` (approved in the dialog: the child's
//   question reaches the window's dialogs) and answers -> the parent answers with the child's
//   words. The `agent` card shows the child's call and text live, then the final answer; "Open
//   run" opens the child run, which the run list marks; the parent opened again from the store
//   shows the child's steps under its card.
//   New run -> the parent delegates a long command -> Stop of the parent mid-command: the parent
//   and the child end `cancelled` (read back by the CLI from the store) and no process is left.
const SUB = {
  agent: "toolu_e2e_sub_agent",
  exec: "toolu_e2e_sub_exec",
  agentLong: "toolu_e2e_sub_agent_long",
  long: "toolu_e2e_sub_long",
};
/** The child's words, which the parent's answer quotes. */
const CHILD_ANSWER = "The project has README.md, notes/ and src/ (checked by the subagent).";
const PARENT_ANSWER = `The subagent reports: ${CHILD_ANSWER}`;
/** Seconds of the child's long command: unique to this test process. */
const SUB_SLEEP = `2718.${process.pid}`;

function subagentScenario() {
  return {
    kind: "anthropic",
    key: KEY,
    conversations_by_first_user_text: true,
    steps: [
      // parent, first run
      {
        text: "I'll hand the survey to a subagent.",
        calls: [{ id: SUB.agent, name: "agent", input: { description: "Survey the project", prompt: "List the project's top level and report what is there." } }],
      },
      // child
      {
        text: "Listing the top level first.",
        calls: [{ id: SUB.exec, name: "execute", input: { command: "ls -1; sleep 2", description: "list the top level" } }],
      },
      { text: CHILD_ANSWER },
      // parent
      { text: PARENT_ANSWER },
      // parent, second run
      {
        text: "A subagent will run the long check.",
        calls: [{ id: SUB.agentLong, name: "agent", input: { description: "Long check", prompt: "Run the long check and report." } }],
      },
      // its child
      {
        text: "Starting the long check.",
        calls: [{ id: SUB.long, name: "execute", input: { command: `echo started; sleep ${SUB_SLEEP}; echo never` } }],
      },
    ],
  };
}

describe("a subagent in the real window against the fake provider", () => {
  let work;
  let project;
  let dataDir;
  let fake;
  let app;
  let driver;
  let parentRun;
  let childRun;

  before(async () => {
    assert.ok(process.env.DISPLAY, "no DISPLAY: run under xvfb-run");
    mkdirSync(artifacts, { recursive: true });
    work = mkdtempSync(join(tmpdir(), "aibuddy-e2e-subagent-"));
    project = join(work, "sample-project");
    cpSync(join(repo, "examples/sample-project"), project, { recursive: true });
    project = realpathSync(project);
    const settingsFile = join(project, ".aibuddy/settings.json");
    const settings = JSON.parse(readFileSync(settingsFile, "utf8"));
    settings.tools.enabled.push("agent");
    writeFileSync(settingsFile, JSON.stringify(settings, null, 2));

    dataDir = join(work, "data");
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, "settings.json"), JSON.stringify({ providers: { default: "anthropic", anthropic: { model: "claude-sonnet-4-6" } } }));
    const scenarioFile = join(work, "scenario.json");
    writeFileSync(scenarioFile, JSON.stringify(subagentScenario(), null, 2));
    fake = await startFakeProvider(scenarioFile, join(work, "fake-report.json"));
    app = await startApp({
      application: desktopBin,
      args: [project, "--data-dir", dataDir],
      env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: KEY },
      logFile: join(artifacts, "tauri-driver-subagent.log"),
    });
    driver = app.driver;
  });

  after(() => teardown(app, fake, `sleep ${SUB_SLEEP}`, work));

  /** The `agent` card of scripted call `id`: its status, the nested child steps, texts and link. */
  async function agentCard(id) {
    const [found] = await driver.execute(
      `const el = [...document.querySelectorAll('[data-testid="tool-card"]')].find((c) => c.getAttribute("data-id").endsWith(":" + arguments[0]));
       if (!el) return [null];
       el.scrollIntoView({ block: "nearest" });
       const sub = el.querySelector('[data-testid="subagent"]');
       const open = sub?.querySelector('[data-testid="subagent-open"]');
       return [{ id: el.getAttribute("data-id"), status: el.getAttribute("data-status"),
                 steps: sub ? [...sub.querySelectorAll('[data-testid="subagent-step"]')].map((s) => ({ tool: s.getAttribute("data-tool"), status: s.getAttribute("data-status"), text: s.textContent })) : [],
                 texts: sub ? [...sub.querySelectorAll('[data-testid="subagent-text"]')].map((t) => t.textContent) : [],
                 summary: sub?.querySelector('[data-testid="subagent-summary"]')?.textContent ?? null,
                 open: open ? { text: open.textContent, disabled: open.disabled } : null }];`,
      [id],
    );
    return found;
  }

  async function pollAgentCard(what, id, pred, timeoutMs = 60_000) {
    let last = null;
    try {
      return await driver.poll(what, async () => {
        last = await agentCard(id);
        return last && pred(last) ? last : null;
      }, timeoutMs);
    } catch (error) {
      throw new Error(`${error.message}; the agent card as last seen: ${JSON.stringify(last)}`);
    }
  }

  async function approvalFor(id) {
    return driver.poll(`the approval dialog for ${id}`, async () => {
      const [d] = await driver.execute(
        `const d = document.querySelector('[data-testid="approval-dialog"][data-armed="true"]');
         return [d && { call: d.getAttribute("data-call"), target: d.querySelector('[data-testid="approval-target"]')?.textContent ?? "" }];`,
      );
      return d && d.call.endsWith(":" + id) ? d : null;
    }, 60_000);
  }

  async function clickTestId(testid) {
    const [el] = await driver.findAll(`[data-testid="${testid}"]`);
    assert.ok(el, `no ${testid}`);
    await driver.click(el);
  }

  async function sendPrompt(text) {
    await driver.poll("the prompt box", async () => (await driver.findAll('[data-testid="prompt"]'))[0] ?? null);
    await driver.execute(
      `const box = document.querySelector('[data-testid="prompt"]');
       box.value = arguments[0];
       box.dispatchEvent(new Event("input", { bubbles: true }));`,
      [text],
    );
    await clickTestId("prompt-send");
  }

  async function phase() {
    const [p] = await driver.execute(`return [document.querySelector('[data-testid="run-phase"]')?.getAttribute("data-phase")];`);
    return p ?? null;
  }

  /** The stored runs, read by the CLI from the SQLite file the window wrote. */
  function storedRuns() {
    const out = execFileSync(cliBin, ["--project", project, "--data-dir", dataDir, "runs", "--json"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return JSON.parse(out);
  }

  it("the parent delegates; the child's call and text nest live under the agent card; its question is answered in the dialog", async () => {
    await sendPrompt("Have a subagent survey the project.");
    const dialog = await approvalFor(SUB.exec);
    assert.match(dialog.target, /ls -1/);
    // While the child waits for the person: its text and its call, under the parent's card.
    const waiting = await pollAgentCard("the child's call waiting under the agent card", SUB.agent, (c) =>
      c.status === "running" && c.steps.some((s) => s.tool === "execute" && s.status === "waiting_approval") && c.texts.some((t) => t.includes("Listing the top level")),
    );
    assert.equal(waiting.steps.length, 1);
    await saveScreenshot(driver, "flow-subagent-waiting-approval.png");
    await clickTestId("approval-approve");
    const running = await pollAgentCard("the child's approved call running under the agent card", SUB.agent, (c) =>
      c.steps.some((s) => s.tool === "execute" && s.status === "running"),
    );
    assert.equal(running.status, "running");
    await saveScreenshot(driver, "flow-subagent-child-running.png");
  });

  it("the child's answer is the parent's result and the parent answers with it", async () => {
    const done = await pollAgentCard("the agent card finished with the child's answer", SUB.agent, (c) =>
      c.status === "ok" && c.texts.some((t) => t.includes(CHILD_ANSWER)),
    );
    assert.deepEqual(done.steps.map((s) => [s.tool, s.status]), [["execute", "ok"]]);
    assert.match(done.summary, /1 tool call · completed/);
    const ended = await driver.poll("the parent run to end", async () => {
      const p = await phase();
      return p && !["starting", "running"].includes(p) ? p : null;
    });
    assert.equal(ended, "completed");
    const text = await driver.poll("the parent's final answer", async () => {
      const [t] = await driver.execute(`return [document.querySelector('[data-testid="run-view"], main')?.textContent ?? document.body.textContent];`);
      return t && t.includes(PARENT_ANSWER) ? t : null;
    });
    assert.ok(text.includes(PARENT_ANSWER));
    const linked = await pollAgentCard("Open run enabled once the parent ended", SUB.agent, (c) => c.open && !c.open.disabled);
    childRun = linked.open.text.replace(/^Open run\s+/, "").trim();
    parentRun = linked.id.slice(0, linked.id.length - SUB.agent.length - 1);
    assert.ok(childRun && childRun !== parentRun, `child ${childRun}, parent ${parentRun}`);
    await saveScreenshot(driver, "flow-subagent-answered.png");
  });

  it("Open run shows the child run, which the run list marks as the parent's subagent", async () => {
    assert.ok(childRun, "the child run is unknown (an earlier step failed)");
    const [button] = await driver.findAll(`[data-testid="subagent-open"]`);
    assert.ok(button, "no Open run");
    await driver.click(button);
    const shown = await driver.poll("the child run opened", async () => {
      const [t] = await driver.execute(`return [document.body.textContent];`);
      return t && t.includes(`A subagent run, started by run ${parentRun}`) ? t : null;
    });
    assert.ok(shown.includes(CHILD_ANSWER), "the child run's answer is not shown");
    const marked = await driver.poll("the child marked in the run list", async () => {
      const [row] = await driver.execute(
        `const el = document.querySelector('[data-testid="run-item"][data-id="' + arguments[0] + '"]');
         return [el && { current: el.getAttribute("aria-current"), mark: el.querySelector('[data-testid="run-child"]')?.textContent ?? null }];`,
        [childRun],
      );
      return row && row.mark ? row : null;
    });
    assert.equal(marked.current, "true");
    assert.match(marked.mark, /subagent/);
    const [parentMark] = await driver.execute(
      `return [document.querySelector('[data-testid="run-item"][data-id="' + arguments[0] + '"] [data-testid="run-child"]') !== null];`,
      [parentRun],
    );
    assert.equal(parentMark, false, "the parent run is marked as a child");
    const rows = storedRuns();
    assert.equal(rows.find((r) => r.run_id === childRun)?.parent_run_id, parentRun);
    await saveScreenshot(driver, "flow-subagent-child-run-open.png");
  });

  it("the stored parent, opened again from the run list, shows the child's steps under its agent card", async () => {
    assert.ok(parentRun, "the parent run is unknown (an earlier step failed)");
    const [item] = await driver.findAll(`[data-testid="run-item"][data-id="${parentRun}"]`);
    assert.ok(item, "the parent run is not listed");
    await driver.click(item);
    const stored = await pollAgentCard("the stored agent card with the child's steps", SUB.agent, (c) =>
      c.steps.length > 0 && c.texts.some((t) => t.includes(CHILD_ANSWER)),
    );
    assert.deepEqual(stored.steps.map((s) => [s.tool, s.status]), [["execute", "ok"]]);
    assert.ok(stored.texts.some((t) => t.includes("Listing the top level")), JSON.stringify(stored.texts));
    assert.equal(stored.open?.text, `Open run ${childRun}`);
    await saveScreenshot(driver, "flow-subagent-stored-parent.png");
  });

  it("Stop of the parent during the child's long command cancels both runs and leaves no process", async () => {
    await clickTestId("run-new");
    await sendPrompt("Have a subagent run the long check.");
    await approvalFor(SUB.long);
    await clickTestId("approval-approve");
    await driver.poll("the child's long command's process", async () => (processesWith(`sleep ${SUB_SLEEP}`).length > 0 ? true : null), 30_000);
    await pollAgentCard("the child's command running under the agent card", SUB.agentLong, (c) => c.steps.some((s) => s.tool === "execute" && s.status === "running"));
    await clickTestId("run-stop");
    const ended = await driver.poll("the parent run to end", async () => {
      const p = await phase();
      return p && !["starting", "running"].includes(p) ? p : null;
    });
    assert.equal(ended, "cancelled");
    const left = await driver.poll("the child's command to be gone", async () => (processesWith(`sleep ${SUB_SLEEP}`).length === 0 ? "none" : null), 20_000)
      .catch(() => processesWith(`sleep ${SUB_SLEEP}`).join("\n"));
    assert.equal(left, "none", `processes left after stop:\n${left}`);
    const c = await pollAgentCard("the agent card cancelled", SUB.agentLong, (got) => got.status === "cancelled" && got.steps.every((s) => s.status !== "running"));
    assert.deepEqual(c.steps.map((s) => [s.tool, s.status]), [["execute", "cancelled"]]);
    const parentId = c.id.slice(0, c.id.length - SUB.agentLong.length - 1);
    const rows = await driver.poll("both runs stored cancelled", async () => {
      const all = storedRuns();
      const parent = all.find((r) => r.run_id === parentId);
      const child = all.find((r) => r.parent_run_id === parentId);
      return parent?.status === "cancelled" && child?.status === "cancelled" ? { parent, child } : null;
    }, 20_000);
    assert.equal(rows.child.parent_call_id, c.id);
    await saveScreenshot(driver, "flow-subagent-stopped.png");
  });

  it("the fake provider answered every step of parent and children and saw no protocol violation", async () => {
    await app.stop();
    app = null;
    await sleep(200);
    const { code, stderr, report } = await fake.finish();
    assert.equal(code, 0, `fake-provider: ${stderr}`);
    assert.deepEqual(report && { unanswered: report.unanswered, violations: report.violations }, { unanswered: 0, violations: [] });
  });
});
