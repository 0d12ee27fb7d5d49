// The window header: which project the app is working in. The path is display-only: the project
// root lives in Rust state and is never sent back.
import type { CommandError } from "../bindings/CommandError";
import type { ProjectInfo } from "../bindings/ProjectInfo";
import { projectName } from "../model";
import { h } from "./dom";

export function renderHeader(project: ProjectInfo | null, error: CommandError | null): HTMLElement {
  const brand = h("div", { class: "brand" }, h("span", { class: "brand-mark", "aria-hidden": "true" }, "ai"), "aibuddy");
  let where: HTMLElement;
  if (project) {
    where = h(
      "div",
      { class: "project", "data-testid": "project" },
      h("span", { class: "project-label" }, "Project"),
      h("span", { class: "project-name", "data-testid": "project-name" }, projectName(project.root)),
      h("code", { class: "project-path", title: project.root, "data-testid": "project-path" }, project.root),
    );
  } else if (error) {
    where = h("div", { class: "project project-error", role: "alert" }, `Project unavailable: ${error.message}`);
  } else {
    where = h("div", { class: "project project-loading" }, "Opening project…");
  }
  const meta = project
    ? h("div", { class: "header-meta", title: "Data directory (history, settings, logs)" }, h("span", {}, "data"), h("code", {}, project.data_dir))
    : null;
  return h("header", { class: "app-header" }, brand, where, meta);
}
