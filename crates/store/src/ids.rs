//! Identifiers: generated sortable call ids and the validation every id passes before it is used
//! in a file name (blobs, spool files, compacted outputs).

use crate::error::{Result, StoreError};

/// A new sortable id (ULID, 26 Crockford base32 characters, lexicographic order = creation order).
pub fn new_id() -> String {
    ulid::Ulid::new().to_string()
}

/// Longest id accepted. Provider ids (`toolu_...`, `call_...`) are far shorter.
pub const MAX_ID_LEN: usize = 128;

/// Accepts ids made of ASCII letters, digits, `_`, `-`, `.` and `:` that do not start with `.`.
/// Provider ids and ULIDs pass; anything that could escape a directory (`/`, `..`, NUL) does not.
pub fn validate_id(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        Some("empty")
    } else if id.len() > MAX_ID_LEN {
        Some("longer than 128 bytes")
    } else if id.starts_with('.') {
        Some("starts with '.'")
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
    {
        Some("only ASCII letters, digits, '_', '-', '.', ':' are allowed")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoreError::InvalidId {
            id: id.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// `id` with every character but ASCII letters, digits, `_` and `-` replaced by `_` (pure): the
/// base of a fresh id made from one [`validate_id`] refused, and a file name for the person (the
/// desktop's "save raw output") that any file system accepts. Not the store's own file names:
/// those keep the id as it is (`DataPaths::spool_file`, `blob_rel`).
pub fn safe_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Milliseconds since the Unix epoch (the unit of every `*_at` column).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_provider_ids_and_ulids() {
        for id in [
            "toolu_01A09q90qw90lq917835lq9",
            "call_abc-123",
            &new_id(),
            "mcp:srv.1",
        ] {
            assert!(validate_id(id).is_ok(), "{id}");
        }
    }

    #[test]
    fn rejects_ids_that_could_escape_a_directory() {
        for id in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "a\0b",
            "a b",
            &"x".repeat(129),
        ] {
            assert!(validate_id(id).is_err(), "{id:?}");
        }
    }

    #[test]
    fn safe_names_keep_letters_digits_underscores_and_dashes() {
        assert_eq!(safe_name("01JRUN:call_1"), "01JRUN_call_1");
        assert_eq!(safe_name("toolu-01.x/é"), "toolu-01_x__");
        assert_eq!(safe_name(""), "");
    }

    #[test]
    fn generated_ids_sort_by_creation() {
        let a = new_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id();
        assert!(a < b);
    }
}
