//! Regression tests of issue 9 ("the authority boundary holds against a hostile command"), each
//! reproducing an attack that worked before the namespace path, run on the namespace path (and on
//! the Landlock-only fallback where the fallback claims to stop it too).

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_exec::{
    Confinement, ErrorStage, ExecError, ExecOutcome, ExecRequest, NamespacePolicy, Stream, run,
};
use support::Recorder;
use tokio_util::sync::CancellationToken;

/// A directory outside `/tmp` (which the namespace path replaces by a private tmpfs, so anything
/// there would be invisible and the test would prove nothing), wherever the clone is.
fn visible_tempdir() -> tempfile::TempDir {
    support::visible_tempdir()
}

async fn run_text(r: ExecRequest) -> (ExecOutcome, String) {
    let rec = Recorder::new();
    let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
    let mut text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).into_owned();
    text.push_str(&String::from_utf8_lossy(&rec.stream(Stream::Stderr)));
    (out, text)
}

fn ns(cmd: &str, dir: &Path) -> ExecRequest {
    let mut r = ExecRequest::new(cmd, dir);
    r.namespaces = NamespacePolicy::Auto;
    r
}

fn assert_namespaces(out: &ExecOutcome) {
    assert!(
        matches!(
            out.confinement,
            Confinement::Namespaces {
                landlock_abi: Some(_),
                scopes: true,
                ..
            }
        ),
        "expected the namespace path with Landlock inside: {:?}",
        out.confinement
    );
}

