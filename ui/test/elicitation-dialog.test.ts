import { flushSync, mount, tick, unmount } from "svelte";
import { beforeEach, describe, expect, it } from "vitest";
import type { HumanAnswer } from "../src/bindings/HumanAnswer";
import ElicitationDialog from "../src/components/elicitation/ElicitationDialog.svelte";
import type { ElicitationRequest } from "../src/run/state";

const SCHEMA = {
  type: "object",
  properties: {
    name: { type: "string", title: "<b>Name</b>", description: "Your <i>full</i> name", minLength: 2 },
    age: { type: "integer", title: "Age", minimum: 1, maximum: 130, default: 36 },
    agree: { type: "boolean", title: "Agree" },
    color: { type: "string", title: "Color", enum: ["r", "g"], enumNames: ["Red", "Green"] },
  },
  required: ["name"],
};

const key = (el: Element, k: string) => el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));

let host: HTMLElement;
beforeEach(() => {
  document.body.innerHTML = "<div id=host></div>";
  host = document.getElementById("host") as HTMLElement;
});

function open(schema: unknown = SCHEMA) {
  const answers: Array<[string, HumanAnswer]> = [];
  const request: ElicitationRequest = { elicitation_id: "elicit_01", server: "<script>srv</script>", message: "Who are <u>you</u>?", schema };
  const c = mount(ElicitationDialog, { target: host, props: { request, onanswer: (id: string, a: HumanAnswer) => answers.push([id, a]) } });
  flushSync();
  const dialog = host.querySelector('[data-testid="elicitation-dialog"]') as HTMLElement;
  const input = (name: string) => host.querySelector(`[data-name="${name}"] input, [data-name="${name}"] select`) as HTMLInputElement;
  return { c, answers, dialog, input };
}

function type(el: HTMLInputElement, value: string) {
  el.value = value;
  el.dispatchEvent(new Event("input", { bubbles: true }));
  flushSync();
}

describe("elicitation dialog", () => {
  it("shows the server's words as text, one control per field, labelled", () => {
    const { dialog, input } = open();
    expect(dialog.getAttribute("aria-modal")).toBe("true");
    expect(host.querySelector('[data-testid="elicitation-server"]')?.textContent).toBe("<script>srv</script>");
    expect(host.querySelector('[data-testid="elicitation-message"]')?.textContent).toBe("Who are <u>you</u>?");
    expect(host.querySelector("b, i, u, script")).toBeNull();
    expect(input("name").labels?.[0]?.textContent).toContain("<b>Name</b>");
    expect(input("age").value).toBe("36");
    expect(input("agree").type).toBe("checkbox");
    expect([...(input("color") as unknown as HTMLSelectElement).options].map((o) => o.textContent)).toEqual(["(none)", "Red", "Green"]);
  });

  it("refuses to send an invalid form, says why beside the field, then accepts with the content", async () => {
    const { dialog, input, answers } = open();
    (host.querySelector('[data-testid="elicitation-send"]') as HTMLButtonElement).click();
    await tick();
    flushSync();
    expect(answers).toEqual([]);
    expect(input("name").getAttribute("aria-invalid")).toBe("true");
    const errorId = input("name").getAttribute("aria-describedby")?.split(" ").at(-1) ?? "";
    expect(document.getElementById(errorId)?.textContent).toBe("Required.");
    type(input("name"), "Ada");
    type(input("age"), "200");
    expect(host.querySelector('[data-name="age"] [data-testid="elicitation-error"]')?.textContent).toBe("At most 130.");
    type(input("age"), "37");
    // (choosing in a <select> is covered in Chromium: happy-dom's :checked options are not faithful)
    // Enter in a field sends.
    key(input("age"), "Enter");
    await tick();
    expect(answers).toEqual([["elicit_01", { kind: "form", content: { name: "Ada", age: 37, agree: false } }]]);
    key(dialog, "Escape");
    expect(answers).toHaveLength(1);
  });

  it("Esc cancels, Decline declines, each once", () => {
    const a = open();
    key(a.dialog, "Escape");
    key(a.dialog, "Escape");
    expect(a.answers).toEqual([["elicit_01", { kind: "cancelled" }]]);
    unmount(a.c);
    const b = open();
    (host.querySelector('[data-testid="elicitation-decline"]') as HTMLButtonElement).click();
    expect(b.answers).toEqual([["elicit_01", { kind: "declined" }]]);
  });

  it("an unsupported schema shows nothing editable, says why, and offers only decline and cancel", () => {
    const { answers } = open({ type: "object", properties: { address: { type: "object", properties: {} } } });
    expect(host.querySelector("input, select, textarea")).toBeNull();
    expect(host.querySelector('[data-testid="elicitation-send"]')).toBeNull();
    expect(host.querySelector('[data-testid="elicitation-unsupported"]')?.textContent).toMatch(/"address" is a nested object/);
    (host.querySelector('[data-testid="elicitation-decline"]') as HTMLButtonElement).click();
    expect(answers).toEqual([["elicit_01", { kind: "declined" }]]);
  });
});
