// The window's own state, apart from its view (../components/App.svelte, which renders it): the
// tab shown, the open project's info and settings problems, the tool list, whether a console call
// is in progress, and the project controller (switching, trust) with the rule that refuses a
// switch while this window's run or console call is in progress. Loading is here; the view only
// renders and forwards the person's actions.
import type { CommandError } from "../bindings/CommandError";
import type { ProjectInfo } from "../bindings/ProjectInfo";
import type { ToolListing } from "../bindings/ToolListing";
import { toCommandError } from "../lib/invoke";
import { ProjectController } from "../project/controller.svelte";
import { isActive } from "../run/state";
import type { Services } from "../services";

export type Tab = "run" | "tools" | "history" | "settings";

export const TABS: { id: Tab; label: string }[] = [
  { id: "run", label: "Conversation" },
  { id: "tools", label: "Tools" },
  { id: "history", label: "History" },
  { id: "settings", label: "Settings" },
];

export class WindowStore {
  tab: Tab = $state("tools");
  project: ProjectInfo | null = $state(null);
  projectError: CommandError | null = $state(null);
  tools: ToolListing[] = $state([]);
  toolsError: CommandError | null = $state(null);
  toolsLoading = $state(true);
  /** A call of the console is in progress (bound to the console's own state). */
  consoleRunning = $state(false);
  /** Project switching and trust; null without the project commands. */
  readonly place: ProjectController | null;
  /** Told every tool list loaded (the console's tool choice); set by the view. */
  onTools: (tools: ToolListing[]) => void = () => undefined;

  constructor(
    private readonly services: Pick<Services, "api" | "runs" | "projects" | "choice">,
    initialTab: Tab = "run",
  ) {
    this.tab = services.runs ? initialTab : "tools";
    this.place = services.projects
      ? new ProjectController(
          services.projects,
          () => this.projectChanged(),
          () => this.switchBlocked(),
        )
      : null;
  }

  /** The tabs shown: the conversation only with a run controller. */
  get tabs(): { id: Tab; label: string; key: number }[] {
    return TABS.map((t, i) => ({ ...t, key: i + 1 })).filter((t) => t.id !== "run" || this.services.runs !== null);
  }

  /** Alt+1..4: the tab of that number, if shown; whether it was one. */
  showTabNumber(n: number): boolean {
    const target = TABS[n - 1];
    if (!target || (target.id === "run" && !this.services.runs)) return false;
    this.tab = target.id;
    return true;
  }

  /** The shell refuses a switch while this window's run or console call is in progress: said
   * before asking it. */
  switchBlocked(): string | null {
    const runs = this.services.runs;
    if (runs && isActive(runs.state)) return "A run is in progress in this project: stop it first, then open another project.";
    if (this.consoleRunning) return "A tool call is running in this project: stop it first, then open another project.";
    return null;
  }

  async loadTools(): Promise<void> {
    this.toolsLoading = true;
    try {
      this.tools = await this.services.api.listTools();
      this.toolsError = null;
    } catch (error) {
      this.tools = [];
      this.toolsError = toCommandError(error);
    } finally {
      this.toolsLoading = false;
      this.onTools(this.tools);
    }
  }

  private async loadProject(): Promise<void> {
    try {
      this.project = await this.services.api.projectInfo();
    } catch (error) {
      this.projectError = toCommandError(error);
    }
  }

  /** Loads project and tools (the history loads itself); resolves when both settled. */
  async load(): Promise<void> {
    await Promise.all([this.loadProject(), this.loadTools()]);
    await this.place?.connect(this.project, this.projectError !== null);
  }

  /** Another project is open (or none): every view starts over for it. */
  private projectChanged(): void {
    this.project = this.place?.info ?? null;
    this.projectError = null;
    this.services.choice.reset();
    this.services.runs?.projectChanged();
    void this.loadTools();
  }
}
