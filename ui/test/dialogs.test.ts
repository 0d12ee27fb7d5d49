import { flushSync, mount, unmount } from "svelte";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ConfirmRequest } from "../src/bindings/ConfirmRequest";
import type { NetworkAnswer } from "../src/bindings/NetworkAnswer";
import type { NetworkAsk } from "../src/bindings/NetworkAsk";
import ApprovalDialog from "../src/components/run/ApprovalDialog.svelte";
import NetworkAskDialog from "../src/components/run/NetworkAskDialog.svelte";
import QuestionDialog from "../src/components/run/QuestionDialog.svelte";
import { ARM_DELAY_MS } from "../src/lib/answer-keys";
import type { AskUserAnswer } from "../src/provisional/run-types";
import { confirmRequest, networkAsk } from "./fixtures";

const REQUEST: ConfirmRequest = confirmRequest({
  call_id: "call_7",
  tool: "write_file",
  risk: "writes",
  digest: "d",
  target: "<b>notes.md</b>",
  scope: ["project"],
  consequence: "replaces 2 lines",
  diff: "--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-old\n+new\n",
});

const key = (el: Element, k: string, extra: KeyboardEventInit = {}) =>
  el.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...extra }));

let host: HTMLElement;
beforeEach(() => {
  document.body.innerHTML = "<button id=before>before</button><div id=host></div>";
  host = document.getElementById("host") as HTMLElement;
});

function approval(request: ConfirmRequest = REQUEST) {
  const decisions: Array<[string, boolean]> = [];
  const c = mount(ApprovalDialog, { target: host, props: { request, ondecide: (id: string, ok: boolean) => decisions.push([id, ok]) } });
  flushSync();
  return { c, decisions, dialog: host.querySelector('[data-testid="approval-dialog"]') as HTMLElement };
}

/** Waits out the arm delay of the approval dialog's shortcuts (fake timers). */
function armed(): void {
  vi.advanceTimersByTime(ARM_DELAY_MS);
  flushSync();
}

