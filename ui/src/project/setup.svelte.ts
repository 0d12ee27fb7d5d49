// The first run's "no model is set up", apart from its view (../components/run/ModelSetup.svelte,
// which renders it): whether a model can run and the local servers found (`model_setup`, read
// once), the model chosen for each server, and using one (./model-setup.ts `useLocal`, written to
// the person's own settings), with what refused it.
import type { LocalServer } from "../bindings/LocalServer";
import type { ModelSetup } from "../bindings/ModelSetup";
import { toCommandError } from "../lib/invoke";
import type { ModelSetupApi } from "./model-setup";

export class ModelSetupStore {
  /** What the shell said; null until read, and when it cannot tell (the run itself names a
   * missing provider). */
  setup: ModelSetup | null = $state(null);
  /** The model picked for each server (by server id); its first model until picked. */
  chosen: Record<string, string> = $state({});
  busy = $state(false);
  error: string | null = $state(null);

  constructor(private readonly api: ModelSetupApi) {}

  async load(): Promise<void> {
    try {
      this.setup = await this.api.modelSetup();
    } catch {
      this.setup = null;
    }
  }

  /** The model `server` would be used with. */
  modelOf(server: LocalServer): string | undefined {
    return this.chosen[server.id] ?? server.models[0];
  }

  /** Writes `server` with its chosen model as the person's default provider; whether it was. */
  async use(server: LocalServer): Promise<boolean> {
    const model = this.modelOf(server);
    if (!model) return false;
    this.busy = true;
    this.error = null;
    try {
      const out = await this.api.useLocal(server, model);
      if (out.written === null) {
        this.error = `Not saved: ${out.problems.map((p) => p.message).join("; ") || "the value is refused"}`;
        return false;
      }
      return true;
    } catch (e) {
      this.error = toCommandError(e).message;
      return false;
    } finally {
      this.busy = false;
    }
  }
}
