//! What confinement a command gets on this host: the cached host probes (bubblewrap's
//! namespaces, the init program, Landlock's ABI) and the confinement one request will get. Above
//! `confine` (the Landlock ruleset), `bwrap` and `init`, which never ask here.

use crate::confine::{landlock_abi, landlock_support};
use crate::outcome::Confinement;
use crate::request::NamespacePolicy;

/// Starts the host probes ([`confinement_support`]: bubblewrap runs `/bin/true` in fresh
/// namespaces, Landlock's ABI) on a background thread and returns at once. The probes are cached
/// per process; a caller that needs them later (the app's capability listing, the first `run`)
/// waits only for what is left. A CLI process calls this first, so the ~20-50 ms bubblewrap probe
/// overlaps with opening its store and settings instead of adding to them.
pub fn prewarm_probes() {
    let spawned = std::thread::Builder::new()
        .name("aibuddy-exec-probe".into())
        .spawn(|| {
            let _ = confinement_support();
        });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "probe thread not started; probing on first use");
    }
}

/// What a command gets on this host by default (cached probes): `Namespaces { .. }` when
/// bubblewrap works (with the Landlock ABI the in-sandbox init applies, `None` when the init
/// program cannot be found), else Landlock alone (saying why there are no namespaces), else
/// `Unavailable`.
pub fn confinement_support() -> Confinement {
    let landlock = landlock_support();
    match crate::bwrap::probe() {
        Ok(_) => {
            let abi = crate::init::locate(None).ok().and_then(|_| landlock_abi());
            Confinement::Namespaces {
                landlock_abi: abi.map(|(a, _)| a),
                // Whether a run isolates the network depends on the request, not the host.
                network_isolated: false,
                scopes: abi.is_some_and(|(a, _)| a >= 6),
            }
        }
        Err(reason) => match landlock {
            Confinement::Landlock {
                abi,
                network,
                scopes,
                ..
            } => Confinement::Landlock {
                abi,
                network,
                scopes,
                no_namespaces: Some(reason),
            },
            other => other,
        },
    }
}

/// The confinement a request with `namespaces` will get on a host with `support`: the host's
/// support, or the Landlock-only fallback (saying why) when the request turns namespaces off.
pub fn confinement_for(namespaces: NamespacePolicy, support: Confinement) -> Confinement {
    match (namespaces, support) {
        (NamespacePolicy::Off, Confinement::Namespaces { .. }) => match landlock_support() {
            Confinement::Landlock {
                abi,
                network,
                scopes,
                ..
            } => Confinement::Landlock {
                abi,
                network,
                scopes,
                no_namespaces: Some("namespaces turned off for this request".into()),
            },
            other => other,
        },
        (_, support) => support,
    }
}
