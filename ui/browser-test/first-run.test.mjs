// The first run and images in the BUILT UI in headless Chromium, IPC and run events mocked, under
// the app's CSP: with no model set up the run view says so, opens the Providers page, and uses a
// local server that answered (written to the person's settings, the project opened again); a card
// whose call sent an image shows it, from `call_images` as a data URL (CSP `img-src data:`).
// Screenshots: target/e2e-screenshots/first-run.png, image-card.png.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { argsOf, browserSuite, openPage, projectInfo, repo, runEmitter, startRun, waitForCall } from "./harness.mjs";

const shots = join(repo, "target/e2e-screenshots");
const PROJECT = projectInfo();
const RUN = "run_01JIMAGES";
const OLLAMA = { id: "ollama", name: "Ollama", base_url: "http://127.0.0.1:11434/v1", models: ["qwen3:8b", "llama3.2"] };
const WRITTEN = { written: { file: "/home/me/.local/share/aibuddy/settings.json", changed: true, trust: { kind: "not_concerned" } }, problems: [] };
// A 2x2 red PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg==";

describe("first run and images in Chromium with mocked IPC", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  it("says no model is set up, opens Providers, and uses a local server that answered", async () => {
    const responses = {
      project_info: { resolve: PROJECT },
      list_providers: { resolve: { providers: [], default: null, chosen: null, chosen_model: null } },
      model_setup: { resolve: { needs_setup: true, local_servers: [OLLAMA] } },
      set_setting: { resolve: WRITTEN },
      open_recent: { resolve: PROJECT },
    };
    const { page, problems } = await openPage(browser, base, responses);
    await page.locator('[data-testid="model-setup"]').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-testid="model-setup-title"]').textContent(), "No model is set up");
    assert.match(await page.locator('[data-testid="local-server"]').textContent(), /Ollama answers at http:\/\/127\.0\.0\.1:11434\/v1/);
    writeFileSync(join(shots, "first-run.png"), await page.screenshot());
    await page.locator('[data-testid="local-server-model"]').selectOption("llama3.2");
    await page.locator('[data-testid="local-server-use"]').click();
    await waitForCall(page, "open_recent");
    assert.deepEqual(await argsOf(page, "set_setting"), [
      { level: "user", path: ["providers", "ollama"], value: { kind: "openai-chat", base_url: "http://127.0.0.1:11434/v1", model: "llama3.2" } },
      { level: "user", path: ["providers", "default"], value: "ollama" },
    ]);
    assert.deepEqual(await argsOf(page, "open_recent"), [{ path: PROJECT.root }]);

    await page.locator('[data-testid="model-setup-providers"]').click();
    await page.locator('[data-testid="page-providers"]').waitFor({ timeout: 10_000 });
    assert.deepEqual(problems, []);
  });

  it("shows the image a call sent, from the store as a data URL, sized", async () => {
    const responses = {
      project_info: { resolve: PROJECT },
      start_run: { resolve: { run_id: RUN } },
      call_images: { resolve: [{ media_type: "image/png", width: 2, height: 2, data_url: `data:image/png;base64,${PNG}` }] },
    };
    const { page, problems } = await openPage(browser, base, responses);
    await startRun(page, RUN, "What is in a.png?");
    const emit = runEmitter(RUN);
    await emit(page, { type: "tool_call", tool_call_id: "call_img", tool: "read_file", input: { path: "a.png" } });
    await emit(page, {
      type: "tool_result",
      tool_call_id: "call_img",
      status: "ok",
      stage: null,
      model: "[a.png: 70 B; sent as an image]\n[image 1: image/png, 2x2]\n",
      duration_ms: 4,
      exit_code: null,
      omitted_bytes: null,
      activated: [],
    });
    const img = page.locator('[data-testid="tool-image"]');
    await img.waitFor({ timeout: 10_000 });
    assert.deepEqual(await argsOf(page, "call_images"), [{ toolCallId: "call_img" }]);
    assert.equal(await img.evaluate((el) => el.naturalWidth), 2, "the data URL loads under the CSP");
    writeFileSync(join(shots, "image-card.png"), await page.screenshot());
    assert.deepEqual(problems, []);
  });
});
