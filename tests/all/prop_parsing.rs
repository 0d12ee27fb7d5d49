//! Property tests of the core's parsers of untrusted text: settings files (layered, field by
//! field), `SKILL.md` frontmatter, and tool arguments against the built-in tools' schemas.

use aibuddy::contract::{Stage, ToolSpec};
use aibuddy::settings::{Settings, layer};
use aibuddy::skills::parse::{MAX_DESCRIPTION, is_valid_name};
use aibuddy::skills::parse_skill;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Arbitrary JSON, with the settings' own section and field names frequent among the keys.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "tools",
            "sandbox",
            "confirm",
            "exec",
            "enabled",
            "disabled",
            "kind",
            "daytona",
            "auto_approve_writes",
            "default_timeout_ms",
            "heartbeat_secs",
            "network",
            "writable_roots",
            "env_include",
            "env_exclude",
            "SECRET_KEY",
        ])
        .prop_map(str::to_string),
        "[a-z_]{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop::sample::select(vec![
            "local",
            "e2b",
            "daytona",
            "SECRET-hunter2",
            "filesystem",
            "/",
            "..",
            "\u{1b}[2K",
            "\u{0}",
        ])
        .prop_map(|s| Value::String(s.to_string())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A settings-shaped document: known sections holding arbitrary fields and values.
fn settings_doc() -> impl Strategy<Value = String> {
    let section = prop::collection::btree_map(
        prop::sample::select(vec![
            "enabled",
            "disabled",
            "kind",
            "daytona",
            "e2b",
            "auto_approve_writes",
            "default_timeout_ms",
            "heartbeat_secs",
            "network",
            "writable_roots",
            "env_include",
            "env_exclude",
            "unknown_field",
        ])
        .prop_map(str::to_string),
        json_value(),
        0..5,
    );
    (
        prop::collection::btree_map(
            prop::sample::select(vec!["tools", "sandbox", "confirm", "exec", "other"])
                .prop_map(str::to_string),
            prop_oneof![
                4 => section.prop_map(|m| Value::Object(m.into_iter().collect())),
                1 => json_value(),
            ],
            0..5,
        ),
        any::<bool>(),
    )
        .prop_map(|(m, pretty)| {
            let v = Value::Object(m.into_iter().collect());
            if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                v.to_string()
            }
        })
}

fn text_or_json() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => settings_doc(),
        1 => json_value().prop_map(|v| v.to_string()),
        1 => ".{0,80}",
    ]
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

fn check_layered(user: &str, project: &str) -> Result<(), TestCaseError> {
    let files = vec![
        ("user.json".to_string(), user.to_string()),
        ("project.json".to_string(), project.to_string()),
    ];
    let loaded = layer_trusted(&files);
    for p in &loaded.problems {
        let body = &files
            .iter()
            .find(|(n, _)| *n == p.file)
            .expect("known file")
            .1;
        if let Some(line) = p.line {
            prop_assert!(
                line >= 1 && line as usize <= body.split('\n').count(),
                "{p:?}"
            );
        }
        // No settings value in a problem (only keys and types): values may be secrets.
        let key_says_it = body.contains("\"SECRET_KEY\"");
        prop_assert!(
            key_says_it || !p.message.contains("hunter2"),
            "value leaked: {p:?}"
        );
    }
    if loaded.problems.iter().any(|p| p.field == "(merged)") {
        return Ok(());
    }
    let effective = serde_json::to_value(&loaded.settings).unwrap();
    let defaults = serde_json::to_value(Settings::default()).unwrap();
    for section in ["tools", "sandbox", "confirm", "exec"] {
        for field in defaults[section].as_object().unwrap().keys() {
            // Roots are rewritten to resolved paths (or refused): `settings::roots` tests them.
            if field == "writable_roots" {
                continue;
            }
            let mut want = defaults[section][field].clone();
            for (name, body) in &files {
                let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(body) else {
                    continue;
                };
                let Some(v) = doc.get(section).and_then(|s| s.get(field)) else {
                    continue;
                };
                let dotted = format!("{section}.{field}");
                if !loaded
                    .problems
                    .iter()
                    .any(|p| p.file == *name && (p.field == dotted || p.field == section))
                {
                    want = v.clone();
                }
            }
            if (section, field.as_str()) == ("exec", "network") {
                // `{}` and `{"deny": []}` are one setting (no deny entries): compared as settings.
                let setting = |v: &Value| {
                    serde_json::from_value::<aibuddy::settings::NetworkSetting>(v.clone()).ok()
                };
                prop_assert_eq!(
                    setting(&effective[section][field]),
                    setting(&want),
                    "exec.network"
                );
                continue;
            }
            prop_assert_eq!(&effective[section][field], &want, "{}.{}", section, field);
        }
    }
    Ok(())
}

