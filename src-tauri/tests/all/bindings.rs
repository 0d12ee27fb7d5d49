//! The committed TypeScript bindings in `ui/src/bindings/` must be exactly what ts-rs generates from
//! the Rust types today. Regenerate with:
//!     UPDATE_BINDINGS=1 cargo test -p aibuddy-desktop --test all bindings

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn committed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/bindings")
}

/// Every `.ts` file under `dir`, by relative path.
fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = fs::read_dir(&current) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "ts") {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                files.insert(rel, fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

#[test]
fn committed_bindings_match_the_rust_types() {
    let fresh = tempfile::tempdir().unwrap();
    aibuddy_desktop::bindings::export_all(fresh.path()).unwrap();
    let generated = read_tree(fresh.path());
    assert!(
        generated.contains_key("ToolListing.ts"),
        "ToolListing was not generated: {:?}",
        generated.keys()
    );

    let target = committed_dir();
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        fs::create_dir_all(&target).unwrap();
        for (rel, text) in &generated {
            let path = target.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        for rel in read_tree(&target)
            .keys()
            .filter(|rel| !generated.contains_key(*rel))
        {
            fs::remove_file(target.join(rel)).unwrap();
        }
    }

    let committed = read_tree(&target);
    let stale: Vec<&String> = generated
        .iter()
        .filter(|(rel, text)| committed.get(*rel) != Some(text))
        .map(|(rel, _)| rel)
        .collect();
    let orphans: Vec<&String> = committed
        .keys()
        .filter(|rel| !generated.contains_key(*rel))
        .collect();
    assert!(
        stale.is_empty() && orphans.is_empty(),
        "ui/src/bindings is out of date: stale or missing {stale:?}, no longer generated {orphans:?}.\n\
         Regenerate with: UPDATE_BINDINGS=1 cargo test -p aibuddy-desktop --test all bindings"
    );
}
