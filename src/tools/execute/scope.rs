//! The confirmation's scope lines of `execute`: what the command may touch and under which
//! confinement (pure).

use aibuddy_sandbox::aibuddy_exec::protect::{
    NESTED_DEPTH_CAP, NESTED_DIR_CAP, NestedSearch, effective_list,
};
use aibuddy_sandbox::aibuddy_exec::{Confinement, ExecRequest};

/// Whether this confinement refuses writes to protected paths (the namespace path and a
/// container do; on the Landlock-only path they are restored after the command instead).
pub fn protected_paths_refused(support: &Confinement) -> bool {
    matches!(
        support,
        Confinement::Namespaces { .. } | Confinement::Container { .. }
    )
}

/// The scope line of the protected paths.
pub fn protected_line(req: &ExecRequest, support: &Confinement) -> String {
    let names: Vec<String> = effective_list(&req.protected_paths, &req.unprotected_paths)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    if names.is_empty() {
        return "protected paths: none (all removed by `exec.unprotected_paths`)".to_string();
    }
    let names = names.join(", ");
    if matches!(support, Confinement::Container { synced: true, .. }) {
        return format!(
            "protected paths (copied into the container, but never brought back: a change, \
             creation or deletion of one there, a new git directory, git config, hooks or info \
             of any git directory, and a symlink leading out of the project or to one are refused \
             and listed on the call): {names}"
        );
    }
    if matches!(support, Confinement::Container { .. }) {
        return format!(
            "protected paths (read-only in the container, cannot be created; in the project and \
             every git directory in it, each git directory bound onto itself; a symlink is \
             put back after the container): {names}"
        );
    }
    if protected_paths_refused(support) {
        format!(
            "protected paths (read-only, cannot be created; in the project, each writable root and \
             every git directory): {names}"
        )
    } else {
        format!(
            "protected paths NOT refused on this path (Landlock cannot deny a path inside a writable \
             root): {names}; the command can change them while it runs, and they are restored (created \
             ones removed) when it ends"
        )
    }
}

/// The scope line saying that the search for nested repositories stopped at a cap (their git
/// config and hooks deeper down are then not protected), or nothing when it did not.
pub fn nested_repositories_line(search: &NestedSearch) -> Option<String> {
    search.capped.then(|| {
        format!(
            "nested git repositories: the search stopped at its cap ({NESTED_DIR_CAP} directories \
             per writable root, {NESTED_DEPTH_CAP} levels); repositories beyond it are not protected \
             ({} found and protected)",
            search.work_trees.len()
        )
    })
}

