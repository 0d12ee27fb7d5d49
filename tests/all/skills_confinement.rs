//! Issue 9, "Why" 6: `view_skill` and skill loading read through capability-scoped access. A
//! project skill reads nothing outside the project; a user or bundled skill nothing outside its
//! root; every skill nothing outside its own folder. Symlinked skill folders, skill roots,
//! `SKILL.md` files and references that lead out are reported or refused (Authorization), and no
//! byte of the outside file reaches the model.

use crate::support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aibuddy::app::{App, AppOptions};
use aibuddy::confirm::RejectAll;
use aibuddy::contract::Stage;
use aibuddy::events::{CallStatus, NullSink};
use aibuddy::pipeline::{CallOutcome, CallRequest};
use aibuddy::skills::catalog::ReferenceError;
use aibuddy::skills::{RootKind, SkillRoot, load_catalog, read_reference};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "TOPSECRET-4d1f";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n{body}\n")
}

/// A temp dir with `proj/` (the project), `data/` and `outside/`: a valid skill folder
/// `outside/stolen` whose SKILL.md and reference carry the secret, and `outside/secret.txt`.
struct World {
    tmp: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let w = World { tmp };
        std::fs::create_dir_all(w.project().join(".aibuddy")).unwrap();
        std::fs::create_dir_all(w.data()).unwrap();
        write(
            &w.outside().join("stolen/SKILL.md"),
            &skill_md("stolen", &format!("Read {SECRET} now.")),
        );
        write(&w.outside().join("stolen/ref.md"), SECRET);
        write(&w.outside().join("secret.txt"), SECRET);
        w
    }
    fn project(&self) -> PathBuf {
        self.tmp.path().join("proj")
    }
    fn data(&self) -> PathBuf {
        self.tmp.path().join("data")
    }
    fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }
    fn project_skills(&self) -> PathBuf {
        self.project().join(".aibuddy/skills")
    }
    fn opts(&self) -> AppOptions {
        AppOptions {
            project: self.project(),
            data_dir: self.data(),
        }
    }
    fn project_root(&self) -> SkillRoot {
        SkillRoot {
            kind: RootKind::Project,
            path: self.project_skills(),
        }
    }
}

async fn view_skill(app: &App, args: serde_json::Value) -> CallOutcome {
    let runner = app.runner(None, Arc::new(RejectAll("read-only".into())));
    runner
        .call(
            &app.toolset(&Default::default()),
            CallRequest {
                id: None,
                name: "view_skill".into(),
                arguments: args.to_string(),
            },
            CancellationToken::new(),
            Arc::new(NullSink),
        )
        .await
}

fn problems(cat: &aibuddy::skills::SkillCatalog) -> String {
    cat.problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `.aibuddy/skills/evil -> /etc` and `.aibuddy/skills/stolen -> <outside skill>`: neither is
/// loaded, both are reported, `view_skill` does not know them and shows nothing of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_project_skill_folder_leading_out_is_not_loaded() {
    let w = World::new();
    std::fs::create_dir_all(w.project_skills()).unwrap();
    symlink("/etc", w.project_skills().join("evil")).unwrap();
    symlink(
        w.outside().join("stolen"),
        w.project_skills().join("stolen"),
    )
    .unwrap();
    write(
        &w.project_skills().join("fine/SKILL.md"),
        &skill_md("fine", "Stay inside."),
    );

    let cat = load_catalog(&[w.project_root()]);
    assert!(cat.get("stolen").is_none(), "{:?}", cat.skills.keys());
    assert!(cat.get("fine").is_some(), "{}", problems(&cat));
    let text = problems(&cat);
    assert_eq!(cat.problems.len(), 2, "{text}");
    assert!(
        text.contains("skill folder `evil` leads outside the project"),
        "{text}"
    );
    assert!(
        text.contains("skill folder `stolen` leads outside the project"),
        "{text}"
    );
    assert!(!text.contains(SECRET));

    let app = App::open(w.opts()).await.unwrap();
    let out = view_skill(&app, json!({"name": "stolen"})).await;
    assert_eq!(out.status, CallStatus::Error, "{out:?}");
    assert_eq!(out.stage, Some(Stage::Parameters), "{out:?}");
    assert!(!out.model.contains(SECRET), "{}", out.model);
    let registry = app.capabilities.registry();
    let (_, rc) = registry.get("view_skill").unwrap();
    let catalog_text = rc.config.instructions().unwrap();
    assert!(
        !catalog_text.contains("stolen") && catalog_text.contains("- fine: "),
        "{catalog_text}"
    );
}

