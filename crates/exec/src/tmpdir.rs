//! The private `TMPDIR` of the Landlock-only path: `<temp>/aibuddy-exec-<app pid>-<random>`, mode
//! 0700, removed after the run; directories left by dead apps (a `kill -9`) are removed at the
//! next start. On the namespace path `TMPDIR` lives in the sandbox's private `/tmp` tmpfs instead
//! and vanishes with the namespace, whatever happens to the app.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// Name prefix of private temp dirs.
pub const TMP_PREFIX: &str = "aibuddy-exec-";

/// Creates the private temp dir (0700), sweeping stale ones once per process first.
pub(crate) fn create() -> std::io::Result<tempfile::TempDir> {
    static SWEEP: Once = Once::new();
    let base = std::env::temp_dir();
    SWEEP.call_once(|| sweep_stale(&base));
    tempfile::Builder::new()
        .prefix(&format!("{TMP_PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&base)
}

/// The owner pid encoded in a private temp dir's name, if it is one (pure).
pub fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(TMP_PREFIX)?;
    let (pid, random) = rest.split_once('-')?;
    if random.is_empty() {
        return None;
    }
    pid.parse().ok().filter(|p: &i32| *p > 0)
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes private temp dirs whose app is gone.
pub fn sweep_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if !is_dir || alive(pid) {
            continue;
        }
        let path: PathBuf = entry.path();
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "removed a stale private temp dir"),
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "stale temp dir stays"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pids_parse_only_our_names() {
        assert_eq!(owner_pid("aibuddy-exec-123-AbC9"), Some(123));
        assert_eq!(owner_pid("aibuddy-exec-123-"), None);
        assert_eq!(owner_pid("aibuddy-exec-x-1"), None);
        assert_eq!(owner_pid("aibuddy-exec-0-1"), None);
        assert_eq!(owner_pid("other-123-1"), None);
    }

    #[test]
    fn private_dirs_are_0700_and_stale_ones_go() {
        let base = tempfile::tempdir().unwrap();
        // A dead pid: a child we spawned and reaped.
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let stale = base.path().join(format!("{TMP_PREFIX}{dead}-zz"));
        std::fs::create_dir_all(stale.join("sub")).unwrap();
        let live = base
            .path()
            .join(format!("{TMP_PREFIX}{}-zz", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        let unrelated = base.path().join("keep-me");
        std::fs::create_dir(&unrelated).unwrap();
        sweep_stale(base.path());
        assert!(!stale.exists(), "a dead app's temp dir is removed");
        assert!(live.exists() && unrelated.exists());

        let t = create().unwrap();
        let mode = std::fs::metadata(t.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
