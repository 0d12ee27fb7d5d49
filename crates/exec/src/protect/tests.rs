//! Tests of protected paths.

use super::*;

fn names(list: &[(String, Placeholder)]) -> Vec<&str> {
    list.iter().map(|(p, _)| p.as_str()).collect()
}

#[test]
fn the_list_is_the_table_minus_unprotected_plus_extra() {
    let all = effective_list(&[], &[]);
    assert_eq!(names(&all), builtin_names());
    let l = effective_list(
        &[
            "Makefile".into(),
            ".github/workflows/".into(),
            "../x".into(),
        ],
        &[".idea".into(), ".envrc/".into()],
    );
    assert!(!names(&l).contains(&".idea") && !names(&l).contains(&".envrc"));
    assert!(l.contains(&("Makefile".into(), Placeholder::File)));
    assert!(l.contains(&(".github/workflows".into(), Placeholder::Dir)));
    assert!(!names(&l).iter().any(|n| n.contains("..")));
    for bad in ["", "/etc", "a/../b", "./x", " "] {
        assert!(!valid_entry(bad), "{bad:?}");
    }
    assert!(valid_entry(".vscode/") && valid_entry("a/b"));
}

fn git(dir: &Path, args: &[&str]) {
    let st = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?}");
}

#[test]
fn git_dirs_of_worktrees_and_submodules_are_found() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let main = base.join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q"]);
    git(
        &main,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    );
    git(&main, &["worktree", "add", "-q", "../wt"]);
    std::fs::create_dir_all(main.join(".git/modules/libs/a/modules/b")).unwrap();
    std::fs::write(main.join(".git/modules/libs/a/HEAD"), "ref: x\n").unwrap();
    std::fs::write(main.join(".git/modules/libs/a/modules/b/HEAD"), "ref: x\n").unwrap();
    let wt = base.join("wt");
    let list = effective_list(&[], &[]);
    // `base` holds no `.git` of its own: both repositories below it are nested ones, found
    // by the walk, with the worktree's own git directory and the common one.
    let f = find(std::slice::from_ref(&base), &list);
    for g in [main.join(".git"), main.join(".git/worktrees/wt")] {
        assert!(f.git_dirs.contains(&g), "{g:?} in {:?}", f.git_dirs);
    }
    let f = find(&[wt.clone(), main.clone()], &list);
    let gd = main.join(".git/worktrees/wt");
    for g in [
        &gd,
        &main.join(".git"),
        &main.join(".git/modules/libs/a"),
        &main.join(".git/modules/libs/a/modules/b"),
    ] {
        assert!(f.git_dirs.contains(g), "{g:?} in {:?}", f.git_dirs);
    }
    let paths: Vec<&PathBuf> = f.paths.iter().map(|p| &p.path).collect();
    for p in [
        wt.join(".git"),
        gd.join("commondir"),
        gd.join("hooks"),
        main.join(".git/config"),
        main.join(".git/hooks"),
        main.join(".git/modules/libs/a/config"),
        wt.join(".envrc"),
    ] {
        assert!(paths.contains(&&p), "{p:?} in {paths:?}");
    }
    // Only the worktree writable: the main repository's files are read-only anyway.
    let f = find(std::slice::from_ref(&wt), &list);
    assert!(f.git_dirs.is_empty());
    assert_eq!(
        f.paths.iter().map(|p| p.path.clone()).collect::<Vec<_>>(),
        builtin_names()
            .iter()
            .filter(|n| !n.starts_with(".git/"))
            .map(|n| wt.join(n))
            .chain([wt.join(".git")])
            .collect::<Vec<_>>()
    );
}

#[test]
fn restore_puts_back_what_changed_and_removes_what_was_created() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(root.join(".git/hooks/a.sample"), "#!/bin/sh\n").unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::os::unix::fs::symlink("a.sample", root.join(".git/hooks/l")).unwrap();
    let list = effective_list(&[], &[]);
    let guard = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Restore);
    std::fs::write(root.join(".git/config"), "[core]\nfsmonitor = evil\n").unwrap();
    std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    std::fs::write(root.join(".vscode/tasks.json"), "{}").unwrap();
    std::fs::write(root.join(".envrc"), "evil").unwrap();
    std::fs::write(root.join("kept"), "mine").unwrap();
    let report = guard.finish();
    assert_eq!(
        report,
        ProtectedReport {
            removed: vec![root.join(".envrc"), root.join(".vscode")],
            restored: vec![root.join(".git/config"), root.join(".git/hooks")],
            unguarded: vec![],
        }
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_link(root.join(".git/hooks/l")).unwrap(),
        Path::new("a.sample")
    );
    assert!(root.join("kept").exists());
}