/// The project's skill root itself (or `.aibuddy`) linked out of the project: nothing is loaded
/// from it and the refusal is a problem `tools check` shows.
#[test]
fn a_project_skill_root_leading_out_of_the_project_is_refused() {
    for link in [".aibuddy/skills", ".aibuddy"] {
        let w = World::new();
        let target = w.outside().join("root");
        std::fs::create_dir_all(target.join("skills")).unwrap();
        symlink(w.outside().join("stolen"), target.join("skills/stolen")).unwrap();
        std::fs::create_dir_all(target.join("stolen2")).unwrap();
        write(
            &target.join("skills/inner/SKILL.md"),
            &skill_md("inner", SECRET),
        );
        let linked = w.project().join(link);
        let _ = std::fs::remove_dir(&linked);
        let to = if link == ".aibuddy" {
            target.clone()
        } else {
            target.join("skills")
        };
        symlink(&to, &linked).unwrap();

        let cat = load_catalog(&[w.project_root()]);
        assert!(cat.is_empty(), "{link}: {:?}", cat.skills.keys());
        let text = problems(&cat);
        assert!(
            text.contains("the skill folder leads outside the project"),
            "{link}: {text}"
        );

        let (code, out, err) = support::aibuddy(&w.project(), &w.data(), &["tools", "check"]);
        assert_eq!(code, 1, "{link}: {out}{err}");
        assert!(
            out.contains("skills: ") && out.contains("leads outside the project"),
            "{link}: {out}"
        );
        assert!(!out.contains(SECRET) && !err.contains(SECRET));
    }
}

/// A real skill folder whose `SKILL.md` is a symlink out (to `/etc/passwd`, or to a valid skill
/// elsewhere): refused without reading it.
#[test]
fn a_skill_md_symlink_leading_out_is_refused_unread() {
    let w = World::new();
    std::fs::create_dir_all(w.project_skills().join("passwd")).unwrap();
    symlink("/etc/passwd", w.project_skills().join("passwd/SKILL.md")).unwrap();
    std::fs::create_dir_all(w.project_skills().join("copy")).unwrap();
    symlink(
        w.outside().join("stolen/SKILL.md"),
        w.project_skills().join("copy/SKILL.md"),
    )
    .unwrap();
    let cat = load_catalog(&[w.project_root()]);
    assert!(cat.is_empty(), "{:?}", cat.skills.keys());
    let text = problems(&cat);
    assert_eq!(cat.problems.len(), 2, "{text}");
    for p in &cat.problems {
        assert!(
            p.message
                .contains("SKILL.md leads outside its skill folder"),
            "{p}"
        );
    }
    assert!(!text.contains("root:") && !text.contains(SECRET), "{text}");
}

