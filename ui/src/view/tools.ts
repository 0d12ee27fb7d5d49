// The tool list: one card per tool config (or MCP server), each tool a row with its exposure, and
// for configured tools that are absent, the reason.
import type { CommandError } from "../bindings/CommandError";
import type { ToolListing } from "../bindings/ToolListing";
import {
  type ToolGroup,
  type ToolSummary,
  groupTools,
  riskDescription,
  riskLabel,
  sourceLabel,
  toolState,
} from "../model";
import { h } from "./dom";

export function renderSummary(summary: ToolSummary): HTMLElement {
  const chip = (n: number, label: string, kind: string) =>
    h("span", { class: `chip chip-${kind}`, "data-testid": `count-${kind}` }, h("strong", {}, String(n)), ` ${label}`);
  return h(
    "div",
    { class: "summary", "aria-label": "Tool counts" },
    chip(summary.active, "active", "active"),
    chip(summary.deferred, "deferred", "deferred"),
    chip(summary.absent, "absent", "absent"),
  );
}

function renderTool(tool: ToolListing): HTMLElement {
  const state = toolState(tool);
  const stateLabel = state === "deferred" ? "deferred: found through tool_search" : state;
  return h(
    "li",
    { class: `tool tool-${state}`, "data-testid": "tool", "data-tool": tool.name, "data-state": state },
    h("code", { class: "tool-name" }, tool.name),
    h("span", { class: `pill pill-${state}`, title: stateLabel }, state),
    tool.description ? h("p", { class: "tool-desc", title: tool.description }, tool.description) : null,
    tool.confinement
      ? h("p", { class: "tool-meta", "data-testid": "confinement", title: "Confinement the sandbox applies to commands" }, `confinement: ${tool.confinement}`)
      : null,
    state === "absent"
      ? h("p", { class: "tool-reason", "data-testid": "absent-reason" }, h("span", { class: "sr-label" }, "Absent: "), tool.absent_reason ?? "")
      : null,
    state === "deferred" && tool.deferred_reason
      ? h("p", { class: "tool-meta", "data-testid": "deferred-reason" }, tool.deferred_reason)
      : null,
  );
}

function renderGroup(group: ToolGroup): HTMLElement {
  const counts: string[] = [`${group.tools.length} tool${group.tools.length === 1 ? "" : "s"}`];
  if (group.absent > 0) counts.push(`${group.absent} absent`);
  if (group.deferred > 0) counts.push(`${group.deferred} deferred`);
  return h(
    "section",
    { class: "group", "data-testid": "tool-group", "data-config": group.config, "aria-label": group.title },
    h(
      "header",
      { class: "group-head" },
      h(
        "div",
        { class: "group-title" },
        h("h3", {}, group.title),
        h("span", { class: "group-config" }, group.config),
      ),
      h(
        "div",
        { class: "group-badges" },
        h("span", { class: "badge badge-source" }, sourceLabel(group.source)),
        group.category ? h("span", { class: "badge badge-category" }, group.category) : null,
        h(
          "span",
          { class: `badge risk risk-${group.risk}`, title: riskDescription(group.risk), "data-testid": "risk" },
          riskLabel(group.risk),
        ),
      ),
    ),
    h("p", { class: "group-counts" }, counts.join(" · ")),
    h("ul", { class: "tools" }, ...group.tools.map(renderTool)),
  );
}

export function renderToolList(tools: readonly ToolListing[], totalBeforeFilter: number): HTMLElement {
  if (totalBeforeFilter === 0) {
    return h(
      "div",
      { class: "empty", "data-testid": "tools-empty" },
      h("p", { class: "empty-title" }, "No tools configured"),
      h("p", {}, "Enable tool configs with ", h("code", {}, "tools.enabled"), " in .aibuddy/settings.json or the user settings."),
    );
  }
  if (tools.length === 0) {
    return h("div", { class: "empty", "data-testid": "tools-empty" }, h("p", {}, "No tool matches the filter."));
  }
  return h("div", { class: "groups", "data-testid": "tool-list" }, ...groupTools(tools).map(renderGroup));
}

export function renderToolsError(error: CommandError): HTMLElement {
  return h(
    "div",
    { class: "error-card", role: "alert", "data-testid": "tools-error" },
    h("p", { class: "error-title" }, "Could not list the tools"),
    h("p", { class: "error-message" }, error.message),
    h(
      "p",
      { class: "error-meta" },
      h("span", { class: "badge" }, error.code),
      error.stage ? h("span", { class: "badge" }, `stage: ${error.stage}`) : null,
    ),
  );
}

export function renderLoading(text: string): HTMLElement {
  return h("div", { class: "loading", "data-testid": "loading" }, h("span", { class: "spinner", "aria-hidden": "true" }), text);
}