/// Runs `cmd` through the helper app `aibuddy-exec-run`, started with `secret` in its *initial*
/// environment (what `/proc/<pid>/environ` shows; `set_var` in this process would not show there),
/// while `witness` (a process outside, also holding the secret) runs; returns the command's output.
fn through_helper_with_secret(flag: Option<&str>, secret: &str, cmd: &str) -> String {
    let project = tempfile::tempdir().unwrap();
    let mut witness = std::process::Command::new("sleep")
        .arg("1081")
        .env("AIBUDDY_B_WITNESS_TOKEN", secret)
        .spawn()
        .unwrap();
    let cmd = cmd.replace("WITNESS", &witness.id().to_string());
    let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_aibuddy-exec-run"));
    helper.args(flag);
    let out = helper
        .arg(project.path())
        .arg(cmd.replace("HELPER", "$HELPER_PID"))
        .env("AIBUDDY_B_API_TOKEN", secret)
        .output()
        .unwrap();
    witness.kill().unwrap();
    witness.wait().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn no_secret_through_proc_and_no_process_outside_is_visible() {
    let secret = "s3cr3t-value-9f1c";
    // The shell's parent (the init, or the fallback's supervisor), the helper app itself (found as
    // the parent of the supervisor on the fallback), an unrelated process of the user (the
    // witness), and every environ the command can see.
    let cmd = "cat /proc/$PPID/environ; echo; \
               app=$(cut -d' ' -f4 /proc/$PPID/stat); cat /proc/$app/environ; echo; \
               cat /proc/WITNESS/environ; echo; \
               for f in /proc/[0-9]*/environ; do cat $f; echo; done; \
               echo pids: $(ls /proc | grep -cE '^[0-9]+$'); \
               test -e /proc/WITNESS && echo witness-visible || echo witness-invisible; \
               for f in /proc/1/fd/*; do (echo forged > $f) 2>/dev/null && echo init-fd-writable; done; \
               echo fd-probe-done";
    let text = through_helper_with_secret(None, secret, cmd);
    assert!(
        !text.contains(secret),
        "secret readable through /proc:\n{text}"
    );
    assert!(text.contains("witness-invisible"), "{text}");
    // The init (PID 1) is not dumpable: its pipes cannot be reached to forge its report.
    assert!(
        text.contains("fd-probe-done") && !text.contains("init-fd-writable"),
        "{text}"
    );
    let pids: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("pids: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        pids <= 8,
        "only the command's own tree is visible, saw {pids}"
    );

    // The Landlock-only fallback: the supervisor (the shell's parent) no longer holds the app's
    // environment. (The app's own and other processes' entries stay readable there: a documented
    // limit of the fallback, so they are not read here.)
    let text = through_helper_with_secret(
        Some("--no-namespaces"),
        secret,
        "cat /proc/$PPID/environ; echo; echo done",
    );
    assert!(text.contains("done"), "{text}");
    assert!(
        !text.contains(secret),
        "secret in the supervisor's environ:\n{text}"
    );
}

#[tokio::test]
async fn an_exposed_credential_under_the_private_tmp_stays_readable() {
    // A HOME under /tmp (the sandbox replaces /tmp with a private tmpfs): what the person exposed
    // is bound back read-only; what they did not expose stays unreadable.
    let home = tempfile::Builder::new()
        .prefix("aibuddy-home-")
        .tempdir_in("/tmp")
        .unwrap();
    let project = tempfile::tempdir().unwrap();
    let h = home.path().canonicalize().unwrap();
    std::fs::create_dir(h.join(".aws")).unwrap();
    std::fs::write(h.join(".aws/credentials"), "AWS-EXPOSED-7").unwrap();
    std::fs::create_dir(h.join(".ssh")).unwrap();
    std::fs::write(h.join(".ssh/id_rsa"), "PRIVATE-KEY-8").unwrap();
    let cmd = format!(
        "cat {h}/.aws/credentials; cat {h}/.ssh/id_rsa; \
         echo x > {h}/.aws/credentials || echo denied-write",
        h = h.display()
    );
    let mut r = ns(&cmd, project.path());
    r.home = Some(h.clone());
    r.exposed_credentials = vec![h.join(".aws")];
    let (out, text) = run_text(r).await;
    assert_namespaces(&out);
    assert!(
        text.contains("AWS-EXPOSED-7"),
        "exposed but unreadable:\n{text}"
    );
    assert!(
        !text.contains("PRIVATE-KEY-8"),
        "not exposed yet readable:\n{text}"
    );
    assert!(text.contains("denied-write"), "writable:\n{text}");
    assert_eq!(
        std::fs::read_to_string(h.join(".aws/credentials")).unwrap(),
        "AWS-EXPOSED-7"
    );
}

#[tokio::test]
async fn data_dir_and_credentials_are_neither_readable_nor_writable() {
    let home = visible_tempdir();
    let data = visible_tempdir();
    let project = tempfile::tempdir().unwrap();
    let h = home.path().canonicalize().unwrap();
    let d = data.path().canonicalize().unwrap();
    std::fs::create_dir(h.join(".ssh")).unwrap();
    std::fs::write(h.join(".ssh/id_rsa"), "PRIVATE-KEY-1").unwrap();
    std::fs::write(h.join(".netrc"), "machine x password NETRC-2").unwrap();
    std::fs::create_dir(h.join(".aws")).unwrap();
    std::fs::write(h.join(".aws/credentials"), "AWS-3").unwrap();
    std::fs::write(d.join("history.db"), "HISTORY-4").unwrap();
    // A credential directory that is a symlink elsewhere is hidden at its target.
    let elsewhere = visible_tempdir();
    std::fs::write(elsewhere.path().join("config"), "KUBE-5").unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), h.join(".kube")).unwrap();
    let cmd = format!(
        "cat {h}/.ssh/id_rsa; cat {h}/.netrc; cat {h}/.aws/credentials; cat {d}/history.db; \
         cat {h}/.kube/config; cat {k}/config; \
         ls -a {h}/.ssh; \
         echo x > {h}/.ssh/id_rsa || echo denied-overwrite; \
         echo x > {h}/.ssh/new || echo denied-create; \
         echo x >> {h}/.netrc; \
         echo x > {d}/history.db || echo denied-data; \
         rm -rf {d}/history.db || echo denied-rm",
        h = h.display(),
        d = d.display(),
        k = elsewhere.path().display()
    );
    let mut r = ns(&cmd, project.path());
    r.home = Some(h.clone());
    r.hidden_paths = vec![d.clone()];
    r.exposed_credentials = vec![h.join(".aws")];
    let (out, text) = run_text(r).await;
    assert_namespaces(&out);
    for secret in ["PRIVATE-KEY-1", "NETRC-2", "HISTORY-4", "KUBE-5"] {
        assert!(!text.contains(secret), "{secret} readable:\n{text}");
    }
    assert!(
        text.contains("AWS-3"),
        "an exposed credential is readable:\n{text}"
    );
    for want in ["denied-overwrite", "denied-create", "denied-data"] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    assert_eq!(
        std::fs::read_to_string(h.join(".ssh/id_rsa")).unwrap(),
        "PRIVATE-KEY-1"
    );
    assert!(!h.join(".ssh/new").exists());
    assert_eq!(
        std::fs::read_to_string(h.join(".netrc")).unwrap(),
        "machine x password NETRC-2"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("history.db")).unwrap(),
        "HISTORY-4"
    );
}