/// References: a file symlink and a directory symlink leading out are Authorization errors
/// through the pipeline; the outside content never reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_leading_out_are_refused_at_authorization() {
    let w = World::new();
    let deploy = w.project_skills().join("deploy");
    write(&deploy.join("SKILL.md"), &skill_md("deploy", "Deploy."));
    write(&deploy.join("docs/runbook.md"), "step 1\n");
    symlink(w.outside().join("secret.txt"), deploy.join("docs/leak.md")).unwrap();
    symlink("/etc", deploy.join("etc")).unwrap();
    symlink(w.outside(), deploy.join("out")).unwrap();
    // Inside the project but outside the skill folder: refused too.
    write(&w.project().join("notes.txt"), SECRET);
    symlink(w.project().join("notes.txt"), deploy.join("notes.md")).unwrap();

    let app = App::open(w.opts()).await.unwrap();
    let out = view_skill(&app, json!({"name": "deploy"})).await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
    assert!(out.model.contains("docs/runbook.md"), "{}", out.model);
    assert!(!out.model.contains("leak.md"), "symlinks are not listed");
    for bad in [
        "docs/leak.md",
        "etc/passwd",
        "out/secret.txt",
        "out/stolen/ref.md",
        "notes.md",
    ] {
        let out = view_skill(&app, json!({"name": "deploy", "reference": bad})).await;
        assert_eq!(out.stage, Some(Stage::Authorization), "{bad}: {out:?}");
        assert_eq!(out.error.as_ref().unwrap().code, "path_escape", "{bad}");
        assert!(
            !out.model.contains(SECRET) && !out.model.contains("root:"),
            "{bad}: {}",
            out.model
        );
    }
    let out = view_skill(
        &app,
        json!({"name": "deploy", "reference": "docs/runbook.md"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{out:?}");
}

/// A skill folder replaced by a symlink out after it was loaded: the reference read re-opens the
/// folder beneath its root and is refused.
#[test]
fn a_skill_folder_swapped_for_a_symlink_after_loading_is_refused() {
    let w = World::new();
    let deploy = w.project_skills().join("stolen");
    write(&deploy.join("SKILL.md"), &skill_md("stolen", "Inside."));
    write(&deploy.join("ref.md"), "inside ref");
    let cat = load_catalog(&[w.project_root()]);
    let skill = cat.get("stolen").unwrap().clone();
    assert_eq!(read_reference(&skill, "ref.md").unwrap(), b"inside ref");

    std::fs::rename(&deploy, w.tmp.path().join("moved")).unwrap();
    symlink(w.outside().join("stolen"), &deploy).unwrap();
    let err = read_reference(&skill, "ref.md").unwrap_err();
    assert!(matches!(err, ReferenceError::Escapes(_)), "{err:?}");
}

/// User and bundled roots: confined to their own root (the root itself may be a link the person
/// made); an alias folder that stays inside the root still loads.
#[test]
fn user_and_bundled_roots_read_nothing_outside_themselves() {
    let w = World::new();
    let real_user = w.tmp.path().join("real-user-skills");
    write(&real_user.join("mine/SKILL.md"), &skill_md("mine", "Mine."));
    symlink("mine", real_user.join("alias")).unwrap();
    symlink(w.outside().join("stolen"), real_user.join("stolen")).unwrap();
    symlink(&real_user, w.data().join("skills")).unwrap();
    let bundled = w.tmp.path().join("bundled");
    write(
        &bundled.join("tool/SKILL.md"),
        &skill_md("tool", "Bundled."),
    );
    symlink(
        w.outside().join("secret.txt"),
        bundled.join("tool/secret.md"),
    )
    .unwrap();

    let cat = load_catalog(&[
        SkillRoot {
            kind: RootKind::User,
            path: w.data().join("skills"),
        },
        SkillRoot {
            kind: RootKind::Bundled,
            path: bundled,
        },
    ]);
    let text = problems(&cat);
    assert!(cat.get("mine").is_some(), "{text}");
    assert!(cat.get("stolen").is_none());
    // `alias` loads `mine` again under the same name: the duplicate is reported, not an escape.
    assert!(text.contains("already used"), "{text}");
    assert!(
        text.contains("skill folder `stolen` leads outside the user's skill folder"),
        "{text}"
    );
    let tool = cat.get("tool").unwrap();
    assert!(matches!(
        read_reference(tool, "secret.md"),
        Err(ReferenceError::Escapes(_))
    ));
}
