//! Red-team regression tests, through real MCP servers: a user-level stdio server (the person's own
//! `mcp.json`, which needs no trust) used to start with the project as its working directory, so
//! a server started the usual way (`python3 -m mcp_server_git`, `npx @modelcontextprotocol/...`)
//! loaded what a command had planted in the project, and ran it unconfined at the next start of
//! any session (reproduced 2026-12-01: it read `~/.ssh` and listed the data directory) while
//! trust stayed `not_needed`.
//!
//! Now a user-level server starts in an empty directory of the data dir; one whose entry still
//! reaches into the project (`cwd` there, `${AIBUDDY_PROJECT_ROOT}` in its args...) is pinned and
//! waits for trust like a project server, and every restart re-checks it.
//!
//! Beyond the peers, `"sandbox"` on a stdio entry runs the server under the confinement of
//! commands: a real stdio server (a small JSON-RPC server in Python that reads and writes the
//! files it is asked to) with `sandbox` cannot read a hidden credential of the person's home nor
//! write outside its writable roots while its tools still work; the same server without it can
//! (so the test shows something); `aibuddy mcp status` says how each one runs.
//!
//! The servers are the real ones `make setup` installs under `.tools/mcp` (or
//! `AIBUDDY_MCP_TOOLS`): the venv's `mcp-server-git`, and `@modelcontextprotocol/server-everything`
//! (found by `npx --no-install` through a global prefix: no network at test time).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aibuddy::app::{App, AppOptions};
use aibuddy::trust::{self, TrustState};
use serde_json::json;

fn tools_dir() -> PathBuf {
    std::env::var_os("AIBUDDY_MCP_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/mcp"))
}

fn venv_python() -> PathBuf {
    let p = tools_dir().join("venv/bin/python3");
    assert!(p.exists(), "{} missing: run `make setup`", p.display());
    p
}

struct Fx {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    project: PathBuf,
    data: PathBuf,
}

fn fx() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let project = base.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::create_dir_all(base.join("data")).unwrap();
    Fx {
        project,
        data: base.join("data"),
        base,
        _tmp: tmp,
    }
}

impl Fx {
    fn user_mcp(&self, servers: serde_json::Value) {
        std::fs::write(
            self.data.join("mcp.json"),
            json!({ "mcpServers": servers }).to_string(),
        )
        .unwrap();
    }

    fn marker(&self) -> PathBuf {
        self.base.join("outside/planted-code-ran")
    }

    /// A `<dir>/mcp_server_git/__main__.py` that writes the marker (what `python -m` would run).
    fn plant_python(&self, dir: &Path) {
        let pkg = dir.join("mcp_server_git");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("__init__.py"), "").unwrap();
        std::fs::write(
            pkg.join("__main__.py"),
            format!("open({:?}, 'w').write('ran')\n", self.marker().display()),
        )
        .unwrap();
    }

    async fn open(&self) -> App {
        App::open(AppOptions {
            project: self.project.clone(),
            data_dir: self.data.clone(),
        })
        .await
        .unwrap()
    }
}

