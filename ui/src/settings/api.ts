// Typed wrappers over the shell's settings commands. The window names a level and a field; the
// shell writes the file (the CLI's), keeps the rest of it, and answers with the written file or
// the located problems that refused the value. Provider keys go to the OS keyring and only their
// state ever comes back.
import { invoke } from "@tauri-apps/api/core";
import { ApiError, type InvokeFn, toCommandError } from "../api";
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

export const SETTINGS_COMMANDS = {
  settingsPages: "settings_pages",
  setSetting: "set_setting",
  putMcpServer: "put_mcp_server",
  removeMcpServer: "remove_mcp_server",
  setProviderKey: "set_provider_key",
  removeProviderKey: "remove_provider_key",
} as const;

export function createSettingsApi(call: InvokeFn = invoke): SettingsApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  return {
    settingsPages: () => run<SettingsPages>(SETTINGS_COMMANDS.settingsPages),
    setSetting: (level, path, value) => run<SettingsWrite>(SETTINGS_COMMANDS.setSetting, { level, path, value: value ?? null }),
    putMcpServer: (level, name, entry) => run<SettingsWrite>(SETTINGS_COMMANDS.putMcpServer, { level, name, entry }),
    removeMcpServer: (level, name) => run<SettingsWrite>(SETTINGS_COMMANDS.removeMcpServer, { level, name }),
    setProviderKey: (name, key) => run<KeyState>(SETTINGS_COMMANDS.setProviderKey, { name, key }),
    removeProviderKey: (name) => run<KeyState>(SETTINGS_COMMANDS.removeProviderKey, { name }),
  };
}
