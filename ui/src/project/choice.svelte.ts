// The provider/model the picker chose for the next run, shared between the picker (which shows it
// and forwards the person's picks here) and the run API wrapper (which adds it to `start_run`), so
// the run controller stays unaware.
import type { RunApi } from "../run/api";
import type { ProviderList } from "../bindings/ProviderList";
import { toCommandError } from "../lib/invoke";
import type { ProjectApi } from "./api";
import { initialChoice, type PickerChoice, startFields } from "./state";

export class ProviderChoiceStore {
  list: ProviderList | null = $state(null);
  choice: PickerChoice | null = $state(null);
  /** Why the providers could not be listed (the picker says "providers unavailable"). */
  failed: string | null = $state(null);
  /** The shell could not remember the choice for the project (the next run still uses it). */
  notRemembered: string | null = $state(null);

  reset(): void {
    this.list = null;
    this.choice = null;
    this.failed = null;
    this.notRemembered = null;
  }

  /** The configured providers and the project's remembered choice. */
  async load(api: ProjectApi): Promise<void> {
    try {
      const list = await api.listProviders();
      this.list = list;
      this.choice = initialChoice(list);
      this.failed = null;
    } catch (error) {
      this.reset();
      this.failed = error instanceof Error ? error.message : String(error);
    }
  }

  /** Asks the shell to remember the choice for the project (blank model: the provider's own). */
  async remember(api: ProjectApi): Promise<void> {
    const c = this.choice;
    if (!c) return;
    try {
      await api.chooseProvider(c.provider, c.model.trim() === "" ? null : c.model.trim());
      this.notRemembered = null;
    } catch (error) {
      this.notRemembered = toCommandError(error).message;
    }
  }

  /** The person picked another provider: its own model, remembered. */
  pickProvider(api: ProjectApi, provider: string): Promise<void> {
    this.choice = { provider, model: "" };
    return this.remember(api);
  }

  /** The person typed a model override (remembered when the field is left). */
  setModel(model: string): void {
    if (!this.choice) return;
    this.choice = { ...this.choice, model };
  }
}

/** `api` with the picker's provider/model added to every `start_run` that names none itself. */
export function withProviderChoice(api: RunApi, store: ProviderChoiceStore): RunApi {
  return {
    ...api,
    startRun: (args) => {
      const fields = startFields(store.choice, store.list);
      return api.startRun({ ...args, provider: args.provider ?? fields.provider, model: args.model ?? fields.model });
    },
  };
}
