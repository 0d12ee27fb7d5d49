// Starting and stopping the REAL desktop app through tauri-driver + WebKitWebDriver (shared by the
// window and flow tests), plus the small helpers every real-window test needs.
import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { WebDriver, sleep } from "./webdriver.mjs";

export const repo = resolve(import.meta.dirname, "../..");
/** Screenshots of each main state, for a person to judge the window without running it. */
export const screenshots = join(repo, "target/e2e-screenshots");

export function need(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run scripts/test-e2e.sh)`);
  return value;
}

export function freePort() {
  return new Promise((res, rej) => {
    const server = createServer();
    server.on("error", rej);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => res(port));
    });
  });
}

/**
 * Starts tauri-driver (in its own process group, so WebKitWebDriver and the app go down with it)
 * and opens a session on `application` with `args`. `env` is added to the driver's environment,
 * which the app inherits. Returns `{ driver, stop }`.
 */
export async function startApp({ application, args, env = {}, logFile }) {
  const port = await freePort();
  const nativePort = await freePort();
  const driverProcess = spawn(need("TAURI_DRIVER"), ["--port", String(port), "--native-port", String(nativePort)], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: { ...process.env, ...env },
  });
  if (logFile) {
    const log = createWriteStream(logFile);
    driverProcess.stdout.pipe(log);
    driverProcess.stderr.pipe(log);
  } else {
    driverProcess.stdout.resume();
    driverProcess.stderr.resume();
  }
  const driver = new WebDriver(`http://127.0.0.1:${port}`);
  const stop = async () => {
    try {
      await driver.deleteSession();
    } catch (error) {
      console.error(`closing the session: ${error.message}`);
    }
    if (driverProcess.exitCode === null) {
      try {
        process.kill(-driverProcess.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await sleep(300);
    }
  };
  try {
    await driver.waitReady(15_000);
    await driver.newSession({ "tauri:options": { application, args } });
  } catch (error) {
    await stop();
    throw error;
  }
  return { driver, stop };
}

/** Saves a screenshot as `name` under target/e2e-screenshots (a missing one is reported, not failed). */
export async function saveScreenshot(driver, name) {
  const png = await driver.screenshot();
  if (!png) {
    console.error(`the driver took no screenshot for ${name} in time (not part of the check)`);
    return null;
  }
  mkdirSync(screenshots, { recursive: true });
  const path = join(screenshots, name);
  writeFileSync(path, Buffer.from(png, "base64"));
  return path;
}

/** Clicks the tab `name` and waits until it is selected. */
export async function openTab(driver, name) {
  const [tab] = await driver.findAll(`[data-testid="tab-${name}"]`);
  if (!tab) throw new Error(`no ${name} tab`);
  await driver.click(tab);
  await driver.poll(`the ${name} tab`, async () => {
    const [selected] = await driver.execute(
      `return [document.querySelector('[data-testid="tab-${name}"]')?.getAttribute("aria-selected")];`,
    );
    return selected === "true" ? true : null;
  });
}