#[tokio::test]
async fn metadata_outside_the_project_cannot_change() {
    let outside = visible_tempdir();
    let project = tempfile::tempdir().unwrap();
    let f = outside.path().join("victim");
    std::fs::write(&f, "v").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&f).unwrap();
    let cmd = format!(
        "chmod 777 {f} || echo denied-chmod; touch -d 2001-01-01 {f} || echo denied-touch; \
         chown 1:1 {f} || echo denied-chown; touch {o}/new || echo denied-new",
        f = f.display(),
        o = outside.path().display()
    );
    let (out, text) = run_text(ns(&cmd, project.path())).await;
    assert_namespaces(&out);
    for want in ["denied-chmod", "denied-touch", "denied-chown", "denied-new"] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
    let after = std::fs::metadata(&f).unwrap();
    assert_eq!(after.mode(), before.mode());
    assert_eq!(after.mtime(), before.mtime());
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert!(!outside.path().join("new").exists());
}

/// Binds a listening abstract Unix socket on the host; returns it and its name.
fn abstract_listener(name: &str) -> std::os::unix::net::UnixListener {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
}

const PERL_ABSTRACT: &str = r#"perl -MSocket -e 'socket(S, AF_UNIX, SOCK_STREAM, 0) or die; connect(S, pack_sockaddr_un("\0NAME")) or die "unix-refused\n"; print "unix-connected\n"'"#;

#[tokio::test]
async fn network_off_means_no_network_at_all() {
    let project = tempfile::tempdir().unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    udp.set_nonblocking(true).unwrap();
    let name = format!("aibuddy-boundary-{}", std::process::id());
    let _unix = abstract_listener(&name);
    let cmd = format!(
        "bash -c 'echo hi > /dev/tcp/127.0.0.1/{tcp_port}' && echo tcp-connected || echo tcp-refused; \
         bash -c 'echo udp-payload > /dev/udp/127.0.0.1/{udp_port}' && echo udp-sent || echo udp-refused; \
         {perl}",
        perl = PERL_ABSTRACT.replace("NAME", &name)
    );
    // With the network on, the command has its own network namespace too (issue 22): host
    // loopback TCP and UDP are out of reach; egress goes only through the proxy
    // (`tests/netproxy.rs`). The probes themselves work: `/dev/tcp` to the command's own loopback.
    let (_, on) = run_text(ns(&cmd, project.path())).await;
    assert!(on.contains("tcp-refused"), "{on}");
    let mut buf = [0u8; 64];
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        udp.recv(&mut buf).is_err(),
        "a UDP datagram reached the host loopback with the network on"
    );
    let (_, own) = run_text(ns(
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); \
         c=socket.create_connection(s.getsockname()); print(\"own-loopback-ok\")'",
        project.path(),
    ))
    .await;
    assert!(own.contains("own-loopback-ok"), "{own}");
    // Even with the network on, Landlock's scope keeps host abstract sockets out of reach.
    assert!(on.contains("unix-refused"), "{on}");

    let mut r = ns(&cmd, project.path());
    r.network_allowed = false;
    let (out, off) = run_text(r).await;
    assert!(matches!(
        out.confinement,
        Confinement::Namespaces {
            network_isolated: true,
            ..
        }
    ));
    assert!(off.contains("tcp-refused"), "{off}");
    assert!(off.contains("unix-refused"), "{off}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        udp.recv(&mut buf).is_err(),
        "a UDP datagram left the sandbox with the network off"
    );
}

