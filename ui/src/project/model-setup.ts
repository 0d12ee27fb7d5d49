// A first run that says what to do: whether a model can run (`model_setup`), the local
// OpenAI-compatible servers that answered on their usual loopback ports, and using one, written to
// the person's own settings with `set_setting` as the Providers page writes an entry (then made the
// default). Types: the generated bindings only.
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { LocalServer } from "../bindings/LocalServer";
import type { JsonValue } from "../bindings/serde_json/JsonValue";
import type { ModelSetup } from "../bindings/ModelSetup";
import type { SettingsWrite } from "../bindings/SettingsWrite";

export interface ModelSetupApi {
  modelSetup(): Promise<ModelSetup>;
  /** Writes `providers.<id>` (an `openai-chat` entry at the server's base URL) and makes it the
   * default, in the person's own settings. The answer of the last write. */
  useLocal(server: LocalServer, model: string): Promise<SettingsWrite>;
}

/** The provider entry a local server becomes. */
export function localEntry(server: LocalServer, model: string): { [key in string]: JsonValue } {
  return { kind: "openai-chat", base_url: server.base_url, model };
}

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createModelSetupApi(call?: InvokeFn): ModelSetupApi {
  const c = shellCommands(call);
  return {
    modelSetup: () => c.modelSetup(),
    useLocal: async (server, model) => {
      const entry = await c.setSetting({ level: "user", path: ["providers", server.id], value: localEntry(server, model) });
      if (entry.written === null) return entry;
      return c.setSetting({ level: "user", path: ["providers", "default"], value: server.id });
    },
  };
}
