// The window reaches the shell in one way: ui/src/lib/invoke.ts (Tauri's invoke, rejections made
// `ApiError`s) under the clients generated from the shell's command table
// (ui/src/bindings/commands.ts). These tests keep it so: no other file imports Tauri's `invoke` or
// calls a command by a string of its own, and the generated clients cover exactly the registered
// commands, each invoking its own name.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { COMMAND_NAMES, commandClients } from "../src/bindings/commands";
import { ApiError, shellCommands } from "../src/lib/invoke";

const SRC = join(import.meta.dirname, "../src");
const WRAPPER = "lib/invoke.ts";
const GENERATED = "bindings/commands.ts";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|svelte)$/.test(name) ? [path] : [];
  });
}

const files = sources(SRC).map((path) => ({ rel: relative(SRC, path).replaceAll("\\", "/"), text: readFileSync(path, "utf8") }));

/** The names one file imports from `@tauri-apps/api/core`. */
function coreImports(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/import\s+(type\s+)?\{([^}]*)\}\s*from\s*["']@tauri-apps\/api\/core["']/g)) {
    for (const part of (m[2] ?? "").split(",")) {
      const name = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0];
      if (name) names.push(name);
    }
  }
  // `import * as core` or a default import would hide what is used: refused outright.
  if (/import\s+(\*\s+as\s+\w+|\w+)\s+from\s*["']@tauri-apps\/api\/core["']/.test(text)) names.push("*");
  return names;
}

const camel = (snake: string) => snake.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

describe("the invoke boundary", () => {
  it("scans the UI's sources", () => {
    expect(files.some((f) => f.rel === WRAPPER)).toBe(true);
    expect(files.some((f) => f.rel === GENERATED)).toBe(true);
    expect(files.length).toBeGreaterThan(50);
  });

  it("lets only lib/invoke.ts import Tauri's invoke (elsewhere only Channel)", () => {
    const offenders = files
      .filter((f) => f.rel !== WRAPPER)
      .flatMap((f) => coreImports(f.text).filter((name) => name !== "Channel").map((name) => `${f.rel}: ${name}`));
    expect(offenders).toEqual([]);
    expect(coreImports(files.find((f) => f.rel === WRAPPER)?.text ?? "")).toEqual(["invoke"]);
    const internals = files.filter((f) => f.text.includes("__TAURI_INTERNALS__") || f.text.includes("__TAURI_IPC__"));
    expect(internals.map((f) => f.rel)).toEqual([]);
  });

  it("calls no command by a string name outside the generated clients", () => {
    const names = new Set<string>(COMMAND_NAMES);
    const offenders: string[] = [];
    for (const f of files.filter((f) => f.rel !== GENERATED)) {
      // A call whose first argument is a string literal naming a command: `call("list_tools"`, `run<T>('rewind'`...
      const code = f.text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
      for (const m of code.matchAll(/\b\w+\s*(?:<[^>()]*>)?\s*\(\s*["']([a-z_]+)["']/g)) {
        if (m[1] && names.has(m[1])) offenders.push(`${f.rel}: ${m[0]}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

describe("the generated command clients", () => {
  it("have one client per registered command, each invoking its own name with its arguments", async () => {
    const seen: Array<[string, Record<string, unknown> | undefined]> = [];
    const clients = commandClients(async <T,>(cmd: string, args?: Record<string, unknown>) => {
      seen.push([cmd, args]);
      return null as T;
    });
    expect(Object.keys(clients).sort()).toEqual(COMMAND_NAMES.map(camel).sort());
    for (const name of COMMAND_NAMES) {
      const client = clients[camel(name) as keyof typeof clients] as (args?: Record<string, unknown>) => Promise<unknown>;
      const args = { marker: name };
      await client(args);
      const last = seen.at(-1);
      expect(last?.[0]).toBe(name);
      // Commands without arguments send none; the others send exactly what the caller gave.
      if (last?.[1] !== undefined) expect(last[1]).toBe(args);
    }
    expect(seen.map(([cmd]) => cmd)).toEqual([...COMMAND_NAMES]);
  });

  it("send argument keys in camelCase, as Tauri maps the handlers' parameters", async () => {
    const seen: Array<[string, unknown]> = [];
    const c = commandClients(async <T,>(cmd: string, args?: Record<string, unknown>) => {
      seen.push([cmd, args]);
      return true as T;
    });
    await c.rawOutputRange({ toolCallId: "c1", offset: 0, length: 10 });
    await c.startRun({ prompt: "hi", provider: null, model: null, maxSteps: 3 });
    expect(seen).toEqual([
      ["raw_output_range", { toolCallId: "c1", offset: 0, length: 10 }],
      ["start_run", { prompt: "hi", provider: null, model: null, maxSteps: 3 }],
    ]);
  });

  it("reject, through the one wrapper, with an ApiError carrying the shell's stage", async () => {
    const c = shellCommands(async () => {
      throw { code: "busy", stage: "Authorization", message: "cannot rewind now" };
    });
    const error = await c.rewind({ target: { call: "c1" } as never, force: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).detail).toEqual({ code: "busy", stage: "Authorization", message: "cannot rewind now" });
    const refused = await shellCommands(async () => {
      throw "Command rewind not allowed by ACL";
    })
      .listTools()
      .catch((e: unknown) => e);
    expect((refused as ApiError).detail).toEqual({ code: "ipc", stage: null, message: "Command rewind not allowed by ACL" });
  });
});
