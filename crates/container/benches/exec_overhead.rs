//! Per-call overhead of `execute` in the container adapter: `true` through
//! `ContainerSandbox::exec` (exec create, start, streamed output, inspect, under our wrapper)
//! against `podman exec CONTAINER true` of the same container, and against the bare API
//! (create, start, inspect, no wrapper) for reference; the adapter with the network on (the
//! proxy and the bridge program) and off; the ratios in one run.
//! Run: `bash benches/container_bench.sh [calls]` (needs podman; see tests/all/support.rs).

#[path = "../tests/all/support.rs"]
#[allow(dead_code)]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use aibuddy_sandbox::Sandbox;
use aibuddy_sandbox::aibuddy_exec::{ExecRequest, NullSink};
use bollard::exec::{CreateExecOptions, StartExecResults};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let calls: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(40);
    let Some(engine) = support::engine() else {
        eprintln!("container bench: no podman, nothing measured");
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = support::project();
    rt.block_on(async {
        let sb = engine.sandbox(dir.path());
        // The network on (the default request): the command's proxy and the bridge program.
        let run = || {
            sb.exec(
                ExecRequest::new("true", "/"),
                CancellationToken::new(),
                Arc::new(NullSink),
            )
        };
        let run_offline = || {
            let mut req = ExecRequest::new("true", "/");
            req.network_allowed = false;
            sb.exec(req, CancellationToken::new(), Arc::new(NullSink))
        };
        for _ in 0..5 {
            assert!(run().await.expect("warm-up").termination.success());
        }
        let id = sb.container_id().expect("container");
        let docker = bollard::Docker::connect_with_unix(
            &engine.socket.to_string_lossy(),
            30,
            bollard::API_DEFAULT_VERSION,
        )
        .expect("client");
        let (mut ours, mut offline, mut cli, mut api) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // Interleaved, so drift of this shared machine touches all three alike.
        for _ in 0..calls {
            let t = Instant::now();
            assert!(run().await.expect("adapter").termination.success());
            ours.push(t.elapsed());

            let t = Instant::now();
            assert!(run_offline().await.expect("adapter").termination.success());
            offline.push(t.elapsed());

            let t = Instant::now();
            let st = engine
                .podman()
                .args(["exec", &id, "true"])
                .status()
                .expect("podman exec");
            assert!(st.success());
            cli.push(t.elapsed());

            let t = Instant::now();
            let config = CreateExecOptions::<String> {
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                cmd: Some(vec!["true".into()]),
                ..Default::default()
            };
            let exec = docker.create_exec(&id, config).await.expect("create");
            if let StartExecResults::Attached { mut output, .. } =
                docker.start_exec(&exec.id, None).await.expect("start")
            {
                while output.next().await.is_some() {}
            }
            let _ = docker.inspect_exec(&exec.id).await.expect("inspect");
            api.push(t.elapsed());
        }
        let (o, f, c, a) = (median(ours), median(offline), median(cli), median(api));
        println!("container exec overhead, `true`, median of {calls} calls each:");
        println!(
            "  ContainerSandbox::exec      {:>8.1} ms",
            o.as_secs_f64() * 1e3
        );
        println!(
            "  the same, network off       {:>8.1} ms (no proxy, no bridge program)",
            f.as_secs_f64() * 1e3
        );
        println!(
            "  podman exec (CLI)           {:>8.1} ms",
            c.as_secs_f64() * 1e3
        );
        println!(
            "  bare API exec (no wrapper)  {:>8.1} ms",
            a.as_secs_f64() * 1e3
        );
        println!(
            "  ratio adapter / podman exec: {:.2}x (goal <= 1.2x)",
            o.as_secs_f64() / c.as_secs_f64()
        );
        println!(
            "  ratio adapter, network off / podman exec: {:.2}x",
            f.as_secs_f64() / c.as_secs_f64()
        );
        println!(
            "  ratio adapter / bare API exec: {:.2}x (the wrapper and the streamed projection)",
            o.as_secs_f64() / a.as_secs_f64()
        );
        sb.close().await.expect("close");
    });
}
