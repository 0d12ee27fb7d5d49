//! Through the real binary: what issue 22 found readable inside `execute` is not. The default
//! data directory while another `--data-dir` is in use, a credential under the home
//! (`~/.claude/.credentials.json`), the file `GOOGLE_APPLICATION_CREDENTIALS` names, and
//! environment values (`DATABASE_URL` with a password, `MYSQL_PWD`, `GH_PAT`) never reach the
//! command; the confirmation scope counts the withheld variables.

use crate::support;

use serde_json::Value;
use support::aibuddy_cmd;

#[test]
fn the_core_hides_both_data_dirs_and_what_the_environment_names() {
    // Outside /tmp: the sandbox's private /tmp would hide anything there anyway.
    let home = visible_tempdir();
    let data = visible_tempdir();
    let outside = visible_tempdir();
    let project = tempfile::tempdir().unwrap();
    let h = home.path().canonicalize().unwrap();
    let default_data = h.join(".local/share/aibuddy");
    std::fs::create_dir_all(&default_data).unwrap();
    std::fs::write(default_data.join("mcp.json"), "DEFAULT-DATA-1").unwrap();
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    std::fs::write(h.join(".claude/.credentials.json"), "CLAUDE-2").unwrap();
    let sa = outside.path().canonicalize().unwrap().join("sa.json");
    std::fs::write(&sa, "GAC-3").unwrap();
    std::fs::write(h.join("visible.txt"), "CONTROL-OK").unwrap();
    let command = format!(
        "cat {h}/visible.txt; cat {d}/mcp.json; cat {h}/.claude/.credentials.json; cat {sa}; env",
        h = h.display(),
        d = default_data.display(),
        sa = sa.display()
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let out = aibuddy_cmd(project.path(), data.path())
        .args(["call", "execute", &args, "--yes", "--json"])
        .env("HOME", &h)
        .env_remove("XDG_DATA_HOME")
        .env("GOOGLE_APPLICATION_CREDENTIALS", &sa)
        .env("DATABASE_URL", "postgres://app:DBPASS-4@db:5432/x")
        .env("MYSQL_PWD", "MYSQL-5")
        .env("GH_PAT", "GHPAT-6")
        .env("AIBUDDY_T_HARMLESS", "HARMLESS-7")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    let model = v["model"].as_str().unwrap_or_default().to_string();
    assert!(
        model.contains("CONTROL-OK"),
        "the command did not run: {v}\n{stderr}"
    );
    assert!(model.contains("HARMLESS-7"), "{model}");
    for secret in [
        "DEFAULT-DATA-1",
        "CLAUDE-2",
        "GAC-3",
        "DBPASS-4",
        "MYSQL-5",
        "GHPAT-6",
    ] {
        assert!(
            !stdout.contains(secret),
            "{secret} reached the command:\n{model}"
        );
    }
    let dropped: Vec<&str> = v["client"]["env_dropped"]
        .as_array()
        .unwrap_or_else(|| panic!("no env_dropped in {v}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for name in ["DATABASE_URL", "GH_PAT", "MYSQL_PWD"] {
        assert!(dropped.contains(&name), "{name} not in {dropped:?}");
    }
}

/// A directory outside `/tmp` (the sandbox's private `/tmp` would hide anything there, so a hidden
/// file would prove nothing), wherever the clone is: the target directory lies under `/tmp` when
/// the repository is cloned there.
fn visible_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("aibuddy-secrets-test-")
        .tempdir_in("/var/tmp")
        .unwrap()
}
