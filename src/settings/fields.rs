//! The one table of settings fields ([`FIELDS`]): for every key a settings file may hold, its
//! authority rule (what a project's value needs: [`AuthorityRule`], decided by
//! [`super::authority`]), whether only the user level may set it, whether the window's settings
//! pages edit it and on which page, whether it may hold credentials, and its meaning (one
//! sentence, as the person reads it). A new setting is a typed field in [`super::Settings`] plus
//! one row here; the tests below fail until both agree with what the parser accepts.
//!
//! Who reads it: the authority decision ([`super::authority::effect`]), layering (user-only
//! fields, values shown only by their keys), the edit of a project file, the desktop's settings
//! pages (what is editable, which sections it shows) and, through the generated bindings
//! (`ui/src/bindings/settingsFields.ts`, written by the desktop's `bindings::export_all`), the
//! UI's field labels, hints, authority hints and the trust dialog's meanings.
//!
//! A path is `section.field`, or `section.*` for a section whose keys are names (`providers`).
//! An object-valued key (`sandbox.daytona`) is one row like any other: its rule compares the whole
//! object with the user level's.

use serde::Serialize;
use ts_rs::TS;

/// What a project file's value of a field needs before it applies (the user level is what it is
/// compared with). Each rule's sentence is [`AuthorityRule::describe`]; the decision is
/// `authority::decide`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum AuthorityRule {
    /// Timings and display: never widens.
    Neutral,
    /// Widens when it differs from the user level's value (a whole object compared as JSON).
    WidensWhenDiffers,
    /// Widens when `true` and the user level's is `false`.
    WidensWhenTrue,
    /// Widens when `false` and the user level's is `true`.
    WidensWhenFalse,
    /// Widens when a non-empty list (`[]` narrows).
    WidensWhenNonEmpty,
    /// A limit: widens when above the user level's.
    WidensAboveUser,
    /// A floor: widens when below the user level's.
    WidensBelowUser,
    /// A list of things turned off: widens when it drops one of the user level's entries
    /// (untrusted: the union applies).
    WidensByDroppingUserEntries,
    /// A list of things turned on: widens by the entries the user level does not have
    /// (untrusted: only the shared ones apply).
    WidensByEntriesBeyondUser,
    /// `exec.network`: widens by hosts the user level does not allow, or by dropping its denied
    /// hosts (untrusted: the covered allow entries and both deny lists apply).
    WidensByNetworkBeyondUser,
    /// `approvals.mode`: widens when less strict than the user level's.
    WidensByWiderMode,
    /// `approvals.rules`: widens by its `allow` rules (untrusted: the others apply).
    WidensByAllowRules,
}

impl AuthorityRule {
    /// Every rule, in declaration order (the generated bindings list each one's sentence).
    pub const ALL: &'static [AuthorityRule] = &[
        AuthorityRule::Neutral,
        AuthorityRule::WidensWhenDiffers,
        AuthorityRule::WidensWhenTrue,
        AuthorityRule::WidensWhenFalse,
        AuthorityRule::WidensWhenNonEmpty,
        AuthorityRule::WidensAboveUser,
        AuthorityRule::WidensBelowUser,
        AuthorityRule::WidensByDroppingUserEntries,
        AuthorityRule::WidensByEntriesBeyondUser,
        AuthorityRule::WidensByNetworkBeyondUser,
        AuthorityRule::WidensByWiderMode,
        AuthorityRule::WidensByAllowRules,
    ];

    /// The rule as one sentence for the person: what a project's value of such a field needs.
    pub fn describe(self) -> &'static str {
        match self {
            AuthorityRule::Neutral => "A project's value applies at once: it gives no authority.",
            AuthorityRule::WidensWhenDiffers => {
                "A project's value that differs from your own applies only once the project is trusted."
            }
            AuthorityRule::WidensWhenTrue => {
                "A project's `true` applies only once the project is trusted (unless yours is `true` too); `false` applies at once."
            }
            AuthorityRule::WidensWhenFalse => {
                "A project's `false` applies only once the project is trusted (unless yours is `false` too); `true` applies at once."
            }
            AuthorityRule::WidensWhenNonEmpty => {
                "A project's non-empty value applies only once the project is trusted; an empty one applies at once."
            }
            AuthorityRule::WidensAboveUser => {
                "A project's value above your own applies only once the project is trusted; a lower one applies at once."
            }
            AuthorityRule::WidensBelowUser => {
                "A project's value below your own applies only once the project is trusted; a higher one applies at once."
            }
            AuthorityRule::WidensByDroppingUserEntries => {
                "A project's list applies at once when it keeps every entry of yours; until the project is trusted, your entries are kept beside it."
            }
            AuthorityRule::WidensByEntriesBeyondUser => {
                "A project's entries that yours has too apply at once; the others only once the project is trusted."
            }
            AuthorityRule::WidensByNetworkBeyondUser => {
                "A project's value applies at once when it is off, or when your allow list covers each host it allows and it keeps your denied hosts; until the project is trusted, only the covered hosts and both deny lists apply."
            }
            AuthorityRule::WidensByWiderMode => {
                "A project may only make the mode stricter (auto, then ask, then read-only); a wider mode from a project is never applied, trusted or not."
            }
            AuthorityRule::WidensByAllowRules => {
                "A project's ask and deny rules apply at once, added to yours; its allow rules only once the project is trusted."
            }
        }
    }
}

