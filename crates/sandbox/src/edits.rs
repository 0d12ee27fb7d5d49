//! Pure edit logic: exact string replacement, several edits all-or-nothing, unified diff.

use similar::{ChangeTag, TextDiff};

use crate::api::EditSpec;
use crate::error::SandboxError;

/// Apply `edits` in order (each to the result of the previous). Returns the new text and the
/// number of replacements. Any failing edit fails the whole call; nothing is applied.
/// Unbounded: see [`apply_edits_within`].
pub fn apply_edits(
    path: &str,
    original: &str,
    edits: &[EditSpec],
) -> Result<(String, usize), SandboxError> {
    apply_edits_within(path, original, edits, u64::MAX)
}

/// [`apply_edits`], refusing (`TooLarge`, Parameters stage) as soon as an edit would make the
/// text longer than `max_bytes`. The length an edit gives is exact before it is built (the
/// occurrences are counted first), so a chain of `replace_all` that multiplies the text stops at
/// the edit that crosses the bound, without building it.
pub fn apply_edits_within(
    path: &str,
    original: &str,
    edits: &[EditSpec],
    max_bytes: u64,
) -> Result<(String, usize), SandboxError> {
    if edits.is_empty() {
        return Err(SandboxError::InvalidArgument {
            name: "edits".into(),
            reason: "at least one edit is required".into(),
        });
    }
    let mut text = original.to_string();
    let mut replacements = 0;
    for (index, edit) in edits.iter().enumerate() {
        if edit.old_string.is_empty() {
            return Err(SandboxError::InvalidArgument {
                name: "old_string".into(),
                reason: format!(
                    "edit {index}: must not be empty (use write_file to create a file)"
                ),
            });
        }
        if edit.old_string == edit.new_string {
            return Err(SandboxError::InvalidArgument {
                name: "new_string".into(),
                reason: format!("edit {index}: identical to old_string, nothing would change"),
            });
        }
        let count = text.matches(edit.old_string.as_str()).count();
        match count {
            0 => {
                return Err(SandboxError::OldStringNotFound {
                    path: path.to_string(),
                    index,
                });
            }
            1 => {}
            _ if edit.replace_all => {}
            _ => {
                return Err(SandboxError::OldStringNotUnique {
                    path: path.to_string(),
                    index,
                    count,
                });
            }
        }
        // Occurrences do not overlap, so they remove `count * old` bytes of the text at most.
        let after = (text.len() as u128 - count as u128 * edit.old_string.len() as u128)
            + count as u128 * edit.new_string.len() as u128;
        if after > u128::from(max_bytes) {
            return Err(SandboxError::TooLarge {
                path: path.to_string(),
                size: u64::try_from(after).unwrap_or(u64::MAX),
                max: max_bytes,
            });
        }
        text = text.replace(edit.old_string.as_str(), &edit.new_string);
        replacements += count;
    }
    Ok((text, replacements))
}

/// Unified diff with 3 lines of context, headed `a/<path>` / `b/<path>`.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    line_diff(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// 1-based inclusive line ranges of `new` that were inserted or changed (merged when adjacent).
/// A pure deletion marks the line that now stands where the deleted text was.
pub fn changed_lines(old: &str, new: &str) -> Vec<(u64, u64)> {
    let diff = line_diff(old, new);
    let new_total = new.lines().count().max(1) as u64;
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for op in diff.ops() {
        let mut touched: Option<(u64, u64)> = None;
        for change in diff.iter_changes(op) {
            match change.tag() {
                ChangeTag::Equal => {}
                ChangeTag::Insert => {
                    let n = change.new_index().map(|i| i as u64 + 1).unwrap_or(1);
                    touched = Some(touched.map_or((n, n), |(a, _)| (a, n)));
                }
                ChangeTag::Delete => {
                    if touched.is_none() {
                        let at = (op.new_range().start as u64 + 1).min(new_total);
                        touched = Some((at, at));
                    }
                }
            }
        }
        if let Some((a, b)) = touched {
            match ranges.last_mut() {
                Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
                _ => ranges.push((a, b)),
            }
        }
    }
    ranges
}

