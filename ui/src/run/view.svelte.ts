// The conversation view's own state, apart from its view (../components/run/RunView.svelte, which
// renders it) and from the run itself (./controller.svelte.ts over the pure ./state.ts): the
// prompt being typed and when it may be sent, the project's approval mode shown in the run bar,
// and keeping the runs list current while the conversation is shown (a run started meanwhile
// from a terminal, `aibuddy run` on the same data directory, sends this window no event).
import { isActive } from "./state";
import type { ApprovalsApi } from "./approvals-api";
import type { RunController } from "./controller.svelte";

/** How often the runs list (and a run shown view only) is read again while shown. */
export const RUNS_POLL_MS = 2_000;

/** The window is hidden (minimized, another workspace): nothing is polled then. */
const windowHidden = (): boolean => typeof document !== "undefined" && document.visibilityState === "hidden";

export class RunViewStore {
  prompt = $state("");
  /** The project's approval mode, always shown in the run bar (null until read, or unreadable). */
  approvalMode: string | null = $state(null);
  /** A run driven elsewhere, opened from the list: nothing to send to it (New run starts one). */
  readonly viewOnly: boolean;
  /** The prompt can be sent now. */
  readonly canSend: boolean;
  #listedOnce = false;

  constructor(
    readonly controller: RunController,
    private readonly approvals: ApprovalsApi,
    private readonly hidden: () => boolean = windowHidden,
  ) {
    this.viewOnly = $derived(controller.state.phase === "elsewhere");
    this.canSend = $derived(!isActive(controller.state) && !this.viewOnly && this.prompt.trim() !== "");
  }

  /** Sends the prompt (a new run, or the next turn of the one shown) and clears the box. */
  send(): void {
    if (!this.canSend) return;
    const text = this.prompt;
    this.prompt = "";
    void this.controller.send(text);
  }

  /**
   * The conversation was shown (`visible`) or hidden. The runs list is read once at the start and
   * again each time it is shown, and every `RUNS_POLL_MS` while shown (not while the window is
   * hidden); the approval mode is read each time it is shown. Returns what stops the polling.
   */
  shown(visible: boolean): () => void {
    if (visible || !this.#listedOnce) void this.controller.loadRuns();
    this.#listedOnce = true;
    if (!visible) return () => undefined;
    void this.loadApprovalMode();
    return this.every(() => this.controller.loadRuns());
  }

  /** While shown and the run is shown view only (running elsewhere), it is read again at the same
   * pace: its new steps appear, and it turns into the finished view when it ends. Returns what
   * stops the polling. */
  followElsewhere(visible: boolean, viewOnly: boolean): () => void {
    if (!visible || !viewOnly) return () => undefined;
    return this.every(() => this.controller.refreshElsewhere());
  }

  async loadApprovalMode(): Promise<void> {
    try {
      this.approvalMode = (await this.approvals.approvalsView()).mode;
    } catch {
      this.approvalMode = null;
    }
  }

  private every(read: () => Promise<void>): () => void {
    const timer = setInterval(() => {
      if (!this.hidden()) void read();
    }, RUNS_POLL_MS);
    return () => clearInterval(timer);
  }
}