#[test]
fn a_symlink_is_put_back_and_its_target_protected() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("shared")).unwrap();
    std::os::unix::fs::symlink("shared", root.join(".vscode")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join(".envrc")).unwrap();
    let list = effective_list(&[], &[]);
    let guard = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
    let ro = guard.read_only();
    assert!(ro.contains(&root.join("shared")), "{ro:?}");
    assert!(!ro.contains(&root.join(".vscode")) && !ro.contains(&root.join(".envrc")));
    std::fs::remove_file(root.join(".envrc")).unwrap();
    std::fs::write(root.join(".envrc"), "evil").unwrap();
    let report = guard.finish();
    assert_eq!(report.restored, vec![root.join(".envrc")]);
    assert_eq!(
        std::fs::read_link(root.join(".envrc")).unwrap(),
        Path::new("nowhere")
    );
}

#[test]
fn hooks_in_the_work_tree_and_a_submodules_git_file_are_protected() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git/modules/sub")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
    std::fs::write(
        root.join(".git/config"),
        "[core]\n\tbare = false\n\thooksPath = \".husky\" ; husky\n[alias]\n\thookspath = no\n",
    )
    .unwrap();
    std::fs::write(root.join(".git/modules/sub/HEAD"), "ref: x\n").unwrap();
    std::fs::write(
        root.join(".git/modules/sub/config"),
        "[core]\n\tworktree = ../../../sub\n",
    )
    .unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
    let paths: Vec<&PathBuf> = f.paths.iter().map(|p| &p.path).collect();
    assert!(paths.contains(&&root.join(".husky")), "{paths:?}");
    assert!(paths.contains(&&root.join("sub/.git")), "{paths:?}");
    assert!(
        paths.contains(&&root.join(".git/modules/sub/hooks")),
        "{paths:?}"
    );
}

#[test]
fn includes_nested_repositories_and_a_hooks_path_too_wide_to_bind() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
    std::fs::write(
        root.join(".git/config"),
        "[include]\n\tpath = ../team.gitconfig\n[includeIf \"onbranch:x\"]\n\tpath = ../later.inc\n[include]\n\tpath = ../src\n",
    )
    .unwrap();
    // A tracked file the person included: its `hooksPath = .` would make the project read-only
    // if bound as a whole; its hooks are protected one by one instead.
    std::fs::write(root.join("team.gitconfig"), "[core]\n\thooksPath = .\n").unwrap();
    std::fs::create_dir_all(root.join("src/vendor/lib/.git")).unwrap();
    std::fs::write(root.join("src/vendor/lib/.git/HEAD"), "ref: x\n").unwrap();
    std::fs::write(
        root.join("src/vendor/lib/.git/config"),
        "[core]\n\thooksPath = .githooks\n",
    )
    .unwrap();
    let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
    let paths: Vec<&PathBuf> = f.paths.iter().map(|p| &p.path).collect();
    for p in [
        root.join("team.gitconfig"),
        root.join("later.inc"),
        root.join("pre-commit"),
        root.join("src/vendor/lib/.git/config"),
        root.join("src/vendor/lib/.git/hooks"),
        root.join("src/vendor/lib/.git/commondir"),
        root.join("src/vendor/lib/.githooks"),
    ] {
        assert!(paths.contains(&&p), "{p:?} in {paths:?}");
    }
    for p in [root.clone(), root.join("src")] {
        assert!(!paths.contains(&&p), "{p:?} bound over");
    }
    assert!(f.git_dirs.contains(&root.join("src/vendor/lib/.git")));
    assert!(!f.nested_capped);
    let later = f.paths.iter().find(|p| p.path == root.join("later.inc"));
    assert_eq!(
        later.map(|p| (p.present, p.placeholder)),
        Some((false, Placeholder::File))
    );
}

#[test]
fn the_walk_for_nested_repositories_stops_at_its_caps_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let deep = (0..NESTED_DEPTH_CAP + 1).fold(root.clone(), |p, i| p.join(format!("d{i}")));
    std::fs::create_dir_all(deep.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("a/.git")).unwrap();
    let s = nested_repositories(std::slice::from_ref(&root));
    assert_eq!(s.work_trees, vec![root.join("a")]);
    assert!(s.capped);
    for i in 0..NESTED_DIR_CAP {
        std::fs::create_dir(root.join(format!("w{i}"))).unwrap();
    }
    std::fs::remove_dir_all(root.join("d0")).unwrap();
    let s = nested_repositories(std::slice::from_ref(&root));
    assert!(s.capped, "{} directories", NESTED_DIR_CAP + 2);
    std::fs::remove_dir(root.join("w0")).unwrap();
    std::fs::remove_dir(root.join("w1")).unwrap();
    let s = nested_repositories(std::slice::from_ref(&root));
    assert!(!s.capped, "exactly at the cap: every directory seen");
}

#[test]
fn a_commondir_placeholder_names_its_own_directory_and_goes_when_untouched() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
    let list = effective_list(&[], &[]);
    let g = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
    assert_eq!(
        std::fs::read(root.join(".git/commondir")).unwrap(),
        SAME_DIR
    );
    assert!(g.read_only().contains(&root.join(".git/commondir")));
    assert_eq!(commondir_of(&root.join(".git")), Some(root.join(".git")));
    assert!(g.finish().is_empty());
    assert!(!root.join(".git/commondir").exists());
}