/// Line diff with a deadline: Myers' algorithm is quadratic on adversarial inputs (a 381-byte edit
/// found by fuzzing ran for over 45 s), and this diff is computed for a confirmation preview that a
/// model's arguments shape. Past the deadline the diff is still correct, only less minimal.
fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, 'a, str> {
    TextDiff::configure()
        .timeout(std::time::Duration::from_millis(500))
        .diff_lines(old, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(old: &str, new: &str, all: bool) -> EditSpec {
        EditSpec {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn a_multiplying_chain_stops_at_the_edit_that_crosses_the_bound() {
        // 2 KB of "a"; each replace_all doubles every "a": 2 KB -> 4 -> 8 -> ... -> 2 MB.
        let original = "a".repeat(2048);
        let chain: Vec<EditSpec> = (0..10).map(|_| e("a", "aa", true)).collect();
        let (grown, _) = apply_edits("f", &original, &chain).unwrap();
        assert_eq!(grown.len(), 2048 << 10);
        let err = apply_edits_within("f", &original, &chain, 64 * 1024).unwrap_err();
        assert_eq!(
            (err.code(), err.stage()),
            ("too_large", crate::Stage::Parameters)
        );
        // Refused at edit 5 (64 KiB -> 128 KiB), with the size it would have reached.
        assert!(
            err.to_string().contains("131072 bytes (max 65536)"),
            "{err}"
        );
        // Exactly at the bound is allowed; shrinking is always allowed.
        let (at, _) = apply_edits_within("f", &original, &chain[..5], 64 * 1024).unwrap();
        assert_eq!(at.len(), 64 * 1024);
        assert!(apply_edits_within("f", &original, &[e("aa", "b", true)], 10).is_err());
        assert_eq!(
            apply_edits_within("f", "aaaa", &[e("aa", "b", true)], 2).unwrap(),
            ("bb".into(), 2)
        );
    }

    #[test]
    fn ladder() {
        let text = "a b a\nc\n";
        assert_eq!(
            apply_edits("f", text, &[e("c", "d", false)]).unwrap(),
            ("a b a\nd\n".into(), 1)
        );
        assert_eq!(
            apply_edits("f", text, &[e("a", "x", false)])
                .unwrap_err()
                .code(),
            "old_string_not_unique"
        );
        assert_eq!(
            apply_edits("f", text, &[e("a", "x", true)]).unwrap(),
            ("x b x\nc\n".into(), 2)
        );
        assert_eq!(
            apply_edits("f", text, &[e("zzz", "x", false)])
                .unwrap_err()
                .code(),
            "old_string_not_found"
        );
        assert_eq!(
            apply_edits("f", text, &[e("", "x", false)])
                .unwrap_err()
                .code(),
            "invalid_argument"
        );
        assert_eq!(
            apply_edits("f", text, &[e("c", "c", false)])
                .unwrap_err()
                .code(),
            "invalid_argument"
        );
        assert_eq!(
            apply_edits("f", text, &[]).unwrap_err().code(),
            "invalid_argument"
        );
    }

    #[test]
    fn several_edits_are_all_or_nothing_and_chain() {
        let text = "one\ntwo\n";
        assert_eq!(
            apply_edits(
                "f",
                text,
                &[e("one", "1", false), e("1\ntwo", "1\n2", false)]
            )
            .unwrap(),
            ("1\n2\n".into(), 2)
        );
        let err =
            apply_edits("f", text, &[e("one", "1", false), e("missing", "x", false)]).unwrap_err();
        assert!(matches!(
            err,
            SandboxError::OldStringNotFound { index: 1, .. }
        ));
    }

    #[test]
    fn diff_and_changed_ranges() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nB\nc\nd\ne\n";
        let diff = unified_diff("x.txt", old, new);
        assert!(diff.starts_with("--- a/x.txt\n+++ b/x.txt\n"), "{diff}");
        assert!(diff.contains("-b\n+B\n"), "{diff}");
        assert_eq!(changed_lines(old, new), vec![(2, 2), (5, 5)]);
        assert_eq!(changed_lines("a\nb\nc\n", "a\nc\n"), vec![(2, 2)]);
    }
}
