// The background processes of the open project's runs (`execute` with `"background": true`), over
// the shell's `list_processes` / `stop_process` / `keep_process`. The panel polls the list; Stop
// and Keep (running on after the run ends) are the person's.
import { invoke } from "@tauri-apps/api/core";
import { ApiError, type InvokeFn, toCommandError } from "../api";
import type { ProcessRow } from "../bindings/ProcessRow";

export const PROCESS_COMMANDS = {
  listProcesses: "list_processes",
  stopProcess: "stop_process",
  keepProcess: "keep_process",
} as const;

export interface ProcessesApi {
  /** Every background process, oldest first, with the end of its output. */
  listProcesses(): Promise<ProcessRow[]>;
  /** Stops one (its whole tree); false when there is no such process. */
  stopProcess(processId: string): Promise<boolean>;
  /** Keeps it running after its run ends (or not); false when there is no such process. */
  keepProcess(processId: string, keep: boolean): Promise<boolean>;
}

export function createProcessesApi(call: InvokeFn = invoke): ProcessesApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  return {
    listProcesses: () => run<ProcessRow[]>(PROCESS_COMMANDS.listProcesses),
    stopProcess: (processId) => run<boolean>(PROCESS_COMMANDS.stopProcess, { processId }),
    keepProcess: (processId, keep) => run<boolean>(PROCESS_COMMANDS.keepProcess, { processId, keep }),
  };
}
