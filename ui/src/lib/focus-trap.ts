// Svelte action for modal dialogs: focus moves into the dialog, Tab cycles inside it, focus that
// leaves it for nothing (a click on the backdrop or on the page behind) comes back, so the dialog's
// keys (Esc = reject or cancel, its shortcuts) keep reaching it and never the view behind (where
// Esc stops the run), and focus returns to where it was when the dialog closes.
//
// With `keepTextFocus` (the approval dialog), a dialog that appears while the person is typing in
// a text field does not take the focus from it (what they type keeps going into the field, never
// into the dialog): the dialog gets the focus when it is clicked or when Tab is pressed.

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

import { isTextEntry } from "./answer-keys";

export function focusTrap(node: HTMLElement, options: { keepTextFocus?: boolean } = {}) {
  const previous = document.activeElement as HTMLElement | null;
  const items = () => [...node.querySelectorAll<HTMLElement>(FOCUSABLE)];
  const initial = node.querySelector<HTMLElement>("[data-autofocus]") ?? items()[0] ?? node;
  const typing = options.keepTextFocus === true && isTextEntry(previous) && !node.contains(previous);
  // Tab from the text field kept focused moves into the dialog (and from then on stays there).
  const onWindowTab = (event: KeyboardEvent) => {
    if (event.key !== "Tab" || node.contains(document.activeElement)) return;
    event.preventDefault();
    initial.focus();
  };
  if (typing) window.addEventListener("keydown", onWindowTab, true);
  else queueMicrotask(() => initial.focus());
  const onKey = (event: KeyboardEvent) => {
    if (event.key !== "Tab") return;
    const list = items();
    if (list.length === 0) {
      event.preventDefault();
      return;
    }
    const first = list[0] as HTMLElement;
    const last = list[list.length - 1] as HTMLElement;
    const active = document.activeElement;
    if (event.shiftKey && (active === first || !node.contains(active))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || !node.contains(active))) {
      event.preventDefault();
      first.focus();
    }
  };
  // Focus leaving for nothing focusable lands on <body>: put it back on the element it left. (A
  // window switch keeps document.activeElement, so that is left alone.)
  const onFocusOut = (event: FocusEvent) => {
    const left = event.target as HTMLElement | null;
    const to = event.relatedTarget as Node | null;
    if (to !== null && node.contains(to)) return;
    queueMicrotask(() => {
      const now = document.activeElement;
      if (!node.isConnected || (now !== null && now !== document.body)) return;
      (left && left.isConnected && node.contains(left) ? left : initial).focus();
    });
  };
  node.addEventListener("keydown", onKey);
  node.addEventListener("focusout", onFocusOut);
  return {
    destroy() {
      node.removeEventListener("keydown", onKey);
      node.removeEventListener("focusout", onFocusOut);
      window.removeEventListener("keydown", onWindowTab, true);
      if (previous && document.contains(previous)) previous.focus();
    },
  };
}
