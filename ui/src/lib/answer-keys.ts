// Single-key answers of a dialog that grants authority (the approval dialog), made so that they
// cannot be given by accident (issue 22): a person typing "add a test" into the prompt box when a
// dialog appears must not approve anything with the `a`.
// - A key whose target is a text field (input, textarea, select, contenteditable) never answers.
// - A key held down since before the dialog (`event.repeat`) never answers.
// - The shortcuts arm only `ARM_DELAY_MS` after the dialog is shown (and again after the window
//   comes back to the front); until then a shortcut key is swallowed, never acted on.
// - With Ctrl, Alt or Meta, or while an IME composes, a key is not a shortcut.

/** How long after a dialog is shown its single-key shortcuts start to answer. */
export const ARM_DELAY_MS = 700;

export type KeyAnswer = "approve" | "reject";

/** Whether `el` takes typed text: keys aimed at it are never a dialog's answer. */
export function isTextEntry(el: EventTarget | Element | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  return el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable;
}

/** The answer a key names (`A` approves; `R` and Esc reject), before any arming rule. */
function named(key: string): KeyAnswer | null {
  if (key === "a" || key === "A") return "approve";
  if (key === "r" || key === "R" || key === "Escape") return "reject";
  return null;
}

/**
 * What a keydown on the dialog does: `answer` (act on it), `swallow` (a shortcut key that must
 * not answer now and must not reach the view behind either, where Esc stops the run) or `ignore`.
 */
export function keyAnswer(event: KeyboardEvent, armed: boolean): { action: "answer"; answer: KeyAnswer } | { action: "swallow" | "ignore" } {
  return keyChoice(event, armed, named);
}

/**
 * [`keyAnswer`] with a dialog's own keys: `name` maps a key to its answer (or null). Every rule
 * above applies; `safe` answers (a refusal) still wait for the arming like the others, since a
 * key held or typed before the dialog must not answer it either way.
 */
export function keyChoice<T>(event: KeyboardEvent, armed: boolean, name: (key: string) => T | null): { action: "answer"; answer: T } | { action: "swallow" | "ignore" } {
  if (event.isComposing || event.ctrlKey || event.metaKey || event.altKey) return { action: "ignore" };
  if (isTextEntry(event.target)) return { action: "ignore" };
  const answer = name(event.key);
  if (answer === null) return { action: "ignore" };
  if (event.repeat || !armed) return { action: "swallow" };
  return { action: "answer", answer };
}
