//! Commands get no access to the kernel's key store (`keyctl`, `add_key`, `request_key` refused
//! with EPERM), on both launch paths: the person's provider keys and MCP tokens live there, and
//! keyrings are not namespaced. Other system calls are untouched (the same command's `perl` runs).
#![cfg(target_arch = "x86_64")]

use crate::support;

use aibuddy_exec::{ExecRequest, NamespacePolicy, Stream, run};
use support::Recorder;
use tokio_util::sync::CancellationToken;

/// `keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0)` and
/// `add_key("user", "aibuddy-probe", "x", 1, KEY_SPEC_USER_KEYRING)` (x86_64 numbers), printing
/// `allowed` or `denied:<errno>` for each.
const PROBE: &str = r#"perl -e 'my ($t, $d, $p) = ("user", "aibuddy-probe", "x"); for my $r (syscall(250, 0, -4, 0), syscall(248, $t, $d, $p, 1, -4)) { print $r < 0 ? "denied:" . ($!+0) . "\n" : "allowed\n" }'"#;

#[tokio::test]
async fn commands_cannot_reach_the_key_store_on_either_path() {
    // The control: outside the sandbox the same probe reaches keyutils (where the machine allows
    // it at all; a container that blocks keyctl leaves nothing to show here).
    let host = std::process::Command::new("sh")
        .arg("-c")
        .arg(PROBE)
        .output()
        .expect("sh");
    let host = String::from_utf8_lossy(&host.stdout).to_string();
    // The probe itself works (two answers), whatever the machine allows.
    assert_eq!(host.lines().count(), 2, "the probe did not run: {host:?}");
    if host != "allowed\nallowed\n" {
        eprintln!("keyutils refused on this machine ({host:?}): nothing to compare against");
        return;
    }
    for path in [NamespacePolicy::Auto, NamespacePolicy::Off] {
        let dir = tempfile::tempdir().unwrap();
        let rec = Recorder::new();
        let mut r = ExecRequest::new(PROBE, dir.path());
        r.namespaces = path;
        let out = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        let text = String::from_utf8_lossy(&rec.stream(Stream::Stdout)).to_string();
        assert_eq!(
            text,
            "denied:1\ndenied:1\n",
            "{path:?}: {out:?} stderr {}",
            String::from_utf8_lossy(&rec.stream(Stream::Stderr))
        );
    }
    // Nothing else is refused: an ordinary command still runs on both paths.
    for path in [NamespacePolicy::Auto, NamespacePolicy::Off] {
        let dir = tempfile::tempdir().unwrap();
        let mut r = ExecRequest::new("perl -e 'print 6*7' && uname -s", dir.path());
        r.namespaces = path;
        let rec = Recorder::new();
        let _ = run(r, CancellationToken::new(), rec.clone()).await.unwrap();
        assert_eq!(rec.stream(Stream::Stdout), b"42Linux\n", "{path:?}");
    }
}
