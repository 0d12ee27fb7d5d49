//! The network of container commands (issue 26 with issue 22's allow-list proxy): the container
//! has no network of its own (`NetworkMode: none`); with the network on, a command reaches only
//! what the policy allows, through the same proxy, decider and per-call report as a local one,
//! bridged into the container's loopback. Each test runs a REAL loopback server on the host and
//! real `curl` in the container.

use crate::registry::registry;
use std::sync::Arc;

use aibuddy_container::ContainerSandbox;
use aibuddy_sandbox::Sandbox;
use aibuddy_sandbox::aibuddy_exec::netproxy::Policy;
use aibuddy_sandbox::aibuddy_exec::{ExecOutcome, ExecRequest};
use tokio_util::sync::CancellationToken;

use crate::engine_or_skip;
use crate::sink::Recorder;
use crate::support::project;

fn policy(allow: &[&str]) -> Policy {
    let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
    let (p, errors) = Policy::from_lists(&allow, &[]);
    assert!(errors.is_empty(), "{errors:?}");
    p
}

async fn run_text(sb: &ContainerSandbox, req: ExecRequest) -> (ExecOutcome, String) {
    let rec = Arc::new(Recorder::default());
    let out = sb
        .exec(req, CancellationToken::new(), rec.clone())
        .await
        .unwrap();
    let mut text = rec.stdout();
    text.push_str(&String::from_utf8_lossy(&rec.err.lock().unwrap()));
    (out, text)
}

/// curl through the command's proxy variables, even for `localhost` (which `NO_PROXY` sends
/// direct); `-p` tunnels with CONNECT, without it an absolute-form GET is sent.
fn curl(host: &str, port: u16, tunnel: bool) -> String {
    format!(
        "NO_PROXY= no_proxy= curl -sS --max-time 10 {} http://{host}:{port}/ 2>&1; echo \" curl-exit=$?\"",
        if tunnel { "-p" } else { "" }
    )
}

#[tokio::test]
async fn an_allowed_host_is_reached_through_the_proxy_and_an_unlisted_one_is_refused() {
    let engine = engine_or_skip!();
    let (port, other) = (registry(), registry());
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let cmd = format!(
        "{}; {}; NO_PROXY= no_proxy= curl -sS --max-time 10 --proxy \"$ALL_PROXY\" http://localhost:{port}/ 2>&1; echo \" socks-exit=$?\"; {}",
        curl("localhost", port, false),
        curl("localhost", port, true),
        curl("localhost", other, false),
    );
    let mut req = ExecRequest::new(&cmd, "/");
    req.network_policy = Some(policy(&[&format!("localhost:{port}")]));
    let (out, text) = run_text(&sb, req).await;
    assert_eq!(text.matches("registry-ok").count(), 3, "{text}");
    assert!(text.contains("socks-exit=0"), "{text}");
    assert!(
        text.contains(&format!(
            "refused connection to localhost:{other} (not on exec.network.allow)"
        )),
        "{text}"
    );
    let net = out.network.expect("a network report");
    assert!(net.mode.starts_with("proxy: container"), "{}", net.mode);
    let allowed: u32 = net
        .events
        .iter()
        .filter(|e| e.allowed && e.port == port)
        .map(|e| e.connections)
        .sum();
    assert_eq!(allowed, 3, "{net:?}");
    let refused: Vec<_> = net.refused().collect();
    assert_eq!(refused.len(), 1, "{net:?}");
    assert_eq!(
        (refused[0].host.as_str(), refused[0].port),
        ("localhost", other)
    );
    // The call's socket is gone with the call (seen from the container, whose folder it is).
    let mut after = ExecRequest::new("ls -A /run/aibuddy/net | wc -l", "/");
    after.network_allowed = false;
    let (_, left) = run_text(&sb, after).await;
    assert_eq!(left, "0\n", "proxy sockets left behind");
}

#[tokio::test]
async fn no_direct_connection_bypasses_the_proxy() {
    let engine = engine_or_skip!();
    let port = registry();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    // Everything allowed that the policy can allow: the only way out is still the proxy.
    let cmd = format!(
        "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/ 2>&1; echo \" direct-exit=$?\"; \
         ls /sys/class/net; grep -c . /proc/net/route; \
         touch /run/aibuddy/net/x 2>/dev/null && echo net-dir-writable; \
         sh -c 'echo x > /run/aibuddy/exec-init' 2>/dev/null && echo bridge-writable; echo done"
    );
    let mut req = ExecRequest::new(&cmd, "/");
    req.network_policy = Some(policy(&[&format!("localhost:{port}"), "*"]));
    let (out, text) = run_text(&sb, req).await;
    assert!(!text.contains("registry-ok"), "{text}");
    assert!(!text.contains("direct-exit=0"), "{text}");
    assert!(
        text.contains("\nlo\n1\n"),
        "only loopback, no route: {text}"
    );
    assert!(!text.contains("writable"), "{text}");
    assert!(text.contains("done"), "{text}");
    let net = out.network.expect("a network report");
    assert!(net.mode.starts_with("proxy: container"), "{}", net.mode);
    assert!(
        net.events.is_empty(),
        "the direct attempt never reached the proxy: {net:?}"
    );
}

#[tokio::test]
async fn with_the_network_off_there_is_no_proxy_and_no_egress() {
    let engine = engine_or_skip!();
    let port = registry();
    let dir = project();
    let sb = engine.sandbox(dir.path());
    let cmd = format!(
        "echo \"proxy=[$HTTP_PROXY]\"; ls /run/aibuddy/net | wc -l; {}; curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/ 2>&1; echo \" direct-exit=$?\"",
        curl("localhost", port, false)
    );
    let mut req = ExecRequest::new(&cmd, "/");
    req.network_allowed = false;
    req.network_policy = Some(policy(&[&format!("localhost:{port}")]));
    let (out, text) = run_text(&sb, req).await;
    assert!(
        text.starts_with("proxy=[]\n0\n"),
        "no proxy, no socket: {text}"
    );
    assert!(!text.contains("registry-ok"), "{text}");
    assert!(!text.contains("curl-exit=0"), "{text}");
    assert!(!text.contains("direct-exit=0"), "{text}");
    assert_eq!(out.confinement.label(), "container+nonet");
    let net = out.network.expect("a network report");
    assert!(net.mode.starts_with("off (container"), "{}", net.mode);
    assert!(net.events.is_empty(), "{net:?}");
}

#[tokio::test]
async fn a_bridge_program_the_image_cannot_run_means_no_network_said_and_the_command_runs() {
    let engine = engine_or_skip!();
    let port = registry();
    let dir = project();
    let mut opts = engine.options_on(&engine.socket, std::time::Duration::from_secs(30));
    opts.bridge_program = Some("/bin/false".into());
    let sb = ContainerSandbox::open(&aibuddy_sandbox::SandboxSettings::new(dir.path()), opts)
        .expect("open");
    let mut req = ExecRequest::new(format!("{}; echo ran", curl("localhost", port, false)), "/");
    req.network_policy = Some(policy(&[&format!("localhost:{port}")]));
    let (out, text) = run_text(&sb, req).await;
    assert!(text.contains("ran"), "{text}");
    assert!(!text.contains("registry-ok"), "{text}");
    let net = out.network.expect("a network report");
    assert!(
        net.mode
            .starts_with("off: the bridge program cannot run in the container"),
        "{}",
        net.mode
    );
}
