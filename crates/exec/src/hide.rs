//! What a command may not see: well-known credential locations and the app's data directory
//! (pure decisions; the runner stats the candidates and the bubblewrap plan masks them).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One credential location relative to the home directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credential {
    /// Relative to the home directory. Under `.config/`, `.local/share/` or `.cache/` it is also
    /// looked for under `$XDG_CONFIG_HOME`, `$XDG_DATA_HOME` or `$XDG_CACHE_HOME`
    /// ([`env_credential_paths`]).
    pub path: &'static str,
    /// Whose secret it holds (for `docs/credentials.md`).
    pub what: &'static str,
}

const fn c(path: &'static str, what: &'static str) -> Credential {
    Credential { path, what }
}

/// Credential locations relative to the home directory, hidden unless the person exposes one
/// (`exec.expose_credentials`). Directories get an empty read-only tmpfs, files `/dev/null`.
/// `docs/credentials.md` is generated from this table ([`credentials_markdown`]; a test checks it).
pub const CREDENTIAL_LOCATIONS: &[Credential] = &[
    c(".ssh", "SSH keys"),
    c(".gnupg", "GnuPG keys"),
    c(".pki/nssdb", "NSS certificates and client keys"),
    c(".local/share/keyrings", "GNOME keyring"),
    c(".local/share/kwalletd", "KDE wallet"),
    c(".password-store", "pass"),
    c(".netrc", "netrc logins (curl, git, heroku)"),
    c(".git-credentials", "git credential store"),
    c(".config/git/credentials", "git credential store"),
    c(".aws", "AWS CLI and SDKs"),
    c(".azure", "Azure CLI"),
    c(".config/gcloud", "Google Cloud SDK"),
    c(".oci", "Oracle Cloud CLI"),
    c(".databrickscfg", "Databricks CLI"),
    c(".config/doctl", "DigitalOcean CLI"),
    c(".config/hcloud", "Hetzner Cloud CLI"),
    c(".fly", "fly.io CLI"),
    c(".wrangler", "Cloudflare wrangler"),
    c(".config/.wrangler", "Cloudflare wrangler"),
    c(".config/configstore/firebase-tools.json", "Firebase CLI"),
    c(".config/netlify", "Netlify CLI"),
    c(".local/share/com.vercel.cli", "Vercel CLI"),
    c(".config/stripe", "Stripe CLI"),
    c(".supabase", "Supabase CLI"),
    c(".config/ngrok", "ngrok"),
    c(".ngrok2", "ngrok (old versions)"),
    c(".terraform.d/credentials.tfrc.json", "Terraform Cloud"),
    c(
        ".terraformrc",
        "Terraform CLI configuration (credentials blocks)",
    ),
    c(".vault-token", "HashiCorp Vault"),
    c(".config/rclone", "rclone remotes"),
    c(".s3cfg", "s3cmd"),
    c(".boto", "boto, gsutil"),
    c(".mc", "MinIO client"),
    c(".config/sops/age", "sops age keys"),
    c(".kube", "Kubernetes"),
    c(".docker/config.json", "Docker registries"),
    c(
        ".config/containers/auth.json",
        "Podman, Buildah, Skopeo registries",
    ),
    c(".config/gh", "GitHub CLI"),
    c(".config/hub", "hub"),
    c(".config/glab-cli", "GitLab CLI"),
    c(".config/github-copilot", "GitHub Copilot"),
    c(".claude", "Claude Code"),
    c(".claude.json", "Claude Code"),
    c(".codex", "Codex CLI"),
    c(".huggingface/token", "Hugging Face (old location)"),
    c(".cache/huggingface/token", "Hugging Face"),
    c(".config/op", "1Password CLI"),
    c(".npmrc", "npm registries"),
    c(".pypirc", "PyPI uploads"),
    c(".cargo/credentials", "crates.io"),
    c(".cargo/credentials.toml", "crates.io"),
    c(".gem/credentials", "RubyGems"),
    c(".pgpass", "PostgreSQL passwords"),
    c(".my.cnf", "MySQL client"),
    c(".Xauthority", "X11 display cookie"),
    c(".mozilla", "Firefox profiles (cookies, saved logins)"),
    c("snap/firefox/common/.mozilla", "Firefox (snap)"),
    c(
        ".config/google-chrome",
        "Chrome profiles (cookies, saved logins)",
    ),
    c(".config/google-chrome-beta", "Chrome beta profiles"),
    c(".config/chromium", "Chromium profiles"),
    c("snap/chromium/common/chromium", "Chromium (snap)"),
    c(".config/BraveSoftware", "Brave profiles"),
    c(".config/microsoft-edge", "Edge profiles"),
    c(".config/vivaldi", "Vivaldi profiles"),
    c(".config/opera", "Opera profiles"),
    c(".config/Slack", "Slack (session cookies)"),
    c(
        ".config/Code/User/globalStorage/state.vscdb",
        "VS Code (extension secrets, sign-ins)",
    ),
    c(
        ".config/Code/User/globalStorage/state.vscdb.backup",
        "VS Code",
    ),
    c(
        ".config/Code - OSS/User/globalStorage/state.vscdb",
        "Code - OSS",
    ),
    c(
        ".config/VSCodium/User/globalStorage/state.vscdb",
        "VSCodium",
    ),
    c(".config/Cursor/User/globalStorage/state.vscdb", "Cursor"),
    c(".bash_history", "shell history"),
    c(".zsh_history", "shell history"),
    c(".zhistory", "shell history"),
    c(".histfile", "shell history"),
    c(".local/share/fish/fish_history", "shell history"),
    c(".psql_history", "psql history"),
    c(".mysql_history", "mysql history"),
    c(".sqlite_history", "sqlite3 history"),
    c(".rediscli_history", "redis-cli history"),
    c(".python_history", "Python REPL history"),
    c(".node_repl_history", "Node.js REPL history"),
    c(".config/aibuddy", "aibuddy configuration"),
    c(".local/share/aibuddy", "aibuddy's default data directory"),
];

