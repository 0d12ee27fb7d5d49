//! Changing one value of a JSON configuration file's text while keeping the rest of it as the
//! person wrote it: key order, indentation, blank lines, unknown keys and every other value stay
//! byte for byte. The edit goes through `jsonc-parser`'s CST (concrete syntax tree), which keeps
//! all trivia; only the edited property is rewritten (new properties take the file's indentation).
//!
//! The text must be what the loaders accept ([`crate::located::parse`]: strict JSON): a file the
//! CLI would ignore as a whole is refused with its located syntax error rather than edited, so a
//! setting never looks saved while nothing reads it. Comments therefore never reach an edit (the
//! loaders refuse them); the CST would keep them if they did. The result is checked the same way,
//! and the edited path is read back from it, so a duplicate key that would shadow the edit is
//! refused too.
//!
//! Pure: text in, text out. Writing the file (atomically) is the caller's.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use crate::located::{self, FieldPath, Position, SyntaxError};

/// What to do at the path.
#[derive(Debug, Clone, Copy)]
pub enum Edit<'a> {
    /// Set the value (creating the objects on the way).
    Set(&'a Value),
    /// Remove the key (nothing happens if it is absent).
    Remove,
}

/// Why an edit was refused. Each names where in the text it is, when it can.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The text is not what the loaders accept.
    #[error("not valid JSON: {0}")]
    Syntax(SyntaxError),
    /// A key on the way holds something other than an object: it is not replaced.
    #[error("`{field}` is not an object, so `{path}` cannot be set in it")]
    NotAnObject {
        /// The dotted path of the value in the way.
        field: String,
        /// The dotted path that was to be edited.
        path: String,
        at: Option<Position>,
    },
    /// The path is empty (the whole document is never replaced).
    #[error("no field to edit")]
    EmptyPath,
    /// The edited text does not read back as asked (a duplicate key shadows it, say).
    #[error("`{path}` does not read back as written ({reason}); nothing was changed")]
    Unverified { path: String, reason: String },
}

impl EditError {
    /// Where in the original text the problem is.
    pub fn position(&self) -> Option<Position> {
        match self {
            EditError::Syntax(e) => Some(e.position),
            EditError::NotAnObject { at, .. } => *at,
            _ => None,
        }
    }
}

/// `serde_json` value to the CST's input value (numbers keep their JSON text).
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

fn dotted(path: &[&str]) -> String {
    path.join(".")
}

/// The position of `path` in `text` (already known to parse).
fn position_of(text: &str, path: &[&str]) -> Option<Position> {
    let doc = located::parse(text).ok()?;
    let field = path
        .iter()
        .fold(FieldPath::default(), |acc, key| acc.child(key));
    doc.root().find(&field).map(|(_, at)| at)
}

/// Apply `edit` at `path` (object keys, outermost first) to `text`, returning the new text. An
/// empty or whitespace-only text is an empty object. A leading byte order mark is kept as it is
/// (and not taken for content). See the module documentation.
pub fn edit(text: &str, path: &[&str], edit: Edit<'_>) -> Result<String, EditError> {
    let body = located::strip_bom(text);
    let bom = &text[..text.len() - body.len()];
    edit_body(body, path, edit).map(|out| format!("{bom}{out}"))
}

fn edit_body(text: &str, path: &[&str], edit: Edit<'_>) -> Result<String, EditError> {
    let Some((last, parents)) = path.split_last() else {
        return Err(EditError::EmptyPath);
    };
    let blank = text.trim().is_empty();
    if blank && matches!(edit, Edit::Remove) {
        return Ok(text.to_string());
    }
    let source = if blank { "{}\n" } else { text };
    located::parse(source).map_err(EditError::Syntax)?;
    let root = CstRootNode::parse(source, &ParseOptions::default()).map_err(|e| {
        EditError::Syntax(SyntaxError {
            position: Position {
                line: u32::try_from(e.line_display()).unwrap_or(u32::MAX),
                column: u32::try_from(e.column_display()).unwrap_or(u32::MAX),
            },
            message: e.to_string(),
        })
    })?;
    let not_object = |depth: usize| EditError::NotAnObject {
        field: if depth == 0 {
            "(top level)".to_string()
        } else {
            dotted(&path[..depth])
        },
        path: dotted(path),
        at: position_of(source, &path[..depth]),
    };
    let Some(mut object) = root.object_value() else {
        return Err(not_object(0));
    };
    for (depth, key) in parents.iter().enumerate() {
        object = match (object.get(key), edit) {
            (Some(prop), _) => prop.object_value().ok_or_else(|| not_object(depth + 1))?,
            // Removing below a missing object: nothing to remove.
            (None, Edit::Remove) => return Ok(text.to_string()),
            (None, Edit::Set(_)) => object.object_value_or_set(key),
        };
    }
    apply(&object, last, edit);
    let out = root.to_string();
    verify(&out, path, edit)?;
    Ok(out)
}

fn apply(object: &CstObject, key: &str, edit: Edit<'_>) {
    match (object.get(key), edit) {
        (Some(prop), Edit::Set(value)) => prop.set_value(input(value)),
        (None, Edit::Set(value)) => {
            object.append(key, input(value));
        }
        (Some(prop), Edit::Remove) => prop.remove(),
        (None, Edit::Remove) => {}
    }
}

/// Read the edited text back as the loaders do and check the path holds what was asked.
fn verify(out: &str, path: &[&str], edit: Edit<'_>) -> Result<(), EditError> {
    let unverified = |reason: &str| EditError::Unverified {
        path: dotted(path),
        reason: reason.to_string(),
    };
    located::parse(out).map_err(|_| unverified("the result is not valid JSON"))?;
    let value: Value =
        serde_json::from_str(out).map_err(|_| unverified("the result is not valid JSON"))?;
    let found = path.iter().try_fold(&value, |v, key| v.get(key));
    match (edit, found) {
        (Edit::Set(want), Some(got)) if got == want => Ok(()),
        (Edit::Remove, None) => Ok(()),
        (Edit::Set(_), _) => Err(unverified("another value of the same key wins")),
        (Edit::Remove, Some(_)) => Err(unverified("another key of the same name remains")),
    }
}

#[cfg(test)]
#[path = "json_edit_tests.rs"]
mod tests;
