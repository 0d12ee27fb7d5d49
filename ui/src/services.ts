// The services the window's views use (the shell's typed command clients, the run controller, the
// provider choice), handed to the component tree once through Svelte context: `mountApp` builds
// them (`shellServices`, Tauri-backed unless a test passes its own) and mounts the window with
// `servicesContext`; a view reads them with `getServices()` instead of receiving them as props.
import { getContext } from "svelte";
import type { Api } from "./api";
import { createCatalogApi, type CatalogApi } from "./catalog/api";
import type { ProjectApi } from "./project/api";
import { ProviderChoiceStore } from "./project/choice.svelte";
import { createModelSetupApi, type ModelSetupApi } from "./project/model-setup";
import { createCheckpointsApi, type CheckpointsApi } from "./run/checkpoints-api";
import { createLoadImages, type LoadImages } from "./run/images";
import { createProcessesApi, type ProcessesApi } from "./run/processes-api";
import type { RunController } from "./run/controller.svelte";
import { createRawOutputApi, type RawOutputApi } from "./run/raw-output";
import { createSettingsApi, type SettingsApi } from "./settings/api";

export interface Services {
  /** The tool console's commands. */
  api: Api;
  /** The run view's controller; without one the window is the tool console only. */
  runs: RunController | null;
  /** Project switching, trust and the provider picker; without it no project bar or welcome view. */
  projects: ProjectApi | null;
  /** The provider/model the picker chose for the next run. */
  choice: ProviderChoiceStore;
  catalog: CatalogApi | null;
  settings: SettingsApi | null;
  /** The history browser and raw output. */
  history: RawOutputApi;
  checkpoints: CheckpointsApi;
  /** The background processes panel (`list_processes`, `stop_process`, `keep_process`). */
  processes: ProcessesApi;
  /** The images a call sent to the model, for its card (`call_images`). */
  images: LoadImages;
  /** The first run's "no model is set up" and the local servers found (`model_setup`). */
  modelSetup: ModelSetupApi | null;
}

const KEY = Symbol("aibuddy.services");

/** `given`, with the shell's own clients for every service not given. */
export function shellServices(given: Partial<Services> & Pick<Services, "api">): Services {
  return {
    runs: null,
    projects: null,
    choice: new ProviderChoiceStore(),
    catalog: createCatalogApi(),
    settings: createSettingsApi(),
    history: createRawOutputApi(),
    checkpoints: createCheckpointsApi(),
    processes: createProcessesApi(),
    images: createLoadImages(),
    modelSetup: createModelSetupApi(),
    ...given,
  };
}

/** The context a window is mounted with (`mount(App, { context })`). */
export function servicesContext(services: Services): Map<symbol, Services> {
  return new Map([[KEY, services]]);
}

/** The services of the window this component is part of. */
export function getServices(): Services {
  const services = getContext<Services | undefined>(KEY);
  if (!services) throw new Error("no services in context: mount the window with servicesContext()");
  return services;
}
