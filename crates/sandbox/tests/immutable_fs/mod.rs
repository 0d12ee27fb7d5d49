//! A project folder on a filesystem that has the immutable attribute (`chattr +i`), so the
//! permission test runs everywhere instead of skipping: the temp dir, else the target dir's
//! filesystem, else a loop-mounted ext4 image (the tests run as root here and in CI).

use std::path::Path;

fn put(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Set or clear the immutable attribute; false when the filesystem does not support it.
pub fn chattr(flag: &str, path: &Path) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .arg(path)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A project folder on a filesystem that has the immutable attribute, with `locked.txt` already
/// `chattr +i`. Dropping it clears the attribute and unmounts what it mounted.
pub struct ImmutableProject {
    pub root: std::path::PathBuf,
    pub locked: std::path::PathBuf,
    /// Keeps the folder (and, for an image, the image file and mount point) alive.
    _tmp: tempfile::TempDir,
    mounted: Option<std::path::PathBuf>,
}

impl Drop for ImmutableProject {
    fn drop(&mut self) {
        chattr("-i", &self.locked);
        if let Some(mnt) = &self.mounted {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(mnt)
                .status();
        }
    }
}

/// Try a folder: write `locked.txt` and make it immutable there.
fn try_immutable(
    tmp: tempfile::TempDir,
    root: std::path::PathBuf,
) -> Result<ImmutableProject, tempfile::TempDir> {
    put(&root, "locked.txt", "original\n");
    let locked = root.join("locked.txt");
    if chattr("+i", &locked) {
        Ok(ImmutableProject {
            root,
            locked,
            _tmp: tmp,
            mounted: None,
        })
    } else {
        Err(tmp)
    }
}

/// An ext4 image in a file, loop-mounted (the tests run as root here and in CI).
fn loop_mounted_ext4() -> Result<ImmutableProject, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let image = tmp.path().join("fs.img");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).map_err(|e| e.to_string())?;
    std::fs::File::create(&image)
        .and_then(|f| f.set_len(8 * 1024 * 1024))
        .map_err(|e| e.to_string())?;
    let run = |cmd: &mut std::process::Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    run(std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&image))?;
    run(std::process::Command::new("mount")
        .args(["-o", "loop"])
        .arg(&image)
        .arg(&mnt))?;
    let root = mnt.join("project");
    std::fs::create_dir(&root).map_err(|e| e.to_string())?;
    put(&root, "locked.txt", "original\n");
    let locked = root.join("locked.txt");
    let project = ImmutableProject {
        root,
        locked,
        _tmp: tmp,
        mounted: Some(mnt),
    };
    if chattr("+i", &project.locked) {
        Ok(project)
    } else {
        Err("chattr +i failed on a loop-mounted ext4".into())
    }
}

/// A project where `locked.txt` is immutable: the temp dir, else a folder on the target dir's
/// filesystem, else a loop-mounted ext4 image. `None` (a loud skip) only outside CI: with `CI`
/// set, not finding one fails the test.
pub fn immutable_project() -> Option<ImmutableProject> {
    let mut tried = Vec::new();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    match try_immutable(tmp, root) {
        Ok(p) => return Some(p),
        Err(t) => tried.push(format!("{} (temp dir)", t.path().display())),
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = tmp.path().to_path_buf();
    match try_immutable(tmp, root) {
        Ok(p) => return Some(p),
        Err(t) => tried.push(format!("{} (target dir)", t.path().display())),
    }
    match loop_mounted_ext4() {
        Ok(p) => return Some(p),
        Err(e) => tried.push(format!("loop-mounted ext4 image: {e}")),
    }
    let why = format!(
        "no filesystem with the immutable attribute (chattr +i) could be found; tried: {}",
        tried.join("; ")
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!(
        "\n!!!! SKIPPED permission_denied_is_an_authorization_error_and_changes_nothing: {why} (fails when CI is set)\n"
    );
    None
}
