//! A long-lived confined process: an MCP server started with `"sandbox"` in `mcp.json`.
//!
//! It is launched by the same code as a command (`launch`: bubblewrap namespaces with the init's
//! Landlock layer, or the Landlock-only path), so it gets the same hide list, protected paths,
//! syscall filter, private `TMPDIR` and network proxy, with these differences:
//!
//! - stdin is a pipe (the server's JSON-RPC input), and the caller reads stdout and stderr itself;
//! - no deadline, no heartbeats, no output pump: it runs until [`ConfinedServer`] is dropped or
//!   killed, which ends its whole process tree (the init's `K`, then the launcher tree or the
//!   group); the app's death ends it too (the init's control pipe, the supervisor's parent-death
//!   signal);
//! - the working directory is read-only: the server writes only its writable roots and its
//!   private `TMPDIR`. A working directory the sandbox hides (the neutral directory inside the
//!   data dir) is replaced by the private `TMPDIR`, so the data dir is never shown to it;
//! - the environment is the caller's (an MCP server gets the SDKs' default environment plus its
//!   entry's `env`), with `TMPDIR` and the proxy variables set;
//! - network decisions never ask: hosts on no list are refused (the proxy's `Refuse`);
//! - confinement is required: where neither namespaces nor Landlock can be applied, nothing starts
//!   ([`ExecError::ConfinementUnavailable`], Execution stage).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::confine;
use crate::error::ExecError;
use crate::launch::{Control, EndReport, Launched, Shape, Wiring, namespaces_applied};
use crate::launch::{spawn_bwrap, spawn_landlock};
use crate::netwire::{Net, Route};
use crate::outcome::Confinement;
use crate::process_group::{GroupKind, kill_tree};
use crate::protect::{self, Guard, Hold};
use crate::request::{ConfinePolicy, ExecRequest, NamespacePolicy};
use crate::sink::NullSink;
use crate::{bwrap, init, roots, tmpdir};

/// The confinement of a running server, returned beside its process by [`spawn_server`].
/// Dropping it kills the server's whole process tree, stops its proxy, and sweeps its protected
/// paths and temp dir: keep it as long as the server runs.
pub struct ConfinedServer {
    /// What was applied (the namespace path's Landlock ABI is known once the init reported it;
    /// until then its support is shown).
    pub confinement: Confinement,
    /// How the server reaches the network (`off (empty network namespace)`, `proxy: ...`).
    pub network: String,
    /// Its proxy's decisions, readable while it runs and after it ended (None: no proxy).
    pub network_watch: Option<aibuddy_netproxy::NetWatch>,
    control: Option<Control>,
    pgid: i32,
    kind: GroupKind,
    net: Option<Net>,
    protected: Option<Guard>,
    host_tmp: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for ConfinedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfinedServer")
            .field("pgid", &self.pgid)
            .field("confinement", &self.confinement)
            .field("network", &self.network)
            .finish_non_exhaustive()
    }
}

impl ConfinedServer {
    /// The label of its confinement and network, for a status line:
    /// `namespaces+landlock-v7, network: off (empty network namespace)`.
    pub fn describe(&self) -> String {
        format!("{}, network: {}", self.confinement.label(), self.network)
    }

    /// Kills the whole process tree now (idempotent; the drop does it too).
    pub fn kill(&mut self) {
        if let Some(mut control) = self.control.take() {
            control.kill();
            drop(control);
            kill_tree(self.pgid, self.kind);
        }
    }
}

impl Drop for ConfinedServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(p) = self.protected.take() {
            let report = p.finish();
            if !report.is_empty() {
                tracing::warn!(?report, "protected paths swept after a confined server");
            }
        }
        if let Some(net) = self.net.take() {
            let report = net.finish();
            let refused = report.refused().count();
            if refused > 0 {
                tracing::info!(refused, "connections of a confined server were refused");
            }
        }
        if let Some(tmp) = self.host_tmp.take()
            && let Err(e) = tmp.close()
        {
            tracing::warn!(error = %e, "could not remove a confined server's temp dir");
        }
    }
}

/// `program args...` as one `/bin/sh -c` line that `exec`s it (each word single-quoted). Pure.
pub fn shell_line(program: &str, args: &[String]) -> Result<String, ExecError> {
    let mut line = String::from("exec");
    for word in std::iter::once(program).chain(args.iter().map(String::as_str)) {
        if word.contains('\0') {
            return Err(ExecError::InvalidRequest(
                "a server's command or argument contains a NUL byte".into(),
            ));
        }
        line.push_str(" '");
        line.push_str(&word.replace('\'', r"'\''"));
        line.push('\'');
    }
    Ok(line)
}

