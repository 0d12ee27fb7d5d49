// The INSTALLED desktop app (the .deb unpacked by scripts/test-package.sh) started under Xvfb
// through tauri-driver + WebKitWebDriver: the window comes up on the sample project, and every
// bundled skill is loaded from the package's resource dir (`usr/lib/aibuddy/skills` under the
// install root), not from the source tree: `view_skill` answers for each one with its folder there.
//
// Inputs (environment): INSTALLED_BIN (usr/bin/aibuddy-desktop under the install root),
// INSTALL_ROOT, TAURI_DRIVER; optional E2E_ARTIFACTS (default target/e2e).
import { cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { need, openTab, repo, saveScreenshot, startApp } from "./app-session.mjs";

const installedBin = need("INSTALLED_BIN");
const installRoot = realpathSync(need("INSTALL_ROOT"));
need("TAURI_DRIVER");
const artifacts = process.env.E2E_ARTIFACTS || join(repo, "target/e2e");
const resourceSkills = join(installRoot, "usr/lib/aibuddy/skills");
/** The skills the source tree bundles: each must come from the package. */
const bundled = readdirSync(join(repo, "skills")).filter((name) => statSync(join(repo, "skills", name)).isDirectory());

describe("the installed .deb (real app under Xvfb via tauri-driver)", () => {
  let work;
  let project;
  let app;
  let driver;

  before(async () => {
    assert.ok(process.env.DISPLAY, "no DISPLAY: run under xvfb-run");
    assert.ok(bundled.length > 0, "the source tree bundles no skill");
    mkdirSync(artifacts, { recursive: true });
    work = mkdtempSync(join(tmpdir(), "aibuddy-package-"));
    project = join(work, "sample-project");
    cpSync(join(repo, "examples/sample-project"), project, { recursive: true });
    project = realpathSync(project);
    const dataDir = join(work, "data");
    mkdirSync(dataDir);
    // The person's override would hide where the skills came from.
    const env = { ...process.env };
    delete env.AIBUDDY_SKILLS_DIR;
    app = await startApp({
      application: installedBin,
      args: [project, "--data-dir", dataDir],
      env,
      logFile: join(artifacts, "tauri-driver-package.log"),
    });
    driver = app.driver;
  });

  after(async () => {
    await app?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("opens the window on the project", async () => {
    assert.equal(await driver.title(), "aibuddy");
    const path = await driver.poll("the project path in the header", async () => {
      const [el] = await driver.findAll('[data-testid="project-path"]');
      return el && (await driver.attribute(el, "title"));
    });
    assert.equal(path, project);
  });

  it("loads every bundled skill from the package's resource dir", async () => {
    await openTab(driver, "tools");
    const state = await driver.poll("view_skill in the catalog", async () => {
      const [s] = await driver.execute(
        `return [document.querySelector('[data-testid="tool"][data-tool="view_skill"]')?.getAttribute("data-state") ?? null];`,
      );
      return s;
    });
    assert.notEqual(state, "absent", "view_skill is absent: no skill was loaded");
    await driver.execute(`document.querySelector('[data-testid="tool"][data-tool="view_skill"]').scrollIntoView({ block: "center" });`);
    await saveScreenshot(driver, "package-catalog.png");

    const seen = new Set();
    for (const name of bundled) {
      await driver.execute(
        `document.querySelector('[data-testid="console-tool"]').value = "view_skill";
         document.querySelector('[data-testid="console-args"]').value = arguments[0];`,
        [JSON.stringify({ name })],
      );
      const [run] = await driver.findAll('[data-testid="console-run"]');
      await driver.click(run);
      const result = await driver.poll(`view_skill ${name}`, async () => {
        const [r] = await driver.execute(
          `const el = document.querySelector('[data-testid="call-result"]');
           const id = el?.querySelector(".result-meta")?.textContent.split(" · ").at(-1).trim();
           return [el && { status: el.getAttribute("data-status"), id }];`,
        );
        return r && r.id && !seen.has(r.id) ? r : null;
      });
      seen.add(result.id);
      assert.equal(result.status, "ok", `view_skill ${name}`);

      // The stored raw output names the skill's folder: it must lie in the package.
      await openTab(driver, "history");
      await driver.poll(`call ${result.id} in the history`, async () => {
        const [row] = await driver.findAll(`[data-testid="hb-row"][data-id="${result.id}"]`);
        if (!row) {
          const [refresh] = await driver.findAll('[data-testid="hb-apply"]');
          if (refresh) await driver.click(refresh);
          return null;
        }
        await driver.click(row);
        return row;
      });
      const raw = await driver.poll(`the raw output of ${result.id}`, async () => {
        const [text] = await driver.texts(`[data-testid="hb-detail"][data-id="${result.id}"] [data-testid="raw-text"]`);
        return text;
      });
      const dir = JSON.parse(raw).dir;
      assert.equal(dir, join(resourceSkills, name), `skill ${name} was loaded from ${dir}`);
      if (name === bundled.at(-1)) await saveScreenshot(driver, "package-skill-from-resources.png");
      await openTab(driver, "tools");
    }
  });
});
