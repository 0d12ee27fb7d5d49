// Generated from the core's settings field table (`src/settings/fields.rs`) by the desktop's
// `bindings::export_all`; do not edit. Regenerate with:
//     UPDATE_BINDINGS=1 cargo test -p aibuddy-desktop --test all bindings
import type { AuthorityRule } from "./AuthorityRule";
import type { FieldSpec } from "./FieldSpec";

/** Every settings key: its authority rule, whether only your own settings may set it, whether
 * the settings pages edit it and on which page, and its meaning. */
export const SETTINGS_FIELDS: readonly FieldSpec[] = [
  {
    "editable": false,
    "label": "Enabled tools",
    "may_hold_secrets": false,
    "meaning": "The tool configs a run may use; tools you did not enable become available through it.",
    "page": null,
    "path": "tools.enabled",
    "rule": "widens_by_entries_beyond_user",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Disabled tools",
    "may_hold_secrets": false,
    "meaning": "Tool configs a run may not use (MCP servers, `mcp:<server>`, are enabled unless listed here).",
    "page": null,
    "path": "tools.disabled",
    "rule": "widens_by_dropping_user_entries",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Sandbox",
    "may_hold_secrets": false,
    "meaning": "Where commands and file operations run: this machine (`local`) or a remote sandbox.",
    "page": null,
    "path": "sandbox.kind",
    "rule": "widens_when_differs",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Daytona sandbox",
    "may_hold_secrets": true,
    "meaning": "Where a remote Daytona sandbox runs, with what credentials.",
    "page": null,
    "path": "sandbox.daytona",
    "rule": "widens_when_differs",
    "user_only": null
  },
  {
    "editable": false,
    "label": "E2B sandbox",
    "may_hold_secrets": true,
    "meaning": "Where a remote E2B sandbox runs, with what credentials.",
    "page": null,
    "path": "sandbox.e2b",
    "rule": "widens_when_differs",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Container sandbox",
    "may_hold_secrets": false,
    "meaning": "Which image commands run in with `sandbox.kind` \"container\", where the project is inside, how it gets there (`project`: \"bind\" mounts it, for an engine on this machine; \"sync\" copies it in and brings the changes back, for any engine), and (user level only) the engine commands are sent to.",
    "page": null,
    "path": "sandbox.container",
    "rule": "widens_when_differs",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Auto-approve writes",
    "may_hold_secrets": false,
    "meaning": "File writes inside the project happen without asking you; commands and deletions always ask.",
    "page": "exec",
    "path": "confirm.auto_approve_writes",
    "rule": "widens_when_true",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Approval mode",
    "may_hold_secrets": false,
    "meaning": "How much you are asked before calls run: `ask`, `auto` or `read-only` (docs/approvals.md).",
    "page": null,
    "path": "approvals.mode",
    "rule": "widens_by_wider_mode",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Approval rules",
    "may_hold_secrets": false,
    "meaning": "Standing answers (allow, ask, deny) for commands and tools; allow rules run calls without asking you.",
    "page": null,
    "path": "approvals.rules",
    "rule": "widens_by_allow_rules",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Command time limit",
    "may_hold_secrets": false,
    "meaning": "How long a command may run when its call names no limit (milliseconds); the model may set one per call.",
    "page": null,
    "path": "exec.default_timeout_ms",
    "rule": "neutral",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Heartbeat",
    "may_hold_secrets": false,
    "meaning": "How often a long command says it is still running (seconds).",
    "page": null,
    "path": "exec.heartbeat_secs",
    "rule": "neutral",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Network for commands",
    "may_hold_secrets": false,
    "meaning": "Which hosts commands may reach, always through the app's proxy: none, the package registries, or allow and deny lists.",
    "page": "exec",
    "path": "exec.network",
    "rule": "widens_by_network_beyond_user",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Writable roots",
    "may_hold_secrets": false,
    "meaning": "Folders outside the project that commands may write.",
    "page": "exec",
    "path": "exec.writable_roots",
    "rule": "widens_when_non_empty",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Environment passed",
    "may_hold_secrets": false,
    "meaning": "Environment variables passed to commands even though their names look secret.",
    "page": "exec",
    "path": "exec.env_include",
    "rule": "widens_when_non_empty",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Environment withheld",
    "may_hold_secrets": false,
    "meaning": "Environment variables never passed to commands.",
    "page": "exec",
    "path": "exec.env_exclude",
    "rule": "widens_by_dropping_user_entries",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Credential locations",
    "may_hold_secrets": false,
    "meaning": "Credential folders commands may read, e.g. ~/.aws.",
    "page": "exec",
    "path": "exec.expose_credentials",
    "rule": "widens_when_non_empty",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Processes per command",
    "may_hold_secrets": false,
    "meaning": "How many processes (and threads) one command may have at once; a fork beyond it fails.",
    "page": "exec",
    "path": "exec.max_processes",
    "rule": "widens_above_user",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Namespaces",
    "may_hold_secrets": false,
    "meaning": "Commands run in their own namespaces where the host allows it; off is the weaker Landlock-only path (no hidden credentials).",
    "page": null,
    "path": "exec.namespaces",
    "rule": "widens_when_false",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Protected paths",
    "may_hold_secrets": false,
    "meaning": "Paths inside the project and every writable root that commands may read but neither change nor create, added to the built-in ones.",
    "page": "exec",
    "path": "exec.protected_paths",
    "rule": "widens_by_dropping_user_entries",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Built-in protected paths removed",
    "may_hold_secrets": false,
    "meaning": "Built-in protected paths that commands may change after all (exact names, e.g. .idea).",
    "page": "exec",
    "path": "exec.unprotected_paths",
    "rule": "widens_when_non_empty",
    "user_only": "ignored: only the user-level settings may remove protected paths (a project may add some with `exec.protected_paths`)"
  },
  {
    "editable": false,
    "label": "Search wait",
    "may_hold_secrets": false,
    "meaning": "How long a tool search waits for MCP servers still connecting (milliseconds).",
    "page": null,
    "path": "tool_search.connect_wait_ms",
    "rule": "neutral",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Default provider",
    "may_hold_secrets": false,
    "meaning": "The provider entry a run uses unless one is chosen.",
    "page": "providers",
    "path": "providers.default",
    "rule": "widens_when_differs",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Provider entry",
    "may_hold_secrets": false,
    "meaning": "A model provider entry (kind, model, URL): where a run sends the conversation, with your key.",
    "page": "providers",
    "path": "providers.*",
    "rule": "widens_when_differs",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Compaction threshold",
    "may_hold_secrets": false,
    "meaning": "The share of the model's context window past which older turns are summarized.",
    "page": null,
    "path": "agent.compaction_threshold",
    "rule": "neutral",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Turns kept",
    "may_hold_secrets": false,
    "meaning": "Turns always kept verbatim when older ones are summarized.",
    "page": null,
    "path": "agent.keep_recent_turns",
    "rule": "neutral",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Summary model",
    "may_hold_secrets": false,
    "meaning": "The model that writes summaries, which the run pays for (unset: the run's model).",
    "page": null,
    "path": "agent.summary_model",
    "rule": "widens_when_differs",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Step time limit",
    "may_hold_secrets": false,
    "meaning": "The longest one model response may take, retries included (a compaction summary too); past it the run ends with an error and the text streamed so far is kept.",
    "page": "providers",
    "path": "agent.step_timeout_secs",
    "rule": "widens_above_user",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Keep-alive limit",
    "may_hold_secrets": false,
    "meaning": "How long a response may send only keep-alives, with no text or tool call, before it counts as stalled and is retried.",
    "page": "providers",
    "path": "agent.keepalive_timeout_secs",
    "rule": "widens_above_user",
    "user_only": null
  },
  {
    "editable": true,
    "label": "Idle limit",
    "may_hold_secrets": false,
    "meaning": "How long a response may send nothing at all before it counts as stalled and is retried.",
    "page": "providers",
    "path": "agent.idle_timeout_secs",
    "rule": "widens_above_user",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Checkpoint size cap",
    "may_hold_secrets": false,
    "meaning": "Files larger than this (bytes) are not checkpointed, so a rewind cannot put them back.",
    "page": null,
    "path": "checkpoints.max_file_bytes",
    "rule": "widens_below_user",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Subagent profiles",
    "may_hold_secrets": false,
    "meaning": "Named profiles of the `agent` tool (description, tools, prompt); a subagent never gets more tools than its parent, and a project's profile of one of your names only narrows its tools.",
    "page": null,
    "path": "agents.profiles",
    "rule": "neutral",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Subagents at once",
    "may_hold_secrets": false,
    "meaning": "The most subagent runs one run may have running at once (1 to 16); more `agent` calls of a turn wait for a place.",
    "page": null,
    "path": "agents.max_concurrent",
    "rule": "widens_above_user",
    "user_only": null
  },
  {
    "editable": false,
    "label": "Before a tool call",
    "may_hold_secrets": false,
    "meaning": "Commands run before a tool call is authorized, with your authority and outside the sandbox; they may block it or ask you.",
    "page": null,
    "path": "hooks.pre_tool_call",
    "rule": "widens_when_non_empty",
    "user_only": null
  },
  {
    "editable": false,
    "label": "After a tool call",
    "may_hold_secrets": false,
    "meaning": "Commands run after a tool call, with your authority and outside the sandbox; they may add a note for the model.",
    "page": null,
    "path": "hooks.post_tool_call",
    "rule": "widens_when_non_empty",
    "user_only": null
  },
  {
    "editable": false,
    "label": "When a run starts",
    "may_hold_secrets": false,
    "meaning": "Commands run when a run starts, with your authority and outside the sandbox.",
    "page": null,
    "path": "hooks.run_start",
    "rule": "widens_when_non_empty",
    "user_only": null
  },
  {
    "editable": false,
    "label": "When a run ends",
    "may_hold_secrets": false,
    "meaning": "Commands run when a run ends, with your authority and outside the sandbox.",
    "page": null,
    "path": "hooks.run_end",
    "rule": "widens_when_non_empty",
    "user_only": null
  },
  {
    "editable": false,
    "label": "When a run waits for you",
    "may_hold_secrets": false,
    "meaning": "Commands run when a run waits for you (a confirmation or a question), with your authority and outside the sandbox.",
    "page": null,
    "path": "hooks.waiting_for_person",
    "rule": "widens_when_non_empty",
    "user_only": null
  }
];

