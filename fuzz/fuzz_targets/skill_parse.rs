//! `SKILL.md` parsing: `aibuddy::skills::parse_skill` on arbitrary text (YAML frontmatter
//! included: aliases, deep nesting, huge scalars).
//!
//! Input: the file's bytes.
//! Invariants: never panics; a parsed skill has a valid name, a non-empty description of at most
//! 1,024 characters and a non-empty body that is part of the file; a problem names the file and a
//! line inside it.
#![no_main]

use aibuddy::skills::parse::{MAX_DESCRIPTION, is_valid_name};
use aibuddy::skills::parse_skill;
use aibuddy_fuzz::text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let body = text(data);
    match parse_skill("skills/x/SKILL.md", &body) {
        Ok(s) => {
            assert!(is_valid_name(&s.name), "{:?}", s.name);
            assert!(!s.description.is_empty());
            assert!(s.description.chars().count() <= MAX_DESCRIPTION);
            assert!(!s.body.is_empty());
            assert!(body.contains(&s.body), "the body comes from the file");
        }
        Err(p) => {
            assert_eq!(p.file, "skills/x/SKILL.md");
            // YAML ends lines at `\n`, `\r\n` and a lone `\r`; so do editors.
            let lines = body.matches('\n').count() + body.matches('\r').count()
                - body.matches("\r\n").count()
                + 1;
            assert!(
                p.line >= 1 && p.line <= lines + 1,
                "line {} of {lines}: {p}",
                p.line
            );
            assert!(!p.message.is_empty());
        }
    }
});
