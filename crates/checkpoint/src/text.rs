//! Per-file diffs for previews: unified text diffs of the before and after content, or the
//! note that a side is binary (a NUL byte or invalid UTF-8) or too large to diff.

use serde::Serialize;
use similar::TextDiff;

use crate::diff::{ChangeKind, FileChange};
use crate::objects::ObjectStore;

/// Content larger than this is not diffed line by line.
pub const MAX_DIFF_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// Either side is binary: no text diff, only sizes.
    pub binary: bool,
    /// The unified diff, when both sides are text (empty when only the mode changed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Why there is no diff (binary, too large, content missing from the store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// The diff of one change.
pub fn file_diff(objects: &ObjectStore, change: &FileChange) -> FileDiff {
    let side = |s: &Option<crate::diff::EntryState>| -> Result<Option<Vec<u8>>, String> {
        match s {
            Some(st) if st.kind == "file" => {
                if st.size > MAX_DIFF_BYTES {
                    return Err(format!("too large to diff ({} bytes)", st.size));
                }
                objects.get(&st.hash).map(Some).map_err(|e| e.to_string())
            }
            _ => Ok(None),
        }
    };
    let (before, after) = match (side(&change.before), side(&change.after)) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => {
            return FileDiff {
                binary: false,
                diff: None,
                note: Some(e),
            };
        }
    };
    if before.as_deref().is_some_and(is_binary) || after.as_deref().is_some_and(is_binary) {
        return FileDiff {
            binary: true,
            diff: None,
            note: Some("binary file".into()),
        };
    }
    if before.is_none() && after.is_none() {
        return FileDiff {
            binary: false,
            diff: None,
            note: None,
        };
    }
    let b = String::from_utf8_lossy(before.as_deref().unwrap_or_default()).into_owned();
    let a = String::from_utf8_lossy(after.as_deref().unwrap_or_default()).into_owned();
    let old_name = match (&change.change, &change.from) {
        (ChangeKind::Renamed, Some(from)) => format!("a/{from}"),
        _ if change.before.is_none() => "/dev/null".into(),
        _ => format!("a/{}", change.path),
    };
    let new_name = if change.after.is_none() {
        "/dev/null".into()
    } else {
        format!("b/{}", change.path)
    };
    let text = TextDiff::from_lines(&b, &a)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string();
    FileDiff {
        binary: false,
        diff: Some(text),
        note: None,
    }
}
