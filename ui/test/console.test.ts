import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError, type Api } from "../src/api";
import type { CallResult } from "../src/bindings/CallResult";
import type { Event } from "../src/bindings/Event";
import type { NetworkAsk } from "../src/bindings/NetworkAsk";
import { ARM_DELAY_MS } from "../src/lib/answer-keys";
import { createConsole } from "../src/view/console";
import { TOOLS, confirmRequest, networkAsk } from "./fixtures";

const REQUEST = confirmRequest({
  call_id: "call_1",
  tool: "write_file",
  risk: "writes" as const,
  digest: "d1",
  target: "notes/todo.md",
  scope: ["project"],
  consequence: "replaces 2 lines",
  diff: "-a\n+b",
});

function result(partial: Partial<CallResult>): CallResult {
  return {
    tool_call_id: "call_1",
    run_id: "desktop_1",
    tool: "write_file",
    status: "ok",
    stage: null,
    error: null,
    model: "wrote notes/todo.md",
    client: {},
    duration_ms: 12,
    hooks: [],
    ...partial,
  };
}

/** A fake shell: emits the given events, then waits for an answer or a stop before finishing. */
function scriptedApi(events: Event[]) {
  const answers: Array<[string, boolean]> = [];
  const networkAnswers: Array<[string, string]> = [];
  const cancels: string[] = [];
  const calls: Array<[string, string]> = [];
  let finish: (r: CallResult) => void = () => {};
  let emit: (e: Event) => void = () => {};
  const api: Api = {
    projectInfo: async () => ({ root: "/p", data_dir: "/d", settings_files: [], settings_problems: [] }),
    listTools: async () => TOOLS,
    callTool: (tool, args, onEvent) => {
      calls.push([tool, args]);
      emit = onEvent;
      for (const e of events) onEvent(e);
      return new Promise((resolve) => (finish = resolve));
    },
    cancelCall: async (id) => {
      cancels.push(id);
      finish(result({ status: "cancelled", stage: "Execution", model: "cancelled" }));
      return true;
    },
    answerConfirm: async (id, approve) => {
      answers.push([id, approve]);
      emit({ type: "confirm_resolved", call_id: id, approved: approve });
      finish(approve ? result({}) : result({ status: "rejected", stage: "Authorization", model: "rejected" }));
      return true;
    },
    answerNetwork: async (askId, answer) => {
      networkAnswers.push([askId, answer]);
      emit({ type: "network_ask_resolved", call_id: "call_1", ask_id: askId, answer });
      return true;
    },
  };
  return { api, answers, networkAnswers, cancels, calls };
}

// Timers are fake (the inline Approve's arming); a flush waits on a macrotask that is not.
const flush = () => new Promise((r) => setImmediate(r));

/** Waits out the arming of the inline Approve. */
async function armed(): Promise<void> {
  vi.advanceTimersByTime(ARM_DELAY_MS);
  await flush();
}

let host: HTMLElement;
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  document.body.innerHTML = "<div id=host></div>";
  host = document.getElementById("host") as HTMLElement;
});
afterEach(() => {
  vi.useRealTimers();
});

