// Test data shaped by the generated bindings (a wrong field fails the type check).
import type { ToolListing } from "../src/bindings/ToolListing";

export function listing(partial: Partial<ToolListing> & Pick<ToolListing, "name" | "config">): ToolListing {
  return {
    source: "core",
    exposure: "active",
    risk: "read_only",
    description: "",
    display_name: partial.config,
    category: "files",
    ...partial,
  };
}

export const TOOLS: ToolListing[] = [
  listing({ name: "read_file", config: "filesystem", display_name: "Filesystem", description: "Read a file" }),
  listing({ name: "write_file", config: "filesystem", display_name: "Filesystem", risk: "writes" }),
  listing({ name: "ls", config: "filesystem", display_name: "Filesystem" }),
  listing({
    name: "execute",
    config: "execute",
    display_name: "Execute",
    category: "commands",
    risk: "high_impact",
    exposure: "absent",
    absent_reason: "no sandbox with command execution is available in this host",
    confinement: "landlock-v7",
  }),
  listing({
    name: "mcp__github__search",
    config: "mcp:github",
    display_name: "github",
    category: "mcp",
    source: "mcp:github",
    exposure: "deferred",
  }),
  listing({ name: "view_skill", config: "skills", display_name: "Skills", source: "skill", category: "skills" }),
];
