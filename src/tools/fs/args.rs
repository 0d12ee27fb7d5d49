//! Schema pieces shared by the filesystem tools.

use serde_json::{Value, json};

/// A `path` property: relative to the project root, absolute paths must lie inside it.
pub fn path_prop(what: &str) -> Value {
    json!({
        "type": "string",
        "description": format!("{what} Relative to the project root (absolute paths must lie inside it)."),
    })
}
