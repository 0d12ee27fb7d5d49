// The MCP elicitation dialog of the BUILT UI in headless Chromium, IPC and `run-event` mocked, under
// the app's CSP: the form server-everything really sends (every primitive, formats, bounds, enums
// with and without titles, multiple choice), driven from the keyboard (focus starts in the first
// field and stays in the dialog, Enter sends, problems shown beside their field), accept with the
// typed content, Esc = cancel, and a schema outside the spec's subset offering only decline and
// cancel. Screenshot: target/ui-screenshots/elicitation.png.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { argsOf, browserSuite, openPage, projectInfo, repo, runEmitter, startRun as startRunAs } from "./harness.mjs";

const shots = join(repo, "target/ui-screenshots");
const RUN = "run_01JELICIT";
const RESPONSES = {
  project_info: { resolve: projectInfo() },
  list_tools: { resolve: [] },
  list_runs: { resolve: [] },
  start_run: { resolve: { run_id: RUN } },
  stop_run: { resolve: null },
  answer_ask_user: { resolve: true },
};

// server-everything's `trigger-elicitation-request` schema, as it sends it.
const EVERYTHING = {
  type: "object",
  properties: {
    name: { title: "String", type: "string", description: "Your full, legal name" },
    check: { title: "Boolean", type: "boolean", description: "Agree to the terms and conditions" },
    firstLine: { title: "String with default", type: "string", description: "Favorite first line of a story", default: "It was a dark and stormy night." },
    email: { title: "String with email format", type: "string", format: "email", description: "Your email address" },
    homepage: { type: "string", format: "uri", title: "String with uri format", description: "Portfolio / personal website" },
    birthdate: { title: "String with date format", type: "string", format: "date", description: "Your date of birth" },
    integer: { title: "Integer", type: "integer", description: "Your favorite integer", minimum: 1, maximum: 100, default: 42 },
    number: { title: "Number in range 1-1000", type: "number", description: "Favorite number", minimum: 0, maximum: 1000, default: 3.14 },
    untitledSingleSelectEnum: { type: "string", title: "Untitled Single Select Enum", enum: ["Monica", "Rachel", "Joey"], default: "Monica" },
    untitledMultipleSelectEnum: { type: "array", title: "Untitled Multiple Select Enum", minItems: 1, maxItems: 3, items: { type: "string", enum: ["Guitar", "Piano", "Violin"] }, default: ["Guitar"] },
    titledSingleSelectEnum: { type: "string", title: "Titled Single Select Enum", oneOf: [{ const: "hero-1", title: "Superman" }, { const: "hero-2", title: "Green Lantern" }], default: "hero-1" },
    legacyTitledEnum: { type: "string", title: "Legacy Titled Single Select Enum", enum: ["pet-1", "pet-2"], enumNames: ["Cats", "Dogs"], default: "pet-1" },
  },
  required: ["name"],
};

