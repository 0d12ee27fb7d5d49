// Mounts the window into a root element, with its services in context (./services.ts), and loads
// its data through the Api. Kept apart from main.ts so tests can mount it with a fake Api (vitest)
// or with mocked IPC (browser test).
import { flushSync, mount } from "svelte";
import type { Api } from "./api";
import App from "./components/App.svelte";
import { servicesContext, shellServices } from "./services";
import type { RunController } from "./run/controller.svelte";
import type { ProjectApi } from "./project/api";
import type { ProviderChoiceStore } from "./project/choice.svelte";

export interface MountedApp {
  /** Resolves once the project, the tool list and the history have loaded (or failed to). */
  ready: Promise<void>;
  /** Loads the tool list again. */
  refresh(): Promise<void>;
}

/** `runs`: the run view's controller; without one the window is the tool console only. */
export function mountApp(
  root: HTMLElement,
  api: Api,
  runs: RunController | null = null,
  projects: ProjectApi | null = null,
  choice?: ProviderChoiceStore,
): MountedApp {
  root.replaceChildren();
  const services = shellServices({ api, runs, projects, ...(choice ? { choice } : {}) });
  const instance = mount(App, { target: root, props: {}, context: servicesContext(services) }) as { load(): Promise<void>; loadTools(): Promise<void> };
  flushSync();
  root.removeAttribute("aria-busy");
  const ready = instance.load().then(() => flushSync());
  return { ready, refresh: () => instance.loadTools().then(() => flushSync()) };
}
