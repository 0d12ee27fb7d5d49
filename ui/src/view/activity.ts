// The right-hand panel. Live output and call history arrive with later issues; until then the panel
// says so plainly instead of showing invented calls.
import { h } from "./dom";

export function renderActivity(): HTMLElement {
  return h(
    "aside",
    { class: "panel activity", "aria-labelledby": "activity-title", "data-testid": "activity" },
    h(
      "div",
      { class: "panel-head" },
      h("h2", { id: "activity-title" }, "Calls & live output"),
      h("span", { class: "pill pill-later" }, "coming later"),
    ),
    h(
      "div",
      { class: "placeholder" },
      h("p", { class: "placeholder-title" }, "Not available yet"),
      h(
        "p",
        {},
        "This panel will stream tool output as calls run, ask for confirmation before high-impact actions, and list past calls with their raw results.",
      ),
      h("p", { class: "placeholder-hint" }, "Until then, run a call from a terminal: ", h("code", {}, "aibuddy call TOOL 'ARGS_JSON'")),
    ),
  );
}
