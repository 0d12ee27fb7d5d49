// Typed wrappers over the shell's project, trust and provider-picker commands (the generated
// clients, through ../lib/invoke.ts) and its `project-changed` / `trust-changed` events. Types: the
// generated bindings only.
import { listen } from "@tauri-apps/api/event";
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { ProjectInfo } from "../bindings/ProjectInfo";
import type { ProviderList } from "../bindings/ProviderList";
import type { RecentProject } from "../bindings/RecentProject";
import type { TrustPrompt } from "../bindings/TrustPrompt";

export interface ProjectApi {
  /** Opens the native folder dialog; null when the person cancelled. */
  pickProject(): Promise<ProjectInfo | null>;
  /** Opens a project of the recent list (the shell refuses paths that are not in it). */
  openRecent(path: string): Promise<ProjectInfo>;
  listRecent(): Promise<RecentProject[]>;
  forgetRecent(path: string): Promise<boolean>;
  trustStatus(): Promise<TrustPrompt>;
  /** Trusts the project at the content whose digest the dialog showed. */
  trustProject(digest: string): Promise<TrustPrompt>;
  distrustProject(digest: string | null): Promise<TrustPrompt>;
  listProviders(): Promise<ProviderList>;
  chooseProvider(provider: string | null, model: string | null): Promise<void>;
  /** Subscribes to `project-changed` (null payload: no project open); resolves to unsubscribe. */
  onProjectChanged(handler: (info: ProjectInfo | null) => void): Promise<() => void>;
  /** Subscribes to `trust-changed`; resolves to unsubscribe. */
  onTrustChanged(handler: (prompt: TrustPrompt) => void): Promise<() => void>;
}

export const PROJECT_EVENT = "project-changed";
export const TRUST_EVENT = "trust-changed";

export type SubscribeFn = <T>(event: string, handler: (payload: T) => void) => Promise<() => void>;

const tauriSubscribe: SubscribeFn = (event, handler) => listen(event, (e) => handler(e.payload as never));

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createProjectApi(call?: InvokeFn, subscribe: SubscribeFn = tauriSubscribe): ProjectApi {
  const c = shellCommands(call);
  return {
    pickProject: () => c.pickProject(),
    openRecent: (path) => c.openRecent({ path }),
    listRecent: () => c.listRecent(),
    forgetRecent: (path) => c.forgetRecent({ path }),
    trustStatus: () => c.trustStatus(),
    trustProject: (digest) => c.trustProject({ digest }),
    distrustProject: (digest) => c.distrustProject({ digest }),
    listProviders: () => c.listProviders(),
    chooseProvider: async (provider, model) => {
      await c.chooseProvider({ provider, model });
    },
    onProjectChanged: (handler) => subscribe<ProjectInfo | null>(PROJECT_EVENT, handler),
    onTrustChanged: (handler) => subscribe<TrustPrompt>(TRUST_EVENT, handler),
  };
}
