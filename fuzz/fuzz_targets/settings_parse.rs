//! Settings parsing: `settings::layer` over a user file and a project file of arbitrary text.
//!
//! Input: `user text 0x1E project text`.
//! Invariants: never panics; every problem names its file and a line inside that file; each field
//! of a known section that drew no problem takes effect with exactly the value written (the
//! project's over the user's), and a field that drew a problem keeps the value of the layer below
//! (or the default); a string value marked `SECRET` never appears in a problem (settings may hold
//! secrets and problems reach logs and terminals) unless a key says it too.
#![no_main]

use aibuddy::settings::{Settings, layer};
use aibuddy_fuzz::{fields, text};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

const SECTIONS: [&str; 4] = ["tools", "sandbox", "confirm", "exec"];

fn strings(v: &Value, keys: &mut Vec<String>, values: &mut Vec<String>) {
    match v {
        Value::String(s) => values.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, keys, values)),
        Value::Object(o) => {
            for (k, x) in o {
                keys.push(k.clone());
                strings(x, keys, values);
            }
        }
        _ => {}
    }
}

/// Both files layered as the core does for a trusted project at `/p` (so every field the files
/// write can take effect), with roots "resolved" without touching the disk.
fn layer_trusted(files: &[(String, String)]) -> aibuddy::settings::LoadedSettings {
    use aibuddy::settings::{LayerContext, SettingsText};
    use std::path::{Path, PathBuf};
    let texts: Vec<SettingsText> = files
        .iter()
        .map(|(file, text)| SettingsText {
            file: file.clone(),
            text: text.clone(),
        })
        .collect();
    let identity = |p: &Path| -> std::io::Result<PathBuf> { Ok(p.to_path_buf()) };
    let ctx = LayerContext {
        project_root: Path::new("/p"),
        home: Some(Path::new("/home/u")),
        project_trusted: true,
        user_trusted: true,
        data_dir: None,
        approvals_record: None,
        canonicalize: &identity,
    };
    layer(texts.first(), texts.get(1), &ctx)
}

fuzz_target!(|data: &[u8]| {
    let parts = fields(data, 2);
    let files = vec![
        ("user.json".to_string(), text(parts[0])),
        ("project.json".to_string(), text(parts[1])),
    ];
    let loaded = layer_trusted(&files);

    for p in &loaded.problems {
        let Some((_, body)) = files.iter().find(|(name, _)| *name == p.file) else {
            panic!("problem names an unknown file: {p:?}");
        };
        if let Some(line) = p.line {
            let lines = body.split('\n').count() as u32;
            assert!(line >= 1 && line <= lines, "line {line} of {lines}: {p:?}");
        }
        assert!(!p.message.is_empty());
    }

    // Secrets: values marked SECRET never show in problems.
    let mut keys = Vec::new();
    let mut values = Vec::new();
    for (_, body) in &files {
        if let Ok(v) = serde_json::from_str::<Value>(without_bom(body)) {
            strings(&v, &mut keys, &mut values);
        }
    }
    let marked = values.iter().any(|v| v.contains("SECRET"));
    if marked && !keys.iter().any(|k| k.contains("SECRET")) {
        for p in &loaded.problems {
            assert!(
                !p.message.contains("SECRET") && !p.field.contains("SECRET"),
                "a settings value leaked into a problem: {p:?}"
            );
        }
    }

    // Field by field: what took effect is what the highest layer without a problem wrote.
    let effective = serde_json::to_value(&loaded.settings).expect("settings serialize");
    let defaults = serde_json::to_value(Settings::default()).expect("defaults serialize");
    let parsed: Vec<Option<Map<String, Value>>> = files
        .iter()
        .map(|(_, t)| match serde_json::from_str::<Value>(without_bom(t)) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        })
        .collect();
    if loaded.problems.iter().any(|p| p.field == "(merged)") {
        return;
    }
    for section in SECTIONS {
        let mut fields_seen: Vec<String> = Vec::new();
        for obj in parsed.iter().flatten() {
            if let Some(Value::Object(s)) = obj.get(section) {
                fields_seen.extend(s.keys().cloned());
            }
        }
        for field in fields_seen {
            // Roots are rewritten to resolved paths (or refused): `settings::roots` tests them.
            if field == "writable_roots" {
                continue;
            }
            let mut want = defaults[section].get(&field).cloned();
            for ((name, _), obj) in files.iter().zip(&parsed) {
                let Some(Value::Object(s)) = obj.as_ref().and_then(|o| o.get(section)) else {
                    continue;
                };
                let Some(v) = s.get(&field) else { continue };
                let dotted = format!("{section}.{field}");
                let rejected = loaded
                    .problems
                    .iter()
                    .any(|p| p.file == *name && p.field == dotted);
                if !rejected {
                    want = Some(v.clone());
                }
            }
            let Some(want) = want else { continue };
            let got = &effective[section][&field];
            // `Option<Value>` fields (sandbox.daytona/e2b) read a JSON null as absent.
            if want.is_null() && got.is_null() {
                continue;
            }
            // `exec.network`: `{}` and `{"deny": []}` are one setting; compared as settings.
            if (section, field.as_str()) == ("exec", "network") {
                let setting = |v: &Value| {
                    serde_json::from_value::<aibuddy::settings::NetworkSetting>(v.clone()).ok()
                };
                assert_eq!(setting(got), setting(&want), "exec.network");
                continue;
            }
            assert_eq!(got, &want, "{section}.{field}");
        }
    }
});

/// A leading UTF-8 BOM is accepted by the settings loader (editors on Windows write one);
/// serde_json refuses it, so the oracle drops it the same way.
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}
