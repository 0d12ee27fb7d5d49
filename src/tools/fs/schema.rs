//! The six tools' names, descriptions and input schemas (argument names are a stable contract:
//! scripts and tests use them).

use serde_json::{Value, json};

pub const LS: &str = "ls";
pub const READ_FILE: &str = "read_file";
pub const WRITE_FILE: &str = "write_file";
pub const EDIT_FILE: &str = "edit_file";
pub const GLOB: &str = "glob";
pub const GREP: &str = "grep";

pub const NAMES: [&str; 6] = [LS, READ_FILE, WRITE_FILE, EDIT_FILE, GLOB, GREP];

fn path_prop(what: &str) -> Value {
    json!({
        "type": "string",
        "description": format!("{what} Relative to the project root (absolute paths must lie inside it)."),
    })
}

pub fn description(name: &str) -> &'static str {
    match name {
        LS => {
            "List one directory of the project: entries with type and size, sorted by name, bounded (1000). Heavy or gitignored folders (.git, node_modules, target/...) are summarised, not expanded."
        }
        READ_FILE => {
            "Read a text file with line numbers. Returns up to `limit` lines (default 2000) from line `offset` (1-based); lines longer than 2000 characters are cut with a marker. Binary files and images are described, not dumped. The result says how to read the next slice."
        }
        WRITE_FILE => {
            "Create or overwrite a file with `content` (atomic: temp file, fsync, rename; keeps the existing file's permissions; creates parent directories). The file is read back and compared. Prefer edit_file for changes to an existing file."
        }
        EDIT_FILE => {
            "Replace exact text in a file: `old_string` -> `new_string` (must occur exactly once unless `replace_all`), or several `edits` applied in order, all or nothing. Returns the changed line ranges and a unified diff; the result is read back and verified."
        }
        GLOB => {
            "Find files by glob pattern, gitignore-aware (hidden and ignored files skipped). A pattern without `/` matches file names at any depth (`*.rs`); with `/` it matches the path relative to `path` (`src/**/*.ts`). Returns up to 1000 paths in path order and how many were left out."
        }
        GREP => {
            "Search file contents with a regular expression (ripgrep syntax and engine), gitignore-aware. output_mode: \"content\" (matching lines with line numbers, optional context), \"files_with_matches\", or \"count\". Returns at most head_limit rows (default 200) and says how many were left out."
        }
        _ => "",
    }
}

pub fn schema(name: &str) -> Value {
    match name {
        LS => json!({
            "type": "object",
            "properties": { "path": path_prop("Directory to list (default: the project root).") },
            "additionalProperties": false,
        }),
        READ_FILE => json!({
            "type": "object",
            "properties": {
                "path": path_prop("File to read."),
                "offset": { "type": "integer", "minimum": 1, "description": "First line to return, 1-based (default 1)." },
                "limit": { "type": "integer", "minimum": 1, "maximum": 100000, "description": "Lines to return (default 2000)." },
            },
            "required": ["path"],
            "additionalProperties": false,
        }),
        WRITE_FILE => json!({
            "type": "object",
            "properties": {
                "path": path_prop("File to create or overwrite."),
                "content": { "type": "string", "description": "The complete new content." },
            },
            "required": ["path", "content"],
            "additionalProperties": false,
        }),
        EDIT_FILE => {
            let edit = json!({
                "type": "object",
                "properties": {
                    "old_string": { "type": "string", "minLength": 1, "description": "Exact text to replace." },
                    "new_string": { "type": "string", "description": "Replacement text." },
                    "replace_all": { "type": "boolean", "description": "Replace every occurrence (default false: must be unique)." },
                },
                "required": ["old_string", "new_string"],
                "additionalProperties": false,
            });
            json!({
                "type": "object",
                "properties": {
                    "path": path_prop("File to edit."),
                    "old_string": { "type": "string", "minLength": 1, "description": "Exact text to replace (with new_string; or use edits)." },
                    "new_string": { "type": "string", "description": "Replacement text." },
                    "replace_all": { "type": "boolean", "description": "Replace every occurrence of old_string." },
                    "edits": { "type": "array", "minItems": 1, "items": edit, "description": "Several replacements applied in order, all or nothing." },
                },
                "required": ["path"],
                "additionalProperties": false,
            })
        }
        GLOB => json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "minLength": 1, "description": "Glob, e.g. `*.rs`, `src/**/*.ts`, `Cargo.toml`." },
                "path": path_prop("Directory to search (default: the project root)."),
            },
            "required": ["pattern"],
            "additionalProperties": false,
        }),
        GREP => json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "minLength": 1, "description": "Regular expression (Rust regex / ripgrep syntax)." },
                "path": path_prop("Directory or file to search (default: the project root)."),
                "glob": { "type": "string", "description": "Only files matching this glob, e.g. `*.rs` or `src/**/*.ts`." },
                "output_mode": { "type": "string", "enum": ["content", "files_with_matches", "count"], "description": "Default \"content\"." },
                "context": { "type": "integer", "minimum": 0, "maximum": 20, "description": "Lines of context before and after each match (content mode)." },
                "case_insensitive": { "type": "boolean", "description": "Ignore case (default false)." },
                "head_limit": { "type": "integer", "minimum": 1, "maximum": 5000, "description": "Rows returned (default 200)." },
            },
            "required": ["pattern"],
            "additionalProperties": false,
        }),
        _ => json!({ "type": "object" }),
    }
}
