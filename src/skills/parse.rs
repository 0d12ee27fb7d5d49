//! Parsing one `SKILL.md`: YAML frontmatter (`name`, `description`, other keys allowed) between
//! `---` lines, then the markdown body. Pure: text in, skill or a problem with its line out.

use serde::Serialize;
use serde_norway::Value;

/// Longest accepted skill name (as in the common skill format).
pub const MAX_NAME: usize = 64;
/// Longest accepted description.
pub const MAX_DESCRIPTION: usize = 1024;

/// A problem that leaves a skill out of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct SkillProblem {
    pub file: String,
    /// 1-based line in the file.
    pub line: usize,
    pub message: String,
}

/// The parsed parts of a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSkill {
    pub name: String,
    pub description: String,
    pub body: String,
}

/// Whether `name` is a valid skill name: lower-case letters, digits and `-`, 1..=64 chars.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Parse a `SKILL.md`. `file` is only used in problems.
pub fn parse_skill(file: &str, text: &str) -> Result<ParsedSkill, SkillProblem> {
    let problem = |line: usize, message: String| SkillProblem {
        file: file.to_string(),
        line,
        message,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(problem(
            1,
            "SKILL.md must start with a `---` line opening the YAML frontmatter (name, description)"
                .into(),
        ));
    }
    // Find the closing `---` (or `...`).
    let mut yaml = String::new();
    let mut consumed = first.len();
    let mut close_line = None;
    for (i, l) in lines.enumerate() {
        consumed += l.len();
        let t = l.trim_end();
        if t == "---" || t == "..." {
            close_line = Some(i + 2);
            break;
        }
        yaml.push_str(l);
    }
    let Some(close_line) = close_line else {
        return Err(problem(
            1,
            "the frontmatter opened on line 1 is never closed with a `---` line".into(),
        ));
    };
    let body = text.get(consumed..).unwrap_or_default().trim().to_string();
    let value: Value = serde_norway::from_str(&yaml).map_err(|e| {
        // The frontmatter starts on file line 2. YAML also breaks lines at a lone `\r` (and
        // NEL, LS, PS), so the file line is counted from the error's character index.
        let line = e.location().map_or(2, |l| {
            2 + yaml.chars().take(l.index()).filter(|&c| c == '\n').count()
        });
        problem(line, format!("invalid YAML frontmatter: {e}"))
    })?;
    let Value::Mapping(map) = value else {
        return Err(problem(
            2,
            "the frontmatter must be a YAML mapping with `name` and `description`".into(),
        ));
    };
    let key_line = |key: &str| {
        yaml.lines()
            .position(|l| l.starts_with(&format!("{key}:")))
            .map_or(2, |i| i + 2)
    };
    let field = |key: &str| -> Result<String, SkillProblem> {
        match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(Value::String(_)) | Some(Value::Null) => {
                Err(problem(key_line(key), format!("`{key}` is empty")))
            }
            Some(_) => Err(problem(key_line(key), format!("`{key}` must be a string"))),
            None => Err(problem(
                close_line,
                format!("the frontmatter has no `{key}` field"),
            )),
        }
    };
    let name = field("name")?;
    if !is_valid_name(&name) {
        return Err(problem(
            key_line("name"),
            format!(
                "skill name `{name}` must be 1-{MAX_NAME} lower-case letters, digits or `-` \
(not starting or ending with `-`)"
            ),
        ));
    }
    let description = field("description")?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(problem(
            key_line("description"),
            format!("`description` is longer than {MAX_DESCRIPTION} characters"),
        ));
    }
    if body.is_empty() {
        return Err(problem(
            close_line,
            "the skill has no instructions after the frontmatter".into(),
        ));
    }
    Ok(ParsedSkill {
        name,
        description,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_frontmatter_and_body() {
        let s = parse_skill(
            "x/SKILL.md",
            "---\nname: verify-after-edit\ndescription: >\n  Check edits.\n  Always.\nlicense: MIT\n---\n\n# Steps\n1. read\n",
        )
        .unwrap();
        assert_eq!(s.name, "verify-after-edit");
        assert_eq!(s.description, "Check edits. Always.");
        assert_eq!(s.body, "# Steps\n1. read");
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let s = parse_skill(
            "f",
            "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nbody\r\n",
        )
        .unwrap();
        assert_eq!((s.name.as_str(), s.description.as_str()), ("a", "b"));
    }

    #[test]
    fn problems_carry_file_and_line() {
        let e = parse_skill("f", "# no frontmatter\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("f", 1));

        let e = parse_skill("f", "---\nname: a\ndescription: b\n").unwrap_err();
        assert!(e.message.contains("never closed"), "{e}");

        let e = parse_skill("f", "---\nname: a\ndescription: [unclosed\n---\nbody\n").unwrap_err();
        assert!(e.message.contains("invalid YAML"), "{e}");
        assert!(e.line >= 3, "{e}");

        let e = parse_skill("f", "---\nname: a\n---\nbody\n").unwrap_err();
        assert!(e.message.contains("no `description`"), "{e}");
        assert_eq!(e.line, 3);

        let e = parse_skill("f", "---\ndescription: d\nname: Bad Name\n---\nbody\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");

        let e = parse_skill("f", "---\nname: a\ndescription: 3\n---\nbody\n").unwrap_err();
        assert!(e.message.contains("must be a string"), "{e}");
        assert_eq!(e.line, 3);

        let e = parse_skill("f", "---\nname: a\ndescription: d\n---\n\n").unwrap_err();
        assert!(e.message.contains("no instructions"), "{e}");
    }

    #[test]
    fn a_yaml_error_after_lone_carriage_returns_names_a_line_of_the_file() {
        let text = "---\nname: \ndescription: {\r\ra\r\u{a1}\n---\n";
        let e = parse_skill("f", text).unwrap_err();
        assert!(e.message.contains("invalid YAML"), "{e}");
        assert!(e.line >= 2 && e.line <= text.split('\n').count(), "{e}");
    }

    #[test]
    fn names() {
        assert!(is_valid_name("safe-refactor-2"));
        assert!(!is_valid_name("Safe"));
        assert!(!is_valid_name("-x"));
        assert!(!is_valid_name(&"a".repeat(65)));
    }
}