/// The confinement a request will get on this host, for the confirmation.
pub fn expected_confinement(req: &ExecRequest, support: &Confinement) -> String {
    let roots = std::iter::once(req.cwd.display().to_string())
        .chain(std::iter::once("private $TMPDIR".to_string()))
        .chain(req.writable_roots.iter().map(|r| r.display().to_string()))
        .collect::<Vec<_>>()
        .join(", ");
    match support {
        Confinement::Namespaces {
            landlock_abi,
            scopes,
            ..
        } => {
            let inner = match landlock_abi {
                Some(abi) if *scopes => {
                    format!("Landlock ABI {abi} inside (signals and abstract sockets scoped)")
                }
                Some(abi) => format!("Landlock ABI {abi} inside"),
                None => "no Landlock inside (init program not found)".to_string(),
            };
            format!(
                "confinement: own user, PID, IPC and mount namespaces (bubblewrap) + {inner}; \
                 system read-only, credentials and the data directory hidden, private /tmp and /run; \
                 writes only in {roots}; network {}",
                if req.network_allowed {
                    format!(
                        "only through the allow-list proxy ({}; other hosts refused; own network \
                         namespace: no host loopback ports or sockets)",
                        policy_text(req)
                    )
                } else {
                    "off (no network namespace access at all)".to_string()
                }
            )
        }
        Confinement::Landlock {
            abi,
            network,
            scopes,
            no_namespaces,
        } => {
            let prefix = match no_namespaces {
                Some(reason) => format!("landlock only: no namespaces ({reason}); "),
                None => String::new(),
            };
            format!(
                "confinement: {prefix}Landlock ABI {abi}{}; writes only in {roots}; network {}",
                if *scopes {
                    " (signals and abstract sockets scoped)"
                } else {
                    ""
                },
                match (req.network_allowed, network) {
                    (true, true) => format!(
                        "through the allow-list proxy ({}); Landlock allows TCP connect only to the \
                         proxy's port; UDP and Unix sockets are not covered",
                        policy_text(req)
                    ),
                    (true, false) => format!(
                        "through the allow-list proxy ({}), NOT enforced: this kernel cannot \
                         restrict TCP",
                        policy_text(req)
                    ),
                    (false, true) =>
                        "off (TCP connect/bind denied; UDP and Unix sockets are not covered)"
                            .to_string(),
                    (false, false) => "requested off but this kernel cannot enforce it".to_string(),
                }
            )
        }
        Confinement::Container {
            engine,
            image,
            container,
            synced: true,
            ..
        } => {
            let which = if container.is_empty() {
                "a container (created on first use)".to_string()
            } else {
                format!("container {container}")
            };
            format!(
                "confinement: {which} of image `{image}` on the engine {engine}: its own \
                 namespaces; nothing of this machine is bound into it: the project is copied in \
                 (sync) before the command and the command's changes are brought back after it \
                 ({}), except protected paths, new git directories, symlinks leading out and \
                 files over the size bounds (listed on the call); this machine's writable roots \
                 and private $TMPDIR do not apply; network off (the allow-list proxy cannot be \
                 bridged into a synced container)",
                if req.read_only {
                    "read-only: nothing is brought back"
                } else {
                    "read-write"
                }
            )
        }
        Confinement::Container {
            engine,
            image,
            container,
            ..
        } => {
            let which = if container.is_empty() {
                "a container (created on first use)".to_string()
            } else {
                format!("container {container}")
            };
            format!(
                "confinement: {which} of image `{image}` on the engine {engine}: its own \
                 namespaces, the project folder bound at the container's working directory \
                 ({}); this machine's writable roots and private $TMPDIR do not apply; {}",
                if req.read_only {
                    "read-only"
                } else {
                    "read-write"
                },
                if req.network_allowed {
                    format!(
                        "network only through the allow-list proxy ({}): the container has no \
                         network of its own, the proxy is bridged into its loopback",
                        policy_text(req)
                    )
                } else {
                    "network off (the container has no network)".to_string()
                }
            )
        }
        Confinement::Unavailable { reason } => {
            format!("confinement: NONE ({reason}); the command can write wherever the app user can")
        }
        Confinement::Disabled => "confinement: disabled".to_string(),
    }
}

/// The proxy's lists for a scope line.
fn policy_text(req: &ExecRequest) -> String {
    match &req.network_policy {
        Some(p) => p.describe(),
        None => "allow: *".to_string(),
    }
}

/// The confinement this request will get: the host's support, or the Landlock-only fallback when
/// the request turns namespaces off.
pub fn confinement_for(req: &ExecRequest, support: Confinement) -> Confinement {
    aibuddy_sandbox::aibuddy_exec::confinement_for(req.namespaces, support)
}

