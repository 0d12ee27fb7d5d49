//! Every path of `fixtures/hostile_paths.txt` against every filesystem operation: zero escapes
//! (nothing outside the root read, listed, created or changed) and the expected refusals.

use crate::common;

use std::time::Duration;

use aibuddy_sandbox::*;
use common::{CANARY, Layout, corpus, layout};
use tokio_util::sync::CancellationToken;

#[derive(Debug)]
struct Outcome {
    op: &'static str,
    result: Result<String, SandboxError>,
    /// Paths the operation says it returned or wrote (relative to the root).
    paths: Vec<String>,
}

async fn timed<T>(
    op: &'static str,
    f: impl std::future::Future<Output = Result<T, SandboxError>>,
) -> Result<T, SandboxError> {
    match tokio::time::timeout(Duration::from_secs(10), f).await {
        Ok(r) => r,
        Err(_) => panic!("{op} hung (more than 10 s)"),
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// Run every operation on `path`.
async fn run_all(sb: &dyn Sandbox, path: &str) -> Vec<Outcome> {
    let c = CancellationToken::new;
    let mut out = Vec::new();
    let r = timed(
        "ls",
        sb.list(
            ListRequest {
                path: Some(path.into()),
                limit: None,
            },
            c(),
        ),
    )
    .await;
    out.push(Outcome {
        op: "ls",
        paths: r.as_ref().map(|l| vec![l.path.clone()]).unwrap_or_default(),
        result: r.map(|v| json(&v)),
    });
    let r = timed(
        "read",
        sb.read(
            ReadRequest {
                path: path.into(),
                offset: None,
                limit: None,
            },
            c(),
        ),
    )
    .await;
    out.push(Outcome {
        op: "read",
        paths: vec![],
        result: r.map(|v| json(&v)),
    });
    let write = WriteRequest {
        path: path.into(),
        content: "PWNED by hostile test\n".into(),
        expect: None,
    };
    let r = timed("preview_write", sb.preview_write(write.clone(), c())).await;
    out.push(Outcome {
        op: "preview_write",
        paths: vec![],
        result: r.map(|v| json(&v)),
    });
    let r = timed("write", sb.write(write, c())).await;
    out.push(Outcome {
        op: "write",
        paths: r.as_ref().map(|w| vec![w.path.clone()]).unwrap_or_default(),
        result: r.map(|v| json(&v)),
    });
    let edit = EditRequest {
        path: path.into(),
        edits: vec![EditSpec {
            old_string: "secret".into(),
            new_string: "PWNED".into(),
            replace_all: true,
        }],
        expect: None,
    };
    let r = timed("preview_edit", sb.preview_edit(edit.clone(), c())).await;
    out.push(Outcome {
        op: "preview_edit",
        paths: vec![],
        result: r.map(|v| json(&v)),
    });
    let r = timed("edit", sb.edit(edit, c())).await;
    out.push(Outcome {
        op: "edit",
        paths: r.as_ref().map(|e| vec![e.path.clone()]).unwrap_or_default(),
        result: r.map(|v| json(&v)),
    });
    let r = timed(
        "glob",
        sb.glob(
            GlobRequest {
                pattern: "**/*".into(),
                path: Some(path.into()),
                limit: None,
            },
            c(),
        ),
    )
    .await;
    out.push(Outcome {
        op: "glob",
        paths: r.as_ref().map(|g| g.entries.clone()).unwrap_or_default(),
        result: r.map(|v| json(&v)),
    });
    for mode in [
        GrepMode::Content,
        GrepMode::FilesWithMatches,
        GrepMode::Count,
    ] {
        let req = GrepRequest {
            pattern: "secret|CANARY|inner".into(),
            path: Some(path.into()),
            mode,
            context: 1,
            ..Default::default()
        };
        let r = timed("grep", sb.grep(req, c())).await;
        out.push(Outcome {
            op: "grep",
            paths: r
                .as_ref()
                .map(|g| {
                    g.matches
                        .iter()
                        .map(|m| m.path.clone())
                        .chain(g.files.iter().cloned())
                        .chain(g.counts.iter().map(|c| c.path.clone()))
                        .collect()
                })
                .unwrap_or_default(),
            result: r.map(|v| json(&v)),
        });
    }
    // The hostile string as a pattern or filter (not a path): must match nothing outside.
    let r = timed(
        "glob-pattern",
        sb.glob(
            GlobRequest {
                pattern: path.into(),
                path: None,
                limit: None,
            },
            c(),
        ),
    )
    .await;
    out.push(Outcome {
        op: "glob-pattern",
        paths: r.as_ref().map(|g| g.entries.clone()).unwrap_or_default(),
        result: r.map(|v| json(&v)),
    });
    let req = GrepRequest {
        pattern: "CANARY|secret".into(),
        glob: Some(path.into()),
        mode: GrepMode::FilesWithMatches,
        ..Default::default()
    };
    let r = timed("grep-glob", sb.grep(req, c())).await;
    out.push(Outcome {
        op: "grep-glob",
        paths: r.as_ref().map(|g| g.files.clone()).unwrap_or_default(),
        result: r.map(|v| json(&v)),
    });
    out
}

fn check(l: &Layout, expect: &str, given: &str, outcomes: &[Outcome], failures: &mut Vec<String>) {
    for o in outcomes {
        let path_op = !matches!(o.op, "glob-pattern" | "grep-glob");
        match &o.result {
            Ok(text) => {
                if text.contains(CANARY) {
                    failures.push(format!("LEAK {} {given:?}: canary content in result", o.op));
                }
                for p in &o.paths {
                    if !l.resolves_inside(p) {
                        failures.push(format!(
                            "LEAK {} {given:?}: returned {p:?} outside the root",
                            o.op
                        ));
                    }
                }
                if path_op && matches!(expect, "refuse" | "refuse-file" | "invalid") {
                    failures.push(format!("NOT REFUSED {} {given:?}: {text}", o.op));
                }
            }
            Err(e) => {
                let stage = e.stage();
                if path_op && expect == "invalid" && stage != Stage::Parameters {
                    failures.push(format!("WRONG STAGE {} {given:?}: {stage:?} {e}", o.op));
                }
                if path_op
                    && matches!(expect, "refuse" | "refuse-file")
                    && !matches!(stage, Stage::Authorization | Stage::Parameters)
                {
                    failures.push(format!("WRONG STAGE {} {given:?}: {stage:?} {e}", o.op));
                }
                if e.is_escape() {
                    // The error names the path as given.
                    if !e.to_string().contains(given) {
                        failures.push(format!(
                            "ESCAPE ERROR {} {given:?} does not name the path: {e}",
                            o.op
                        ));
                    }
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_corpus_against_every_operation() {
    let l = layout();
    let corpus = corpus();
    assert!(corpus.len() >= 150, "corpus has {} entries", corpus.len());
    let before = l.snapshot_outside();
    let sb = l.sandbox();
    let mut failures = Vec::new();
    let mut escapes_refused = 0;
    for (expect, raw) in &corpus {
        let given = l.expand(raw);
        let outcomes = run_all(sb.as_ref(), &given).await;
        escapes_refused += outcomes
            .iter()
            .filter(|o| o.result.as_ref().err().is_some_and(|e| e.is_escape()))
            .count();
        check(&l, expect, &given, &outcomes, &mut failures);
    }
    let after = l.snapshot_outside();
    pretty_assertions::assert_eq!(before, after, "something outside the root changed");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        escapes_refused > 500,
        "only {escapes_refused} escape refusals"
    );
    // No temp files left behind by refused or failed writes.
    let leftovers: Vec<_> = walk(&l.root)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".aibuddy-"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    // The benign files inside the root that the corpus targets were really edited/written.
    let ok = std::fs::read_to_string(l.root.join("ok.txt")).unwrap();
    assert_eq!(ok, "PWNED by hostile test\n");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(read) = std::fs::read_dir(dir) {
        for e in read.flatten() {
            let p = e.path();
            out.push(p.clone());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walk(&p));
            }
        }
    }
    out
}
