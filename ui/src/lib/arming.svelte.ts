// The arming of an answer that grants authority (issue 22; rules in ./answer-keys.ts): the
// approval dialog, the network question and the Tools-tab console's inline Approve share it, so a
// click or key that lands the moment such a question appears never grants anything.
// `armed` turns true `ARM_DELAY_MS` after `arm()`; call `arm()` again whenever a new question is
// shown and when the window comes back to the front; `dispose()` on destroy.
import { ARM_DELAY_MS } from "./answer-keys";

export class Arming {
  armed = $state(false);
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #delayMs: number;

  constructor(delayMs: number = ARM_DELAY_MS) {
    this.#delayMs = delayMs;
  }

  /** Disarms now and arms again after the delay. */
  arm(): void {
    clearTimeout(this.#timer);
    this.armed = false;
    this.#timer = setTimeout(() => (this.armed = true), this.#delayMs);
  }

  /** Disarms (nothing is asked any more). */
  disarm(): void {
    clearTimeout(this.#timer);
    this.armed = false;
  }

  dispose(): void {
    clearTimeout(this.#timer);
  }
}