/// The confirmation's scope lines for a request.
pub fn scope_lines(
    req: &ExecRequest,
    env_dropped: &[String],
    support: &Confinement,
) -> Vec<String> {
    let mut scope = vec![
        format!("cwd: {}", req.cwd.display()),
        expected_confinement(req, support),
        protected_line(req, support),
        format!("timeout: {} ms", req.timeout.as_millis()),
    ];
    scope.push(if matches!(support, Confinement::Container { .. }) {
        if req.env.include.is_empty() {
            "environment: none of this machine's variables are passed (the image's own only)"
                .to_string()
        } else {
            format!(
                "environment: the image's own; of this machine's variables only those \
                 `exec.env_include` names (when set here and not excluded): {}",
                req.env.include.join(", ")
            )
        }
    } else if env_dropped.is_empty() {
        "environment withheld: none".to_string()
    } else {
        format!(
            "environment withheld ({} variables): {}",
            env_dropped.len(),
            env_dropped.join(", ")
        )
    });
    scope
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use aibuddy_sandbox::aibuddy_exec::NamespacePolicy;

    #[test]
    fn a_container_scope_names_the_container_and_what_is_not_covered() {
        let req = ExecRequest::new("make", "/proj");
        let c = Confinement::Container {
            engine: "unix:///run/podman/podman.sock".into(),
            image: "debian:12".into(),
            container: String::new(),
            network_isolated: true,
            synced: false,
        };
        let scope = scope_lines(&req, &["GITHUB_TOKEN".into()], &c);
        assert!(
            scope[1].contains("image `debian:12` on the engine unix:///run/podman/podman.sock"),
            "{}",
            scope[1]
        );
        assert!(
            scope[1].contains("(read-write)")
                && scope[1].contains("network only through the allow-list proxy (allow: *)"),
            "{}",
            scope[1]
        );
        assert!(scope[2].contains("cannot be created"), "{}", scope[2]);
        assert!(
            scope[4].contains("none of this machine's variables"),
            "{}",
            scope[4]
        );
        let mut included = req.clone();
        included.env.include = vec!["GH_TOKEN".into()];
        let scope = scope_lines(&included, &[], &c);
        assert!(
            scope[4].contains("only those `exec.env_include` names")
                && scope[4].ends_with(": GH_TOKEN"),
            "{}",
            scope[4]
        );
        assert_eq!(
            crate::tools::execute::launch_of(&c),
            crate::approvals::Launch::Full
        );
    }

    #[test]
    fn a_synced_container_scope_says_the_project_is_copied_and_what_is_not_brought_back() {
        let mut req = ExecRequest::new("make", "/proj");
        req.network_allowed = true;
        let c = Confinement::Container {
            engine: "tcp://build:2375".into(),
            image: "debian:12".into(),
            container: String::new(),
            network_isolated: true,
            synced: true,
        };
        assert_eq!(c.label(), "container+sync+nonet");
        let scope = scope_lines(&req, &[], &c);
        assert!(
            scope[1].contains("the project is copied in (sync)")
                && scope[1].contains("network off")
                && !scope[1].contains("bound at"),
            "{}",
            scope[1]
        );
        assert!(scope[2].contains("never brought back"), "{}", scope[2]);
        req.read_only = true;
        assert!(scope_lines(&req, &[], &c)[1].contains("nothing is brought back"));
    }

    #[test]
    fn confirmation_scope_names_cwd_confinement_timeout_and_withheld_env() {
        let mut req = ExecRequest::new("make", "/proj");
        req.writable_roots = vec!["/home/u/.cargo".into()];
        req.network_allowed = false;
        let scope = scope_lines(
            &req,
            &["GITHUB_TOKEN".into(), "OPENAI_API_KEY".into()],
            &Confinement::Landlock {
                abi: 7,
                network: true,
                scopes: true,
                no_namespaces: Some("bubblewrap (bwrap) is not installed".into()),
            },
        );
        assert_eq!(
            scope,
            vec![
                "cwd: /proj".to_string(),
                "confinement: landlock only: no namespaces (bubblewrap (bwrap) is not installed); Landlock ABI 7 (signals and abstract sockets scoped); writes only in /proj, private $TMPDIR, /home/u/.cargo; network off (TCP connect/bind denied; UDP and Unix sockets are not covered)".to_string(),
                "protected paths NOT refused on this path (Landlock cannot deny a path inside a writable root): .git/config, .git/config.worktree, .git/hooks, .git/info, .git/commondir, .aibuddy, .vscode, .idea, .envrc, .mcp.json, .claude, .codex, .cursor; the command can change them while it runs, and they are restored (created ones removed) when it ends".to_string(),
                "timeout: 120000 ms".to_string(),
                "environment withheld (2 variables): GITHUB_TOKEN, OPENAI_API_KEY".to_string(),
            ]
        );
        let none = scope_lines(
            &req,
            &[],
            &Confinement::Unavailable {
                reason: "no Landlock".into(),
            },
        );
        assert!(none[1].starts_with("confinement: NONE (no Landlock)"));
        assert!(
            none[2].starts_with("protected paths NOT refused"),
            "{}",
            none[2]
        );
        assert_eq!(none[4], "environment withheld: none");
        let ns = scope_lines(
            &req,
            &[],
            &Confinement::Namespaces {
                landlock_abi: Some(7),
                network_isolated: true,
                scopes: true,
            },
        );
        assert_eq!(
            ns[1],
            "confinement: own user, PID, IPC and mount namespaces (bubblewrap) + Landlock ABI 7 inside \
             (signals and abstract sockets scoped); system read-only, credentials and the data directory \
             hidden, private /tmp and /run; writes only in /proj, private $TMPDIR, /home/u/.cargo; \
             network off (no network namespace access at all)"
        );
        req.protected_paths = vec!["Makefile".into()];
        req.unprotected_paths = vec![".idea".into(), ".codex".into()];
        let ns = scope_lines(
            &req,
            &[],
            &Confinement::Namespaces {
                landlock_abi: Some(7),
                network_isolated: true,
                scopes: true,
            },
        );
        assert_eq!(
            ns[2],
            "protected paths (read-only, cannot be created; in the project, each writable root and \
             every git directory): .git/config, .git/config.worktree, .git/hooks, .git/info, \
             .git/commondir, .aibuddy, .vscode, .envrc, .mcp.json, .claude, .cursor, Makefile"
        );
    }

    #[test]
    fn a_capped_search_for_nested_repositories_is_said() {
        let mut search = NestedSearch::default();
        assert_eq!(nested_repositories_line(&search), None);
        search.capped = true;
        search.work_trees = vec!["/p/vendor/lib".into()];
        assert_eq!(
            nested_repositories_line(&search).as_deref(),
            Some(
                "nested git repositories: the search stopped at its cap (2000 directories per \
                 writable root, 6 levels); repositories beyond it are not protected (1 found and \
                 protected)"
            )
        );
    }

    #[test]
    fn the_network_line_names_the_proxy_its_lists_and_what_the_fallback_misses() {
        let mut req = ExecRequest::new("make", "/proj");
        let (policy, _) = aibuddy_sandbox::aibuddy_exec::netproxy::Policy::from_lists(
            &["crates.io".into(), "localhost:5173".into()],
            &["evil.example".into()],
        );
        req.network_policy = Some(policy);
        let ns = expected_confinement(
            &req,
            &Confinement::Namespaces {
                landlock_abi: Some(7),
                network_isolated: false,
                scopes: true,
            },
        );
        assert!(
            ns.ends_with(
                "network only through the allow-list proxy (allow: crates.io, localhost:5173; deny: \
                 evil.example; other hosts refused; own network namespace: no host loopback ports or \
                 sockets)"
            ),
            "{ns}"
        );
        let landlock = |req: &ExecRequest, network| {
            expected_confinement(
                req,
                &Confinement::Landlock {
                    abi: 7,
                    network,
                    scopes: true,
                    no_namespaces: Some("x".into()),
                },
            )
        };
        assert!(
            landlock(&req, true).ends_with(
                "network through the allow-list proxy (allow: crates.io, localhost:5173; deny: \
                 evil.example); Landlock allows TCP connect only to the proxy's port; UDP and Unix \
                 sockets are not covered"
            ),
            "{}",
            landlock(&req, true)
        );
        assert!(landlock(&req, false).contains("NOT enforced"));
        req.network_policy = None;
        assert!(landlock(&req, true).contains("(allow: *)"));
    }

    #[test]
    fn the_fallback_is_named_in_the_scope_when_a_request_turns_namespaces_off() {
        let mut req = ExecRequest::new("make", "/proj");
        let support = Confinement::Namespaces {
            landlock_abi: Some(7),
            network_isolated: true,
            scopes: true,
        };
        assert_eq!(confinement_for(&req, support.clone()), support);
        req.namespaces = NamespacePolicy::Off;
        let line = expected_confinement(&req, &confinement_for(&req, support));
        assert!(
            line.starts_with("confinement: landlock only: no namespaces (namespaces turned off"),
            "{line}"
        );
    }
}
