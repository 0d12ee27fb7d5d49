// Test data shaped by the generated bindings (a wrong field fails the type check).
import type { ConfirmRequest } from "../src/bindings/ConfirmRequest";
import type { DisplaySegment } from "../src/bindings/DisplaySegment";
import type { NetworkAsk } from "../src/bindings/NetworkAsk";
import type { RunDetail } from "../src/bindings/RunDetail";
import type { RunToolResult } from "../src/bindings/RunToolResult";
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

/**
 * The segments the core's `term::reveal` gives for printable ASCII text with line breaks (tests
 * only: fixtures of plain text; hostile fixtures spell their segments out as the core sends them).
 */
export function asciiSegments(s: string): DisplaySegment[] {
  const out: DisplaySegment[] = [];
  s.split("\n").forEach((line, i) => {
    if (i > 0) out.push({ kind: "line_break" });
    if (line !== "") out.push({ kind: "text", text: line });
  });
  return out;
}

/** A confirm request with the display the core would send for its (ASCII) fields. */
export function confirmRequest(r: Omit<ConfirmRequest, "display" | "model_says"> & { model_says?: string | null }): ConfirmRequest {
  const model_says = r.model_says ?? null;
  return {
    ...r,
    model_says,
    display: {
      tool: asciiSegments(r.tool),
      target: asciiSegments(r.target),
      target_non_ascii: [],
      scope: r.scope.map(asciiSegments),
      consequence: asciiSegments(r.consequence),
      model_says: model_says === null ? null : asciiSegments(model_says),
      diff: r.diff === null ? null : (r.diff.endsWith("\n") ? r.diff.slice(0, -1) : r.diff).split("\n").map(asciiSegments),
    },
  };
}

/** A network question whose host and command are plain ASCII (display segments as the core makes them). */
export function networkAsk(a: { ask_id: string; call_id: string; host: string; port: number; target: string; tool?: string }): NetworkAsk {
  const tool = a.tool ?? "execute";
  return {
    ...a,
    tool,
    display: { host: asciiSegments(a.host), host_non_ascii: [], tool: asciiSegments(tool), target: asciiSegments(a.target) },
  };
}

/**
 * A finished stored run with one `execute` call (`c1`, `make`, exit 0) whose stored result gets
 * `extra` (its `sync`, its `sandbox`, ...), as `show_run` returns it.
 */
export function storedExecuteRun(extra: Partial<RunToolResult> = {}): RunDetail {
  return {
    run_id: "r1", title: null, provider: "p", model: "m", presentation: "native", status: "completed", stage: null,
    error_message: null, stop_reason: null, started_at: "2026-01-01T00:00:00.000Z", finished_at_ms: 1,
    usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 }, meter: null,
    steps: 1, tool_calls: 1, parent_run_id: null, parent_call_id: null, children: [],
    messages: [
      { seq: 1, role: "assistant", text: "", tool_calls: [{ tool_call_id: "c1", tool: "execute", input: { command: "make" } }], result: null, usage: null },
      {
        seq: 2, role: "tool", text: "", tool_calls: [], usage: null,
        result: { tool_call_id: "c1", tool: "execute", status: "ok", stage: null, error_message: null, model: "exit 0", compacted: false, hooks: [], ...extra },
      },
    ],
  };
}
