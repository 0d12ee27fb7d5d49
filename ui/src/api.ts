// Typed wrappers over the shell's commands. Argument and result types come from ./bindings, which
// is generated from Rust (ts-rs) and checked for staleness in CI; nothing here restates a Rust type.
import { Channel, invoke } from "@tauri-apps/api/core";
import type { CallResult } from "./bindings/CallResult";
import type { CommandError } from "./bindings/CommandError";
import type { Event } from "./bindings/Event";
import type { NetworkAnswer } from "./bindings/NetworkAnswer";
import type { ProjectInfo } from "./bindings/ProjectInfo";
import type { ToolListing } from "./bindings/ToolListing";

export type InvokeFn = <T>(cmd: string, args?: Record<string, unknown>) => Promise<T>;

export interface Api {
  projectInfo(): Promise<ProjectInfo>;
  listTools(): Promise<ToolListing[]>;
  /** Runs one call through the core's pipeline; `onEvent` receives its live events in order. */
  callTool(tool: string, args: string, onEvent: (event: Event) => void): Promise<CallResult>;
  cancelCall(callId: string): Promise<boolean>;
  answerConfirm(callId: string, approve: boolean): Promise<boolean>;
  /** Answers the network question `askId` of a running command; false if it is no longer open. */
  answerNetwork(askId: string, answer: NetworkAnswer): Promise<boolean>;
}

/** Command names, exactly as registered by the shell (src-tauri/src/commands). */
export const COMMANDS = {
  projectInfo: "project_info",
  listTools: "list_tools",
  callTool: "call_tool",
  cancelCall: "cancel_call",
  answerConfirm: "answer_confirm",
  answerNetwork: "answer_network",
} as const;

export function createApi(call: InvokeFn = invoke): Api {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  return {
    projectInfo: () => run<ProjectInfo>(COMMANDS.projectInfo),
    listTools: () => run<ToolListing[]>(COMMANDS.listTools),
    callTool: (tool, args, onEvent) => {
      const channel = new Channel<Event>();
      channel.onmessage = onEvent;
      return run<CallResult>(COMMANDS.callTool, { tool, arguments: args, onEvent: channel });
    },
    cancelCall: (callId) => run<boolean>(COMMANDS.cancelCall, { callId }),
    answerConfirm: (callId, approve) => run<boolean>(COMMANDS.answerConfirm, { callId, approve }),
    answerNetwork: (askId, answer) => run<boolean>(COMMANDS.answerNetwork, { askId, answer }),
  };
}

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
