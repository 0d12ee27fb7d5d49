// Mounts the panel into a root element and loads its data through the Api. Kept apart from main.ts so
// tests can mount it with a fake Api (vitest) or with mocked IPC (browser test).
import type { Api } from "./api";
import { toCommandError } from "./api";
import type { ToolListing } from "./bindings/ToolListing";
import { filterTools, summarize } from "./model";
import { renderActivity } from "./view/activity";
import { createConsole } from "./view/console";
import { h, replaceChildren } from "./view/dom";
import { renderHeader } from "./view/header";
import { createHistory } from "./view/history";
import { renderSettingsProblems } from "./view/settings";
import { renderLoading, renderSummary, renderToolList, renderToolsError } from "./view/tools";

export interface MountedApp {
  /** Resolves once the project, the tool list and the history have loaded (or failed to). */
  ready: Promise<void>;
  /** Loads the tool list again. */
  refresh(): Promise<void>;
}

export function mountApp(root: HTMLElement, api: Api): MountedApp {
  const headerSlot = h("div", { class: "header-slot" }, renderHeader(null, null));
  const bannerSlot = h("div", { class: "banner-slot" });
  const summarySlot = h("div", { class: "summary-slot" });
  const listSlot = h("div", { class: "list-slot", "aria-live": "polite" }, renderLoading("Loading tools…"));
  const search = h("input", {
    class: "search",
    type: "search",
    placeholder: "Filter tools",
    "aria-label": "Filter tools",
    disabled: true,
  });
  const refreshButton = h("button", { class: "button", type: "button", title: "List the tools again" }, "Refresh");

  let tools: ToolListing[] = [];
  const history = createHistory(api);
  const callConsole = createConsole(api, () => void history.refresh());

  const showList = () => {
    replaceChildren(listSlot, renderToolList(filterTools(tools, search.value), tools.length));
  };

  const loadTools = async () => {
    refreshButton.setAttribute("disabled", "");
    try {
      tools = await api.listTools();
      callConsole.setTools(tools);
      replaceChildren(summarySlot, renderSummary(summarize(tools)));
      search.removeAttribute("disabled");
      showList();
    } catch (error) {
      tools = [];
      callConsole.setTools(tools);
      replaceChildren(summarySlot);
      replaceChildren(listSlot, renderToolsError(toCommandError(error)));
    } finally {
      refreshButton.removeAttribute("disabled");
    }
  };

  const loadProject = async () => {
    try {
      const project = await api.projectInfo();
      replaceChildren(headerSlot, renderHeader(project, null));
      replaceChildren(bannerSlot, renderSettingsProblems(project.settings_problems));
    } catch (error) {
      replaceChildren(headerSlot, renderHeader(null, toCommandError(error)));
    }
  };

  search.addEventListener("input", showList);
  refreshButton.addEventListener("click", () => void loadTools());

  const toolsPanel = h(
    "main",
    { class: "panel tools-panel", "aria-labelledby": "tools-title" },
    h(
      "div",
      { class: "panel-head" },
      h("h2", { id: "tools-title" }, "Tools"),
      summarySlot,
      h("div", { class: "toolbar" }, search, refreshButton),
    ),
    listSlot,
  );

  replaceChildren(root, headerSlot, bannerSlot, h("div", { class: "layout" }, toolsPanel, renderActivity(callConsole.element, history.element)));
  root.removeAttribute("aria-busy");

  const ready = Promise.all([loadProject(), loadTools(), history.refresh()]).then(() => undefined);
  return { ready, refresh: loadTools };
}