/// The window's settings pages (the MCP page edits `mcp.json`, not these keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum SettingsPage {
    /// Model providers and the time limits of a model response.
    Providers,
    /// Commands and approvals.
    Exec,
}

/// One settings key, a row of the core's field table (`src/settings/fields.rs`, [`FIELDS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct FieldSpec {
    /// `section.field`, or `section.*` for every key of a section whose keys are names.
    pub path: &'static str,
    /// A short name (the settings page's label).
    pub label: &'static str,
    /// What the field governs, in one sentence.
    pub meaning: &'static str,
    /// What a project file's value needs before it applies.
    pub rule: AuthorityRule,
    /// Set when only the user-level file may set the field: the problem of a project's value,
    /// which is ignored (trusted or not) and never written by the window.
    pub user_only: Option<&'static str>,
    /// The window's settings pages may write it.
    pub editable: bool,
    /// The page that shows it (none: the window does not show it).
    pub page: Option<SettingsPage>,
    /// It may hold credentials: the trust dialog shows only its keys, the pages never show it.
    pub may_hold_secrets: bool,
}

impl FieldSpec {
    /// `(section, field)` of the path (`field` is `*` for a wildcard row).
    pub fn split(&self) -> (&'static str, &'static str) {
        self.path.split_once('.').unwrap_or((self.path, ""))
    }
}

/// A row with the usual columns: neither user-only, editable, shown nor secret.
const fn row(
    path: &'static str,
    label: &'static str,
    rule: AuthorityRule,
    meaning: &'static str,
) -> FieldSpec {
    FieldSpec {
        path,
        label,
        meaning,
        rule,
        user_only: None,
        editable: false,
        page: None,
        may_hold_secrets: false,
    }
}

/// A row the settings page `page` shows and edits.
const fn edited(
    path: &'static str,
    label: &'static str,
    rule: AuthorityRule,
    page: SettingsPage,
    meaning: &'static str,
) -> FieldSpec {
    FieldSpec {
        editable: true,
        page: Some(page),
        ..row(path, label, rule, meaning)
    }
}

/// A row whose value may hold credentials.
const fn secret(
    path: &'static str,
    label: &'static str,
    rule: AuthorityRule,
    meaning: &'static str,
) -> FieldSpec {
    FieldSpec {
        may_hold_secrets: true,
        ..row(path, label, rule, meaning)
    }
}

/// The problem of a project's `exec.unprotected_paths`.
pub const UNPROTECTED_USER_ONLY: &str = "ignored: only the user-level settings may remove protected paths (a project may add some with `exec.protected_paths`)";

use AuthorityRule as R;
use SettingsPage as P;

