//! edit: load the file (bounded), apply the edits in memory, then replace it atomically
//! only if it is still what was read; the read-back compare is the effect verification.

use tokio_util::sync::CancellationToken;

use super::Scoped;
use super::fsio::read_whole;
use super::write::replace;
use crate::api::{EditOutcome, EditPlan, EditRequest, Expected, Verified};
use crate::edits::{apply_edits_within, changed_lines, unified_diff};
use crate::error::SandboxError;
use crate::scope;
use crate::text::{fingerprint, stats};

pub fn preview(
    s: &Scoped,
    req: &EditRequest,
    cancel: &CancellationToken,
) -> Result<EditPlan, SandboxError> {
    plan(s, req, cancel).map(|(plan, _)| plan)
}

/// The plan and the new text.
fn plan(
    s: &Scoped,
    req: &EditRequest,
    cancel: &CancellationToken,
) -> Result<(EditPlan, String), SandboxError> {
    let rel = s.rel(&req.path)?;
    let (bytes, _) = read_whole(&s.dir, &rel, &req.path, s.limits.edit_max_bytes, cancel)?;
    let fp = fingerprint(&bytes);
    if req.expect.is_some_and(|e| e != fp) {
        return Err(SandboxError::Changed {
            path: req.path.clone(),
        });
    }
    let old = String::from_utf8(bytes).map_err(|e| SandboxError::NotText {
        path: req.path.clone(),
        reason: format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
    })?;
    let path = scope::display(&rel);
    // The result may not outgrow what edit_file would load (a chain of replace_all can multiply
    // a small file into megabytes).
    let (new, replacements) =
        apply_edits_within(&req.path, &old, &req.edits, s.limits.edit_max_bytes)?;
    let plan = EditPlan {
        diff: unified_diff(&path, &old, &new),
        changed_lines: changed_lines(&old, &new),
        before: stats(old.as_bytes()),
        after: stats(new.as_bytes()),
        replacements,
        fingerprint: fp,
        path,
    };
    Ok((plan, new))
}

pub fn edit(
    s: &Scoped,
    req: &EditRequest,
    cancel: &CancellationToken,
) -> Result<EditOutcome, SandboxError> {
    let rel = s.rel(&req.path)?;
    let (plan, new) = plan(s, req, cancel)?;
    let done = replace(
        s,
        &rel,
        &req.path,
        new.as_bytes(),
        Some(Expected::Content(plan.fingerprint)),
        cancel,
    )?;
    let region = match plan.changed_lines.as_slice() {
        [] => "whole file".to_string(),
        ranges => {
            let spans: Vec<String> = ranges
                .iter()
                .map(|(a, b)| {
                    if a == b {
                        format!("{a}")
                    } else {
                        format!("{a}-{b}")
                    }
                })
                .collect();
            format!("lines {} (whole file compared)", spans.join(", "))
        }
    };
    Ok(EditOutcome {
        path: plan.path,
        diff: plan.diff,
        replacements: plan.replacements,
        before: plan.before,
        after: plan.after,
        changed_lines: plan.changed_lines,
        bytes_written: new.len() as u64,
        verified: Verified {
            region,
            bytes_compared: done.compared,
        },
    })
}