describe("MCP elicitation dialog in Chromium with mocked IPC", () => {
  let browser;
  let base;
  browserSuite(shots, (s) => ({ browser, base } = s));

  const emit = runEmitter(RUN);
  /** Where focus is: the field's property name, else the element's test id. */
  const focused = (page) =>
    page.evaluate(() => {
      const el = document.activeElement;
      if (!el || !document.querySelector('[data-testid="elicitation-dialog"]')?.contains(el)) return `outside:${el?.tagName}`;
      return el.closest("[data-name]")?.getAttribute("data-name") ?? el.getAttribute("data-testid") ?? el.tagName;
    });

  const startRun = (page) => startRunAs(page, RUN, "Sign me up");

  it("fills server-everything's form from the keyboard and accepts with the typed content", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1180, height: 900 });
    await startRun(page);
    await emit(page, { type: "elicitation", elicitation_id: "elicit_01a", server: "everything", message: "Please provide inputs for the following fields:", schema: EVERYTHING });
    const dialog = page.locator('[data-testid="elicitation-dialog"]');
    await dialog.waitFor();
    assert.equal(await dialog.getAttribute("aria-modal"), "true");
    assert.equal(await dialog.locator('[data-testid="elicitation-server"]').textContent(), "everything");
    assert.equal(await dialog.locator('[data-testid="elicitation-field"]').count(), 12);

    // Focus starts in the first field; Tab walks the fields in order, then Cancel, Decline, Send,
    // and wraps inside the dialog (both ways).
    await page.waitForFunction(() => document.activeElement?.closest("[data-name]")?.getAttribute("data-name") === "name");
    const stops = [];
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press("Tab");
      const at = await focused(page);
      if (stops.at(-1) !== at) stops.push(at);
      if (at === "name") break;
    }
    assert.deepEqual(stops, [
      "check", "firstLine", "email", "homepage", "birthdate", "integer", "number", "untitledSingleSelectEnum",
      "untitledMultipleSelectEnum", "titledSingleSelectEnum", "legacyTitledEnum",
      "elicitation-cancel", "elicitation-decline", "elicitation-send", "name",
    ]);
    await page.keyboard.press("Shift+Tab");
    assert.equal(await focused(page), "elicitation-send");
    await page.keyboard.press("Tab");
    assert.equal(await focused(page), "name");

    // Enter with the required name empty: nothing is sent, the problem is beside the field.
    await page.keyboard.press("Enter");
    const nameField = dialog.locator('[data-name="name"]');
    await nameField.locator('[data-testid="elicitation-error"]').waitFor();
    assert.equal(await nameField.locator('[data-testid="elicitation-error"]').textContent(), "Required.");
    assert.equal(await nameField.locator("input").getAttribute("aria-invalid"), "true");
    assert.equal(await focused(page), "name");
    assert.deepEqual(await argsOf(page, "answer_ask_user"), []);

    await page.keyboard.type("Ada Lovelace");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Space"); // check
    await page.keyboard.press("Tab"); // firstLine keeps its default
    await page.keyboard.press("Tab");
    await page.keyboard.type("ada@example.org");
    await page.keyboard.press("Tab");
    await page.keyboard.type("https://ada.example/notes");
    await dialog.locator('[data-name="birthdate"] input').fill("1815-12-10");
    const integer = dialog.locator('[data-name="integer"] input');
    await integer.fill("");
    await integer.type("500");
    await page.keyboard.press("Enter");
    await dialog.locator('[data-name="integer"] [data-testid="elicitation-error"]').waitFor();
    assert.equal(await dialog.locator('[data-name="integer"] [data-testid="elicitation-error"]').textContent(), "At most 100.");
    assert.equal(await focused(page), "integer");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await dialog.locator('[data-name="integer"] [data-testid="elicitation-error"]').waitFor({ state: "detached" });
    await dialog.locator('[data-name="titledSingleSelectEnum"] select').selectOption("hero-2");
    await dialog.locator('[data-name="untitledMultipleSelectEnum"] input[value="Violin"]').check();
    await dialog.evaluate((el) => (el.scrollTop = 0));
    writeFileSync(join(shots, "elicitation.png"), await page.screenshot());
    // Enter in a field sends (accept).
    await dialog.locator('[data-name="email"] input').focus();
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_ask_user"), [
      {
        id: "elicit_01a",
        answer: {
          kind: "form",
          content: {
            name: "Ada Lovelace",
            check: true,
            firstLine: "It was a dark and stormy night.",
            email: "ada@example.org",
            homepage: "https://ada.example/notes",
            birthdate: "1815-12-10",
            integer: 5,
            number: 3.14,
            untitledSingleSelectEnum: "Monica",
            untitledMultipleSelectEnum: ["Guitar", "Violin"],
            titledSingleSelectEnum: "hero-2",
            legacyTitledEnum: "pet-1",
          },
        },
      },
    ]);
    await page.locator('[data-testid="notice"]', { hasText: "Sent the form to everything." }).waitFor();
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("Esc cancels without stopping the run; an unsupported form offers only decline and cancel; server text stays text", async () => {
    const { page, problems } = await openPage(browser, base, RESPONSES, { width: 1180, height: 800 }, "dark");
    await startRun(page);
    await emit(page, { type: "elicitation", elicitation_id: "elicit_02", server: "fx", message: "Who are you?", schema: { type: "object", properties: { name: { type: "string" } } } });
    const dialog = page.locator('[data-testid="elicitation-dialog"]');
    await dialog.waitFor();
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual(await argsOf(page, "answer_ask_user"), [{ id: "elicit_02", answer: { kind: "cancelled" } }]);
    assert.deepEqual(await argsOf(page, "stop_run"), []);

    await emit(page, {
      type: "elicitation",
      elicitation_id: "elicit_03",
      server: "<img src=x onerror=alert(1)>",
      message: "Where do you live? <script>alert(2)</script>",
      schema: { type: "object", properties: { address: { type: "object", properties: { city: { type: "string" } } } } },
    });
    await dialog.waitFor();
    assert.equal(await dialog.locator("input, select, textarea").count(), 0);
    assert.equal(await dialog.locator('[data-testid="elicitation-send"]').count(), 0);
    assert.match(await dialog.locator('[data-testid="elicitation-unsupported"]').textContent(), /"address" is a nested object/);
    assert.equal(await dialog.locator('[data-testid="elicitation-server"]').textContent(), "<img src=x onerror=alert(1)>");
    assert.equal(await dialog.locator("img, script").count(), 0);
    // Focus is on Decline; Tab stays between the two buttons.
    await page.waitForFunction(() => document.activeElement?.getAttribute("data-testid") === "elicitation-decline");
    await page.keyboard.press("Tab");
    assert.equal(await focused(page), "elicitation-cancel");
    await page.keyboard.press("Tab");
    assert.equal(await focused(page), "elicitation-decline");
    writeFileSync(join(shots, "elicitation-unsupported-dark.png"), await page.screenshot());
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "detached" });
    assert.deepEqual((await argsOf(page, "answer_ask_user")).at(-1), { id: "elicit_03", answer: { kind: "declined" } });
    assert.deepEqual(problems, []);
    await page.close();
  });
});