/// How an environment variable names a credential location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvShape {
    /// The value is the path of a file or directory.
    Path,
    /// The value is a `:`-separated list of paths.
    PathList,
    /// The value is a directory; these entries beneath it are hidden.
    Under(&'static [&'static str]),
}

/// One environment variable that names a credential location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialEnv {
    pub var: &'static str,
    pub shape: EnvShape,
    pub what: &'static str,
}

const fn e(var: &'static str, shape: EnvShape, what: &'static str) -> CredentialEnv {
    CredentialEnv { var, shape, what }
}

/// Environment variables of the app naming credential files or folders (the host reads them and
/// passes the paths as `ExecRequest::credential_paths`). Relative values are ignored.
pub const CREDENTIAL_ENV: &[CredentialEnv] = &[
    e(
        "GOOGLE_APPLICATION_CREDENTIALS",
        EnvShape::Path,
        "Google service account key",
    ),
    e("CLOUDSDK_CONFIG", EnvShape::Path, "Google Cloud SDK"),
    e("KUBECONFIG", EnvShape::PathList, "Kubernetes"),
    e("AWS_SHARED_CREDENTIALS_FILE", EnvShape::Path, "AWS"),
    e("AWS_CONFIG_FILE", EnvShape::Path, "AWS"),
    e("AZURE_CONFIG_DIR", EnvShape::Path, "Azure CLI"),
    e("DOCKER_CONFIG", EnvShape::Path, "Docker"),
    e(
        "REGISTRY_AUTH_FILE",
        EnvShape::Path,
        "Podman, Buildah, Skopeo",
    ),
    e(
        "XDG_RUNTIME_DIR",
        EnvShape::Under(&["containers/auth.json"]),
        "Podman registries",
    ),
    e("GNUPGHOME", EnvShape::Path, "GnuPG"),
    e("PASSWORD_STORE_DIR", EnvShape::Path, "pass"),
    e("NETRC", EnvShape::Path, "netrc"),
    e("PGPASSFILE", EnvShape::Path, "PostgreSQL passwords"),
    e("GH_CONFIG_DIR", EnvShape::Path, "GitHub CLI"),
    e("CLAUDE_CONFIG_DIR", EnvShape::Path, "Claude Code"),
    e("CODEX_HOME", EnvShape::Path, "Codex CLI"),
    e("RCLONE_CONFIG", EnvShape::Path, "rclone"),
    e("S3CMD_CONFIG", EnvShape::Path, "s3cmd"),
    e("BOTO_CONFIG", EnvShape::Path, "boto"),
    e("DATABRICKS_CONFIG_FILE", EnvShape::Path, "Databricks"),
    e("OCI_CLI_CONFIG_FILE", EnvShape::Path, "Oracle Cloud"),
    e("SOPS_AGE_KEY_FILE", EnvShape::Path, "sops age keys"),
    e("TF_CLI_CONFIG_FILE", EnvShape::Path, "Terraform"),
    e("NPM_CONFIG_USERCONFIG", EnvShape::Path, "npm"),
    e(
        "CARGO_HOME",
        EnvShape::Under(&["credentials", "credentials.toml"]),
        "crates.io",
    ),
    e("XAUTHORITY", EnvShape::Path, "X11 display cookie"),
    e("SSH_AUTH_SOCK", EnvShape::Path, "the SSH agent"),
    e("HISTFILE", EnvShape::Path, "shell history"),
    e("PSQL_HISTORY", EnvShape::Path, "psql history"),
    e("MYSQL_HISTFILE", EnvShape::Path, "mysql history"),
    e("NODE_REPL_HISTORY", EnvShape::Path, "Node.js REPL history"),
    e("PYTHON_HISTORY", EnvShape::Path, "Python REPL history"),
];

