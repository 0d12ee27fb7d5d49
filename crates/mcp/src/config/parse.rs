//! A whole `mcp.json` text (pure): parsed once with positions, each server entry on its own
//! ([`super::entry`]), and the user and project files merged.

use std::collections::BTreeMap;
use std::path::Path;

use aibuddy_common::located;
use serde_json::Value;

use super::entry::parse_entry;
use super::expand::Vars;
use super::types::{ConfigError, ConfigScope, LoadedConfigs, ServerConfig};

/// Parses one server entry given as a JSON value. Pure. The value has no file, so its errors
/// carry no line or column.
pub fn parse_server_entry(
    file: &Path,
    scope: ConfigScope,
    name: &str,
    entry: &Value,
) -> Result<ServerConfig, ConfigError> {
    let text = entry.to_string();
    let doc = located::parse(&text).map_err(|e| ConfigError::file(file, None, e.to_string()))?;
    parse_entry(file, scope, name, doc.root(), None, Vars::Keep).map_err(|mut e| {
        e.line = None;
        e.column = None;
        e
    })
}

/// Parses a whole `mcp.json` text keeping `${VAR}` templates as written (see
/// [`parse_config_text_with`]). Pure.
pub fn parse_config_text(file: &Path, scope: ConfigScope, text: &str) -> LoadedConfigs {
    parse_config_text_with(file, scope, text, Vars::Keep)
}

/// Parses a whole `mcp.json` text. `file` is only used to name errors. `vars` says whether
/// `${VAR}`s are expanded (and from where) or kept. Pure given a pure lookup. Servers and
/// errors come in the order of the servers' names.
pub fn parse_config_text_with(
    file: &Path,
    scope: ConfigScope,
    text: &str,
    vars: Vars<'_>,
) -> LoadedConfigs {
    let file_err = |at, message: String| LoadedConfigs {
        servers: Vec::new(),
        errors: vec![ConfigError::file(file, at, message)],
    };
    let doc = match located::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            return file_err(
                Some(e.position),
                format!(
                    "invalid JSON at line {} column {}: {e}",
                    e.position.line, e.position.column
                ),
            );
        }
    };
    let root = doc.root();
    let Some(servers) = root.get("mcpServers") else {
        return match root.entries() {
            Some(_) => LoadedConfigs::default(),
            None => file_err(
                Some(root.position()),
                format!(
                    "expected a JSON object with \"mcpServers\", found {}",
                    root.kind().described()
                ),
            ),
        };
    };
    let Some(mut entries) = servers.value.entries() else {
        let mut out = file_err(
            Some(servers.position),
            format!(
                "expected an object, found {}",
                servers.value.kind().described()
            ),
        );
        out.errors[0].field = Some("mcpServers".into());
        return out;
    };
    entries.sort_by(|a, b| a.key.cmp(&b.key));
    let mut out = LoadedConfigs::default();
    for entry in entries {
        match parse_entry(
            file,
            scope,
            &entry.key,
            entry.value,
            Some(entry.position),
            vars,
        ) {
            Ok(cfg) => out.servers.push(cfg),
            Err(e) => out.errors.push(e),
        }
    }
    out
}

/// User entries first, then project entries replacing user entries of the same name. Pure.
/// A project entry that failed to parse still shadows the user entry of the same name: the
/// person meant to change that server, so silently running the old one would surprise them.
pub fn merge(user: LoadedConfigs, project: LoadedConfigs) -> LoadedConfigs {
    let mut by_name: BTreeMap<String, ServerConfig> = BTreeMap::new();
    for cfg in user.servers {
        by_name.insert(cfg.name.clone(), cfg);
    }
    for err in &project.errors {
        if let Some(server) = &err.server {
            by_name.remove(server);
        }
    }
    for cfg in project.servers {
        by_name.insert(cfg.name.clone(), cfg);
    }
    let mut errors = user.errors;
    errors.extend(project.errors);
    LoadedConfigs {
        servers: by_name.into_values().collect(),
        errors,
    }
}
