// Problems found in the settings files. Each named field fell back to its default; the banner keeps
// the problem visible until the file is fixed.
import type { SettingsProblem } from "../bindings/SettingsProblem";
import { h } from "./dom";

export function problemLocation(problem: SettingsProblem): string {
  return problem.line === null ? problem.file : `${problem.file}:${problem.line}`;
}

export function renderSettingsProblems(problems: readonly SettingsProblem[]): HTMLElement | null {
  if (problems.length === 0) return null;
  const title = problems.length === 1 ? "1 settings problem" : `${problems.length} settings problems`;
  return h(
    "section",
    { class: "banner banner-warn", role: "status", "data-testid": "settings-problems" },
    h("p", { class: "banner-title" }, title, h("span", { class: "banner-note" }, " (these fields use their defaults)")),
    h(
      "ul",
      {},
      ...problems.map((p) =>
        h(
          "li",
          { "data-testid": "settings-problem" },
          h("code", {}, problemLocation(p)),
          " ",
          h("code", { class: "field" }, p.field),
          `: ${p.message}`,
        ),
      ),
    ),
  );
}