/** What a project's value of a field with each rule needs before it applies. */
export const AUTHORITY_RULES: Record<AuthorityRule, string> = {
  "neutral": "A project's value applies at once: it gives no authority.",
  "widens_above_user": "A project's value above your own applies only once the project is trusted; a lower one applies at once.",
  "widens_below_user": "A project's value below your own applies only once the project is trusted; a higher one applies at once.",
  "widens_by_allow_rules": "A project's ask and deny rules apply at once, added to yours; its allow rules only once the project is trusted.",
  "widens_by_dropping_user_entries": "A project's list applies at once when it keeps every entry of yours; until the project is trusted, your entries are kept beside it.",
  "widens_by_entries_beyond_user": "A project's entries that yours has too apply at once; the others only once the project is trusted.",
  "widens_by_network_beyond_user": "A project's value applies at once when it is off, or when your allow list covers each host it allows and it keeps your denied hosts; until the project is trusted, only the covered hosts and both deny lists apply.",
  "widens_by_wider_mode": "A project may only make the mode stricter (auto, then ask, then read-only); a wider mode from a project is never applied, trusted or not.",
  "widens_when_differs": "A project's value that differs from your own applies only once the project is trusted.",
  "widens_when_false": "A project's `false` applies only once the project is trusted (unless yours is `false` too); `true` applies at once.",
  "widens_when_non_empty": "A project's non-empty value applies only once the project is trusted; an empty one applies at once.",
  "widens_when_true": "A project's `true` applies only once the project is trusted (unless yours is `true` too); `false` applies at once."
};
