//! Located JSON: a configuration file parsed once into a tree that keeps where every key and value
//! sits (line, column), and typed decoding whose problems are structured (which field, what was
//! expected) and carry the path to the value that failed, so a caller can report every problem of
//! a file (not just the first) at its place without ever reading an error's text.
//!
//! The pieces are libraries: `serde_json` decides what is JSON (the grammar and the syntax messages
//! every aibuddy file had before), `jsonc-parser` (strict options) gives the spans, `serde-value`
//! decodes with a structured error type, and `serde_path_to_error` records the field path.
//!
//! Pure: nothing here reads files.

use std::fmt;

use jsonc_parser::ast;
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions};
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;
use serde_value::{DeserializerError, ValueDeserializer};

/// A decoded-but-untyped JSON value (what [`decode`] takes). Build probes with [`object`].
pub use serde_value::Value as Tree;

/// A 1-based line and column (the column counts characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

impl Position {
    /// The position of byte `offset` of `text` (clamped to the text, and to a char boundary).
    pub fn at(text: &str, offset: usize) -> Position {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &text[..end];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = before.bytes().filter(|b| *b == b'\n').count() + 1;
        let column = before[line_start..].chars().count() + 1;
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }
}

/// The text is not JSON. `message` is the parser's (it names the place but quotes no value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SyntaxError {
    pub position: Position,
    pub message: String,
}

/// The JSON kind of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    /// In words, with an article: "a string", "an object", "null".
    pub fn described(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Boolean => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }
}

/// A parsed file.
#[derive(Debug)]
pub struct Document<'a> {
    text: &'a str,
    root: ast::Value<'a>,
}

/// The byte order mark some editors (Notepad, a few Windows tools) put at the start of a UTF-8
/// file. It is not JSON, so [`parse`] leaves it out.
pub const BOM: char = '\u{feff}';

/// `text` without a leading [`BOM`] (every configuration reader goes through this).
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix(BOM).unwrap_or(text)
}

/// Parses `text` as strict JSON (no comments, no trailing commas). A leading UTF-8 byte order
/// mark is accepted and left out; positions count from the character after it (as editors show).
pub fn parse(text: &str) -> Result<Document<'_>, SyntaxError> {
    let text = strip_bom(text);
    if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
        return Err(SyntaxError {
            position: Position {
                line: u32::try_from(e.line()).unwrap_or(u32::MAX),
                column: u32::try_from(e.column()).unwrap_or(u32::MAX),
            },
            message: e.to_string(),
        });
    }
    let strict = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    match jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &strict) {
        Ok(parsed) => match parsed.value {
            Some(root) => Ok(Document { text, root }),
            None => Err(SyntaxError {
                position: Position { line: 1, column: 1 },
                message: "no JSON value".to_string(),
            }),
        },
        // Both parsers accept strict JSON; a disagreement is reported, never trusted.
        Err(e) => Err(SyntaxError {
            position: Position {
                line: u32::try_from(e.line_display()).unwrap_or(u32::MAX),
                column: u32::try_from(e.column_display()).unwrap_or(u32::MAX),
            },
            message: e.to_string(),
        }),
    }
}

impl<'a> Document<'a> {
    pub fn root(&self) -> Node<'_> {
        Node {
            text: self.text,
            value: &self.root,
        }
    }
}

/// One value of a [`Document`], with its place.
#[derive(Debug, Clone, Copy)]
pub struct Node<'d> {
    text: &'d str,
    value: &'d ast::Value<'d>,
}

/// One member of an object: its key, where the key is, and its value.
#[derive(Debug, Clone)]
pub struct Entry<'d> {
    pub key: String,
    /// Where the key's opening quote is: what a problem about this member points at.
    pub position: Position,
    pub value: Node<'d>,
}

impl<'d> Node<'d> {
    pub fn kind(&self) -> Kind {
        match self.value {
            ast::Value::NullKeyword(_) => Kind::Null,
            ast::Value::BooleanLit(_) => Kind::Boolean,
            ast::Value::NumberLit(_) => Kind::Number,
            ast::Value::StringLit(_) => Kind::String,
            ast::Value::Array(_) => Kind::Array,
            ast::Value::Object(_) => Kind::Object,
        }
    }

    /// Where the value starts.
    pub fn position(&self) -> Position {
        Position::at(self.text, self.value.range().start)
    }

    /// The value's own text.
    pub fn raw(&self) -> &'d str {
        let range = self.value.range();
        self.text.get(range.start..range.end).unwrap_or("null")
    }

    /// The value as `serde_json` reads it. The document passed `serde_json`, so every value in
    /// it does too; `null` stands in should that ever not hold.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.raw()).unwrap_or(serde_json::Value::Null)
    }

    /// The value as a [`Tree`] for [`decode`] (`Unit` should the value not read, see [`Node::json`]).
    pub fn tree(&self) -> Tree {
        serde_json::from_str(self.raw()).unwrap_or(Tree::Unit)
    }

    /// The members of an object in file order (None for any other kind). A key given twice keeps
    /// its last value, as `serde_json` does.
    pub fn entries(&self) -> Option<Vec<Entry<'d>>> {
        let ast::Value::Object(object) = self.value else {
            return None;
        };
        let mut out: Vec<Entry<'d>> = Vec::with_capacity(object.properties.len());
        for prop in &object.properties {
            let key = match &prop.name {
                ast::ObjectPropName::String(s) => s.value.to_string(),
                ast::ObjectPropName::Word(w) => w.value.to_string(),
            };
            out.retain(|e| e.key != key);
            out.push(Entry {
                key,
                position: Position::at(self.text, prop.name.range().start),
                value: Node {
                    text: self.text,
                    value: &prop.value,
                },
            });
        }
        Some(out)
    }

    /// The member named `key` of an object.
    pub fn get(&self, key: &str) -> Option<Entry<'d>> {
        self.entries()?.into_iter().find(|e| e.key == key)
    }

    /// The elements of an array (None for any other kind).
    pub fn elements(&self) -> Option<Vec<Node<'d>>> {
        let ast::Value::Array(array) = self.value else {
            return None;
        };
        Some(
            array
                .elements
                .iter()
                .map(|value| Node {
                    text: self.text,
                    value,
                })
                .collect(),
        )
    }

    /// The value at `path` below this one, and where a problem about it should point (its key
    /// for an object member, else the value itself). None when the path leaves the document.
    pub fn find(&self, path: &FieldPath) -> Option<(Node<'d>, Position)> {
        let mut node = *self;
        let mut at = self.position();
        for segment in &path.0 {
            match segment {
                PathSegment::Key(key) => {
                    let entry = node.get(key)?;
                    at = entry.position;
                    node = entry.value;
                }
                PathSegment::Index(i) => {
                    node = *node.elements()?.get(*i)?;
                    at = node.position();
                }
            }
        }
        Some((node, at))
    }
}