#[tokio::test]
async fn abstract_sockets_and_signals_are_scoped_on_the_fallback_too() {
    let project = tempfile::tempdir().unwrap();
    let name = format!("aibuddy-boundary-fb-{}", std::process::id());
    let _unix = abstract_listener(&name);
    let mut victim = std::process::Command::new("sleep")
        .arg("1061")
        .spawn()
        .unwrap();
    let cmd = format!(
        "{perl}; kill -9 {pid} && echo killed || echo kill-denied",
        perl = PERL_ABSTRACT.replace("NAME", &name),
        pid = victim.id()
    );
    for path in [NamespacePolicy::Auto, NamespacePolicy::Off] {
        let mut r = ns(&cmd, project.path());
        r.namespaces = path;
        let (_, text) = run_text(r).await;
        assert!(text.contains("unix-refused"), "{path:?}: {text}");
        assert!(text.contains("kill-denied"), "{path:?}: {text}");
        assert!(
            victim.try_wait().unwrap().is_none(),
            "{path:?}: a process outside was killed"
        );
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[tokio::test]
async fn inherited_descriptors_do_not_reach_the_command() {
    let outside = visible_tempdir();
    let target = outside.path().join("leak.txt");
    std::fs::write(&target, "").unwrap();
    let c_path = std::ffi::CString::new(target.to_str().unwrap()).unwrap();
    // Deliberately without O_CLOEXEC, as a CLI started with `7>>outside` would hold it.
    // SAFETY: plain open of a file we own; closed below.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_WRONLY | libc::O_APPEND) };
    assert!(fd > 2);
    let project = tempfile::tempdir().unwrap();
    for path in [NamespacePolicy::Auto, NamespacePolicy::Off] {
        let mut r = ns(
            &format!(
                "bash -c 'echo leaked >&{fd}' && echo wrote || echo bad-fd; \
                 test -e /proc/self/fd/{fd} && echo fd-present || echo fd-absent"
            ),
            project.path(),
        );
        r.namespaces = path;
        let (_, text) = run_text(r).await;
        assert!(
            text.contains("bad-fd") && text.contains("fd-absent"),
            "{path:?}: {text}"
        );
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
}

/// `setsid sh -c 'sleep N; touch marker' &`: a survivor candidate that left the command's group.
fn survivor(marker: &Path, secs: u32) -> String {
    format!(
        "setsid sh -c 'sleep {secs}; touch {m}' > /dev/null 2>&1 < /dev/null & echo started",
        m = marker.display()
    )
}

/// Runs the four survivor cases on one path: normal exit, timeout, cancel, and a plain `true`.
async fn survivor_cases(path: NamespacePolicy, p: &Path) -> [ExecOutcome; 4] {
    let tag = format!("{path:?}");
    let marker = |what: &str| p.join(format!("{tag}-{what}"));
    let with = |cmd: String| {
        let mut r = ns(&cmd, p);
        r.namespaces = path;
        r
    };
    let normal = with(survivor(&marker("exit"), 2));
    let mut timed = with(format!("{}; sleep 100", survivor(&marker("timeout"), 2)));
    timed.timeout = Duration::from_millis(800);
    let cancel = CancellationToken::new();
    let cancelled = with(format!("{}; sleep 100", survivor(&marker("cancel"), 2)));
    let canceller = {
        let cancel = cancel.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(800)).await;
            cancel.cancel();
        }
    };
    let plain = with("true".to_string());
    let (a, b, (c, _), d) = tokio::join!(
        run(normal, CancellationToken::new(), Recorder::new()),
        run(timed, CancellationToken::new(), Recorder::new()),
        async { tokio::join!(run(cancelled, cancel.clone(), Recorder::new()), canceller) },
        run(plain, CancellationToken::new(), Recorder::new()),
    );
    [a.unwrap(), b.unwrap(), c.unwrap(), d.unwrap()]
}

#[tokio::test]
async fn setsid_survivors_end_on_exit_timeout_and_cancel() {
    let project = tempfile::tempdir().unwrap();
    let p = project.path();
    let (on_ns, on_fallback) = tokio::join!(
        survivor_cases(NamespacePolicy::Auto, p),
        survivor_cases(NamespacePolicy::Off, p)
    );
    assert_namespaces(&on_ns[0]);
    for (path, [a, b, c, d]) in [("namespaces", on_ns), ("fallback", on_fallback)] {
        assert!(
            a.killed_leftovers,
            "{path}: the setsid child was killed at exit"
        );
        assert!(b.timed_out && c.cancelled, "{path}");
        assert!(!d.killed_leftovers, "{path}: nothing was left after `true`");
    }
    // Give the survivors time to fire if they were alive.
    std::thread::sleep(Duration::from_secs(3));
    let made: Vec<_> = std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(made.is_empty(), "survivors created {made:?}");
}

fn spawn_helper(flag: Option<&str>, dir: &Path, cmd: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_aibuddy-exec-run"));
    helper.args(flag);
    let mut helper = helper
        .arg(dir)
        .arg(cmd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(helper.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (helper, line.trim().to_string())
}

#[test]
fn survivors_and_tmpdir_end_with_the_app_on_kill_9() {
    for (flag, tag) in [(None, "1071"), (Some("--no-namespaces"), "1073")] {
        let project = tempfile::tempdir().unwrap();
        let marker = project.path().join("after-death");
        let cmd = format!(
            "touch \"$TMPDIR/f\"; {} > /dev/null; echo \"$TMPDIR\"; sleep {tag}",
            survivor(&marker, 2)
        );
        let (mut helper, tmpdir) = spawn_helper(flag, project.path(), &cmd);
        assert!(tmpdir.contains("aibuddy-exec-"), "{tmpdir}");
        let start = Instant::now();
        while support::processes_with_args(&["sleep", tag]).is_empty() {
            assert!(start.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(10));
        }
        helper.kill().unwrap();
        helper.wait().unwrap();
        assert!(support::wait_no_process_with_args(
            &["sleep", tag],
            Duration::from_secs(5)
        ));
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            !marker.exists(),
            "{flag:?}: a setsid survivor outlived the app"
        );
        if flag.is_none() {
            assert!(
                !Path::new(&tmpdir).exists(),
                "the private TMPDIR is left on the host"
            );
        }
    }
}

#[test]
fn fallback_tmpdir_is_private_and_swept_at_the_next_start() {
    let project = tempfile::tempdir().unwrap();
    let cmd = "stat -c %a \"$TMPDIR\"; echo \"$TMPDIR\"; sleep 1072";
    let (mut helper, mode) = spawn_helper(Some("--no-namespaces"), project.path(), cmd);
    assert_eq!(mode, "700");
    // The path is the second line: read it from the helper's process tree instead of the pipe.
    let start = Instant::now();
    while support::processes_with_args(&["sleep", "1072"]).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = helper.id();
    let stale: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(aibuddy_exec::tmpdir::owner_pid)
                == Some(pid as i32)
        })
        .collect();
    assert_eq!(stale.len(), 1, "{stale:?}");
    helper.kill().unwrap();
    helper.wait().unwrap();
    assert!(support::wait_no_process_with_args(
        &["sleep", "1072"],
        Duration::from_secs(5)
    ));
    assert!(
        stale[0].exists(),
        "a kill -9 leaves the dir until the next start"
    );
    // The next start (a new app process) sweeps it.
    let next = std::process::Command::new(env!("CARGO_BIN_EXE_aibuddy-exec-run"))
        .args(["--no-namespaces"])
        .arg(project.path())
        .arg("true")
        .output()
        .unwrap();
    assert!(next.status.success());
    assert!(!stale[0].exists(), "the stale TMPDIR was not swept");
}

