//! Host-facing behaviour on real files: capabilities and exec in the root, permission errors that
//! change nothing, a file changing while it is read.

use std::sync::Arc;

use aibuddy_sandbox::*;
use immutable_fs::{chattr, immutable_project};
use ops_support::{c, edit, project, put, read_req};
use pretty_assertions::assert_eq;

use crate::immutable_fs;
use crate::ops_support;

#[tokio::test]
async fn capabilities_and_exec_run_in_the_root() {
    let (tmp, sb) = project();
    let caps = sb.capabilities();
    assert_eq!(
        (caps.kind, caps.fs_read, caps.fs_write, caps.exec),
        (SandboxKind::Local, true, true, true)
    );
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    assert_eq!(sb.root(), root);
    let req = aibuddy_exec::ExecRequest::new("pwd", "/");
    let out = sb
        .exec(req, c(), Arc::new(aibuddy_exec::NullSink))
        .await
        .unwrap();
    assert!(out.termination.success());
    assert_eq!(
        String::from_utf8_lossy(&out.head).trim(),
        root.to_string_lossy()
    );
}

#[tokio::test]
async fn permission_denied_is_an_authorization_error_and_changes_nothing() {
    // Even root may not replace an immutable file (chattr +i), so this runs as root too.
    let Some(project) = immutable_project() else {
        return;
    };
    let sb = create_sandbox(SandboxKind::Local, &SandboxSettings::new(&project.root)).unwrap();
    let locked = project.locked.clone();
    let write = sb
        .write(
            WriteRequest {
                path: "locked.txt".into(),
                content: "changed\n".into(),
                expect: None,
            },
            c(),
        )
        .await;
    let edit = sb
        .edit(
            EditRequest {
                path: "locked.txt".into(),
                edits: vec![edit("original", "changed", false)],
                expect: None,
            },
            c(),
        )
        .await;
    let read = sb.read(read_req("locked.txt", None, None), c()).await;
    let names: Vec<_> = std::fs::read_dir(&project.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    chattr("-i", &locked);
    for result in [write.map(|_| ()), edit.map(|_| ())] {
        let err = result.unwrap_err();
        assert_eq!(
            (err.code(), err.stage()),
            ("permission_denied", Stage::Authorization),
            "{err}"
        );
        assert!(err.to_string().contains("locked.txt"), "{err}");
    }
    assert!(read.is_ok(), "reading stays allowed");
    assert_eq!(std::fs::read_to_string(&locked).unwrap(), "original\n");
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("locked.txt")],
        "temp file left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changing_during_a_read_is_a_clear_error() {
    let (tmp, sb) = project();
    let body: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    put(tmp.path(), "growing.log", &body);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, path) = (stop.clone(), tmp.path().join("growing.log"));
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                f.write_all(b"appended\n").unwrap();
            }
        })
    };
    let mut changed = 0;
    for _ in 0..50 {
        match sb
            .read(read_req("growing.log", None, Some(100_000)), c())
            .await
        {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(
                    (e.code(), e.stage()),
                    ("changed_during_operation", Stage::Execution),
                    "{e}"
                );
                assert!(e.to_string().contains("growing.log"));
                changed += 1;
            }
        }
        if changed >= 3 {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(changed > 0, "no read noticed the concurrent appends");
}