/// An object [`Tree`] from string keys (a probe for [`decode`]).
pub fn object<'k>(members: impl IntoIterator<Item = (&'k str, Tree)>) -> Tree {
    Tree::Map(
        members
            .into_iter()
            .map(|(k, v)| (Tree::String(k.to_string()), v))
            .collect(),
    )
}

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    Key(String),
    Index(usize),
}

/// Where in a value a problem is: `exec.env_include[1]`. Empty: the value itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<PathSegment>);

impl FieldPath {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The path one step further down.
    pub fn child(&self, key: &str) -> FieldPath {
        let mut out = self.clone();
        out.0.push(PathSegment::Key(key.to_string()));
        out
    }

    /// The path without its first `n` steps.
    pub fn skip(&self, n: usize) -> FieldPath {
        FieldPath(self.0.iter().skip(n).cloned().collect())
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                PathSegment::Key(key) if i == 0 => write!(f, "{key}")?,
                PathSegment::Key(key) => write!(f, ".{key}")?,
                PathSegment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

impl From<&serde_path_to_error::Path> for FieldPath {
    fn from(path: &serde_path_to_error::Path) -> Self {
        FieldPath(
            path.iter()
                .filter_map(|segment| match segment {
                    Segment::Seq { index } => Some(PathSegment::Index(*index)),
                    Segment::Map { key } | Segment::Enum { variant: key } => {
                        Some(PathSegment::Key(key.clone()))
                    }
                    Segment::Unknown => None,
                })
                .collect(),
        )
    }
}

/// What went wrong decoding a value, as data (no error text to read back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The value has the wrong kind or an impossible value; `expected` is serde's words for
    /// what fits ("a boolean", "u64", "a sequence").
    WrongType {
        expected: String,
    },
    /// An object has a member the type does not know.
    UnknownField {
        field: String,
        known: &'static [&'static str],
    },
    /// A string names no variant of an enum.
    UnknownVariant {
        variant: String,
        known: &'static [&'static str],
    },
    MissingField {
        field: &'static str,
    },
    /// A type's own check failed (its message).
    Invalid(String),
}

impl Problem {
    /// serde's own wording of the problem (`unknown field `x`, expected one of ...`), built by
    /// serde from the structured data.
    pub fn serde_message(&self) -> String {
        use serde::de::Error as _;
        let e = match self {
            Problem::WrongType { expected } => {
                return format!("wrong type, expected {expected}");
            }
            Problem::UnknownField { field, known } => {
                serde::de::value::Error::unknown_field(field, known)
            }
            Problem::UnknownVariant { variant, known } => {
                serde::de::value::Error::unknown_variant(variant, known)
            }
            Problem::MissingField { field } => serde::de::value::Error::missing_field(field),
            Problem::Invalid(message) => return message.clone(),
        };
        e.to_string()
    }
}

/// A value did not decode: where (relative to the decoded value; for an unknown member, the
/// member itself) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {}", self.path, self.problem.serde_message())]
pub struct DecodeError {
    pub path: FieldPath,
    pub problem: Problem,
}

/// Decodes `tree` into `T` with serde derive; the first problem comes back structured, with the
/// path of the value it is about.
pub fn decode<T: DeserializeOwned>(tree: Tree) -> Result<T, DecodeError> {
    let deserializer = ValueDeserializer::<DeserializerError>::new(tree);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let mut path = FieldPath::from(e.path());
        let problem = match e.into_inner() {
            DeserializerError::InvalidType(_, expected)
            | DeserializerError::InvalidValue(_, expected)
            | DeserializerError::InvalidLength(_, expected) => Problem::WrongType { expected },
            DeserializerError::UnknownField(field, known) => Problem::UnknownField { field, known },
            DeserializerError::UnknownVariant(variant, known) => {
                Problem::UnknownVariant { variant, known }
            }
            DeserializerError::MissingField(field) => Problem::MissingField { field },
            DeserializerError::DuplicateField(field) => {
                Problem::Invalid(format!("duplicate field `{field}`"))
            }
            DeserializerError::Custom(message) => Problem::Invalid(message),
        };
        // An unknown member's path ends with its own key (where the problem points).
        if let Problem::UnknownField { field, .. } = &problem
            && path.0.last() != Some(&PathSegment::Key(field.clone()))
        {
            path.0.push(PathSegment::Key(field.clone()));
        }
        DecodeError { path, problem }
    })
}

#[cfg(test)]
#[path = "located_tests.rs"]
mod tests;