#[test]
fn a_fifo_planted_as_git_config_does_not_hang_the_launch() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: x\n").unwrap();
    for f in [".git/config", ".git/commondir"] {
        let c = std::ffi::CString::new(root.join(f).as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a plain mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }
    let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
    assert_eq!(f.git_dirs, vec![root.join(".git")]);
}

#[test]
fn a_git_directory_without_head_is_protected_as_a_whole() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    let f = find(std::slice::from_ref(&root), &effective_list(&[], &[]));
    assert!(f.git_dirs.is_empty());
    assert!(
        f.paths
            .iter()
            .any(|p| p.path == root.join(".git") && p.present)
    );
}

#[test]
fn placeholders_a_dead_process_left_are_removed_when_still_empty() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let manifests = root.join("tmp");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::create_dir(root.join(".vscode")).unwrap();
    std::fs::write(root.join(".envrc"), "").unwrap();
    std::fs::create_dir(root.join(".claude")).unwrap();
    std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
    let mut list = Vec::new();
    for n in [".vscode", ".envrc", ".claude"] {
        list.extend_from_slice(root.join(n).as_os_str().as_encoded_bytes());
        list.push(0);
    }
    // A pid that cannot be alive (above the kernel's largest pid_max).
    std::fs::write(manifests.join("aibuddy-placeholders-2147483000"), &list).unwrap();
    // A living process's manifest is left alone.
    let mine = manifest_path(&manifests, std::process::id());
    std::fs::write(&mine, &list).unwrap();
    let removed = sweep_manifests_in(&manifests);
    assert_eq!(removed, vec![root.join(".vscode"), root.join(".envrc")]);
    assert!(
        root.join(".claude/settings.json").exists(),
        "written into: kept"
    );
    assert!(mine.exists());
    assert!(!manifests.join("aibuddy-placeholders-2147483000").exists());
}

/// A placeholder directory leaves the project at once when its last holder ends (moved to
/// the trash, removed there in the background); one written into from outside stays; the
/// trash of a dead process loses its empty directories and itself, nothing else.
#[test]
fn placeholder_directories_leave_at_once_and_dead_trash_is_swept() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let list = vec![
        (".cursor".to_string(), Placeholder::Dir),
        (".idea".to_string(), Placeholder::Dir),
    ];
    let g = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
    assert!(root.join(".cursor").is_dir() && root.join(".idea").is_dir());
    let first = std::fs::metadata(root.join(".cursor")).unwrap();
    std::fs::write(root.join(".idea/person.xml"), "mine").unwrap();
    assert!(g.finish().is_empty());
    assert!(
        !root.join(".cursor").exists(),
        "the empty placeholder is gone"
    );
    assert!(root.join(".idea/person.xml").exists(), "written into: kept");
    // The next command's placeholder is the same (empty) directory, back by one rename,
    // where the trash shares the file system (the temp dir here).
    let g = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
    let again = std::fs::metadata(root.join(".cursor")).unwrap();
    let empty = std::fs::read_dir(root.join(".cursor"))
        .unwrap()
        .next()
        .is_none();
    assert!(again.is_dir() && empty);
    if root.starts_with(std::env::temp_dir().canonicalize().unwrap()) {
        assert_eq!(again.ino(), first.ino(), "reused from the trash");
    }
    assert_eq!(g.read_only().len(), 2);
    assert!(g.finish().is_empty());
    assert!(!root.join(".cursor").exists());

    let dead = root.join(format!("{}2147483000", trash::PREFIX));
    std::fs::create_dir_all(dead.join("0")).unwrap();
    std::fs::create_dir_all(dead.join("1")).unwrap();
    std::fs::write(dead.join("1/kept"), "x").unwrap();
    let alive = root.join(format!("{}{}", trash::PREFIX, std::process::id()));
    std::fs::create_dir_all(alive.join("0")).unwrap();
    sweep_trash_in(&root);
    assert!(!dead.join("0").exists() && dead.join("1/kept").exists());
    assert!(
        alive.join("0").exists(),
        "a living process's trash is its own"
    );
}

#[test]
fn placeholders_are_shared_and_removed_by_the_last_holder_when_empty() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let list = vec![
        (".envrc".to_string(), Placeholder::File),
        (".claude".to_string(), Placeholder::Dir),
    ];
    let a = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
    assert_eq!(
        a.read_only(),
        vec![root.join(".envrc"), root.join(".claude")]
    );
    let b = Guard::prepare(std::slice::from_ref(&root), &list, Hold::Mounts);
    assert_eq!(b.read_only().len(), 2, "the second command binds them too");
    assert!(a.finish().is_empty());
    assert!(
        root.join(".envrc").exists(),
        "still held by the other command"
    );
    assert!(b.finish().is_empty());
    assert!(!root.join(".envrc").exists() && !root.join(".claude").exists());
}
