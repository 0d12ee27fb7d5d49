//! The host's part of the confinement of MCP servers with `"sandbox"`
//! ([`aibuddy_mcp::SandboxHost`]): the same facts `execute` gives commands (the person's home and
//! the credential files the environment names, both data directories hidden, the person's
//! `exec.namespaces`, `exec.protected_paths` and `exec.expose_credentials`).

use std::path::Path;

use aibuddy_mcp::SandboxHost;
use aibuddy_sandbox::aibuddy_exec::{NamespacePolicy, hide};

use crate::exec_request::{data_dirs, resolve_root};
use crate::settings::ExecSettings;

/// The sandbox host of a session on `project_root` with data dir `data_dir` and these settings.
pub fn mcp_sandbox_host(project_root: &Path, data_dir: &Path, exec: &ExecSettings) -> SandboxHost {
    let home = dirs::home_dir();
    SandboxHost {
        credential_paths: hide::env_credential_paths(|n| std::env::var_os(n), home.as_deref()),
        hidden_paths: data_dirs(data_dir, &crate::data_dir::default_data_dir()),
        exposed_credentials: (exec.expose_credentials.iter())
            .map(|r| resolve_root(r, project_root, home.as_deref()))
            .collect(),
        namespaces: if exec.namespaces {
            NamespacePolicy::Auto
        } else {
            NamespacePolicy::Off
        },
        protected_paths: exec.protected_paths.clone(),
        unprotected_paths: exec.unprotected_paths.clone(),
        init_program: None,
        home,
    }
}
