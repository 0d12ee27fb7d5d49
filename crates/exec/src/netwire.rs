//! The runner's side of a command's network: which way it gets out, the proxy it gets, and the
//! report stored with the outcome.
//!
//! | path | network off | network on |
//! |---|---|---|
//! | namespaces + init | empty network namespace, no proxy | own network namespace; the proxy on a Unix socket (a `0700` directory under the host `/tmp`, bound read-only at the same path), bridged to `127.0.0.1:3128` inside by the init (`netbridge`) |
//! | namespaces, no init | empty network namespace | the same: no init, no bridge, **no network** (said in the report) |
//! | Landlock, ABI >= 4 | TCP connect/bind denied | the proxy on a host loopback port; Landlock allows TCP connect to that port only; **UDP is not covered** |
//! | Landlock < 4, or no confinement | not enforced | the proxy on a host loopback port, **not enforced** (direct connections are possible) |
//!
//! With a proxy the command gets `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (`socks5h://`, names
//! resolved by the proxy) and their lower-case forms, and `NO_PROXY`/`no_proxy` for its own
//! loopback; whatever the app's environment had under those names is replaced.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use aibuddy_netproxy::{NetReport, Policy, Proxy, ProxyConfig, Refuse};

use crate::error::ExecError;
use crate::netbridge::{BRIDGE_PORT, BridgeSpec};
use crate::request::ExecRequest;
use crate::sink::ExecSink;

/// The proxy variables set for a command (upper- and lower-case).
pub const PROXY_VARS: [&str; 8] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