fn builtin_specs() -> Vec<ToolSpec> {
    aibuddy::tools::builtin_configs()
        .iter()
        .flat_map(|c| c.tools().unwrap())
        .map(|d| d.spec)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Arbitrary settings text never panics; what takes effect is, field by field, exactly what
    /// the highest layer wrote without a problem; values never appear in problems.
    #[test]
    fn settings_layers_take_effect_field_by_field(user in text_or_json(), project in text_or_json()) {
        check_layered(&user, &project)?;
    }

    /// Arbitrary SKILL.md text: a parsed skill is well-formed, a problem points inside the file.
    #[test]
    fn skill_md_parses_or_names_a_line(
        name in prop_oneof!["[a-z0-9-]{0,70}", ".{0,20}"],
        description in prop_oneof![".{0,40}", Just("x".repeat(MAX_DESCRIPTION + 1))],
        extra in prop::sample::select(vec!["", "a: &a [1]\nb: *a\n", "x: {y: {z: [[[[]]]]}}\n", "- list\n", "name: [1]\n"]),
        body in ".{0,40}",
        close in prop::sample::select(vec!["---", "...", "", "--"]),
    ) {
        let text = format!("---\nname: {name}\ndescription: {description}\n{extra}{close}\n{body}");
        match parse_skill("s/SKILL.md", &text) {
            Ok(s) => {
                prop_assert!(is_valid_name(&s.name));
                prop_assert!(!s.description.is_empty() && s.description.chars().count() <= MAX_DESCRIPTION);
                prop_assert!(!s.body.is_empty() && text.contains(&s.body));
            }
            Err(p) => {
                prop_assert!(p.line >= 1 && p.line <= text.split('\n').count() + 1, "{p}");
            }
        }
    }

    /// Any JSON (or not-JSON) arguments against each built-in tool: a validated value or a
    /// Parameters error with JSON pointers, never a panic.
    #[test]
    fn builtin_arguments_validate_or_fail_at_parameters(args in prop_oneof![json_value().prop_map(|v| v.to_string()), ".{0,40}"]) {
        for spec in builtin_specs() {
            match spec.parse_args(&args) {
                Ok(v) => prop_assert!(spec.validate(&v).is_ok()),
                Err(e) => {
                    prop_assert_eq!(e.stage, Stage::Parameters);
                    prop_assert!(e.code == "malformed_arguments" || e.code == "invalid_arguments", "{}", e.code);
                }
            }
        }
    }
}

/// A settings value must never be quoted in a problem, even one shaped like serde's own message
/// (found by fuzzing: `{"exec":{"network":"x, expected SECRET"}}` once yielded the problem
/// "wrong type: found a string, expected SECRET\"; ...").
#[test]
fn settings_values_shaped_like_serde_messages_do_not_leak() {
    for field in [
        "network",
        "default_timeout_ms",
        "writable_roots",
        "env_include",
    ] {
        let text = json!({"exec": {field: "x, expected SECRET-hunter2 at line 1"}}).to_string();
        check_layered(&text, "{}").unwrap();
        check_layered("{}", &text).unwrap();
    }
}

/// The three properties above on inputs chosen by hand: the hostile cases named in the issue.
#[test]
fn hostile_settings_and_skills_by_hand() {
    for text in [
        "",
        "\u{0}",
        "[]",
        "null",
        "{\"exec\": 1e999}",
        &"[".repeat(10_000),
        "{\"exec\":{\"writable_roots\":[\"sub/../../x\"]}}",
    ] {
        check_layered(text, text).unwrap();
    }
    let bomb = format!(
        "---\nname: x\ndescription: d\na: &a [\"lol\",\"lol\"]\n{}---\nbody\n",
        (b'b'..=b'z')
            .map(|c| {
                let p = (c - 1) as char;
                format!(
                    "{}: &{} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n",
                    c as char, c as char
                )
            })
            .collect::<String>()
    );
    // A billion-laughs frontmatter is refused or parsed without expanding it: no hang, no panic.
    let started = std::time::Instant::now();
    let _ = parse_skill("s/SKILL.md", &bomb);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
