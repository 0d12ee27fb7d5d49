// Svelte action for modal dialogs: focus moves into the dialog, Tab cycles inside it, and focus
// returns to where it was when the dialog closes.

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

export function focusTrap(node: HTMLElement) {
  const previous = document.activeElement as HTMLElement | null;
  const items = () => [...node.querySelectorAll<HTMLElement>(FOCUSABLE)];
  const initial = node.querySelector<HTMLElement>("[data-autofocus]") ?? items()[0] ?? node;
  queueMicrotask(() => initial.focus());
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
  node.addEventListener("keydown", onKey);
  return {
    destroy() {
      node.removeEventListener("keydown", onKey);
      if (previous && document.contains(previous)) previous.focus();
    },
  };
}