describe("call console", () => {
  it("runs the chosen tool with the typed arguments, streams output and asks for confirmation", async () => {
    const s = scriptedApi([
      { type: "tool_started", call_id: "call_1", tool: "write_file", input: {} },
      { type: "tool_output_delta", call_id: "call_1", stream: "stdout", chunk: "line 1\n" },
      { type: "tool_output_delta", call_id: "call_1", stream: "stderr", chunk: "warn\n" },
      { type: "confirm_requested", call_id: "call_1", request: REQUEST },
    ]);
    let finished = 0;
    const c = createConsole(s.api, () => finished++);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    const select = host.querySelector('[data-testid="console-tool"]') as HTMLSelectElement;
    const args = host.querySelector('[data-testid="console-args"]') as HTMLTextAreaElement;
    select.value = "write_file";
    args.value = '{"path":"notes/todo.md","content":"b"}';
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();

    expect(s.calls).toEqual([["write_file", '{"path":"notes/todo.md","content":"b"}']]);
    expect(host.querySelector('[data-testid="console-stream"]')?.textContent).toBe("line 1\nwarn\n");
    expect(host.querySelector(".chunk-stderr")?.textContent).toBe("warn\n");
    const confirm = host.querySelector('[data-testid="confirm"]') as HTMLElement;
    expect(confirm.textContent).toContain("notes/todo.md");
    expect(confirm.textContent).toContain("replaces 2 lines");
    expect((host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).disabled).toBe(true);

    await armed();
    (host.querySelector('[data-testid="confirm-approve"]') as HTMLButtonElement).click();
    await flush();
    await flush();
    expect(s.answers).toEqual([["call_1", true]]);
    expect(host.querySelector('[data-testid="confirm"]')).toBeNull();
    const done = host.querySelector('[data-testid="call-result"]') as HTMLElement;
    expect(done.getAttribute("data-status")).toBe("ok");
    expect(host.querySelector('[data-testid="call-model"]')?.textContent).toBe("wrote notes/todo.md");
    expect(finished).toBe(1);
    expect((host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).disabled).toBe(false);
  });

  it("rejects by call id and shows the stage", async () => {
    const s = scriptedApi([
      { type: "tool_started", call_id: "call_1", tool: "write_file", input: {} },
      { type: "confirm_requested", call_id: "call_1", request: REQUEST },
    ]);
    const c = createConsole(s.api);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();
    (host.querySelector('[data-testid="confirm-reject"]') as HTMLButtonElement).click();
    await flush();
    await flush();
    expect(s.answers).toEqual([["call_1", false]]);
    expect(host.querySelector('[data-testid="call-result"]')?.getAttribute("data-status")).toBe("rejected");
    expect(host.querySelector('[data-testid="call-result"]')?.textContent).toContain("stage: Authorization");
  });

  it("shows the hooks that ran for the call, a blocking one with its reason", async () => {
    const s = scriptedApi([{ type: "tool_started", call_id: "call_1", tool: "write_file", input: {} }]);
    const blocked = result({
      status: "rejected",
      stage: "Authorization",
      model: "blocked by a hook",
      hooks: [
        {
          event: "pre_tool_call",
          level: "user",
          matcher: "write_file",
          command: "sh guard.sh",
          outcome: "blocked",
          exit_code: 2,
          duration_ms: 7,
          stdout: "",
          stderr: "no writes under notes/",
          truncated: false,
          decision: "block",
          reason: "no writes under notes/",
          note: null,
          problem: null,
        },
      ],
    });
    s.api.callTool = async () => blocked;
    const c = createConsole(s.api);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();
    await flush();
    const hooks = [...host.querySelectorAll('[data-testid="call-hook"]')];
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.getAttribute("data-outcome")).toBe("blocked");
    expect(hooks[0]!.textContent).toContain("pre_tool_call");
    expect(hooks[0]!.textContent).toContain("no writes under notes/");
  });

  it("a command synced with a container shows its project sync, refused paths revealed", async () => {
    const s = scriptedApi([{ type: "tool_started", call_id: "call_1", tool: "execute", input: {} }]);
    const synced = result({
      tool: "execute",
      model: "exit 0",
      sync: {
        copied_in: 1, removed_in: 0, brought_back: 0, brought_back_bytes: 0, deleted: 0, more_notes: 0, read_only: false,
        refused: [{ path: [{ kind: "text", text: ".git/hooks/pre-commit" }, { kind: "code", code: "ESC" }], why: [{ kind: "text", text: "protected path" }] }],
        skipped: [],
        incomplete: [{ kind: "text", text: "stopped" }],
      },
    });
    s.api.callTool = async () => synced;
    const c = createConsole(s.api);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();
    await flush();
    expect(host.querySelector('[data-testid="sync-counts"]')?.textContent).toContain("1 copied in");
    expect([...host.querySelectorAll('[data-testid="sync-refused"]')].map((e) => e.textContent)).toEqual([".git/hooks/pre-commit<ESC> protected path"]);
    expect(host.querySelector('[data-testid="sync-incomplete"]')?.textContent).toContain("INCOMPLETE (stopped)");
  });

  it("stops the running call by its id", async () => {
    const s = scriptedApi([{ type: "tool_started", call_id: "call_9", tool: "ls", input: {} }]);
    const c = createConsole(s.api);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();
    const stop = host.querySelector('[data-testid="console-stop"]') as HTMLButtonElement;
    expect(stop.disabled).toBe(false);
    stop.click();
    await flush();
    await flush();
    expect(s.cancels).toEqual(["call_9"]);
    expect(host.querySelector('[data-testid="call-result"]')?.getAttribute("data-status")).toBe("cancelled");
    expect(stop.disabled).toBe(true);
  });

  it("lets the person answer again when the answer could not be sent, and logs a refused stop", async () => {
    const s = scriptedApi([
      { type: "tool_started", call_id: "call_1", tool: "write_file", input: {} },
      { type: "confirm_requested", call_id: "call_1", request: REQUEST },
    ]);
    let fail = true;
    const api = {
      ...s.api,
      answerConfirm: async (id: string, approve: boolean) => {
        if (fail) throw new ApiError({ code: "ipc", stage: null, message: "not delivered" });
        return s.api.answerConfirm(id, approve);
      },
      cancelCall: async () => {
        throw new ApiError({ code: "project", stage: null, message: "no project is open" });
      },
    };
    const c = createConsole(api);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();
    (host.querySelector('[data-testid="console-stop"]') as HTMLButtonElement).click();
    await flush();
    await armed();
    (host.querySelector('[data-testid="confirm-approve"]') as HTMLButtonElement).click();
    await flush();
    await flush();
    const log = () => [...host.querySelectorAll('[data-testid="call-log"] li')].map((li) => li.textContent);
    expect(log()).toEqual(["Started write_file", "Could not stop the call: no project is open", "Could not send the answer: not delivered"]);
    const approve = host.querySelector('[data-testid="confirm-approve"]') as HTMLButtonElement;
    expect(approve.disabled).toBe(false);
    fail = false;
    approve.click();
    await flush();
    await flush();
    expect(s.answers).toEqual([["call_1", true]]);
    expect(host.querySelector('[data-testid="call-result"]')?.getAttribute("data-status")).toBe("ok");
  });

  it("arms the inline Approve like the approval dialog: a click as the request appears approves nothing (issue 22)", async () => {
    const s = scriptedApi([
      { type: "tool_started", call_id: "call_1", tool: "write_file", input: {} },
      { type: "confirm_requested", call_id: "call_1", request: REQUEST },
    ]);
    const c = createConsole(s.api);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();
    const approve = host.querySelector('[data-testid="confirm-approve"]') as HTMLButtonElement;
    expect(approve.disabled).toBe(true);
    expect(approve.getAttribute("data-armed")).toBe("false");
    // A click that lands anyway (the button under the pointer as it appears) does nothing.
    approve.disabled = false;
    approve.click();
    await flush();
    expect(s.answers).toEqual([]);
    vi.advanceTimersByTime(ARM_DELAY_MS - 1);
    await flush();
    expect(approve.getAttribute("data-armed")).toBe("false");
    // Coming back to the window re-arms.
    window.dispatchEvent(new FocusEvent("focus"));
    vi.advanceTimersByTime(ARM_DELAY_MS - 1);
    await flush();
    expect(approve.getAttribute("data-armed")).toBe("false");
    approve.click();
    await flush();
    expect(s.answers).toEqual([]);
    vi.advanceTimersByTime(1);
    await flush();
    expect(approve.getAttribute("data-armed")).toBe("true");
    expect(approve.disabled).toBe(false);
    approve.click();
    await flush();
    await flush();
    expect(s.answers).toEqual([["call_1", true]]);
  });

  it("shows a running command's network question and sends the answer by its id", async () => {
    const ask: NetworkAsk = networkAsk({ ask_id: "net_1", call_id: "call_1", host: "registry.example", port: 443, target: "npm install" });
    const s = scriptedApi([
      { type: "tool_started", call_id: "call_1", tool: "execute", input: {} },
      { type: "network_ask_requested", call_id: "call_1", ask },
    ]);
    const c = createConsole(s.api);
    host.appendChild(c.element);
    c.setTools(TOOLS);
    (host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).click();
    await flush();
    const dialog = document.querySelector('[data-testid="network-dialog"]') as HTMLElement;
    expect(dialog.querySelector('[data-testid="network-host"]')?.textContent).toBe("registry.example");
    const once = dialog.querySelector('[data-testid="network-once"]') as HTMLButtonElement;
    expect(once.disabled).toBe(true);
    await armed();
    once.click();
    await flush();
    await flush();
    expect(s.networkAnswers).toEqual([["net_1", "once"]]);
    expect(document.querySelector('[data-testid="network-dialog"]')).toBeNull();
    expect([...host.querySelectorAll('[data-testid="call-log"] li')].map((li) => li.textContent)).toContain("Network allowed once");
  });

  it("cannot run when no tool is active", () => {
    const c = createConsole(scriptedApi([]).api);
    host.appendChild(c.element);
    c.setTools(TOOLS.filter((t) => t.exposure !== "active"));
    expect((host.querySelector('[data-testid="console-run"]') as HTMLButtonElement).disabled).toBe(true);
  });
});
