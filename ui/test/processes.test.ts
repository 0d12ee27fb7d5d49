import { flushSync, mount, unmount } from "svelte";
import { afterEach, describe, expect, it } from "vitest";
import type { ProcessRow } from "../src/bindings/ProcessRow";
import ProcessesPanel from "../src/components/run/ProcessesPanel.svelte";
import { createProcessesApi, type ProcessesApi } from "../src/run/processes-api";

const row = (over: Partial<ProcessRow>): ProcessRow => ({
  process_id: "bg1",
  run_id: "01RUN",
  command: "npm run dev",
  running: true,
  kept: false,
  status: "running",
  output_bytes: 12,
  tail: "ready on :3000\n",
  ...over,
});

/** A fake table: Stop ends the process, as the shell's `stop_process` does. */
function fakeApi(rows: ProcessRow[]) {
  const stopped: string[] = [];
  const kept: [string, boolean][] = [];
  const api: ProcessesApi = {
    keepProcess: async (id, keep) => {
      kept.push([id, keep]);
      const r = rows.find((x) => x.process_id === id);
      if (r) r.kept = keep;
      return r !== undefined;
    },
    listProcesses: async () => rows.map((r) => ({ ...r })),
    stopProcess: async (id) => {
      stopped.push(id);
      const r = rows.find((x) => x.process_id === id);
      if (!r) return false;
      r.running = false;
      r.status = "ended (stopped, signal 9) after 900 ms";
      return true;
    },
  };
  return { api, stopped, kept };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("processes panel", () => {
  let host: HTMLElement;
  let c: ReturnType<typeof mount> | null = null;
  afterEach(() => {
    if (c) unmount(c);
    c = null;
    host?.remove();
  });

  it("shows each process with its output as text and stops one", async () => {
    const { api, stopped, kept } = fakeApi([
      row({}),
      row({ process_id: "bg2", command: "<img src=x onerror=alert(1)>", running: false, status: "ended (exit code 0) after 10 ms", tail: "<b>bold?</b>" }),
    ]);
    host = document.createElement("div");
    document.body.append(host);
    c = mount(ProcessesPanel, { target: host, props: { api, intervalMs: 60_000 } });
    await tick();
    flushSync();
    const items = [...host.querySelectorAll('[data-testid="process"]')];
    expect(items.length).toBe(2);
    const [first, second] = items as [Element, Element];
    expect(first.querySelector('[data-testid="process-output"]')?.textContent).toBe("ready on :3000\n");
    // Untrusted command and output stay text.
    expect(host.querySelector("img")).toBeNull();
    expect(host.querySelector("b")).toBeNull();
    expect(second.querySelector('[data-testid="process-output"]')?.textContent).toBe("<b>bold?</b>");
    // Keep: only a running process offers it.
    const keeps = [...host.querySelectorAll<HTMLInputElement>('[data-testid="process-keep"]')];
    expect(keeps.length).toBe(1);
    keeps[0]?.click();
    await tick();
    await tick();
    flushSync();
    expect(kept).toEqual([["bg1", true]]);
    expect(host.querySelector<HTMLInputElement>('[data-testid="process-keep"]')?.checked).toBe(true);
    const stops = [...host.querySelectorAll<HTMLButtonElement>('[data-testid="process-stop"]')] as [HTMLButtonElement, HTMLButtonElement];
    expect(stops[1].disabled).toBe(true);
    stops[0].click();
    await tick();
    await tick();
    flushSync();
    expect(stopped).toEqual(["bg1"]);
    expect(host.querySelector('[data-process-id="bg1"] [data-testid="process-status"]')?.textContent).toBe(
      "ended (stopped, signal 9) after 900 ms",
    );
  });

  it("shows nothing while there are no processes", async () => {
    host = document.createElement("div");
    document.body.append(host);
    c = mount(ProcessesPanel, { target: host, props: { api: fakeApi([]).api, intervalMs: 60_000 } });
    await tick();
    flushSync();
    expect(host.querySelector('[data-testid="processes-panel"]')).toBeNull();
  });

  it("calls the shell's commands by name", async () => {
    const calls: [string, unknown][] = [];
    const api = createProcessesApi(async <T,>(cmd: string, args?: Record<string, unknown>) => {
      calls.push([cmd, args]);
      return (cmd === "list_processes" ? [] : true) as T;
    });
    await api.listProcesses();
    expect(await api.stopProcess("bg3")).toBe(true);
    expect(await api.keepProcess("bg4", true)).toBe(true);
    expect(calls).toEqual([
      ["list_processes", undefined],
      ["stop_process", { processId: "bg3" }],
      ["keep_process", { processId: "bg4", keep: true }],
    ]);
  });
});
