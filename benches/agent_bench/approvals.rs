//! Section `approvals` (issue 23): how often a scripted coding session of 30 calls asks the
//! person in `auto` mode, against the same session in `ask` mode measured in the same run.
//! Goal: at most 3 asks in `auto`, each one a case the issue lists as still asked.
//!
//! The session runs through the real `aibuddy run --json --yes --approvals MODE` against the
//! scripted fake provider (which checks the protocol on every request), in a fresh temporary git
//! project holding a tiny Rust crate (no dependencies) with a bare remote inside it. The calls:
//! listing, reading, grep and glob, `git status`/`log`/`diff`/`add`/`commit`, edits and new
//! files, `cargo build`/`cargo test`, a package install from a loopback registry on the person's
//! `exec.network` allow list (`pip install --target` from a PEP 503 index serving a wheel, or
//! `curl` + `tar` of a tarball when pip is missing), and `git push`, which the person's own rule
//! `{"command": "git push *", "decision": "ask"}` asks about.
//!
//! An ask is a `confirm_request` event (`--yes` answers it); each is printed with its target and
//! the reason the approvals gave. A host on no allow list would be a network question, which
//! `--yes` refuses without asking: every network decision of every command is read back from its
//! record (`aibuddy show ID --json`) and any host asked about or refused is counted as an ask too.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::{FakeServer, Turn};
use serde_json::{Value, json};

use crate::common::{load, verdict};

const GOAL_ASKS: usize = 3;

/// The person's own rule in this session: pushing is always shown to them.
const PUSH_RULE: &str = "git push *";

/// A loopback package registry on the host: `path -> body`, on 127.0.0.2 (a loopback address
/// commands reach only through the allow-list proxy, as `NO_PROXY` names 127.0.0.1).
fn registry(files: Files) -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.2:0").map_err(|e| format!("127.0.0.2: {e}"))?;
    let port = l.local_addr().map_err(|e| e.to_string())?.port();
    let files = Arc::new(files);
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            let files = files.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&got);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                // Absolute-form through the proxy, or origin-form.
                let path = path
                    .split_once("://")
                    .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
                    .unwrap_or(path);
                let (status, body) = match files.get(path) {
                    Some(b) => ("200 OK", b.clone()),
                    None => ("404 Not Found", b"not found\n".to_vec()),
                };
                let kind = if path.ends_with('/') {
                    "text/html"
                } else {
                    "application/octet-stream"
                };
                let _ = s.write_all(
                    format!(
                        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .as_bytes(),
                );
                let _ = s.write_all(&body);
            });
        }
    });
    Ok(port)
}

