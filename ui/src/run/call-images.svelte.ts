// The images a call sent to the model, as its card shows them, apart from the view
// (../components/run/ToolCardView.svelte, which renders them): asked for once the call ended ok and
// its model text names an image (./images.ts `namesImages`), read from the store by call id
// (`call_images`, `data:` URLs only). A call whose images cannot be read shows none; an answer for a
// call no longer shown is dropped.
import type { CallImage } from "../bindings/CallImage";
import { type LoadImages, namesImages } from "./images";

export class CallImagesStore {
  images: CallImage[] = $state.raw([]);
  /** The read whose answer is shown; an answer to any other is dropped. */
  #current = 0;

  constructor(private readonly loadImages: LoadImages) {}

  /** Whether a call with this status and model text has images worth asking for. */
  static wanted(status: string, model: string | null): boolean {
    return status === "ok" && namesImages(model);
  }

  /** Shows the images of call `callId` when `wanted`, none otherwise. */
  async load(callId: string, wanted: boolean): Promise<void> {
    const n = ++this.#current;
    if (!wanted) {
      this.images = [];
      return;
    }
    try {
      const found = await this.loadImages(callId);
      if (n === this.#current) this.images = found;
    } catch {
      if (n === this.#current) this.images = [];
    }
  }
}