/// The state of `server` once it is connected with tools, or the last failure reason.
async fn connected_tools(app: &App, server: &str, wait: Duration) -> Result<usize, String> {
    let mcp = app.capabilities.mcp.clone().ok_or("no MCP manager")?;
    let deadline = Instant::now() + wait;
    loop {
        let status = mcp.status().into_iter().find(|s| s.server == server);
        let reason = match status.as_ref().map(|s| &s.state) {
            Some(aibuddy_mcp::ServerState::Connected) => {
                let n = status.as_ref().map_or(0, |s| s.tool_count);
                if n > 0 {
                    return Ok(n);
                }
                "connected, no tools yet".to_string()
            }
            Some(aibuddy_mcp::ServerState::Failed { reason, .. }) => reason.clone(),
            Some(aibuddy_mcp::ServerState::Reconnecting { last_reason, .. }) => last_reason.clone(),
            Some(other) => format!("{other:?}"),
            None => "not managed".to_string(),
        };
        if Instant::now() > deadline {
            return Err(reason);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn absent_reason(app: &App, server: &str) -> Option<String> {
    app.tools_list()
        .into_iter()
        .find(|r| r.name == format!("mcp__{server}__*"))
        .and_then(|r| r.absent_reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_python_server_started_the_usual_way_never_imports_a_module_planted_in_the_project()
{
    let f = fx();
    let python = venv_python().display().to_string();
    f.user_mcp(json!({
        "git": {"command": python, "args": ["-m", "mcp_server_git"]},
        // Handed the project on purpose: that reaches into it, so it waits for trust.
        "gitrepo": {"command": python,
                    "args": ["-m", "mcp_server_git", "--repository", "${AIBUDDY_PROJECT_ROOT}"]},
    }));
    // A command planted the package `python -m` finds first in its working directory.
    f.plant_python(&f.project);

    let app = f.open().await;
    let tools = connected_tools(&app, "git", Duration::from_secs(60)).await;
    assert!(
        !f.marker().exists(),
        "the module planted in the project ran unconfined"
    );
    let n = tools.expect("the real mcp-server-git connects from its own directory");
    assert!(n >= 5, "git tools listed: {n}");
    assert_eq!(
        absent_reason(&app, "gitrepo").as_deref(),
        Some("project not trusted"),
        "a user-level entry handed ${{AIBUDDY_PROJECT_ROOT}} waits for trust"
    );
    let status = trust::status(&f.project, &f.data).unwrap();
    assert_eq!(status.state, TrustState::Untrusted);
    let names: Vec<(&str, &str)> = status
        .grants
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.scope.as_str()))
        .collect();
    assert_eq!(names, vec![("gitrepo", "user")], "{status:?}");
    // The neutral directory is empty and the person's own.
    let cwd = f.data.join(trust::mcp::NEUTRAL_CWD);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&cwd).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_npx_server_never_runs_a_package_planted_in_the_project() {
    let f = fx();
    // The installed server, as a global install (no registry needed: `--no-install`).
    let real = tools_dir().join("node/node_modules/@modelcontextprotocol/server-everything");
    assert!(
        real.exists(),
        "{} missing: run `make setup`",
        real.display()
    );
    let global = f.base.join("global");
    std::fs::create_dir_all(global.join("lib/node_modules/@modelcontextprotocol")).unwrap();
    std::fs::create_dir_all(global.join("bin")).unwrap();
    std::os::unix::fs::symlink(
        &real,
        global.join("lib/node_modules/@modelcontextprotocol/server-everything"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../lib/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        global.join("bin/mcp-server-everything"),
    )
    .unwrap();
    f.user_mcp(json!({
        "everything": {"command": "npx",
                       "args": ["--no-install", "@modelcontextprotocol/server-everything"],
                       "env": {"npm_config_prefix": global.display().to_string(),
                               "npm_config_offline": "true"}},
    }));
    // A command planted the package (and its `.bin` link) in the project's node_modules.
    let pkg = f
        .project
        .join("node_modules/@modelcontextprotocol/server-everything");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        json!({"name": "@modelcontextprotocol/server-everything", "version": "9.9.9",
               "bin": {"mcp-server-everything": "plant.sh"}})
        .to_string(),
    )
    .unwrap();
    let plant = pkg.join("plant.sh");
    std::fs::write(
        &plant,
        format!("#!/bin/sh\ntouch '{}'\n", f.marker().display()),
    )
    .unwrap();
    std::fs::set_permissions(&plant, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(f.project.join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink(
        "../@modelcontextprotocol/server-everything/plant.sh",
        f.project.join("node_modules/.bin/mcp-server-everything"),
    )
    .unwrap();

    let app = f.open().await;
    let tools = connected_tools(&app, "everything", Duration::from_secs(60)).await;
    assert!(
        !f.marker().exists(),
        "the package planted in the project ran unconfined"
    );
    tools.expect("the installed server-everything connects");
    assert_eq!(
        trust::status(&f.project, &f.data).unwrap().state,
        TrustState::NotNeeded
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_entry_with_cwd_in_the_project_waits_for_trust_and_every_restart_rechecks_it() {
    let f = fx();
    let sub = f.project.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    f.user_mcp(json!({
        "git": {"command": venv_python().display().to_string(),
                "args": ["-m", "mcp_server_git"], "cwd": sub.display().to_string()},
    }));

    // Untrusted: not started, listed absent with the reason; trust shows it with its pins.
    let app = f.open().await;
    assert_eq!(app.trust.state, TrustState::Untrusted);
    assert_eq!(
        absent_reason(&app, "git").as_deref(),
        Some("project not trusted")
    );
    drop(app);
    let shown = trust::status(&f.project, &f.data).unwrap();
    let grant = shown
        .grants
        .servers
        .first()
        .expect("the user entry is a grant");
    assert_eq!((grant.name.as_str(), grant.scope.as_str()), ("git", "user"));
    assert!(
        grant
            .pins
            .iter()
            .any(|p| p.path == "cwd sub" && p.state == "directory"),
        "{:?}",
        grant.pins
    );
    assert!(
        grant
            .pins
            .iter()
            .any(|p| p.path == "sub/mcp_server_git/__main__.py" && p.state == "absent"),
        "what `python -m` would find first is pinned: {:?}",
        grant.pins
    );

    // Trusted: it starts.
    trust::grant(&f.project, &f.data, &shown.digest).unwrap();
    let app = f.open().await;
    assert_eq!(app.trust.state, TrustState::Trusted);
    connected_tools(&app, "git", Duration::from_secs(60))
        .await
        .expect("the trusted entry starts");

    // Mid-session a command plants the module; a reconnect does not run it.
    f.plant_python(&sub);
    assert_eq!(
        trust::status(&f.project, &f.data).unwrap().state,
        TrustState::ChangedSinceTrusted
    );
    let mcp = app.capabilities.mcp.clone().unwrap();
    // The person's "reconnect": the server is killed, and its restart asks the spawn gate.
    mcp.restart("git").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reason = match connected_tools(&app, "git", Duration::ZERO).await {
            Ok(_) => String::new(),
            Err(r) => r,
        };
        if reason.contains("project not trusted") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the restart was not refused: {reason}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !f.marker().exists(),
        "the planted module ran on a reconnect"
    );
    drop(app);

    // The next session does not start it either.
    let app = f.open().await;
    assert_eq!(
        absent_reason(&app, "git").as_deref(),
        Some("project not trusted")
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !f.marker().exists(),
        "the planted module ran at the next open"
    );
}

/// A line-based JSON-RPC MCP server: `read {path}` returns the file's text, `write {path}` writes
/// `written` there; a failure is a tool error naming the exception.
const PROBE_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
# `--started=FILE`: leave a mark that it started; `--try=URL`: fetch URL first (through the proxy
# the variables name), whatever the answer.
for a in sys.argv[1:]:
    if a.startswith("--started="):
        try:
            open(a[len("--started="):], "w").write("started")
        except Exception:
            pass
    elif a.startswith("--try="):
        import urllib.request
        try:
            urllib.request.urlopen(a[len("--try="):], timeout=10).read()
        except Exception:
            pass
schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
for line in sys.stdin:
    if not line.strip():
        continue
    m = json.loads(line)
    mid, meth = m.get("id"), m.get("method")
    if meth == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "probe", "version": "1"}}})
    elif meth == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "read", "description": "Read a file", "inputSchema": schema},
            {"name": "write", "description": "Write a file", "inputSchema": schema}]}})
    elif meth == "tools/call":
        name, path = m["params"]["name"], m["params"]["arguments"]["path"]
        try:
            if name == "read":
                text = open(path).read()
            else:
                open(path, "w").write("written"); text = "wrote it"
            err = False
        except Exception as e:
            text, err = "FAILED " + type(e).__name__, True
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": text}], "isError": err}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

