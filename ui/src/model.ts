// Pure view-model functions: no DOM, no IPC. They turn the tool listing the shell returns into the
// groups, counts and labels the panel shows, and are unit-tested on their own.
import type { Exposure } from "./bindings/Exposure";
import type { Risk } from "./bindings/Risk";
import type { SettingsProblem } from "./bindings/SettingsProblem";
import type { ToolListing } from "./bindings/ToolListing";

/** One tool config (or MCP server) and the tools it generates, as shown in one card. */
export interface ToolGroup {
  /** Stable key: source and config. */
  id: string;
  config: string;
  title: string;
  category: string;
  source: string;
  /** The highest risk among the group's tools. */
  risk: Risk;
  tools: ToolListing[];
  active: number;
  deferred: number;
  absent: number;
}

export interface ToolSummary {
  total: number;
  active: number;
  deferred: number;
  absent: number;
}

export type ToolState = Exposure;

/** A configured tool whose dependencies are missing is absent; a reason alone is enough to say so. */
export function toolState(tool: ToolListing): ToolState {
  if (tool.absent_reason !== null && tool.absent_reason !== undefined) return "absent";
  return tool.exposure;
}

const RISK_ORDER: Record<Risk, number> = { read_only: 0, writes: 1, high_impact: 2 };

export function riskLabel(risk: Risk): string {
  switch (risk) {
    case "read_only":
      return "read-only";
    case "writes":
      return "writes";
    case "high_impact":
      return "high impact";
  }
}

export function riskDescription(risk: Risk): string {
  switch (risk) {
    case "read_only":
      return "Only reads; never asks for confirmation.";
    case "writes":
      return "Writes inside the project; asks for confirmation unless the project auto-approves.";
    case "high_impact":
      return "Commands, deletions or external effects; always asks for confirmation.";
  }
}

/** `core` tools first, then skills, then MCP servers by name. */
function sourceRank(source: string): number {
  if (source === "core") return 0;
  if (source === "skill") return 1;
  if (source.startsWith("mcp:")) return 2;
  return 3;
}

export function sourceLabel(source: string): string {
  if (source === "core") return "built-in";
  if (source === "skill") return "skill";
  if (source.startsWith("mcp:")) return `MCP · ${source.slice(4)}`;
  return source;
}

export function summarize(tools: readonly ToolListing[]): ToolSummary {
  const summary: ToolSummary = { total: tools.length, active: 0, deferred: 0, absent: 0 };
  for (const tool of tools) summary[toolState(tool)] += 1;
  return summary;
}

/** Groups tools by (source, config), in a stable order: by source rank, then title. */
export function groupTools(tools: readonly ToolListing[]): ToolGroup[] {
  const groups = new Map<string, ToolGroup>();
  for (const tool of tools) {
    const id = `${tool.source}/${tool.config}`;
    let group = groups.get(id);
    if (!group) {
      group = {
        id,
        config: tool.config,
        title: tool.display_name || tool.config,
        category: tool.category,
        source: tool.source,
        risk: tool.risk,
        tools: [],
        active: 0,
        deferred: 0,
        absent: 0,
      };
      groups.set(id, group);
    }
    group.tools.push(tool);
    group[toolState(tool)] += 1;
    if (RISK_ORDER[tool.risk] > RISK_ORDER[group.risk]) group.risk = tool.risk;
  }
  const sorted = [...groups.values()];
  for (const group of sorted) group.tools.sort((a, b) => a.name.localeCompare(b.name));
  sorted.sort(
    (a, b) =>
      sourceRank(a.source) - sourceRank(b.source) ||
      a.source.localeCompare(b.source) ||
      a.title.localeCompare(b.title),
  );
  return sorted;
}

/** Case-insensitive match on tool name, config, title, category and source. Empty query keeps all. */
export function filterTools(tools: readonly ToolListing[], query: string): ToolListing[] {
  const q = query.trim().toLowerCase();
  if (q === "") return [...tools];
  return tools.filter((t) =>
    [t.name, t.config, t.display_name, t.category, t.source].some((field) =>
      field.toLowerCase().includes(q),
    ),
  );
}

/** Last path component, for the window header; the full path is shown beside it. */
export function projectName(root: string): string {
  const trimmed = root.replace(/[\\/]+$/, "");
  const parts = trimmed.split(/[\\/]/);
  return parts[parts.length - 1] || trimmed || root;
}

export function problemLocation(problem: SettingsProblem): string {
  return problem.line === null ? problem.file : `${problem.file}:${problem.line}`;
}
