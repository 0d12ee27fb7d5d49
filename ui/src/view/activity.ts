// The right-hand panel: the call console, and (with a later issue) the history of past calls, which
// is labelled as such instead of showing invented calls.
import { h } from "./dom";

export function renderActivity(console: HTMLElement): HTMLElement {
  return h(
    "aside",
    { class: "panel activity", "aria-labelledby": "activity-title", "data-testid": "activity" },
    h("div", { class: "panel-head" }, h("h2", { id: "activity-title" }, "Run a tool")),
    h("div", { class: "activity-body" }, console),
    h(
      "div",
      { class: "history-later", "data-testid": "history-later" },
      h("span", { class: "pill pill-later" }, "coming later"),
      " Call history: past calls with their raw results will be listed here.",
    ),
  );
}