fn sh(dir: &Path, line: &str) -> Result<(), String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("sh: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{line}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The host's Python interpreter itself (not a version manager's shim, whose hook would try to
/// write outside the project after `pip install`), when it has pip.
fn python_with_pip() -> Option<String> {
    let out = Command::new("python3")
        .args(["-c", "import sys, pip; print(sys.executable)"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !path.is_empty() && !path.contains(char::is_whitespace))
        .then_some(path)
}

/// What the registry serves: path -> body.
type Files = BTreeMap<String, Vec<u8>>;

/// The registry's files: a wheel and its simple index (built with the host's python3), and a
/// tarball; and the Python that installs it (None: the session uses curl + tar).
fn packages(tmp: &Path) -> Result<(Files, Option<String>), String> {
    let src = tmp.join("pkgsrc");
    std::fs::create_dir_all(src.join("tinypkg")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(src.join("tinypkg-0.1.0.dist-info")).map_err(|e| e.to_string())?;
    let write = |p: &str, t: &str| std::fs::write(src.join(p), t).map_err(|e| e.to_string());
    write("tinypkg/__init__.py", "VALUE = 42\n")?;
    write(
        "tinypkg-0.1.0.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1.0\n",
    )?;
    write(
        "tinypkg-0.1.0.dist-info/WHEEL",
        "Wheel-Version: 1.0\nGenerator: aibuddy-bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    )?;
    write(
        "tinypkg-0.1.0.dist-info/RECORD",
        "tinypkg/__init__.py,,\ntinypkg-0.1.0.dist-info/METADATA,,\n\
         tinypkg-0.1.0.dist-info/WHEEL,,\ntinypkg-0.1.0.dist-info/RECORD,,\n",
    )?;
    sh(&src, "tar czf ../tinypkg-0.1.0.tar.gz tinypkg")?;
    let mut files = BTreeMap::new();
    files.insert(
        "/tinypkg-0.1.0.tar.gz".to_string(),
        std::fs::read(tmp.join("tinypkg-0.1.0.tar.gz")).map_err(|e| e.to_string())?,
    );
    let pip = python_with_pip().filter(|_| {
        sh(
            &src,
            "python3 -m zipfile -c ../tinypkg-0.1.0-py3-none-any.whl tinypkg tinypkg-0.1.0.dist-info",
        )
        .is_ok()
    });
    if pip.is_some() {
        let wheel = "tinypkg-0.1.0-py3-none-any.whl";
        files.insert(
            format!("/simple/tinypkg/{wheel}"),
            std::fs::read(tmp.join(wheel)).map_err(|e| e.to_string())?,
        );
        files.insert(
            "/simple/tinypkg/".to_string(),
            format!("<html><body><a href=\"{wheel}\">{wheel}</a></body></html>\n").into_bytes(),
        );
    }
    Ok((files, pip))
}

/// A fresh git project: a tiny crate, committed, with a bare remote inside it (ignored).
fn project(tmp: &Path) -> Result<PathBuf, String> {
    let root = tmp.join("proj");
    std::fs::create_dir_all(root.join("src")).map_err(|e| e.to_string())?;
    let write = |p: &str, t: &str| std::fs::write(root.join(p), t).map_err(|e| e.to_string());
    write(
        "Cargo.toml",
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )?;
    write(
        "src/lib.rs",
        "/// Adds two numbers.\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n}\n",
    )?;
    write("README.md", "# tiny\n\nAdds numbers.\n")?;
    write(".gitignore", "/target\n/vendor\n/remote.git\n")?;
    sh(
        &root,
        "git init -q -b main . && git config user.email bench@example.com && \
         git config user.name bench && git add -A && git commit -qm init && \
         git init -q --bare remote.git && git remote add origin ./remote.git",
    )?;
    Ok(root)
}

/// The 30 calls of the session.
fn session(port: u16, python: Option<&str>) -> Vec<(&'static str, Value)> {
    let install = if let Some(python) = python {
        format!(
            "{python} -m pip install -q --no-cache-dir --disable-pip-version-check --target vendor \
             --index-url http://127.0.0.2:{port}/simple/ tinypkg"
        )
    } else {
        format!(
            "mkdir -p vendor && curl -fsS http://127.0.0.2:{port}/tinypkg-0.1.0.tar.gz \
             | tar xz -C vendor"
        )
    };
    let x = |c: &str| ("execute", json!({ "command": c }));
    vec![
        ("ls", json!({"path": "."})),
        x("git status"),
        ("read_file", json!({"path": "Cargo.toml"})),
        ("read_file", json!({"path": "src/lib.rs"})),
        ("grep", json!({"pattern": "fn add"})),
        ("glob", json!({"pattern": "**/*.rs"})),
        x("git log --oneline -5"),
        x("cargo build 2>&1 | tail -3"),
        x("cargo test 2>&1 | tail -5"),
        (
            "edit_file",
            json!({"path": "src/lib.rs",
                "old_string": "/// Adds two numbers.",
                "new_string": "/// Multiplies two numbers.\npub fn mul(a: i64, b: i64) -> i64 {\n    a * b\n}\n\n/// Adds two numbers."}),
        ),
        (
            "write_file",
            json!({"path": "tests/mul.rs",
                "content": "#[test]\nfn muls() {\n    assert_eq!(tiny::mul(6, 7), 42);\n}\n"}),
        ),
        x("cargo test 2>&1 | grep 'test result'"),
        x("grep -rn 'pub fn' src | head"),
        x("git diff --stat"),
        x("git diff"),
        x(&install),
        x("ls vendor"),
        ("read_file", json!({"path": "vendor/tinypkg/__init__.py"})),
        (
            "edit_file",
            json!({"path": "README.md", "old_string": "Adds numbers.",
                "new_string": "Adds and multiplies numbers."}),
        ),
        x("cd src && wc -l *.rs"),
        x("cargo check -q 2>&1 | tail -3"),
        x("mkdir -p docs && echo '# notes' > docs/notes.md"),
        x("git add -A"),
        x("git status --short"),
        x("git commit -qm 'add mul' && git log --oneline | head -3"),
        ("ls", json!({"path": "src"})),
        x("RUST_BACKTRACE=1 cargo test -q 2>&1 | tail -3"),
        x("find . -name '*.orig' -not -path './target/*' -delete"),
        x("git push -q origin main"),
        x("git log --oneline origin/main | head -1"),
    ]
}

/// What one run of the session did.
struct Outcome {
    /// (tool, target, reason) of each confirmation asked.
    asks: Vec<(String, String, String)>,
    /// Hosts a command asked about or was refused (each would be a question to the person).
    hosts: Vec<String>,
    /// Network decisions that let a connection through, by rule.
    allowed_hosts: Vec<String>,
    /// Calls that did not end `ok` with exit code 0.
    failed: Vec<String>,
    /// The policy recorded on calls run without asking, counted.
    policies: BTreeMap<String, usize>,
    calls: usize,
    wall: Duration,
}

fn cli(bin: &Path, root: &Path, data: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.arg("--project")
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("AIBUDDY_LOG")
        .env_remove("AIBUDDY_DATA_DIR")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null());
    c
}

async fn run_session(bin: &Path, mode: &str) -> Result<Outcome, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = std::fs::canonicalize(tmp.path()).map_err(|e| e.to_string())?;
    let (files, pip) = packages(&base)?;
    let port = registry(files)?;
    let root = project(&base)?;
    let data = base.join("data");
    std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let server = FakeServer::start().await.map_err(|e| e.to_string())?;
    let settings = json!({
        "providers": {"default": "local", "local": {
            "kind": "openai-chat", "base_url": server.openai_base(), "model": "qwen3:8b"}},
        "exec": {"network": {"allow": [format!("127.0.0.2:{port}")]}},
        "approvals": {"rules": [{"command": PUSH_RULE, "decision": "ask"}]}
    });
    std::fs::write(data.join("settings.json"), settings.to_string()).map_err(|e| e.to_string())?;
    let calls = session(port, pip.as_deref());
    for (i, (tool, input)) in calls.iter().enumerate() {
        server.push(
            Turn::text("next")
                .call(&format!("call_s{i:02}"), tool, input.clone())
                .reply(ProviderKind::OpenAiChat),
        );
    }
    server.push(Turn::text("done").reply(ProviderKind::OpenAiChat));
    let started = Instant::now();
    let out = cli(
        bin,
        &root,
        &data,
        &[
            "run",
            "--json",
            "--yes",
            "--approvals",
            mode,
            "--max-steps",
            "100",
            "work on the crate",
        ],
    )
    .output()
    .map_err(|e| format!("aibuddy run: {e}"))?;
    let wall = started.elapsed();
    if let Some(v) = server.violations().first() {
        return Err(format!("protocol violation [{}] {}", v.rule, v.detail));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "aibuddy run ended {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut o = Outcome {
        asks: Vec::new(),
        hosts: Vec::new(),
        allowed_hosts: Vec::new(),
        failed: Vec::new(),
        policies: BTreeMap::new(),
        calls: 0,
        wall,
    };
    let mut ids = Vec::new();
    for e in &events {
        match e["type"].as_str() {
            Some("confirm_request") => {
                let r = &e["request"];
                let why = r["scope"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .find_map(|s| s.strip_prefix("approvals: "))
                    .unwrap_or("the mode's default (every command and write is asked)");
                o.asks.push((
                    r["tool"].as_str().unwrap_or("?").to_string(),
                    r["target"].as_str().unwrap_or("?").to_string(),
                    why.to_string(),
                ));
            }
            Some("tool_result") => {
                o.calls += 1;
                let id = e["tool_call_id"].as_str().unwrap_or_default().to_string();
                let ok = e["status"] == "ok" && e["exit_code"].as_i64().unwrap_or(0) == 0;
                if !ok {
                    o.failed.push(format!(
                        "{id} {} exit {}: {}",
                        e["status"],
                        e["exit_code"],
                        e["model"]
                            .as_str()
                            .unwrap_or("")
                            .lines()
                            .take(12)
                            .collect::<Vec<_>>()
                            .join(" | ")
                    ));
                }
                ids.push(id);
            }
            _ => {}
        }
    }
    for id in ids {
        let shown = cli(bin, &root, &data, &["show", &id, "--json"])
            .output()
            .map_err(|e| format!("aibuddy show: {e}"))?;
        let Ok(v) = serde_json::from_slice::<Value>(&shown.stdout) else {
            continue;
        };
        for c in v["confirm_decisions"].as_array().into_iter().flatten() {
            if let Some(p) = c["policy"].as_str() {
                *o.policies.entry(p.to_string()).or_default() += 1;
            }
        }
        let network = v["client_projection"]["network"]["events"].as_array();
        for n in network.into_iter().flatten() {
            let host = format!(
                "{}:{} (rule {})",
                n["host"].as_str().unwrap_or("?"),
                n["port"],
                n["rule"].as_str().unwrap_or("none")
            );
            let asked = n["rule"].as_str().is_some_and(|r| r.starts_with("asked"));
            if n["allowed"] == true && !asked {
                o.allowed_hosts.push(host);
            } else {
                o.hosts.push(host);
            }
        }
    }
    Ok(o)
}

pub async fn run(bin: &Path) {
    println!(
        "\n-- approvals: asks in a scripted coding session of 30 calls (CLI `aibuddy run --yes --json`)"
    );
    let ask = match run_session(bin, "ask").await {
        Ok(o) => o,
        Err(e) => return println!("   skipped: {e}"),
    };
    let auto = match run_session(bin, "auto").await {
        Ok(o) => o,
        Err(e) => return println!("   skipped: {e}"),
    };
    let n_ask = ask.asks.len() + ask.hosts.len();
    let n_auto = auto.asks.len() + auto.hosts.len();
    println!(
        "   ask mode (baseline): {n_ask} asks over {} calls ({:.1} s)",
        ask.calls,
        ask.wall.as_secs_f64()
    );
    println!(
        "   auto mode: {n_auto} asks over {} calls ({:.1} s), {:.2}x the baseline, goal <= {GOAL_ASKS}: {}",
        auto.calls,
        auto.wall.as_secs_f64(),
        n_auto as f64 / (n_ask as f64).max(1.0),
        verdict(n_auto as f64, GOAL_ASKS as f64)
    );
    for (i, (tool, target, why)) in auto.asks.iter().enumerate() {
        println!("     ask {}: {tool} `{target}`: {why}", i + 1);
    }
    for h in &auto.hosts {
        println!("     network question (or refusal): {h}");
    }
    println!(
        "   network decisions in auto mode: {} let through by the allow list ({}), {} asked or refused",
        auto.allowed_hosts.len(),
        auto.allowed_hosts.join(", "),
        auto.hosts.len()
    );
    println!("   recorded on the calls run without asking (auto mode):");
    for (p, n) in &auto.policies {
        println!("     {n:>2} x {p}");
    }
    for (mode, o) in [("ask", &ask), ("auto", &auto)] {
        if o.failed.is_empty() {
            println!("   {mode} mode: every call ended ok (exit 0)");
        }
        for f in &o.failed {
            println!("   {mode} mode, call not ok: {f}");
        }
    }
    println!("   (load average: {})", load());
}
