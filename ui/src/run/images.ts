// The images a call sent to the model, for its card: read from the store by call id
// (`call_images`: `data:` URLs of PNG, JPEG, GIF or WebP made by the shell from the bounded images
// it stored). The card never loads a URL that a tool, a server or the model wrote.
import { type InvokeFn, shellCommands } from "../lib/invoke";
import type { CallImage } from "../bindings/CallImage";

export type LoadImages = (toolCallId: string) => Promise<CallImage[]>;

/** Whether a call's model text names an image it sent (`[image 1: image/png, 640x480...]`). */
export function namesImages(model: string | null): boolean {
  return model !== null && /\[image \d+: image\/(png|jpeg|gif|webp), \d+x\d+/.test(model);
}

/** Only `data:` URLs of the four image types are shown (what the shell makes). */
export function showable(images: CallImage[]): CallImage[] {
  return images.filter((i) => /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/.test(i.data_url));
}

/** `call`: the raw transport (Tauri's invoke unless a test passes its own). */
export function createLoadImages(call?: InvokeFn): LoadImages {
  const c = shellCommands(call);
  return async (toolCallId) => showable(await c.callImages({ toolCallId }));
}
