//! `mcp.json` parsing: `aibuddy_mcp::config::parse_config_text` on a user file and a project file
//! of arbitrary text, then `merge`.
//!
//! Input: `user text 0x1E project text`.
//! Invariants: never panics; each server entry yields exactly one parsed server or one error
//! naming it; parsed servers keep their scope and source file; an `env` or `headers` value marked
//! `SECRET` never appears in an error (configured values may be secrets); merging lets a project
//! entry replace the user entry of the same name, and a failed project entry hides it.
#![no_main]

use std::collections::BTreeSet;
use std::path::Path;

use aibuddy_fuzz::{fields, text};
use aibuddy_mcp::config::{ConfigScope, merge, parse_config_text};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn check(file: &Path, scope: ConfigScope, body: &str) -> aibuddy_mcp::LoadedConfigs {
    let loaded = parse_config_text(file, scope, body);
    for s in &loaded.servers {
        assert_eq!(s.scope, scope);
        assert_eq!(s.source.as_deref(), Some(file));
    }
    for e in &loaded.errors {
        assert_eq!(e.file, file);
        assert!(!e.message.is_empty());
    }
    // A leading UTF-8 BOM is accepted (editors on Windows write one); serde_json refuses it.
    let json = body.strip_prefix('\u{feff}').unwrap_or(body);
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(json) else {
        assert!(loaded.servers.is_empty());
        return loaded;
    };
    let Some(Value::Object(entries)) = root.get("mcpServers") else {
        assert!(loaded.servers.is_empty());
        return loaded;
    };
    assert_eq!(loaded.servers.len() + loaded.errors.len(), entries.len());
    for s in &loaded.servers {
        assert!(entries.contains_key(&s.name), "{}", s.name);
    }
    for e in &loaded.errors {
        let name = e
            .server
            .as_deref()
            .expect("an entry error names its server");
        assert!(entries.contains_key(name), "{name}");
        // Values under env and headers are never repeated in a message.
        let entry = &entries[name];
        for key in ["env", "headers"] {
            if let Some(Value::Object(m)) = entry.get(key) {
                for v in m.values().filter_map(Value::as_str) {
                    // Skip values that another, printable field (the url, the command, a key,
                    // the server name) happens to contain.
                    let elsewhere = ["url", "command", "type", "cwd"]
                        .iter()
                        .filter_map(|f| entry.get(*f).and_then(Value::as_str))
                        .any(|s| s.contains(v));
                    // Only values marked SECRET: no message template says it, so a match is a leak.
                    if v.contains("SECRET")
                        && !elsewhere
                        && !m.keys().any(|k| k.contains(v))
                        && !name.contains(v)
                    {
                        assert!(!e.to_string().contains(v), "{key} value {v:?} leaked: {e}");
                    }
                }
            }
        }
    }
    loaded
}

fuzz_target!(|data: &[u8]| {
    let parts = fields(data, 2);
    let user_file = Path::new("/data/mcp.json");
    let project_file = Path::new("/project/.aibuddy/mcp.json");
    let user = check(user_file, ConfigScope::User, &text(parts[0]));
    let project = check(project_file, ConfigScope::Project, &text(parts[1]));

    let user_names: BTreeSet<String> = user.servers.iter().map(|s| s.name.clone()).collect();
    let project_ok: BTreeSet<String> = project.servers.iter().map(|s| s.name.clone()).collect();
    let project_failed: BTreeSet<String> = project
        .errors
        .iter()
        .filter_map(|e| e.server.clone())
        .collect();
    let errors = user.errors.len() + project.errors.len();
    let merged = merge(user, project);
    assert_eq!(merged.errors.len(), errors);
    let merged_names: BTreeSet<String> = merged.servers.iter().map(|s| s.name.clone()).collect();
    let expected: BTreeSet<String> = user_names
        .difference(&project_failed)
        .cloned()
        .chain(project_ok.iter().cloned())
        .collect();
    assert_eq!(merged_names, expected);
    for s in &merged.servers {
        if project_ok.contains(&s.name) {
            assert_eq!(s.scope, ConfigScope::Project, "{}", s.name);
        }
    }
});
