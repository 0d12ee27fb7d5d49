// The background processes of the open project's runs (`execute` with `"background": true`), over
// the shell's `list_processes` / `stop_process` / `keep_process`. The panel polls the list; Stop
// and Keep (running on after the run ends) are the person's.
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { ProcessRow } from "../bindings/ProcessRow";

export interface ProcessesApi {
  /** Every background process, oldest first, with the end of its output. */
  listProcesses(): Promise<ProcessRow[]>;
  /** Stops one (its whole tree); false when there is no such process. */
  stopProcess(processId: string): Promise<boolean>;
  /** Keeps it running after its run ends (or not); false when there is no such process. */
  keepProcess(processId: string, keep: boolean): Promise<boolean>;
}

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createProcessesApi(call?: InvokeFn): ProcessesApi {
  const c = shellCommands(call);
  return {
    listProcesses: () => c.listProcesses(),
    stopProcess: (processId) => c.stopProcess({ processId }),
    keepProcess: (processId, keep) => c.keepProcess({ processId, keep }),
  };
}
