//! What a command may not see: well-known credential locations and the app's data directory
//! (pure decisions; the runner stats the candidates and the bubblewrap plan masks them).

use std::path::{Path, PathBuf};

/// Credential locations relative to the home directory, hidden unless the person exposes one
/// (`exec.expose_credentials`). Directories get an empty read-only tmpfs, files `/dev/null`.
pub const CREDENTIAL_LOCATIONS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".config/doctl",
    ".local/share/keyrings",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".docker/config.json",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".config/aibuddy",
];

/// The credential locations under `home`, minus those `exposed` names (an exposed directory
/// also exposes what lies beneath it).
pub fn credential_locations(home: &Path, exposed: &[PathBuf]) -> Vec<PathBuf> {
    CREDENTIAL_LOCATIONS
        .iter()
        .map(|rel| home.join(rel))
        .filter(|p| !exposed.iter().any(|e| p.starts_with(e)))
        .collect()
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