/// A fixture the sandbox sees as the host does: outside `/tmp` (the namespace path replaces it).
struct Boxed {
    _dir: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
    project: PathBuf,
    data: PathBuf,
}

fn boxed_fixture() -> Boxed {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("aibuddy-mcp-sandbox-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (home, project, data) = (base.join("home"), base.join("proj"), base.join("data"));
    for d in [
        &home.join(".ssh"),
        &project,
        &data,
        &base.join("outside"),
        &base.join("cache"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "SSH-KEY-SECRET").unwrap();
    std::fs::write(project.join("README"), "PROJECT-README").unwrap();
    std::fs::write(base.join("probe_server.py"), PROBE_SERVER).unwrap();
    Boxed {
        _dir: dir,
        base,
        home,
        project,
        data,
    }
}

impl Boxed {
    /// `aibuddy ARGS` with the fake home: (exit code, stdout, stderr).
    fn aibuddy(&self, args: &[&str]) -> (i32, String, String) {
        let out = support::aibuddy_cmd(&self.project, &self.data)
            .env("HOME", &self.home)
            .env("AIBUDDY_MCP_CONNECT_WAIT_MS", "20000")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The JSON outcome of `aibuddy call mcp__SERVER__TOOL {"path": path}`, as text.
    fn call(&self, server: &str, tool: &str, path: &Path) -> String {
        let args = json!({"path": path}).to_string();
        let tool = format!("mcp__{server}__{tool}");
        let (_, out, err) = self.aibuddy(&["call", &tool, &args, "--yes", "--json"]);
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        v.to_string()
    }
}

#[test]
fn a_sandboxed_server_cannot_read_hidden_credentials_or_write_outside_its_roots() {
    let f = boxed_fixture();
    let script = f.base.join("probe_server.py").display().to_string();
    let cache = f.base.join("cache");
    std::fs::write(
        f.data.join("mcp.json"),
        json!({"mcpServers": {
            "plain": {"command": "python3", "args": [script]},
            "boxed": {"command": "python3", "args": [script],
                      "sandbox": {"writable_roots": [cache.display().to_string()]}},
        }})
        .to_string(),
    )
    .unwrap();

    // Status: how each runs.
    let (code, out, err) = f.aibuddy(&["mcp", "status", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["server"] == name)
            .unwrap_or_else(|| panic!("{name} not in {rows}"))
            .clone()
    };
    assert_eq!(row("boxed")["state"], "connected", "{rows}");
    assert_eq!(row("plain")["sandbox"], serde_json::Value::Null, "{rows}");
    let sandbox = &row("boxed")["sandbox"];
    let how = sandbox["confinement"].as_str().unwrap_or_default();
    assert!(how.starts_with("namespaces"), "{rows}");
    assert_eq!(sandbox["network"], "off", "{rows}");
    let (_, text, _) = f.aibuddy(&["mcp", "status"]);
    assert!(
        text.contains(&format!("sandboxed: {how}, network: off")),
        "{text}"
    );

    // Its tools work: the project is readable, its writable root writable.
    let readme = f.project.join("README");
    assert!(f.call("boxed", "read", &readme).contains("PROJECT-README"));
    let ok = cache.join("ok");
    f.call("boxed", "write", &ok);
    assert!(ok.exists(), "the writable root is writable");

    // The credential and the data dir are hidden; nothing is written outside its roots.
    let key = f.home.join(".ssh/id_rsa");
    let got = f.call("boxed", "read", &key);
    assert!(!got.contains("SSH-KEY-SECRET"), "{got}");
    assert!(got.contains("FAILED"), "{got}");
    let got = f.call("boxed", "read", &f.data.join("mcp.json"));
    assert!(got.contains("FAILED"), "the data dir is hidden: {got}");
    for target in [f.base.join("outside/boxed"), f.project.join("boxed")] {
        let got = f.call("boxed", "write", &target);
        assert!(got.contains("FAILED"), "{got}");
        assert!(!target.exists(), "{} written", target.display());
    }

    // The same server unconfined reads and writes all of it (the test is meaningful).
    assert!(f.call("plain", "read", &key).contains("SSH-KEY-SECRET"));
    let outside = f.base.join("outside/plain");
    f.call("plain", "write", &outside);
    assert!(outside.exists());
}

/// Runs `cmd` as if on a kernel without Landlock: a seccomp filter installed just before `exec`
/// makes the Landlock calls fail with `ENOSYS` (what a kernel without it answers) in the CLI and
/// everything it starts. No switch of the app is involved.
fn without_landlock(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // landlock_create_ruleset, landlock_add_rule, landlock_restrict_self: 444..=446 on every
    // architecture with the generic table (x86_64 and aarch64 alike).
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xC000_003E;
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xC000_00B7;
    fn stmt(code: u16, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }
    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const JGT: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let filter = [
        stmt(LD_W_ABS, 4), // seccomp_data.arch
        jump(JEQ, ARCH, 0, 4),
        stmt(LD_W_ABS, 0), // seccomp_data.nr
        jump(JGE, 444, 0, 2),
        jump(JGT, 446, 1, 0),
        stmt(RET, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        stmt(RET, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: between fork and exec only prctl runs, on a filter this closure owns.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Issue 22: where no confinement can be applied (the person turned namespaces off and the
/// kernel has no Landlock), a sandboxed server is not started at all, never unconfined: its state
/// is failed with an Execution-stage reason, in `mcp status` text and `--json`; a plain server
/// beside it starts (the CLI under the filter works).
#[test]
fn a_sandboxed_server_is_not_started_where_no_confinement_is_possible() {
    let f = boxed_fixture();
    let script = f.base.join("probe_server.py").display().to_string();
    let mark = f.base.join("outside/started");
    let started = format!("--started={}", mark.display());
    std::fs::write(
        f.data.join("settings.json"),
        r#"{"exec": {"namespaces": false}}"#,
    )
    .unwrap();
    std::fs::write(
        f.data.join("mcp.json"),
        json!({"mcpServers": {
            "plain": {"command": "python3", "args": [script]},
            "boxed": {"command": "python3", "args": [script, started], "sandbox": true},
        }})
        .to_string(),
    )
    .unwrap();
    let status = |args: &[&str]| {
        let mut cmd = support::aibuddy_cmd(&f.project, &f.data);
        cmd.env("HOME", &f.home)
            .env("AIBUDDY_MCP_CONNECT_WAIT_MS", "20000")
            .args(args);
        without_landlock(&mut cmd);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = status(&["mcp", "status", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = |name: &str| {
        (rows.as_array().unwrap().iter())
            .find(|r| r["server"] == name)
            .unwrap_or_else(|| panic!("{name} not in {rows}"))
            .clone()
    };
    assert_eq!(row("plain")["state"], "connected", "{rows}");
    let boxed = row("boxed");
    assert_eq!(boxed["state"], "failed", "{rows}");
    let reason = boxed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("Execution stage")
            && reason.contains("not started unconfined")
            && reason.contains("no Landlock"),
        "{reason}"
    );
    assert_eq!(boxed["sandbox"]["confinement"], serde_json::Value::Null);
    let text = status(&["mcp", "status"]);
    assert!(
        text.contains(
            "boxed  failed (0 tools): cannot start \"python3\": sandbox (Execution stage)"
        ) && text.contains("not started unconfined")
            && text.contains("sandboxed: not started yet, network: off"),
        "{text}"
    );
    assert!(!mark.exists(), "the sandboxed server was started");
}

/// Issue 22: the hosts a sandboxed server tried and its proxy refused are shown in its status
/// (text and `--json`), oldest first, once each; a host on its allow list is not among them.
#[test]
fn a_sandboxed_server_status_lists_the_hosts_its_proxy_refused() {
    let f = boxed_fixture();
    let script = f.base.join("probe_server.py").display().to_string();
    std::fs::write(
        f.data.join("mcp.json"),
        json!({"mcpServers": {
            "boxed": {"command": "python3",
                      "args": [script, "--try=http://refused.example/a",
                               "--try=http://refused.example:8080/", "--try=http://refused.example/b"],
                      "sandbox": {"network": {"allow": ["allowed.example"]}}},
        }})
        .to_string(),
    )
    .unwrap();
    let (code, out, err) = f.aibuddy(&["mcp", "status", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let boxed = &rows[0];
    assert_eq!(boxed["state"], "connected", "{rows}");
    assert_eq!(
        boxed["sandbox"]["refused_hosts"],
        json!(["refused.example:80", "refused.example:8080"]),
        "{rows}"
    );
    assert_eq!(boxed["sandbox"]["refused_more"], 0, "{rows}");
    let (_, text, _) = f.aibuddy(&["mcp", "status"]);
    assert!(
        text.contains(
            "network: allow: allowed.example, refused: refused.example:80, refused.example:8080"
        ),
        "{text}"
    );
}
