// PROVISIONAL: hand-written mirrors of the run API's serde JSON (src/agent/events.rs `RunEvent`,
// aibuddy_store `RunStatus`/`Usage`, and the desktop run commands of issue 11/12). They are REPLACED
// by generated ts-rs bindings in ui/src/bindings/ as soon as the shell exports them; nothing else in
// the UI may declare IPC types by hand, and every import of a run type goes through this one file.
import type { CallStatus } from "../bindings/CallStatus";
import type { ConfirmRequest } from "../bindings/ConfirmRequest";
import type { OutputStream } from "../bindings/OutputStream";
import type { Stage } from "../bindings/Stage";

/** aibuddy_store::RunStatus (snake_case). */
export type RunStatus = "running" | "completed" | "cancelled" | "error" | "max_steps" | "interrupted";

/** aibuddy_store::Usage. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
}

/** One question of `ask_user` (being added by issue 11). */
export interface AskUserQuestion {
  tool_call_id: string;
  question: string;
  /** Choices offered; may be empty (free text only). */
  options: string[];
  /** More than one option may be chosen. */
  multi_select: boolean;
  /** A free-text answer is allowed (besides or instead of the options). */
  allow_free_text: boolean;
}

/** `answer_ask_user {runId, toolCallId, answer}`: `null` declines to answer. */
export type AskUserAnswer = { selected: string[]; text: string | null } | null;

/** src/agent/events.rs `RunEvent` (serde tag `type`, snake_case). */
export type RunEvent =
  | { type: "run_started"; run_id: string; provider: string; model: string; presentation: string }
  | { type: "text_delta"; text: string }
  | { type: "tool_call"; tool_call_id: string; tool: string; input: unknown }
  | { type: "tool_output"; tool_call_id: string; stream: OutputStream; chunk: string }
  | {
      type: "tool_result";
      tool_call_id: string;
      status: CallStatus;
      stage: Stage | null;
      model: string;
      /** Optional until the shell sends them (requested from issue 11). */
      duration_ms?: number;
      exit_code?: number | null;
    }
  | { type: "confirm_request"; tool_call_id: string; request: ConfirmRequest }
  | { type: "heartbeat"; tool_call_id: string }
  | { type: "retry"; step: number; attempt: number; delay_ms: number; reason: string }
  | { type: "compaction"; covers_from: number; covers_to: number }
  | ({ type: "ask_user" } & AskUserQuestion)
  | { type: "run_finished"; run_id: string; status: RunStatus; stage: Stage | null; usage: Usage }
  /** Replayed transcripts (show_run) carry the person's prompts as events too. */
  | { type: "user_prompt"; text: string };

/** Payload of the Tauri event `run-event`. */
export interface RunEventEnvelope {
  run_id: string;
  event: RunEvent;
}

/** `start_run` result. */
export interface StartedRun {
  run_id: string;
}

/** One row of `list_runs {limit?, before?}`, newest first. */
export interface RunSummary {
  run_id: string;
  /** First prompt (or a title derived from it). */
  title: string;
  status: RunStatus;
  started_at: string;
  provider: string;
  model: string;
}

/** `show_run {runId}`: the stored run replayed as the events a live run would have sent. */
export interface RunTranscript {
  run: RunSummary;
  events: RunEvent[];
}
