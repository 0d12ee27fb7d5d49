// A first run that says what to do: whether a model can run (`model_setup`), the local
// OpenAI-compatible servers that answered on their usual loopback ports, and using one, written to
// the person's own settings with `set_setting` as the Providers page writes an entry (then made the
// default). Types: the generated bindings only.
import { invoke } from "@tauri-apps/api/core";
import { ApiError, type InvokeFn, toCommandError } from "../api";
import type { LocalServer } from "../bindings/LocalServer";
import type { ModelSetup } from "../bindings/ModelSetup";
import type { SettingsWrite } from "../bindings/SettingsWrite";

export const MODEL_SETUP_COMMANDS = { modelSetup: "model_setup", setSetting: "set_setting" } as const;

export interface ModelSetupApi {
  modelSetup(): Promise<ModelSetup>;
  /** Writes `providers.<id>` (an `openai-chat` entry at the server's base URL) and makes it the
   * default, in the person's own settings. The answer of the last write. */
  useLocal(server: LocalServer, model: string): Promise<SettingsWrite>;
}

/** The provider entry a local server becomes. */
export function localEntry(server: LocalServer, model: string): Record<string, unknown> {
  return { kind: "openai-chat", base_url: server.base_url, model };
}

export function createModelSetupApi(call: InvokeFn = invoke): ModelSetupApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  const C = MODEL_SETUP_COMMANDS;
  return {
    modelSetup: () => run<ModelSetup>(C.modelSetup),
    useLocal: async (server, model) => {
      const entry = await run<SettingsWrite>(C.setSetting, { level: "user", path: ["providers", server.id], value: localEntry(server, model) });
      if (entry.written === null) return entry;
      return run<SettingsWrite>(C.setSetting, { level: "user", path: ["providers", "default"], value: server.id });
    },
  };
}