/// The proxy variables of a command whose proxy listens at `127.0.0.1:port` (one owner of the
/// names and values: the local runner and the container bridge both use it).
pub(crate) fn proxy_env(port: u16) -> [(&'static str, String); 8] {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let no = "localhost,127.0.0.1,::1".to_string();
    [
        ("HTTP_PROXY", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("ALL_PROXY", socks.clone()),
        ("NO_PROXY", no.clone()),
        ("http_proxy", http.clone()),
        ("https_proxy", http),
        ("all_proxy", socks),
        ("no_proxy", no),
    ]
}

/// Which launch path the network is wired for.
pub(crate) enum Route {
    Namespaces {
        init: bool,
    },
    Landlock {
        tcp_rules: bool,
    },
    /// A command in a container without a network of its own (`NetworkMode: none`): the proxy on
    /// this Unix socket (`Err(mode)`: the container has no working bridge program, so no
    /// network, the report's mode says why), bridged to the container's loopback by the bridge
    /// program (`bridged`).
    Container {
        socket: Result<PathBuf, String>,
    },
}

/// A command's network, set up before it starts.
pub(crate) struct Net {
    proxy: Option<Proxy>,
    _dir: Option<tempfile::TempDir>,
    /// For the init (namespace path).
    pub(crate) bridge: Option<BridgeSpec>,
    /// For Landlock's TCP rule (Landlock-only path).
    pub(crate) landlock_port: Option<u16>,
    mode: String,
    policy: String,
    port: Option<u16>,
}

impl Net {
    /// Starts the proxy this request and route need (call inside the runtime).
    pub(crate) fn start(
        req: &ExecRequest,
        route: Route,
        sink: &dyn ExecSink,
    ) -> Result<Net, ExecError> {
        let policy = req
            .network_policy
            .clone()
            .unwrap_or_else(Policy::any_public);
        let mut net = Net {
            proxy: None,
            _dir: None,
            bridge: None,
            landlock_port: None,
            mode: String::new(),
            policy: policy.describe(),
            port: None,
        };
        if !req.network_allowed {
            net.mode = match route {
                Route::Namespaces { .. } => "off (empty network namespace)".into(),
                Route::Landlock { tcp_rules: true } => {
                    "off (landlock: TCP connect/bind denied; UDP and Unix sockets not covered)"
                        .into()
                }
                Route::Landlock { tcp_rules: false } => {
                    "requested off, NOT enforced (this kernel cannot restrict TCP)".into()
                }
                Route::Container { .. } => {
                    "off (container without a network: `NetworkMode: none`)".into()
                }
            };
            net.policy.clear();
            return Ok(net);
        }
        let cfg = ProxyConfig {
            policy,
            decider: sink.network_decider().unwrap_or_else(|| Arc::new(Refuse)),
        };
        let io = |source| ExecError::Prepare {
            what: "the network proxy",
            source,
        };
        match route {
            Route::Namespaces { init: false } => {
                net.mode =
                    "off: no init program to bridge the proxy into the network namespace".into();
            }
            Route::Namespaces { init: true } => {
                crate::netdirs::sweep_once();
                let dir = tempfile::Builder::new()
                    .prefix(crate::netdirs::PREFIX)
                    .tempdir_in("/tmp")
                    .map_err(io)?;
                let socket: PathBuf = dir.path().join("proxy.sock");
                net.proxy = Some(Proxy::serve_unix(&socket, cfg).map_err(io)?);
                net.bridge = Some(BridgeSpec {
                    port: BRIDGE_PORT,
                    socket,
                });
                net._dir = Some(dir);
                net.port = Some(BRIDGE_PORT);
                net.mode = format!(
                    "proxy: own network namespace, the allow-list proxy at 127.0.0.1:{BRIDGE_PORT}"
                );
            }
            Route::Container { socket: Err(mode) } => {
                net.mode = mode;
            }
            Route::Container { socket: Ok(socket) } => {
                net.proxy = Some(Proxy::serve_unix(&socket, cfg).map_err(io)?);
                net.mode = "proxy: container without a network (`NetworkMode: none`), the \
                            allow-list proxy bridged to its loopback (the port in HTTP_PROXY)"
                    .into();
            }
            Route::Landlock { tcp_rules } => {
                let (proxy, port) = Proxy::serve_tcp_loopback(cfg).map_err(io)?;
                net.proxy = Some(proxy);
                net.port = Some(port);
                if tcp_rules {
                    net.landlock_port = Some(port);
                    net.mode = format!(
                        "proxy at 127.0.0.1:{port} (landlock: TCP connect only to the proxy; UDP \
                         and Unix sockets are not covered)"
                    );
                } else {
                    net.mode = format!(
                        "proxy at 127.0.0.1:{port}, NOT enforced (no Landlock TCP rules here: \
                         direct connections are possible)"
                    );
                }
            }
        }
        Ok(net)
    }

    /// A view of the proxy's decisions that outlives it (None without a proxy).
    pub(crate) fn watch(&self) -> Option<aibuddy_netproxy::NetWatch> {
        self.proxy.as_ref().map(aibuddy_netproxy::Proxy::watch)
    }

    /// How the command reaches the network (the report's `mode`).
    pub(crate) fn mode(&self) -> &str {
        &self.mode
    }

    /// Landlock could not be applied after all: the TCP rule is not there.
    pub(crate) fn unenforced(&mut self) {
        if let Some(port) = self.landlock_port.take() {
            self.mode = format!(
                "proxy at 127.0.0.1:{port}, NOT enforced (Landlock could not be applied: direct \
                 connections are possible)"
            );
        }
    }

    /// Replaces the proxy variables in `env` by this command's (none without a proxy).
    pub(crate) fn apply_env(&self, env: &mut Vec<(OsString, OsString)>) {
        env.retain(|(k, _)| !PROXY_VARS.iter().any(|v| k == v));
        let Some(port) = self.port.filter(|_| self.proxy.is_some()) else {
            return;
        };
        for (k, v) in proxy_env(port) {
            env.push((k.into(), v.into()));
        }
    }

    /// Stops the proxy; the report for the outcome.
    pub(crate) fn finish(self) -> NetReport {
        let (events, events_dropped) = match self.proxy {
            Some(p) => p.stop(),
            None => (Vec::new(), 0),
        };
        NetReport {
            mode: self.mode,
            policy: self.policy,
            events,
            events_dropped,
        }
    }
}

/// The allow-list proxy of a command that runs in a container (`aibuddy-container`): the same
/// policy, decider and per-call report as a local command, on a Unix socket the container gets
/// bound in; the bridge program ([`crate::bridge_main`]) connects the command's loopback to it.
pub struct ContainerProxy(Net);

impl ContainerProxy {
    /// Starts the proxy `req` needs (none when `req.network_allowed` is false) on `socket`
    /// (`Err(mode)`: the container has no working bridge program, so the command has no network;
    /// `mode` says so in the report). Call inside the runtime.
    pub fn start(
        req: &ExecRequest,
        socket: Result<&std::path::Path, &str>,
        sink: &dyn ExecSink,
    ) -> Result<ContainerProxy, ExecError> {
        let route = Route::Container {
            socket: socket
                .map(std::path::Path::to_path_buf)
                .map_err(str::to_string),
        };
        Net::start(req, route, sink).map(ContainerProxy)
    }

    /// Whether a proxy listens (the command is to be started under the bridge).
    pub fn serving(&self) -> bool {
        self.0.proxy.is_some()
    }

    /// Stops the proxy; the report for the outcome.
    pub fn finish(self) -> NetReport {
        self.0.finish()
    }
}
