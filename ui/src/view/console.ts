// The call console: pick an active tool, give its arguments as JSON, run it through the core's full
// pipeline, watch live output, answer confirmations, stop it. Every decision is the core's; the
// console only displays events and sends the person's answers back by call id.
import type { Api } from "../api";
import { toCommandError } from "../api";
import type { CallResult } from "../bindings/CallResult";
import type { ConfirmRequest } from "../bindings/ConfirmRequest";
import type { Event } from "../bindings/Event";
import type { ToolListing } from "../bindings/ToolListing";
import { riskLabel, toolState } from "../model";
import { h, replaceChildren } from "./dom";

export interface Console {
  element: HTMLElement;
  setTools(tools: readonly ToolListing[]): void;
}

function renderConfirm(request: ConfirmRequest, answer: (approve: boolean) => Promise<void>): HTMLElement {
  const approve = h("button", { class: "button button-primary", type: "button", "data-testid": "confirm-approve" }, "Approve");
  const reject = h("button", { class: "button", type: "button", "data-testid": "confirm-reject" }, "Reject");
  const card = h(
    "div",
    { class: "confirm", role: "alertdialog", "aria-label": `Confirm ${request.tool}`, "data-testid": "confirm" },
    h("p", { class: "confirm-title" }, `${request.tool} needs your approval `, h("span", { class: `badge risk risk-${request.risk}` }, riskLabel(request.risk))),
    h("dl", {},
      h("dt", {}, "Target"), h("dd", {}, h("code", {}, request.target)),
      h("dt", {}, "Scope"), h("dd", {}, request.scope.length ? request.scope.join(", ") : "—"),
      h("dt", {}, "Consequence"), h("dd", {}, request.consequence),
    ),
    request.diff ? h("pre", { class: "confirm-diff" }, request.diff) : null,
    h("div", { class: "confirm-actions" }, approve, reject),
  );
  const decide = (value: boolean) => {
    approve.setAttribute("disabled", "");
    reject.setAttribute("disabled", "");
    void answer(value);
  };
  approve.addEventListener("click", () => decide(true));
  reject.addEventListener("click", () => decide(false));
  return card;
}

function renderResult(result: CallResult): HTMLElement {
  return h(
    "div",
    { class: `result result-${result.status}`, "data-testid": "call-result", "data-status": result.status },
    h(
      "p",
      { class: "result-head" },
      h("span", { class: `pill status-${result.status}` }, result.status),
      result.stage ? h("span", { class: "badge" }, `stage: ${result.stage}`) : null,
      h("span", { class: "result-meta" }, `${result.tool} · ${result.duration_ms} ms · ${result.tool_call_id}`),
    ),
    h("p", { class: "result-label" }, "What the model sees"),
    h("pre", { class: "result-model", "data-testid": "call-model" }, result.model),
  );
}

/** `onFinished` runs after every call ends (recorded or failed), e.g. to refresh the history. */
export function createConsole(api: Api, onFinished: () => void = () => {}): Console {
  const select = h("select", { class: "input", "aria-label": "Tool", "data-testid": "console-tool" });
  const args = h("textarea", {
    class: "input args",
    rows: "3",
    spellcheck: "false",
    "aria-label": "Arguments (JSON)",
    "data-testid": "console-args",
  });
  args.value = "{}";
  const run = h("button", { class: "button button-primary", type: "button", "data-testid": "console-run", disabled: true }, "Run");
  const stop = h("button", { class: "button", type: "button", "data-testid": "console-stop", disabled: true }, "Stop");
  const output = h(
    "div",
    { class: "console-output", "aria-live": "polite", "data-testid": "console-output" },
    h(
      "p",
      { class: "console-hint" },
      "Pick an active tool and give its arguments as JSON. The call goes through the same checks as the agent's: writes and commands ask for your approval first.",
    ),
  );

  let running = false;
  let callId: string | null = null;
  let hasTools = false;

  const setEnabled = () => {
    const canRun = !running && hasTools;
    if (canRun) run.removeAttribute("disabled");
    else run.setAttribute("disabled", "");
    if (running && callId) stop.removeAttribute("disabled");
    else stop.setAttribute("disabled", "");
  };

  const setTools = (tools: readonly ToolListing[]) => {
    const previous = select.value;
    const callable = tools.filter((t) => toolState(t) === "active").map((t) => t.name).sort();
    replaceChildren(select, ...callable.map((name) => h("option", { value: name }, name)));
    if (callable.includes(previous)) select.value = previous;
    hasTools = callable.length > 0;
    setEnabled();
  };

  const start = async () => {
    running = true;
    callId = null;
    setEnabled();
    const streams = h("pre", { class: "stream", "data-testid": "console-stream" });
    const log = h("ul", { class: "call-log", "data-testid": "call-log" });
    replaceChildren(output, log, streams);
    const note = (text: string) => log.appendChild(h("li", {}, text));

    const onEvent = (event: Event) => {
      switch (event.type) {
        case "tool_started":
          callId = event.call_id;
          note(`Started ${event.tool}`);
          setEnabled();
          break;
        case "tool_output_delta":
          streams.appendChild(h("span", { class: `chunk chunk-${event.stream}` }, event.chunk));
          break;
        case "tool_progress":
          note(`Progress ${event.progress}${event.total !== null ? ` / ${event.total}` : ""}${event.message ? `: ${event.message}` : ""}`);
          break;
        case "confirm_requested":
          output.insertBefore(
            renderConfirm(event.request, async (approve) => {
              try {
                await api.answerConfirm(event.call_id, approve);
              } catch (error) {
                note(`Could not send the answer: ${toCommandError(error).message}`);
              }
            }),
            streams,
          );
          break;
        case "confirm_resolved":
          note(event.approved ? "Approved" : "Rejected");
          output.querySelector('[data-testid="confirm"]')?.remove();
          break;
        case "tool_compacted":
          note(`Compacted for the model (${event.strategy}): ${event.tokens_before} → ${event.tokens_after} tokens`);
          break;
        case "heartbeat":
        case "tool_finished":
          break;
      }
    };

    try {
      const result = await api.callTool(select.value, args.value, onEvent);
      output.querySelector('[data-testid="confirm"]')?.remove();
      output.appendChild(renderResult(result));
    } catch (error) {
      const e = toCommandError(error);
      output.appendChild(h("div", { class: "error-card", role: "alert", "data-testid": "call-error" }, h("p", { class: "error-message" }, e.message)));
    } finally {
      running = false;
      callId = null;
      setEnabled();
      onFinished();
    }
  };

  run.addEventListener("click", () => void start());
  stop.addEventListener("click", () => {
    if (callId) void api.cancelCall(callId);
  });

  const element = h(
    "div",
    { class: "console", "data-testid": "console" },
    h("div", { class: "console-form" }, select, args, h("div", { class: "console-actions" }, run, stop)),
    output,
  );
  return { element, setTools };
}
