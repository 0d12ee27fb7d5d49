// The provider/model the picker chose for the next run, shared between the picker (which writes it)
// and the run API wrapper (which adds it to `start_run`), so the run controller stays unaware.
import type { RunApi } from "../run/api";
import type { ProviderList } from "../bindings/ProviderList";
import { type PickerChoice, startFields } from "./state";

export class ProviderChoiceStore {
  list: ProviderList | null = $state(null);
  choice: PickerChoice | null = $state(null);

  reset(): void {
    this.list = null;
    this.choice = null;
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
