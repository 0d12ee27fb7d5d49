// Typed wrappers over the shell's tool commands. Argument and result types come from ./bindings,
// which is generated from Rust (ts-rs, and the command clients from the shell's command table) and
// checked for staleness in CI; nothing here restates a Rust type or a command name.
import { Channel } from "@tauri-apps/api/core";
import type { CallResult } from "./bindings/CallResult";
import type { Event } from "./bindings/Event";
import type { NetworkAnswer } from "./bindings/NetworkAnswer";
import type { ProjectInfo } from "./bindings/ProjectInfo";
import type { ToolListing } from "./bindings/ToolListing";
import { type InvokeFn, shellCommands } from "./lib/invoke";

export { ApiError, type InvokeFn, toCommandError } from "./lib/invoke";

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

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createApi(call?: InvokeFn): Api {
  const c = shellCommands(call);
  return {
    projectInfo: () => c.projectInfo(),
    listTools: () => c.listTools(),
    callTool: (tool, args, onEvent) => {
      const channel = new Channel<Event>();
      channel.onmessage = onEvent;
      return c.callTool({ tool, arguments: args, onEvent: channel });
    },
    cancelCall: (callId) => c.cancelCall({ callId }),
    answerConfirm: (callId, approve) => c.answerConfirm({ callId, approve }),
    answerNetwork: (askId, answer) => c.answerNetwork({ askId, answer }),
  };
}