/// XDG base directories that move the `~/.config`, `~/.local/share`, `~/.cache` entries.
const XDG_BASES: [(&str, &str); 3] = [
    ("XDG_CONFIG_HOME", ".config/"),
    ("XDG_DATA_HOME", ".local/share/"),
    ("XDG_CACHE_HOME", ".cache/"),
];

/// The credential locations under `home`, minus those `exposed` names (an exposed directory
/// also exposes what lies beneath it).
pub fn credential_locations(home: &Path, exposed: &[PathBuf]) -> Vec<PathBuf> {
    CREDENTIAL_LOCATIONS
        .iter()
        .map(|c| home.join(c.path))
        .filter(|p| !exposed.iter().any(|e| p.starts_with(e)))
        .collect()
}

/// The credential locations the app's environment names: the [`CREDENTIAL_ENV`] variables'
/// paths, and the table's `.config`/`.local/share`/`.cache` entries under the XDG base
/// directories when those are set elsewhere than beneath `home`. `get` reads one variable (the
/// host passes `std::env::var_os`); relative values are ignored.
pub fn env_credential_paths(
    get: impl Fn(&str) -> Option<OsString>,
    home: Option<&Path>,
) -> Vec<PathBuf> {
    let absolute = |v: &OsStr| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let mut out: Vec<PathBuf> = Vec::new();
    for entry in CREDENTIAL_ENV {
        let Some(value) = get(entry.var).filter(|v| !v.is_empty()) else {
            continue;
        };
        match entry.shape {
            EnvShape::Path => out.extend(absolute(&value)),
            EnvShape::PathList => out.extend(
                value
                    .as_bytes()
                    .split(|b| *b == b':')
                    .filter_map(|p| absolute(OsStr::from_bytes(p))),
            ),
            EnvShape::Under(names) => {
                if let Some(dir) = absolute(&value) {
                    out.extend(names.iter().map(|n| dir.join(n)));
                }
            }
        }
    }
    for (var, prefix) in XDG_BASES {
        let Some(base) = get(var).and_then(|v| absolute(&v)) else {
            continue;
        };
        if home.is_some_and(|h| base == h.join(prefix.trim_end_matches('/'))) {
            continue; // the default: already in the home table
        }
        out.extend(
            CREDENTIAL_LOCATIONS
                .iter()
                .filter_map(|c| c.path.strip_prefix(prefix))
                .map(|rest| base.join(rest)),
        );
    }
    let mut seen = Vec::new();
    out.retain(|p| {
        let new = !seen.contains(p);
        seen.push(p.clone());
        new
    });
    out
}

/// The tables as Markdown, exactly as `docs/credentials.md` holds them between its markers.
pub fn credentials_markdown() -> String {
    let mut s = String::from("| location | whose |\n|---|---|\n");
    for c in CREDENTIAL_LOCATIONS {
        s.push_str(&format!("| `~/{}` | {} |\n", c.path, c.what));
    }
    s.push_str("\n| variable | hidden | whose |\n|---|---|---|\n");
    for e in CREDENTIAL_ENV {
        let hidden = match e.shape {
            EnvShape::Path => "the path it names".to_string(),
            EnvShape::PathList => "every path of its `:`-separated list".to_string(),
            EnvShape::Under(names) => names
                .iter()
                .map(|n| format!("`${}/{n}`", e.var))
                .collect::<Vec<_>>()
                .join(", "),
        };
        s.push_str(&format!("| `{}` | {hidden} | {} |\n", e.var, e.what));
    }
    s
}

/// Keeps the outermost of nested hidden paths: a path beneath a hidden directory is already
/// gone (and bubblewrap could not mount over it inside the read-only empty tmpfs).
pub fn outermost(mut hidden: Vec<(PathBuf, HideKind)>) -> Vec<(PathBuf, HideKind)> {
    hidden.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(PathBuf, HideKind)> = Vec::new();
    for (path, kind) in hidden {
        let covered = out
            .iter()
            .any(|(p, k)| *k == HideKind::Dir && path.starts_with(p));
        if !covered {
            out.push((path, kind));
        }
    }
    out
}

/// How a hidden path is masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HideKind {
    /// An empty read-only tmpfs over it.
    Dir,
    /// `/dev/null` bound read-only over it.
    File,
}