#[tokio::test]
async fn a_writable_root_swapped_for_a_symlink_is_refused_at_launch() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap().join("build-cache");
    std::fs::create_dir(&root).unwrap();
    let mut r = ns("true", project.path());
    r.writable_roots = vec![root.clone()];
    run(
        r.clone(),
        CancellationToken::new(),
        Arc::new(aibuddy_exec::NullSink),
    )
    .await
    .unwrap();
    // A command swaps the root for a symlink to `/` between load and launch.
    std::fs::remove_dir(&root).unwrap();
    std::os::unix::fs::symlink("/", &root).unwrap();
    let err = run(
        r,
        CancellationToken::new(),
        Arc::new(aibuddy_exec::NullSink),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ExecError::RootChanged { .. }), "{err}");
    assert_eq!(err.stage(), ErrorStage::Authorization);
}

#[tokio::test]
async fn a_sandbox_that_cannot_start_is_an_error_not_an_outcome() {
    let project = tempfile::tempdir().unwrap();
    // An "init program" that exists but cannot be executed: bubblewrap fails before anything runs.
    let bogus = project.path().join("not-an-init");
    std::fs::write(&bogus, "not a program").unwrap();
    let mut r = ns("touch ran", project.path());
    r.init_program = Some(bogus);
    let err = run(
        r,
        CancellationToken::new(),
        Arc::new(aibuddy_exec::NullSink),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ExecError::SandboxSetup(_)), "{err}");
    assert_eq!(err.stage(), ErrorStage::Execution);
    assert!(!project.path().join("ran").exists());
}

