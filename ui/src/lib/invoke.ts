// The one way the window reaches the shell. Every command goes through `shellCommands` (or
// `typedInvoke` for a test's own transport): the typed clients generated from the shell's command
// table (`../bindings/commands.ts`) over Tauri's invoke, with every rejection turned into an
// `ApiError` carrying the shell's `CommandError` (code, stage, message). No other file imports
// Tauri's `invoke` (test/invoke-boundary.test.ts checks it).
import { invoke as tauriInvoke } from "@tauri-apps/api/core";
import { commandClients, type CommandClients, type Invoke } from "../bindings/commands";
import type { CommandError } from "../bindings/CommandError";

/** A raw transport: Tauri's invoke, or a test's fake. */
export type InvokeFn = Invoke;

/** A rejected command, carrying the typed error the shell sent. */
export class ApiError extends Error {
  readonly detail: CommandError;
  constructor(detail: CommandError) {
    super(detail.message);
    this.name = "ApiError";
    this.detail = detail;
  }
}

function isCommandError(value: unknown): value is CommandError {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.code === "string" && typeof v.message === "string";
}

/**
 * Normalizes anything a command can reject with. The shell always sends a `CommandError`; Tauri
 * itself rejects with a plain string when a command is unknown or not permitted.
 */
export function toCommandError(error: unknown): CommandError {
  if (error instanceof ApiError) return error.detail;
  if (isCommandError(error)) return { code: error.code, stage: error.stage ?? null, message: error.message };
  if (typeof error === "string") return { code: "ipc", stage: null, message: error };
  if (error instanceof Error) return { code: "ipc", stage: null, message: error.message };
  return { code: "ipc", stage: null, message: String(error) };
}

/** `call` (Tauri's invoke by default) whose rejections are `ApiError`s. */
export function typedInvoke(call: InvokeFn = tauriInvoke): InvokeFn {
  return async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
}

/** The typed command clients over `call` (Tauri's invoke by default), rejecting with `ApiError`. */
export function shellCommands(call: InvokeFn = tauriInvoke): CommandClients {
  return commandClients(typedInvoke(call));
}
