// Typed wrappers over the shell's project, trust and provider-picker commands and its
// `project-changed` / `trust-changed` events. Types: the generated bindings only.
import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import { ApiError, type InvokeFn, toCommandError } from "../api";
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

export const PROJECT_COMMANDS = {
  pickProject: "pick_project",
  openRecent: "open_recent",
  listRecent: "list_recent",
  forgetRecent: "forget_recent",
  trustStatus: "trust_status",
  trustProject: "trust_project",
  distrustProject: "distrust_project",
  listProviders: "list_providers",
  chooseProvider: "choose_provider",
} as const;

export const PROJECT_EVENT = "project-changed";
export const TRUST_EVENT = "trust-changed";

export type SubscribeFn = <T>(event: string, handler: (payload: T) => void) => Promise<() => void>;

const tauriSubscribe: SubscribeFn = (event, handler) => listen(event, (e) => handler(e.payload as never));

export function createProjectApi(call: InvokeFn = invoke, subscribe: SubscribeFn = tauriSubscribe): ProjectApi {
  const run = async <T>(cmd: string, args?: Record<string, unknown>): Promise<T> => {
    try {
      return await call<T>(cmd, args);
    } catch (error) {
      throw new ApiError(toCommandError(error));
    }
  };
  const P = PROJECT_COMMANDS;
  return {
    pickProject: () => run<ProjectInfo | null>(P.pickProject),
    openRecent: (path) => run<ProjectInfo>(P.openRecent, { path }),
    listRecent: () => run<RecentProject[]>(P.listRecent),
    forgetRecent: (path) => run<boolean>(P.forgetRecent, { path }),
    trustStatus: () => run<TrustPrompt>(P.trustStatus),
    trustProject: (digest) => run<TrustPrompt>(P.trustProject, { digest }),
    distrustProject: (digest) => run<TrustPrompt>(P.distrustProject, { digest }),
    listProviders: () => run<ProviderList>(P.listProviders),
    chooseProvider: (provider, model) => run<void>(P.chooseProvider, { provider, model }),
    onProjectChanged: (handler) => subscribe<ProjectInfo | null>(PROJECT_EVENT, handler),
    onTrustChanged: (handler) => subscribe<TrustPrompt>(TRUST_EVENT, handler),
  };
}
