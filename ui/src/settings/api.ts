// Typed wrappers over the shell's settings commands (the generated clients, through
// ../lib/invoke.ts). The window names a level and a field; the shell writes the file (the CLI's),
// keeps the rest of it, and answers with the written file or the located problems that refused
// the value. Provider keys go to the OS keyring and only their state ever comes back.
import type { JsonValue } from "../bindings/serde_json/JsonValue";
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { KeyState } from "../bindings/KeyState";
import type { Level } from "../bindings/Level";
import type { SettingsPages } from "../bindings/SettingsPages";
import type { SettingsWrite } from "../bindings/SettingsWrite";

export interface SettingsApi {
  settingsPages(): Promise<SettingsPages>;
  /** `value` undefined removes the key. */
  setSetting(level: Level, path: string[], value?: unknown): Promise<SettingsWrite>;
  putMcpServer(level: Level, name: string, entry: Record<string, unknown>): Promise<SettingsWrite>;
  removeMcpServer(level: Level, name: string): Promise<SettingsWrite>;
  setProviderKey(name: string, key: string): Promise<KeyState>;
  removeProviderKey(name: string): Promise<KeyState>;
}

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createSettingsApi(call?: InvokeFn): SettingsApi {
  const c = shellCommands(call);
  return {
    settingsPages: () => c.settingsPages(),
    // The window's values are JSON by construction (form fields, parsed JSON text); the shell
    // validates each against the settings' own types.
    setSetting: (level, path, value) => c.setSetting({ level, path, value: (value ?? null) as JsonValue | null }),
    putMcpServer: (level, name, entry) => c.putMcpServer({ level, name, entry: entry as JsonValue }),
    removeMcpServer: (level, name) => c.removeMcpServer({ level, name }),
    setProviderKey: (name, key) => c.setProviderKey({ name, key }),
    removeProviderKey: (name) => c.removeProviderKey({ name }),
  };
}
