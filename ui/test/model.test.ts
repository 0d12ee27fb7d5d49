import { describe, expect, it } from "vitest";
import { filterTools, groupTools, projectName, riskLabel, sourceLabel, summarize, toolState } from "../src/model";
import { TOOLS, listing } from "./fixtures";

describe("toolState", () => {
  it("follows exposure, and a reason makes a tool absent whatever its exposure", () => {
    expect(TOOLS.map((t) => [t.name, toolState(t)])).toEqual([
      ["read_file", "active"],
      ["write_file", "active"],
      ["ls", "active"],
      ["execute", "absent"],
      ["mcp__github__search", "deferred"],
      ["view_skill", "active"],
    ]);
    expect(toolState(listing({ name: "x", config: "c", exposure: "active", absent_reason: "missing" }))).toBe("absent");
  });
});

describe("summarize", () => {
  it("counts every state", () => {
    expect(summarize(TOOLS)).toEqual({ total: 6, active: 4, deferred: 1, absent: 1 });
    expect(summarize([])).toEqual({ total: 0, active: 0, deferred: 0, absent: 0 });
  });
});

describe("groupTools", () => {
  it("groups by config: core first, then skills, then MCP, tools sorted by name, highest risk wins", () => {
    const groups = groupTools(TOOLS);
    expect(
      groups.map((g) => ({ config: g.config, source: g.source, risk: g.risk, tools: g.tools.map((t) => t.name), absent: g.absent })),
    ).toEqual([
      { config: "execute", source: "core", risk: "high_impact", tools: ["execute"], absent: 1 },
      { config: "filesystem", source: "core", risk: "writes", tools: ["ls", "read_file", "write_file"], absent: 0 },
      { config: "skills", source: "skill", risk: "read_only", tools: ["view_skill"], absent: 0 },
      { config: "mcp:github", source: "mcp:github", risk: "read_only", tools: ["mcp__github__search"], absent: 0 },
    ]);
  });

  it("returns no group for no tools", () => {
    expect(groupTools([])).toEqual([]);
  });
});

describe("filterTools", () => {
  it("matches name, config, title, category and source, case-insensitively", () => {
    const names = (q: string) => filterTools(TOOLS, q).map((t) => t.name);
    expect(names("")).toHaveLength(TOOLS.length);
    expect(names("  READ_ ")).toEqual(["read_file"]);
    expect(names("filesystem")).toEqual(["read_file", "write_file", "ls"]);
    expect(names("github")).toEqual(["mcp__github__search"]);
    expect(names("commands")).toEqual(["execute"]);
    expect(names("nothing-like-this")).toEqual([]);
  });
});

describe("labels", () => {
  it("names risks and sources for people", () => {
    expect([riskLabel("read_only"), riskLabel("writes"), riskLabel("high_impact")]).toEqual(["read-only", "writes", "high impact"]);
    expect([sourceLabel("core"), sourceLabel("skill"), sourceLabel("mcp:github")]).toEqual(["built-in", "skill", "MCP · github"]);
  });

  it("takes the project name from the last path component", () => {
    expect(projectName("/home/me/work/sample-project")).toBe("sample-project");
    expect(projectName("/home/me/work/sample-project/")).toBe("sample-project");
    expect(projectName("C:\\work\\demo")).toBe("demo");
    expect(projectName("/")).toBe("/");
  });
});
