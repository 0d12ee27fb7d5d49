//! Adding, replacing and removing one server entry of an `mcp.json` text (pure), keeping the rest
//! of the file as written (`aibuddy_common::json_edit`). A new or changed entry is validated
//! exactly as the loader reads it ([`super::parse::parse_config_text`] over the edited text), so
//! its problems carry the file, line, column and field the loader would report, and an entry the
//! loader would refuse is never written.

use std::path::Path;

use aibuddy_common::json_edit::{self, Edit, EditError};
use serde_json::Value;

use super::parse::parse_config_text;
use super::types::{ConfigError, ConfigScope};

/// The key servers live under.
pub const SERVERS_KEY: &str = "mcpServers";

/// Whether a name may be given to a new server: `[A-Za-z0-9_-]{1,64}` (what tool names are made
/// of, so its tools keep readable qualified names).
pub fn is_valid_new_name(name: &str) -> bool {
    crate::names::is_valid_name(name)
}

fn edit_error(file: &Path, server: &str, e: EditError) -> ConfigError {
    let mut out = ConfigError::file(file, e.position(), e.to_string());
    if !matches!(e, EditError::Syntax(_)) {
        out.server = Some(server.to_string());
    }
    out
}

/// `text` with server `name` set to `entry` (added at the end, or replaced in place). Refused
/// with the loader's problems for that entry (located in the edited text), or the file's own
/// problem when the text is not one the loader reads.
pub fn put_server(
    file: &Path,
    scope: ConfigScope,
    text: &str,
    name: &str,
    entry: &Value,
) -> Result<String, Vec<ConfigError>> {
    if name.trim().is_empty() {
        return Err(vec![ConfigError::file(file, None, "a server needs a name")]);
    }
    if !entry.is_object() {
        let mut e = ConfigError::file(file, None, "a server entry must be a JSON object");
        e.server = Some(name.to_string());
        return Err(vec![e]);
    }
    let out = json_edit::edit(text, &[SERVERS_KEY, name], Edit::Set(entry))
        .map_err(|e| vec![edit_error(file, name, e)])?;
    let loaded = parse_config_text(file, scope, &out);
    let problems: Vec<ConfigError> = loaded
        .errors
        .into_iter()
        .filter(|e| e.server.as_deref() == Some(name) || e.server.is_none())
        .collect();
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// `text` without server `name` (unchanged when there is none).
pub fn remove_server(file: &Path, text: &str, name: &str) -> Result<String, ConfigError> {
    json_edit::edit(text, &[SERVERS_KEY, name], Edit::Remove).map_err(|e| edit_error(file, name, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = "{\n  \"$schema\": \"x\",\n  \"mcpServers\": {\n    \"files\": {\"command\": \"npx\", \"args\": [\"-y\", \"srv\"], \"x-note\": \"kept\"}\n  }\n}\n";

    fn path() -> &'static Path {
        Path::new("/p/.aibuddy/mcp.json")
    }

    #[test]
    fn adding_a_server_keeps_the_others_and_unknown_keys() {
        let entry = json!({"url": "https://example.com/mcp", "headers": {"X-A": "1"}});
        let out = put_server(path(), ConfigScope::Project, FILE, "remote", &entry).unwrap();
        assert!(out.starts_with("{\n  \"$schema\": \"x\",\n  \"mcpServers\": {\n    \"files\": {\"command\": \"npx\", \"args\": [\"-y\", \"srv\"], \"x-note\": \"kept\"},\n"));
        let loaded = parse_config_text(path(), ConfigScope::Project, &out);
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "remote"]);
    }

    #[test]
    fn an_invalid_entry_is_refused_with_the_loaders_located_problem() {
        let entry = json!({"command": "npx", "args": "not-a-list"});
        let errs = put_server(path(), ConfigScope::User, FILE, "bad", &entry).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        let e = &errs[0];
        assert_eq!(
            (e.server.as_deref(), e.field.as_deref()),
            (Some("bad"), Some("args"))
        );
        assert!(e.line.is_some() && e.column.is_some(), "{e}");
        assert!(e.message.contains("an array of strings"), "{e}");
        let neither = put_server(path(), ConfigScope::User, FILE, "n", &json!({})).unwrap_err();
        assert_eq!(neither[0].server.as_deref(), Some("n"));
        assert!(put_server(path(), ConfigScope::User, FILE, " ", &json!({})).is_err());
        assert!(put_server(path(), ConfigScope::User, FILE, "x", &json!([1])).is_err());
    }

    #[test]
    fn replacing_and_removing() {
        let entry = json!({"command": "uvx", "args": ["other"]});
        let out = put_server(path(), ConfigScope::User, FILE, "files", &entry).unwrap();
        let loaded = parse_config_text(path(), ConfigScope::User, &out);
        assert_eq!(loaded.servers.len(), 1);
        assert!(out.contains("\"$schema\": \"x\""));
        let gone = remove_server(path(), &out, "files").unwrap();
        assert!(
            parse_config_text(path(), ConfigScope::User, &gone)
                .servers
                .is_empty()
        );
        assert_eq!(remove_server(path(), FILE, "absent").unwrap(), FILE);
    }

    #[test]
    fn a_file_the_loader_refuses_is_not_edited() {
        let e = put_server(
            path(),
            ConfigScope::User,
            "{\"mcpServers\": {",
            "a",
            &json!({"command": "x"}),
        )
        .unwrap_err();
        assert_eq!(e[0].line, Some(1));
        assert!(e[0].server.is_none());
        assert!(
            is_valid_new_name("files_2-a") && !is_valid_new_name("a b") && !is_valid_new_name("")
        );
    }
}
