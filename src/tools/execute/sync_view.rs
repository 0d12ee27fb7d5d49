//! A container sandbox's project sync as the person sees it on a command's card: the counts of
//! [`SyncReport`], and every path not brought back with why, shown verbatim
//! ([`term::reveal`], as the approval dialog shows its fields: the paths come from the
//! container). One rule over the client projection's `sync`, for the live card (`tool_result`),
//! a reopened run's card (`show_run`) and the Tools console's result.

use aibuddy_common::term::{self, DisplaySegment};
use aibuddy_sandbox::aibuddy_exec::{SyncNote, SyncReport};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

/// The key of an `execute` client projection that holds its [`SyncReport`].
pub const SYNC: &str = "sync";

/// One path the sync did not carry over, and why (both revealed: untrusted text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SyncNoteView {
    pub path: Vec<DisplaySegment>,
    pub why: Vec<DisplaySegment>,
}

/// The sync of one command (counts of paths: files, folders and links alike).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SyncView {
    /// Copied into the container before the command.
    pub copied_in: u64,
    /// Removed in the container before the command.
    pub removed_in: u64,
    /// Created or changed by the command and written into the project.
    pub brought_back: u64,
    pub brought_back_bytes: u64,
    /// Deleted by the command and removed from the project.
    pub deleted: u64,
    /// Changes refused for safety (a protected path, a link leading out...): the project keeps
    /// its version.
    pub refused: Vec<SyncNoteView>,
    /// Changes not carried over for another reason (a size bound, changed here meanwhile...).
    pub skipped: Vec<SyncNoteView>,
    /// Notes beyond the listed ones, counted only.
    pub more_notes: u64,
    /// Why the bring-back was cut short (no deletion was applied); `None`: complete.
    pub incomplete: Option<Vec<DisplaySegment>>,
    /// Read-only mode: nothing the command changed was brought back.
    pub read_only: bool,
}

fn notes(list: &[SyncNote]) -> Vec<SyncNoteView> {
    list.iter()
        .map(|n| SyncNoteView {
            path: term::reveal(&n.path),
            why: term::reveal(&n.why),
        })
        .collect()
}

impl From<&SyncReport> for SyncView {
    fn from(r: &SyncReport) -> Self {
        Self {
            copied_in: r.copied_in,
            removed_in: r.removed_in,
            brought_back: r.brought_back,
            brought_back_bytes: r.brought_back_bytes,
            deleted: r.deleted,
            refused: notes(&r.refused),
            skipped: notes(&r.skipped),
            more_notes: r.more_notes,
            incomplete: r.incomplete.as_deref().map(term::reveal),
            read_only: r.read_only,
        }
    }
}

/// The project sync of a call of tool `tool`, from its client projection's `sync`: only an
/// `execute` call has one (another tool's projection, an MCP server's included, says nothing
/// about a sync, whatever it holds); `None` without one or for one that is not a report. Pure.
pub fn call_sync(tool: &str, client: &Value) -> Option<SyncView> {
    if tool != super::NAME {
        return None;
    }
    let report: SyncReport = serde_json::from_value(client.get(SYNC)?.clone()).ok()?;
    Some(SyncView::from(&report))
}

/// [`call_sync`] of a stored call, from the store's `sync` JSON text (what its linked results
/// carry); `None` without one or for text that is not JSON. Pure.
pub fn stored_call_sync(tool: &str, sync: Option<&str>) -> Option<SyncView> {
    let report: Value = serde_json::from_str(sync?).ok()?;
    call_sync(tool, &serde_json::json!({ SYNC: report }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_an_execute_call_with_a_report_has_a_sync_and_its_paths_are_revealed() {
        let client = json!({"sync": {"copied_in": 3, "removed_in": 0, "brought_back": 2,
            "brought_back_bytes": 10, "deleted": 1,
            "refused": [{"path": ".git/hooks/pre-commit\u{1b}[2K", "why": "protected path"}],
            "incomplete": "stopped\u{202e}"}});
        let v = call_sync("execute", &client).unwrap();
        assert_eq!((v.copied_in, v.brought_back, v.deleted), (3, 2, 1));
        assert_eq!(
            v.refused[0].path[..2],
            [
                DisplaySegment::Text {
                    text: ".git/hooks/pre-commit".into()
                },
                DisplaySegment::Code { code: "ESC".into() }
            ]
        );
        assert!(v.incomplete.unwrap().contains(&DisplaySegment::Code {
            code: "U+202E".into()
        }));
        assert_eq!(call_sync("mcp__evil__run", &client), None);
        assert_eq!(call_sync("execute", &json!({"sync": null})), None);
        assert_eq!(call_sync("execute", &json!({"sync": "x"})), None);
        assert_eq!(stored_call_sync("execute", Some("not json")), None);
        assert_eq!(
            stored_call_sync("execute", Some(r#"{"copied_in":1,"removed_in":0,"brought_back":0,"brought_back_bytes":0,"deleted":0}"#))
                .map(|v| v.copied_in),
            Some(1)
        );
    }
}
