// The right-hand panel: the call console, and below it the history of past calls of this project.
import { h } from "./dom";

export function renderActivity(console: HTMLElement, history: HTMLElement): HTMLElement {
  return h(
    "aside",
    { class: "panel activity", "aria-labelledby": "activity-title", "data-testid": "activity" },
    h("div", { class: "panel-head" }, h("h2", { id: "activity-title" }, "Run a tool")),
    h("div", { class: "activity-body" }, console),
    history,
  );
}