describe("approval dialog", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("offers the exact rule the shell computed, approves once with it, and shows nothing without an offer", async () => {
    const withRule: string[] = [];
    const offers = {
      approvalsView: () => Promise.reject(new Error("unused")),
      setApprovalMode: () => Promise.reject(new Error("unused")),
      confirmOffer: async () => ({
        label: "allow commands starting with `cargo test` in this project",
        rule: '{"command":"cargo test *","decision":"allow"}',
      }),
      answerConfirmWithRule: async (id: string) => {
        withRule.push(id);
        return true;
      },
    };
    const decisions: Array<[string, boolean]> = [];
    const first = mount(ApprovalDialog, { target: host, props: { request: REQUEST, offers, ondecide: (id: string, ok: boolean) => decisions.push([id, ok]) } });
    await Promise.resolve();
    await Promise.resolve();
    flushSync();
    expect(host.querySelector('[data-testid="approval-offer-rule"]')?.textContent).toBe('{"command":"cargo test *","decision":"allow"}');
    const button = host.querySelector('[data-testid="approval-allow-rule"]') as HTMLButtonElement;
    expect(button.textContent).toContain("allow commands starting with `cargo test` in this project");
    button.click();
    expect(withRule).toEqual([]);
    armed();
    button.click();
    await Promise.resolve();
    expect(withRule).toEqual([REQUEST.call_id]);
    expect(decisions).toEqual([]);
    unmount(first);
    const plain = approval();
    expect(host.querySelector('[data-testid="approval-offer"]')).toBeNull();
    unmount(plain.c);
  });

  it("shows target (as text), scope, consequence and the diff; A approves this one call once", async () => {
    const { dialog, decisions } = approval();
    armed();
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
      armed();
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
    await Promise.resolve();
    armed();
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

/** Issue 22: the hostile command of the report, as the core reveals it (`term::reveal`). */
const HOSTILE: ConfirmRequest = {
  ...confirmRequest({
    call_id: "call_x",
    tool: "execute",
    risk: "high_impact",
    digest: "d",
    target: "echo cleaning\nrm -rf src\u200B\u{E0041} ＃; touch x",
    scope: ["project root: /p", "sandbox: bubblewrap"],
    consequence: "runs the target command in the project root: its effect is what the command does",
    diff: null,
    model_says: "cleans the build",
  }),
};
HOSTILE.display.target = [
  { kind: "text", text: "echo cleaning" },
  { kind: "line_break" },
  { kind: "text", text: "rm -rf src" },
  { kind: "code", code: "U+200B" },
  { kind: "code", code: "U+E0041" },
  { kind: "text", text: " " },
  { kind: "non_ascii", text: "＃" },
  { kind: "text", text: "; touch x" },
];
HOSTILE.display.target_non_ascii = ["＃ U+FF03"];

describe("approval dialog: no answer by accident (issue 22)", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a bare `a` within the arm delay does nothing; the hints look disabled until armed", () => {
    const { dialog, decisions } = approval();
    const approve = host.querySelector('[data-testid="approval-approve"]') as HTMLButtonElement;
    expect(dialog.getAttribute("data-armed")).toBe("false");
    expect(approve.disabled).toBe(true);
    expect([...host.querySelectorAll("kbd")].every((k) => k.classList.contains("unarmed"))).toBe(true);
    key(dialog, "a");
    approve.click();
    vi.advanceTimersByTime(ARM_DELAY_MS - 1);
    flushSync();
    key(dialog, "a");
    key(dialog, "Escape");
    flushSync();
    expect(decisions).toEqual([]);
    armed();
    expect(dialog.getAttribute("data-armed")).toBe("true");
    expect(approve.disabled).toBe(false);
    expect(host.querySelector("kbd.unarmed")).toBeNull();
    key(dialog, "a");
    expect(decisions).toEqual([["call_7", true]]);
  });

  it("coming back to the window re-arms: a key right after the window switch does not answer", () => {
    const { dialog, decisions } = approval();
    armed();
    window.dispatchEvent(new Event("focus"));
    flushSync();
    expect(dialog.getAttribute("data-armed")).toBe("false");
    key(dialog, "a");
    expect(decisions).toEqual([]);
    armed();
    key(dialog, "a");
    expect(decisions).toEqual([["call_7", true]]);
  });

  it("a key pressed before the dialog, or held since then (repeat), never answers it", () => {
    key(document.body, "a");
    const { dialog, decisions } = approval();
    armed();
    key(dialog, "a", { repeat: true });
    key(dialog, "r", { repeat: true });
    flushSync();
    expect(decisions).toEqual([]);
  });

  it("typing in the prompt box while the dialog is up never answers it, and the dialog leaves the focus there", async () => {
    const prompt = document.createElement("textarea");
    prompt.setAttribute("data-testid", "prompt");
    document.body.prepend(prompt);
    prompt.focus();
    const { dialog, decisions } = approval();
    await Promise.resolve();
    armed();
    expect(document.activeElement).toBe(prompt);
    expect(host.querySelector('[data-testid="approval-typing-note"]')).not.toBeNull();
    for (const k of [..."add a test"]) key(prompt, k);
    // Even a key event that reaches the dialog from a text field does not answer.
    const inside = document.createElement("input");
    dialog.append(inside);
    key(inside, "a");
    inside.remove();
    flushSync();
    expect(decisions).toEqual([]);
    // Tab moves into the dialog; from there A answers.
    key(prompt, "Tab");
    expect(document.activeElement?.getAttribute("data-testid")).toBe("approval-reject");
    flushSync();
    expect(host.querySelector('[data-testid="approval-typing-note"]')).toBeNull();
    key(document.activeElement as HTMLElement, "a");
    expect(decisions).toEqual([["call_7", true]]);
  });

  it("shows the target verbatim: a visible line break, codes for invisible characters, non-ASCII marked", () => {
    approval(HOSTILE);
    const target = host.querySelector('[data-testid="approval-target"]') as HTMLElement;
    expect(target.textContent).toBe("echo cleaning⏎\nrm -rf src<U+200B><U+E0041> ＃; touch x");
    expect(target.classList.contains("reveal")).toBe(true);
    expect(target.querySelector(".reveal-break")?.textContent).toBe("⏎");
    expect([...target.querySelectorAll(".reveal-code")].map((e) => e.textContent)).toEqual(["<U+200B>", "<U+E0041>"]);
    expect(target.querySelector("mark.reveal-non-ascii")?.textContent).toBe("＃");
    expect(host.querySelector('[data-testid="approval-non-ascii"]')?.textContent).toBe("Contains non-ASCII characters: ＃ U+FF03");
    expect(host.textContent).not.toMatch(/[\u200B\u{E0041}]/u);
    expect([...host.querySelectorAll('[data-testid="approval-scope"] li')].map((e) => e.textContent)).toEqual(["project root: /p", "sandbox: bubblewrap"]);
  });

  it("shows a bidi override in a diff's content as a code, as the core revealed it", () => {
    const request = confirmRequest({ ...REQUEST, diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+a\u202Eb\n" });
    request.display.diff = (request.display.diff ?? []).map((line, i) =>
      i === 4 ? [{ kind: "text", text: "+a" }, { kind: "code", code: "U+202E" }, { kind: "text", text: "b" }] : line,
    );
    approval(request);
    expect(host.querySelector('.diff-line[data-kind="add"] .diff-text')?.textContent).toBe("added: a<U+202E>b");
    expect(host.querySelector('.diff-line[data-kind="del"] .diff-text')?.textContent).toBe("removed: old");
    expect(host.textContent).not.toContain("\u202E");
  });

  it("labels the model's description as the model's, apart from the app's consequence", () => {
    approval(HOSTILE);
    expect(host.querySelector('[data-testid="approval-consequence"]')?.textContent).toBe(
      "runs the target command in the project root: its effect is what the command does",
    );
    const says = host.querySelector('[data-testid="approval-model-says"]') as HTMLElement;
    expect(says.previousElementSibling?.textContent).toBe("The model says");
    expect(says.querySelector("q")?.textContent).toBe("cleans the build");
    expect(says.textContent).toContain("not checked");
    expect(host.querySelector('[data-testid="approval-consequence"]')?.textContent).not.toContain("cleans the build");
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

describe("network question dialog (issue 22)", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const ASK: NetworkAsk = networkAsk({ ask_id: "net_3", call_id: "call_7", host: "127.0.0.1", port: 8080, target: "curl http://127.0.0.1:8080/" });

  function network(ask: NetworkAsk = ASK) {
    const answers: Array<[string, NetworkAnswer]> = [];
    const c = mount(NetworkAskDialog, { target: host, props: { ask, onanswer: (id: string, a: NetworkAnswer) => answers.push([id, a]) } });
    flushSync();
    return { c, answers, dialog: host.querySelector('[data-testid="network-dialog"]') as HTMLElement };
  }

  it("names the host, port, call and command; O, P and D answer by the question's id once armed", () => {
    for (const [k, want] of [["o", "once"], ["P", "project"], ["d", "deny"], ["Escape", "deny"]] as const) {
      const { c, answers, dialog } = network();
      expect(host.querySelector('[data-testid="network-host"]')?.textContent).toBe("127.0.0.1");
      expect(host.querySelector('[data-testid="network-port"]')?.textContent).toBe("8080");
      expect(host.querySelector('[data-testid="network-call"]')?.textContent).toBe("call_7");
      expect(host.querySelector('[data-testid="network-command"]')?.textContent).toBe("curl http://127.0.0.1:8080/");
      key(dialog, k);
      flushSync();
      expect(answers).toEqual([]);
      armed();
      key(dialog, k);
      key(dialog, k);
      expect(answers).toEqual([["net_3", want]]);
      unmount(c);
    }
  });

  it("the Allow buttons wait for the arming, Deny does not; a typed or held key never answers", async () => {
    const prompt = document.createElement("textarea");
    document.body.prepend(prompt);
    prompt.focus();
    const { answers, dialog } = network();
    await Promise.resolve();
    const once = host.querySelector('[data-testid="network-once"]') as HTMLButtonElement;
    const project = host.querySelector('[data-testid="network-project"]') as HTMLButtonElement;
    expect(once.disabled && project.disabled).toBe(true);
    once.disabled = false;
    once.click();
    expect(answers).toEqual([]);
    armed();
    expect(document.activeElement).toBe(prompt);
    expect(host.querySelector('[data-testid="network-typing-note"]')).not.toBeNull();
    for (const k of [..."open the project"]) key(prompt, k);
    const inside = document.createElement("input");
    dialog.append(inside);
    key(inside, "p");
    inside.remove();
    key(dialog, "p", { repeat: true });
    window.dispatchEvent(new Event("focus"));
    flushSync();
    key(dialog, "o");
    flushSync();
    expect(answers).toEqual([]);
    (host.querySelector('[data-testid="network-deny"]') as HTMLButtonElement).click();
    expect(answers).toEqual([["net_3", "deny"]]);
  });

  it("shows the core's revealed host: a zero-width character and a look-alike letter are visible", () => {
    const hostile: NetworkAsk = {
      ...ASK,
      host: "regіstry\u200b.example",
      display: {
        ...ASK.display,
        host: [{ kind: "text", text: "reg" }, { kind: "non_ascii", text: "і" }, { kind: "text", text: "stry" }, { kind: "code", code: "U+200B" }, { kind: "text", text: ".example" }],
        host_non_ascii: ["і U+0456"],
      },
    };
    network(hostile);
    const shown = host.querySelector('[data-testid="network-host"]') as HTMLElement;
    expect(shown.textContent).not.toContain("\u200b");
    expect(shown.textContent).toContain("U+200B");
    expect(host.querySelector('[data-testid="network-non-ascii"]')?.textContent).toContain("і U+0456");
  });
});
