//! The command table (`src-tauri/src/command_table.rs`) against the handlers' own source: every
//! `#[tauri::command]` function is in the table under its module, with the same parameters the UI
//! sends (names and types, in order) and the same `Ok` type. The UI's clients are generated from
//! the table, so a handler whose signature changed fails here until its line does too (and then
//! the bindings' staleness test until `commands.ts` is regenerated).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use aibuddy_desktop::command_table::table;
use quote::ToTokens;
use syn::{FnArg, GenericArgument, Item, PathArguments, ReturnType, Type};

/// Parameters Tauri injects (never sent by the UI).
const INJECTED: &[&str] = &["State", "AppHandle", "Window", "WebviewWindow", "Webview"];

#[derive(Debug, PartialEq, Eq)]
struct Signature {
    module: String,
    args: Vec<(String, String)>,
    ok: String,
}

/// A type's text without spaces and without path prefixes (`aibuddy::confirm::NetworkAnswer` and
/// `NetworkAnswer` are the same entry; the compiler checks the table's own `use`s).
fn normalize(ty: &str) -> String {
    let text: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = String::new();
    let mut ident = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            ident.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            ident.clear();
        } else {
            out.push_str(&ident);
            ident.clear();
            out.push(c);
        }
    }
    out.push_str(&ident);
    out
}

fn last_segment(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Reference(r) => last_segment(&r.elem),
        _ => None,
    }
}

/// `Result<T, CommandError>` -> `T`.
fn ok_type(ret: &ReturnType, name: &str) -> String {
    let ReturnType::Type(_, ty) = ret else {
        panic!("{name}: a command answers Result<_, CommandError>");
    };
    let Type::Path(path) = &**ty else {
        panic!("{name}: a command answers Result<_, CommandError>");
    };
    let last = path.path.segments.last().unwrap();
    assert_eq!(last.ident, "Result", "{name}");
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        panic!("{name}: Result without arguments");
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let ok = types.next().unwrap();
    let err = types.next().unwrap();
    assert_eq!(
        last_segment(err).as_deref(),
        Some("CommandError"),
        "{name}: commands reject with CommandError"
    );
    normalize(&ok.to_token_stream().to_string())
}

fn is_command(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let segments: Vec<String> = a
            .path()
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        segments == ["tauri", "command"] || segments == ["command"]
    })
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// Every `#[tauri::command]` function of `src-tauri/src` (subfolders included), by name.
fn handlers() -> BTreeMap<String, Signature> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeMap::new();
    for path in rust_files(&src) {
        let module = path.file_stem().unwrap().to_string_lossy().into_owned();
        let file = syn::parse_file(&fs::read_to_string(&path).unwrap()).unwrap();
        for item in file.items {
            let Item::Fn(f) = item else { continue };
            if !is_command(&f.attrs) {
                continue;
            }
            let name = f.sig.ident.to_string();
            let args = f
                .sig
                .inputs
                .iter()
                .filter_map(|input| match input {
                    FnArg::Typed(t) => Some(t),
                    FnArg::Receiver(_) => None,
                })
                .filter(|t| !last_segment(&t.ty).is_some_and(|s| INJECTED.contains(&s.as_str())))
                .map(|t| {
                    (
                        t.pat.to_token_stream().to_string(),
                        normalize(&t.ty.to_token_stream().to_string()),
                    )
                })
                .collect();
            let ok = ok_type(&f.sig.output, &name);
            let previous = found.insert(
                name.clone(),
                Signature {
                    module: module.clone(),
                    args,
                    ok,
                },
            );
            assert!(previous.is_none(), "two commands named {name}");
        }
    }
    found
}

#[test]
fn the_table_matches_every_handler_signature() {
    let handlers = handlers();
    let table: BTreeMap<String, Signature> = table()
        .into_iter()
        .map(|c| {
            let sig = Signature {
                module: c.module.to_owned(),
                args: c
                    .args
                    .iter()
                    .map(|a| (a.name.to_owned(), normalize(a.ty.rust)))
                    .collect(),
                ok: normalize(c.result.rust),
            };
            (c.name.to_owned(), sig)
        })
        .collect();
    let missing: Vec<&String> = handlers
        .keys()
        .filter(|n| !table.contains_key(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "commands missing from command_table.rs: {missing:?}"
    );
    let unknown: Vec<&String> = table
        .keys()
        .filter(|n| !handlers.contains_key(*n))
        .collect();
    assert!(
        unknown.is_empty(),
        "table entries without a #[tauri::command]: {unknown:?}"
    );
    for (name, handler) in &handlers {
        pretty_assertions::assert_eq!(&table[name], handler, "command {name}");
    }
}

#[test]
fn a_changed_signature_is_told_apart() {
    // The comparison sees what matters: a parameter's name or type, the Ok type; paths are not.
    assert_eq!(
        normalize("aibuddy :: confirm :: NetworkAnswer"),
        "NetworkAnswer"
    );
    assert_eq!(
        normalize("Option < Vec < String > >"),
        "Option<Vec<String>>"
    );
    assert_eq!(normalize("tauri::ipc::Channel<Event>"), "Channel<Event>");
    assert_ne!(normalize("Option<String>"), normalize("String"));
}
