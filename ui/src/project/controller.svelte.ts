// The window's project state: which project is open (or none: the welcome view), the recent list,
// the trust prompt and whether its dialog is open, and a generation that changes on every switch so
// the views remount empty for the new project. Decisions are the shell's; this only asks and shows.
import { toCommandError } from "../api";
import type { ProjectInfo } from "../bindings/ProjectInfo";
import type { RecentProject } from "../bindings/RecentProject";
import type { TrustPrompt } from "../bindings/TrustPrompt";
import type { ProjectApi } from "./api";
import { decide, shouldOpenDialog } from "./state";

export class ProjectController {
  /** The open project; null before load and when none is open. */
  info: ProjectInfo | null = $state(null);
  /** Load finished and no project is open: show the welcome view. */
  none = $state(false);
  recent: RecentProject[] = $state([]);
  /** Why the recent list could not be read (the welcome view says so, with a retry); the list
   * last read, if any, stays shown. Null once a read succeeds. */
  recentError: string | null = $state(null);
  trust: TrustPrompt | null = $state(null);
  dialogOpen = $state(false);
  /** The last failure of an action (open, pick), shown where the person acted; a refusal because
   * this window's run is in progress lasts only while it is (see `blocked`). */
  get error(): string | null {
    return this.blocked ? this.switchBlocked() : this.failure;
  }
  private failure: string | null = $state(null);
  /** `failure` is the shell's `busy` refusal (work of this project in progress: a run, a console
   * call): like `blocked`, it lasts only until the window says that work ended (`unblocked`). */
  private failureBusy = false;
  /** The last switch was refused for this window's work in progress: the notice is
   * `switchBlocked()` itself, so it goes away as soon as nothing blocks any more. */
  private blocked = $state(false);
  trustError: string | null = $state(null);
  /** Why the trust status could not be read (shown as a banner with a retry); the project is
   * then shown as not trusted (no badge, no dialog) until a read succeeds. */
  trustLoadError: string | null = $state(null);
  /** Why a switch is refused right now (e.g. this window's run is in progress), or null. */
  private readonly switchBlocked: () => string | null;
  /** Changes on every project change: views keyed on it start over. */
  generation = $state(0);
  private unsubscribe: Array<() => void> = [];
  private readonly onChanged: () => void;

  constructor(
    private readonly api: ProjectApi,
    onChanged: () => void = () => undefined,
    switchBlocked: () => string | null = () => null,
  ) {
    this.onChanged = onChanged;
    this.switchBlocked = switchBlocked;
  }

  /** Subscribes to the shell's events and loads the trust prompt and the recent list. */
  async connect(info: ProjectInfo | null, failedToLoad: boolean): Promise<void> {
    this.info = info;
    this.none = info === null && failedToLoad;
    try {
      this.unsubscribe.push(await this.api.onProjectChanged((next) => void this.changed(next)));
      this.unsubscribe.push(await this.api.onTrustChanged((prompt) => this.showPrompt(prompt)));
    } catch {
      // Without events the window still works; a switch made here reloads anyway.
    }
    await Promise.all([this.loadRecent(), this.loadTrust()]);
  }

  disconnect(): void {
    for (const u of this.unsubscribe.splice(0)) u();
  }

  async loadRecent(): Promise<void> {
    try {
      this.recent = await this.api.listRecent();
      this.recentError = null;
    } catch (error) {
      this.recentError = toCommandError(error).message;
    }
  }

  async loadTrust(): Promise<void> {
    const generation = this.generation;
    if (this.info === null) {
      this.trust = null;
      this.trustLoadError = null;
      this.dialogOpen = false;
      return;
    }
    try {
      const prompt = await this.api.trustStatus();
      // A switch meanwhile: this answer is about the previous project.
      if (generation !== this.generation) return;
      this.showPrompt(prompt);
    } catch (error) {
      if (generation !== this.generation) return;
      this.trust = null;
      this.dialogOpen = false;
      this.trustLoadError = toCommandError(error).message;
    }
  }

  showPrompt(prompt: TrustPrompt): void {
    this.trust = prompt;
    this.trustError = null;
    this.trustLoadError = null;
    if (shouldOpenDialog(prompt)) this.dialogOpen = true;
  }

  /** The project changed (here or by the shell): reset the views and load what depends on it. */
  async changed(info: ProjectInfo | null): Promise<void> {
    const same = info !== null && this.info !== null && info.root === this.info.root;
    this.info = info;
    this.none = info === null;
    this.generation += 1;
    if (!same) {
      // Nothing of the previous project's trust is shown for this one until its own is read.
      this.dialogOpen = false;
      this.trust = null;
      this.trustLoadError = null;
    }
    this.onChanged();
    await Promise.all([this.loadRecent(), this.loadTrust()]);
  }

  /** Nothing blocks a switch any more (the window calls this when its run or console call ends):
   * a later one does not bring the old refusal back, and a `busy` refusal of the shell goes too. */
  unblocked(): void {
    this.blocked = false;
    if (this.failureBusy) {
      this.failure = null;
      this.failureBusy = false;
    }
  }

  /** Shows why an open or pick failed; a `busy` refusal follows the live state (`unblocked`). */
  private failed(error: unknown): void {
    const e = toCommandError(error);
    this.failure = e.message;
    this.failureBusy = e.code === "busy";
  }

  /** Clears the last failure; true (and the refusal shown) when a switch is refused right now. */
  private refusedNow(): boolean {
    this.failure = null;
    this.failureBusy = false;
    this.blocked = this.switchBlocked() !== null;
    return this.blocked;
  }

  async pick(): Promise<void> {
    if (this.refusedNow()) return;
    try {
      const info = await this.api.pickProject();
      if (info !== null) await this.changed(info);
    } catch (error) {
      this.failed(error);
    }
  }

  async open(path: string): Promise<void> {
    if (this.refusedNow()) return;
    try {
      await this.changed(await this.api.openRecent(path));
    } catch (error) {
      this.failed(error);
      await this.loadRecent();
    }
  }

  /** Removes a recent entry; a refusal is said where the person acted (the entry stays listed). */
  async forget(path: string): Promise<void> {
    this.failure = null;
    this.failureBusy = false;
    try {
      await this.api.forgetRecent(path);
    } catch (error) {
      this.failure = `Could not remove ${path} from the recent projects: ${toCommandError(error).message}`;
    }
    await this.loadRecent();
  }

  reviewTrust(): void {
    if (this.trust) {
      this.trustError = null;
      this.dialogOpen = true;
    }
  }

  /** The dialog's answer. Trust binds to the digest it showed; a refusal keeps the dialog open
   * with the reason (e.g. the files changed since: the new prompt replaces the old one). */
  async decide(trust: boolean): Promise<void> {
    const prompt = this.trust;
    if (!prompt) return;
    const d = decide(prompt, trust);
    try {
      const next = d.kind === "trust" ? await this.api.trustProject(d.digest) : await this.api.distrustProject(d.digest);
      this.trust = next;
      this.dialogOpen = false;
    } catch (error) {
      const message = toCommandError(error).message;
      this.dialogOpen = false;
      await this.loadTrust();
      this.trustError = message;
      this.dialogOpen = true;
    }
  }
}
