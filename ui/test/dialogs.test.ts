import { flushSync, mount, unmount } from "svelte";
import { beforeEach, describe, expect, it } from "vitest";
import type { ConfirmRequest } from "../src/bindings/ConfirmRequest";
import ApprovalDialog from "../src/components/run/ApprovalDialog.svelte";
import QuestionDialog from "../src/components/run/QuestionDialog.svelte";
import type { AskUserAnswer } from "../src/provisional/run-types";

const REQUEST: ConfirmRequest = {
  call_id: "call_7",
  tool: "write_file",
  risk: "writes",
  digest: "d",
  target: "<b>notes.md</b>",
  scope: ["project"],
  consequence: "replaces 2 lines",
  diff: "--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-old\n+new\n",
};

const flush = () => new Promise((r) => setTimeout(r, 0));
const key = (el: Element, k: string, extra: KeyboardEventInit = {}) =>
  el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...extra }));

let host: HTMLElement;
beforeEach(() => {
  document.body.innerHTML = "<button id=before>before</button><div id=host></div>";
  host = document.getElementById("host") as HTMLElement;
});

function approval() {
  const decisions: Array<[string, boolean]> = [];
  const c = mount(ApprovalDialog, { target: host, props: { request: REQUEST, ondecide: (id: string, ok: boolean) => decisions.push([id, ok]) } });
  flushSync();
  return { c, decisions, dialog: host.querySelector('[data-testid="approval-dialog"]') as HTMLElement };
}

describe("approval dialog", () => {
  it("shows target (as text), scope, consequence and the diff; A approves this one call once", async () => {
    const { dialog, decisions } = approval();
    expect(dialog.getAttribute("aria-modal")).toBe("true");
    expect(host.querySelector('[data-testid="approval-target"]')?.textContent).toBe("<b>notes.md</b>");
    expect(host.querySelector("b")).toBeNull();
    expect(host.querySelector('[data-testid="approval-consequence"]')?.textContent).toBe("replaces 2 lines");
    expect([...host.querySelectorAll(".diff-line")].map((l) => l.getAttribute("data-kind"))).toEqual(["file", "hunk", "del", "add"]);
    key(dialog, "a");
    key(dialog, "a");
    flushSync();
    expect(decisions).toEqual([["call_7", true]]);
    expect((host.querySelector('[data-testid="approval-approve"]') as HTMLButtonElement).disabled).toBe(true);
  });

  it("Esc, R and the Reject button reject; modifier shortcuts do nothing", () => {
    for (const press of [(d: HTMLElement) => key(d, "Escape"), (d: HTMLElement) => key(d, "r"), () => (host.querySelector('[data-testid="approval-reject"]') as HTMLButtonElement).click()]) {
      const { c, dialog, decisions } = approval();
      key(dialog, "a", { ctrlKey: true });
      press(dialog);
      expect(decisions).toEqual([["call_7", false]]);
      unmount(c);
    }
  });

  it("moves focus inside, keeps Tab inside, and gives focus back when it closes", async () => {
    const before = document.getElementById("before") as HTMLButtonElement;
    before.focus();
    const { c, dialog } = approval();
    await flush();
    expect(document.activeElement?.getAttribute("data-testid")).toBe("approval-reject");
    const approve = host.querySelector('[data-testid="approval-approve"]') as HTMLButtonElement;
    approve.focus();
    key(approve, "Tab");
    expect(document.activeElement?.getAttribute("data-testid")).toBe("approval-reject");
    key(document.activeElement as HTMLElement, "Tab", { shiftKey: true });
    expect(document.activeElement).toBe(approve);
    expect(dialog.contains(document.activeElement)).toBe(true);
    unmount(c);
    expect(document.activeElement).toBe(before);
  });
});

function question(multi: boolean, free: boolean, options = ["alpha", "beta", "gamma"]) {
  const answers: Array<[string, AskUserAnswer]> = [];
  const c = mount(QuestionDialog, {
    target: host,
    props: {
      question: { tool_call_id: "q1", question: "Pick <i>some</i>", options, multi_select: multi, allow_other: free },
      onanswer: (id: string, a: AskUserAnswer) => answers.push([id, a]),
    },
  });
  flushSync();
  return { c, answers, dialog: host.querySelector('[data-testid="question-dialog"]') as HTMLElement };
}

describe("question dialog", () => {
  it("multi-select with free text sends the chosen options and the text", () => {
    const { answers } = question(true, true);
    expect(host.querySelector('[data-testid="question-text"]')?.textContent).toBe("Pick <i>some</i>");
    expect(host.querySelector("i")).toBeNull();
    const send = host.querySelector('[data-testid="question-send"]') as HTMLButtonElement;
    expect(send.disabled).toBe(true);
    const boxes = [...host.querySelectorAll<HTMLInputElement>('input[type="checkbox"]')];
    boxes[0]?.click();
    boxes[2]?.click();
    const text = host.querySelector('[data-testid="question-text-input"]') as HTMLTextAreaElement;
    text.value = "  also delta ";
    text.dispatchEvent(new Event("input", { bubbles: true }));
    flushSync();
    expect(send.disabled).toBe(false);
    send.click();
    expect(answers).toEqual([["q1", { kind: "answer", selected: ["alpha", "gamma"], text: "also delta" }]]);
  });

  it("single choice sends one option; Enter in the text field sends", () => {
    const { answers } = question(false, true);
    const radios = [...host.querySelectorAll<HTMLInputElement>('input[type="radio"]')];
    radios[0]?.click();
    radios[1]?.click();
    flushSync();
    key(host.querySelector('[data-testid="question-text-input"]') as HTMLElement, "Enter");
    expect(answers).toEqual([["q1", { kind: "answer", selected: ["beta"], text: null }]]);
  });

  it("free text only; Esc declines", () => {
    const { dialog, answers } = question(false, true, []);
    expect(host.querySelectorAll('[data-testid="question-option"]')).toHaveLength(0);
    key(dialog, "Escape");
    key(dialog, "Escape");
    expect(answers).toEqual([["q1", { kind: "declined" }]]);
  });
});