/// Starts `req.command` (see [`shell_line`]) as a long-lived confined server in `req.cwd`, with
/// `env` as its whole inherited environment (see the module documentation). `req.writable_roots`,
/// `req.network_allowed` / `req.network_policy`, the hide and protect lists and the namespace
/// policy are honoured as for a command; `req.confine` must not be `Off`; the timeouts and
/// output settings are not used. Call inside a Tokio runtime.
///
/// Returns the launcher process (bubblewrap, or the supervisor of the Landlock-only path; its
/// exit status is the server's) with the server's stdin, stdout and stderr pipes in it, and the
/// guard of its confinement.
pub fn spawn_server(
    req: &ExecRequest,
    env: Vec<(OsString, OsString)>,
) -> Result<(tokio::process::Child, ConfinedServer), ExecError> {
    req.validate()?;
    if req.confine == ConfinePolicy::Off {
        return Err(ExecError::InvalidRequest(
            "a confined server cannot run with confinement off".into(),
        ));
    }
    let writable_roots = roots::verify(&req.writable_roots)?;
    let mut req = req.clone();
    // A working directory inside a hidden path (the data dir's neutral directory) would unhide
    // that path (a hidden path containing the working directory stays visible): the server works
    // in its private TMPDIR instead.
    let cwd_hidden = match std::fs::canonicalize(&req.cwd) {
        Ok(real) => req
            .hidden_paths
            .iter()
            .filter_map(|h| std::fs::canonicalize(h).ok())
            .any(|h| real.starts_with(h)),
        Err(source) => {
            return Err(ExecError::Cwd {
                path: req.cwd.clone(),
                source,
            });
        }
    };
    let protected_list = protect::effective_list(&req.protected_paths, &req.unprotected_paths);
    let namespaces = match req.namespaces {
        NamespacePolicy::Off => Err("namespaces turned off".to_string()),
        NamespacePolicy::Auto => bwrap::probe(),
    };
    let mut env = env;
    match namespaces {
        Ok(bwrap) => {
            let init = init::locate(req.init_program.as_deref());
            if let Err(reason) = &init {
                tracing::warn!(%reason, "no init program: a confined server without the inner Landlock layer");
            }
            let protected = Guard::prepare(&writable_roots, &protected_list, Hold::Mounts);
            let net = Net::start(&req, Route::Namespaces { init: init.is_ok() }, &NullSink)?;
            net.apply_env(&mut env);
            let tmpdir = server_tmpdir();
            let host_cwd = cwd_hidden.then(|| {
                let real = req.cwd.clone();
                req.cwd = tmpdir.clone();
                real
            });
            let wiring = Wiring {
                env,
                tmpdir,
                bridge: net.bridge.clone(),
                shape: Shape {
                    stdin_piped: true,
                    cwd_read_only: true,
                    host_cwd,
                },
            };
            let launched = spawn_bwrap(
                &req,
                &wiring,
                &bwrap,
                &writable_roots,
                &protected,
                init.as_deref().ok(),
            )?;
            // The ABI the init applies is reported when the server ends; until then the support
            // of this kernel says what it applies.
            let abi = init
                .as_ref()
                .ok()
                .and_then(|_| match confine::landlock_support() {
                    Confinement::Landlock { abi, .. } => Some(abi),
                    _ => None,
                });
            let end = EndReport {
                sandbox_started: true,
                wait_status: None,
                killed_leftovers: false,
                landlock_abi: abi,
            };
            let confinement = namespaces_applied(&req, &end);
            Ok(started(launched, confinement, net, protected, None))
        }
        Err(no_namespaces) => {
            let tmp = tmpdir::create().map_err(|source| ExecError::Prepare {
                what: "the private temp dir",
                source,
            })?;
            if cwd_hidden {
                req.cwd = tmp.path().to_path_buf();
            }
            let mut writable = vec![tmp.path().to_path_buf()];
            writable.extend(writable_roots.iter().cloned());
            let tcp_rules = confine::landlock_abi().is_some_and(|(_, tcp)| tcp);
            let net = Net::start(&req, Route::Landlock { tcp_rules }, &NullSink)?;
            let prepared = confine::prepare(&writable, req.network_allowed, net.landlock_port)
                .map_err(|reason| {
                    ExecError::ConfinementUnavailable(format!(
                        "no namespaces ({no_namespaces}) and no Landlock ({reason}): the server \
                         is not started unconfined"
                    ))
                })?;
            if !req.network_allowed && !tcp_rules {
                return Err(ExecError::ConfinementUnavailable(
                    "no namespaces and this kernel's Landlock cannot deny TCP: the server's \
                     network cannot be turned off"
                        .into(),
                ));
            }
            net.apply_env(&mut env);
            let mut confinement = prepared.applied.clone();
            if let Confinement::Landlock {
                no_namespaces: n, ..
            } = &mut confinement
            {
                *n = Some(no_namespaces);
            }
            let protected = Guard::prepare(&writable_roots, &protected_list, Hold::Restore);
            let wiring = Wiring {
                env,
                tmpdir: tmp.path().to_path_buf(),
                bridge: None,
                shape: Shape {
                    stdin_piped: true,
                    cwd_read_only: true,
                    host_cwd: None,
                },
            };
            let launched = spawn_landlock(&req, &wiring, Some(prepared))?;
            Ok(started(launched, confinement, net, protected, Some(tmp)))
        }
    }
}

fn started(
    launched: Launched,
    confinement: Confinement,
    net: Net,
    protected: Guard,
    host_tmp: Option<tempfile::TempDir>,
) -> (tokio::process::Child, ConfinedServer) {
    let Launched {
        child,
        control,
        report,
        pgid,
    } = launched;
    // The server's end report is not read: its exit status is the child's.
    drop(report);
    let kind = control.group_kind();
    let network = net.mode().to_string();
    let network_watch = net.watch();
    tracing::debug!(pgid, confinement = %confinement.label(), "confined server started");
    let guard = ConfinedServer {
        confinement,
        network,
        network_watch,
        control: Some(control),
        pgid,
        kind,
        net: Some(net),
        protected: Some(protected),
        host_tmp,
    };
    (child, guard)
}

/// A fresh `TMPDIR` path inside the server's private `/tmp`.
fn server_tmpdir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    Path::new("/tmp").join(format!(
        "{}server-{}-{}",
        tmpdir::TMP_PREFIX,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_lines_quote_every_word() {
        let line = shell_line(
            "/usr/bin/python3",
            &["-c".into(), "print('x'); $HOME".into()],
        )
        .unwrap();
        assert_eq!(
            line,
            r#"exec '/usr/bin/python3' '-c' 'print('\''x'\''); $HOME'"#
        );
        assert!(shell_line("a\0b", &[]).is_err());
    }
}