/// Every settings key, in the order of [`super::Settings`].
pub static FIELDS: &[FieldSpec] = &[
    row(
        "tools.enabled",
        "Enabled tools",
        R::WidensByEntriesBeyondUser,
        "The tool configs a run may use; tools you did not enable become available through it.",
    ),
    row(
        "tools.disabled",
        "Disabled tools",
        R::WidensByDroppingUserEntries,
        "Tool configs a run may not use (MCP servers, `mcp:<server>`, are enabled unless listed here).",
    ),
    row(
        "sandbox.kind",
        "Sandbox",
        R::WidensWhenDiffers,
        "Where commands and file operations run: this machine (`local`) or a remote sandbox.",
    ),
    secret(
        "sandbox.daytona",
        "Daytona sandbox",
        R::WidensWhenDiffers,
        "Where a remote Daytona sandbox runs, with what credentials.",
    ),
    secret(
        "sandbox.e2b",
        "E2B sandbox",
        R::WidensWhenDiffers,
        "Where a remote E2B sandbox runs, with what credentials.",
    ),
    row(
        "sandbox.container",
        "Container sandbox",
        R::WidensWhenDiffers,
        "Which image commands run in with `sandbox.kind` \"container\", where the project is inside, how it gets there (`project`: \"bind\" mounts it, for an engine on this machine; \"sync\" copies it in and brings the changes back, for any engine), and (user level only) the engine commands are sent to.",
    ),
    edited(
        "confirm.auto_approve_writes",
        "Auto-approve writes",
        R::WidensWhenTrue,
        P::Exec,
        "File writes inside the project happen without asking you; commands and deletions always ask.",
    ),
    row(
        "approvals.mode",
        "Approval mode",
        R::WidensByWiderMode,
        "How much you are asked before calls run: `ask`, `auto` or `read-only` (docs/approvals.md).",
    ),
    row(
        "approvals.rules",
        "Approval rules",
        R::WidensByAllowRules,
        "Standing answers (allow, ask, deny) for commands and tools; allow rules run calls without asking you.",
    ),
    row(
        "exec.default_timeout_ms",
        "Command time limit",
        R::Neutral,
        "How long a command may run when its call names no limit (milliseconds); the model may set one per call.",
    ),
    row(
        "exec.heartbeat_secs",
        "Heartbeat",
        R::Neutral,
        "How often a long command says it is still running (seconds).",
    ),
    edited(
        "exec.network",
        "Network for commands",
        R::WidensByNetworkBeyondUser,
        P::Exec,
        "Which hosts commands may reach, always through the app's proxy: none, the package registries, or allow and deny lists.",
    ),
    edited(
        "exec.writable_roots",
        "Writable roots",
        R::WidensWhenNonEmpty,
        P::Exec,
        "Folders outside the project that commands may write.",
    ),
    edited(
        "exec.env_include",
        "Environment passed",
        R::WidensWhenNonEmpty,
        P::Exec,
        "Environment variables passed to commands even though their names look secret.",
    ),
    edited(
        "exec.env_exclude",
        "Environment withheld",
        R::WidensByDroppingUserEntries,
        P::Exec,
        "Environment variables never passed to commands.",
    ),
    edited(
        "exec.expose_credentials",
        "Credential locations",
        R::WidensWhenNonEmpty,
        P::Exec,
        "Credential folders commands may read, e.g. ~/.aws.",
    ),
    edited(
        "exec.max_processes",
        "Processes per command",
        R::WidensAboveUser,
        P::Exec,
        "How many processes (and threads) one command may have at once; a fork beyond it fails.",
    ),
    row(
        "exec.namespaces",
        "Namespaces",
        R::WidensWhenFalse,
        "Commands run in their own namespaces where the host allows it; off is the weaker Landlock-only path (no hidden credentials).",
    ),
    edited(
        "exec.protected_paths",
        "Protected paths",
        R::WidensByDroppingUserEntries,
        P::Exec,
        "Paths inside the project and every writable root that commands may read but neither change nor create, added to the built-in ones.",
    ),
    FieldSpec {
        user_only: Some(UNPROTECTED_USER_ONLY),
        ..edited(
            "exec.unprotected_paths",
            "Built-in protected paths removed",
            R::WidensWhenNonEmpty,
            P::Exec,
            "Built-in protected paths that commands may change after all (exact names, e.g. .idea).",
        )
    },
    row(
        "tool_search.connect_wait_ms",
        "Search wait",
        R::Neutral,
        "How long a tool search waits for MCP servers still connecting (milliseconds).",
    ),
    edited(
        "providers.default",
        "Default provider",
        R::WidensWhenDiffers,
        P::Providers,
        "The provider entry a run uses unless one is chosen.",
    ),
    edited(
        "providers.*",
        "Provider entry",
        R::WidensWhenDiffers,
        P::Providers,
        "A model provider entry (kind, model, URL): where a run sends the conversation, with your key.",
    ),
    row(
        "agent.compaction_threshold",
        "Compaction threshold",
        R::Neutral,
        "The share of the model's context window past which older turns are summarized.",
    ),
    row(
        "agent.keep_recent_turns",
        "Turns kept",
        R::Neutral,
        "Turns always kept verbatim when older ones are summarized.",
    ),
    row(
        "agent.summary_model",
        "Summary model",
        R::WidensWhenDiffers,
        "The model that writes summaries, which the run pays for (unset: the run's model).",
    ),
    edited(
        "agent.step_timeout_secs",
        "Step time limit",
        R::WidensAboveUser,
        P::Providers,
        "The longest one model response may take, retries included (a compaction summary too); past it the run ends with an error and the text streamed so far is kept.",
    ),
    edited(
        "agent.keepalive_timeout_secs",
        "Keep-alive limit",
        R::WidensAboveUser,
        P::Providers,
        "How long a response may send only keep-alives, with no text or tool call, before it counts as stalled and is retried.",
    ),
    edited(
        "agent.idle_timeout_secs",
        "Idle limit",
        R::WidensAboveUser,
        P::Providers,
        "How long a response may send nothing at all before it counts as stalled and is retried.",
    ),
    row(
        "checkpoints.max_file_bytes",
        "Checkpoint size cap",
        R::WidensBelowUser,
        "Files larger than this (bytes) are not checkpointed, so a rewind cannot put them back.",
    ),
    row(
        "agents.profiles",
        "Subagent profiles",
        R::Neutral,
        "Named profiles of the `agent` tool (description, tools, prompt); a subagent never gets more tools than its parent, and a project's profile of one of your names only narrows its tools.",
    ),
    row(
        "agents.max_concurrent",
        "Subagents at once",
        R::WidensAboveUser,
        "The most subagent runs one run may have running at once (1 to 16); more `agent` calls of a turn wait for a place.",
    ),
    row(
        "hooks.pre_tool_call",
        "Before a tool call",
        R::WidensWhenNonEmpty,
        "Commands run before a tool call is authorized, with your authority and outside the sandbox; they may block it or ask you.",
    ),
    row(
        "hooks.post_tool_call",
        "After a tool call",
        R::WidensWhenNonEmpty,
        "Commands run after a tool call, with your authority and outside the sandbox; they may add a note for the model.",
    ),
    row(
        "hooks.run_start",
        "When a run starts",
        R::WidensWhenNonEmpty,
        "Commands run when a run starts, with your authority and outside the sandbox.",
    ),
    row(
        "hooks.run_end",
        "When a run ends",
        R::WidensWhenNonEmpty,
        "Commands run when a run ends, with your authority and outside the sandbox.",
    ),
    row(
        "hooks.waiting_for_person",
        "When a run waits for you",
        R::WidensWhenNonEmpty,
        "Commands run when a run waits for you (a confirmation or a question), with your authority and outside the sandbox.",
    ),
];

/// The row of `section.field`: its own, else its section's `section.*`.
pub fn find(section: &str, field: &str) -> Option<&'static FieldSpec> {
    let exact = FIELDS.iter().find(|f| f.split() == (section, field));
    exact.or_else(|| {
        FIELDS
            .iter()
            .find(|f| f.split() == (section, "*") && !field.is_empty())
    })
}

/// The sections the settings pages show (those with a row on a page), in table order.
pub fn page_sections() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for f in FIELDS.iter().filter(|f| f.page.is_some()) {
        let (section, _) = f.split();
        if !out.contains(&section) {
            out.push(section);
        }
    }
    out
}

#[cfg(test)]
#[path = "fields_tests.rs"]
mod tests;