#[test]
fn commands_die_with_their_app_even_on_kill_9() {
    use std::io::BufRead;
    for (flag, tag) in [(None, "1041"), (Some("--no-namespaces"), "1042")] {
        let dir = tempfile::tempdir().unwrap();
        let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_aibuddy-exec-run"));
        helper.args(flag);
        let mut helper = helper
            .arg(dir.path())
            .arg(format!(
                "echo $$; sleep {tag} & (sleep {tag} &); sleep {tag}"
            ))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(helper.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let started = std::time::Instant::now();
        while support::processes_with_args(&["sleep", tag]).len() < 3 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{tag}: sleeps never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        helper.kill().unwrap(); // SIGKILL: no destructor, no cleanup code runs in the helper
        helper.wait().unwrap();
        assert!(
            support::wait_no_process_with_args(&["sleep", tag], Duration::from_secs(5)),
            "{flag:?}: `sleep {tag}` outlived its app"
        );
    }
}

/// Talks to a confined server line by line: sends `line`, returns what it wrote up to `END`.
async fn ask(
    stdin: &mut tokio::process::ChildStdin,
    stdout: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    line: &str,
) -> String {
    use tokio::io::AsyncWriteExt;
    stdin
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    while let Some(l) = tokio::time::timeout(Duration::from_secs(20), stdout.next_line())
        .await
        .expect("the server answers")
        .unwrap()
    {
        if l == "END" {
            return out;
        }
        out.push_str(&l);
        out.push('\n');
    }
    panic!("the server ended: {out}");
}

/// `spawn_server` (a long-lived MCP server with `"sandbox"`): on both paths it talks over its
/// pipes, writes only its writable roots (not its read-only working directory, not elsewhere);
/// on the namespace path a credential of the home is hidden; dropping the guard ends it.
#[tokio::test]
async fn a_confined_server_talks_over_stdio_within_its_roots_and_dies_with_its_guard() {
    use tokio::io::AsyncBufReadExt;
    for policy in [NamespacePolicy::Auto, NamespacePolicy::Off] {
        let dir = visible_tempdir();
        let base = dir.path().canonicalize().unwrap();
        let (home, cwd, root, outside) = (
            base.join("home"),
            base.join("cwd"),
            base.join("root"),
            base.join("outside"),
        );
        for d in [&home.join(".ssh"), &cwd, &root, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join(".ssh/id_rsa"), "KEY-SECRET\n").unwrap();
        let script = "while read op p; do case $op in \
            r) cat \"$p\" 2>/dev/null || echo DENIED;; \
            w) (echo x > \"$p\") 2>/dev/null && echo WROTE || echo DENIED;; \
            esac; echo END; done";
        let command = aibuddy_exec::shell_line("/bin/sh", &["-c".into(), script.into()]).unwrap();
        let mut req = ExecRequest::new(command, &cwd);
        req.namespaces = policy;
        req.confine = aibuddy_exec::ConfinePolicy::Required;
        req.network_allowed = false;
        req.home = Some(home.clone());
        req.writable_roots = vec![root.clone()];
        let env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let (mut child, guard) = aibuddy_exec::spawn_server(&req, env).unwrap();
        let label = guard.confinement.label();
        match policy {
            NamespacePolicy::Auto => assert!(label.starts_with("namespaces+landlock"), "{label}"),
            NamespacePolicy::Off => assert!(label.contains("no namespaces"), "{label}"),
        }
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let w = |p: &Path| format!("w {}", p.display());
        assert_eq!(
            ask(&mut stdin, &mut stdout, &w(&root.join("ok"))).await,
            "WROTE\n"
        );
        for denied in [cwd.join("x"), outside.join("x")] {
            let got = ask(&mut stdin, &mut stdout, &w(&denied)).await;
            assert_eq!(got, "DENIED\n", "{policy:?} {}", denied.display());
            assert!(!denied.exists());
        }
        let key = format!("r {}", home.join(".ssh/id_rsa").display());
        let got = ask(&mut stdin, &mut stdout, &key).await;
        match policy {
            NamespacePolicy::Auto => assert_eq!(got, "DENIED\n", "the credential is hidden"),
            // The Landlock-only path hides no credential (as for commands).
            NamespacePolicy::Off => assert_eq!(got, "KEY-SECRET\n"),
        }
        // The guard ends the whole tree; the launcher's exit follows.
        drop(guard);
        let ended = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        assert!(ended.is_ok(), "{policy:?}: the server outlived its guard");
    }
}