/// Whether `path` exists in the sandbox's view: paths under a directory replaced by a private
/// tmpfs (`/tmp`, `/run`) are gone unless a writable bind brings them back.
pub fn visible_in_sandbox(path: &Path, masked_dirs: &[PathBuf], binds: &[PathBuf]) -> bool {
    let masked = masked_dirs.iter().any(|m| path.starts_with(m));
    !masked || binds.iter().any(|b| path.starts_with(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_listed_under_home_minus_exposed() {
        let home = Path::new("/home/u");
        let all = credential_locations(home, &[]);
        for want in [
            "/home/u/.ssh",
            "/home/u/.aws",
            "/home/u/.gnupg",
            "/home/u/.config/gcloud",
            "/home/u/.local/share/keyrings",
            "/home/u/.password-store",
            "/home/u/.netrc",
            "/home/u/.docker/config.json",
            "/home/u/.kube",
        ] {
            assert!(all.contains(&PathBuf::from(want)), "{want}");
        }
        let some = credential_locations(home, &[PathBuf::from("/home/u/.aws")]);
        assert!(!some.contains(&PathBuf::from("/home/u/.aws")));
        assert_eq!(some.len(), all.len() - 1);
        // Exposing a parent exposes what lies beneath it.
        let cfg = credential_locations(home, &[PathBuf::from("/home/u/.config")]);
        assert!(!cfg.iter().any(|p| p.starts_with("/home/u/.config")));
    }

    #[test]
    fn the_environment_names_further_locations() {
        let env = |name: &str| -> Option<OsString> {
            match name {
                "GOOGLE_APPLICATION_CREDENTIALS" => Some("/srv/sa.json".into()),
                "KUBECONFIG" => Some("/k/a::relative/b:/k/c".into()),
                "CARGO_HOME" => Some("/opt/cargo".into()),
                "XDG_CONFIG_HOME" => Some("/cfg".into()),
                "XDG_DATA_HOME" => Some("/home/u/.local/share".into()),
                "HISTFILE" => Some("".into()),
                "NETRC" => Some("relative/netrc".into()),
                _ => None,
            }
        };
        let got = env_credential_paths(env, Some(Path::new("/home/u")));
        for want in [
            "/srv/sa.json",
            "/k/a",
            "/k/c",
            "/opt/cargo/credentials",
            "/opt/cargo/credentials.toml",
            "/cfg/gcloud",
            "/cfg/rclone",
            "/cfg/Code/User/globalStorage/state.vscdb",
        ] {
            assert!(got.contains(&PathBuf::from(want)), "{want} in {got:?}");
        }
        // Relative and empty values are ignored; the default XDG_DATA_HOME adds nothing.
        assert!(!got.iter().any(|p| p.is_relative()));
        assert!(!got.iter().any(|p| p.starts_with("/home/u")), "{got:?}");
        assert_eq!(
            got.len(),
            5 + CREDENTIAL_LOCATIONS
                .iter()
                .filter(|c| c.path.starts_with(".config/"))
                .count()
        );
    }

    #[test]
    fn nested_hidden_paths_keep_the_outermost() {
        let got = outermost(vec![
            ("/h/.docker/config.json".into(), HideKind::File),
            ("/h/.docker".into(), HideKind::Dir),
            ("/h/.dockerfile".into(), HideKind::File),
            ("/h/.netrc".into(), HideKind::File),
        ]);
        assert_eq!(
            got,
            vec![
                (PathBuf::from("/h/.docker"), HideKind::Dir),
                (PathBuf::from("/h/.dockerfile"), HideKind::File),
                (PathBuf::from("/h/.netrc"), HideKind::File),
            ]
        );
    }

    /// `docs/credentials.md` is the table above, to the byte.
    #[test]
    fn the_documented_table_is_the_rust_table() {
        let doc = include_str!("../../../docs/credentials.md");
        let begin = "<!-- BEGIN generated by aibuddy_exec::hide::credentials_markdown -->\n";
        let end = "<!-- END generated -->";
        let from = doc.find(begin).expect("begin marker") + begin.len();
        let to = doc.find(end).expect("end marker");
        let want = credentials_markdown();
        assert!(
            doc[from..to] == want,
            "docs/credentials.md is stale; put this between its markers:\n{want}"
        );
    }

    #[test]
    fn masked_dirs_hide_unless_rebound() {
        let masked = [PathBuf::from("/tmp"), PathBuf::from("/run")];
        let binds = [PathBuf::from("/tmp/proj")];
        assert!(visible_in_sandbox(
            Path::new("/home/u/.ssh"),
            &masked,
            &binds
        ));
        assert!(!visible_in_sandbox(
            Path::new("/tmp/h/.ssh"),
            &masked,
            &binds
        ));
        assert!(visible_in_sandbox(
            Path::new("/tmp/proj/.ssh"),
            &masked,
            &binds
        ));
        assert!(!visible_in_sandbox(Path::new("/run/x"), &masked, &binds));
    }
}
