//! What the host knows that a sandboxed server's confinement needs ([`SandboxHost`]: the person's
//! home, the data directories, the credential paths its environment names, its exposed
//! credentials and protected-path choices: the same facts `execute` gives commands), and the
//! `aibuddy_exec` request of one server built from it and the entry's `"sandbox"` (pure).

use std::path::{Path, PathBuf};

use aibuddy_exec::{ConfinePolicy, ExecRequest, NamespacePolicy};

use crate::config::SandboxConfig;

/// The host's part of every sandboxed server's confinement (see [`crate::McpOptions`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxHost {
    /// The person's home: its credential locations are hidden, `~/` in writable roots resolves
    /// against it.
    pub home: Option<PathBuf>,
    /// Paths a server may neither read nor write (the app's data directories).
    pub hidden_paths: Vec<PathBuf>,
    /// Credential files the environment names (`GOOGLE_APPLICATION_CREDENTIALS`, ...).
    pub credential_paths: Vec<PathBuf>,
    /// Credential locations the person exposed (`exec.expose_credentials`).
    pub exposed_credentials: Vec<PathBuf>,
    /// Namespaces when the host allows them (`exec.namespaces`), else the Landlock-only path.
    pub namespaces: NamespacePolicy,
    /// `exec.protected_paths` and the built-in entries the person removed.
    pub protected_paths: Vec<String>,
    pub unprotected_paths: Vec<String>,
    /// The init program (`None`: located as for commands).
    pub init_program: Option<PathBuf>,
}

impl SandboxHost {
    /// From this process's environment: `HOME` and the credential files its variables name.
    /// Hosts add the data directories and the person's settings.
    pub fn from_process() -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute());
        let credential_paths =
            aibuddy_exec::hide::env_credential_paths(|n| std::env::var_os(n), home.as_deref());
        SandboxHost {
            home,
            credential_paths,
            ..SandboxHost::default()
        }
    }

    /// The request that starts `program args` confined in `cwd` (its only I/O: writable roots are
    /// resolved through symbolic links). `Err`: a writable root
    /// that is not absolute once resolved (a template kept unexpanded).
    pub(crate) fn request(
        &self,
        sandbox: &SandboxConfig,
        program: &str,
        args: &[String],
        cwd: &Path,
    ) -> Result<ExecRequest, String> {
        let command = aibuddy_exec::shell_line(program, args).map_err(|e| e.to_string())?;
        let mut req = ExecRequest::new(command, cwd);
        req.writable_roots = sandbox
            .writable_roots
            .iter()
            .map(|r| self.resolve(r))
            .collect::<Result<_, _>>()?;
        req.network_allowed = sandbox.network.is_on();
        req.network_policy = sandbox.network.policy();
        req.confine = ConfinePolicy::Required;
        req.namespaces = self.namespaces;
        req.home = self.home.clone();
        req.hidden_paths = self.hidden_paths.clone();
        req.credential_paths = self.credential_paths.clone();
        req.exposed_credentials = self.exposed_credentials.clone();
        req.protected_paths = self.protected_paths.clone();
        req.unprotected_paths = self.unprotected_paths.clone();
        req.init_program = self.init_program.clone();
        Ok(req)
    }

    fn resolve(&self, root: &str) -> Result<PathBuf, String> {
        let home = || {
            self.home
                .clone()
                .ok_or_else(|| "a writable root under `~` needs a home directory".to_string())
        };
        let path = if root == "~" {
            home()?
        } else if let Some(rest) = root.strip_prefix("~/") {
            home()?.join(rest)
        } else {
            PathBuf::from(root)
        };
        if path.is_absolute() && !root.contains("${") {
            // Symbolic links resolved (the launch refuses a root that is not its own resolution);
            // a missing root is kept as written and skipped by the launch, with a log line.
            Ok(std::fs::canonicalize(&path).unwrap_or(path))
        } else {
            Err("a sandbox writable root is not an absolute path once expanded".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxNetwork;

    #[test]
    fn requests_are_required_confinement_with_the_entry_roots_and_network() {
        let host = SandboxHost {
            home: Some("/home/u".into()),
            hidden_paths: vec!["/home/u/.local/share/aibuddy".into()],
            ..SandboxHost::default()
        };
        let sandbox = SandboxConfig {
            writable_roots: vec!["~/.cache/s".into(), "/proj".into()],
            network: SandboxNetwork::Off,
        };
        let req = host
            .request(
                &sandbox,
                "python3",
                &["-m".into(), "s".into()],
                Path::new("/w"),
            )
            .unwrap();
        assert_eq!(req.command, "exec 'python3' '-m' 's'");
        assert_eq!(req.confine, ConfinePolicy::Required);
        assert!(!req.network_allowed && req.network_policy.is_none());
        assert_eq!(
            req.writable_roots,
            vec![PathBuf::from("/home/u/.cache/s"), PathBuf::from("/proj")]
        );
        assert_eq!(req.hidden_paths, host.hidden_paths);
        let templated = SandboxConfig {
            writable_roots: vec!["${AIBUDDY_PROJECT_ROOT}".into()],
            network: SandboxNetwork::Registries,
        };
        assert!(host.request(&templated, "x", &[], Path::new("/w")).is_err());
    }
}
