//! Skill folders on disk: the bundled skills parse, roots override by name (project over user over
//! bundled), malformed SKILL.md files are reported with file and line and left out, and the watcher
//! picks up additions, edits and removals without a restart.

use std::path::Path;
use std::time::{Duration, Instant};

use aibuddy::skills::{RootKind, SkillRoot, SkillsService, load_catalog};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill(dir: &Path, name: &str, description: &str) {
    write(
        &dir.join(name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\nDo the thing.\n"),
    );
}

#[test]
fn bundled_skills_parse_and_are_useful_sized() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let cat = load_catalog(&[SkillRoot {
        kind: RootKind::Bundled,
        path: dir,
    }]);
    assert_eq!(cat.problems, vec![], "bundled skills must parse");
    let names: Vec<&str> = cat.skills.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        vec![
            "investigate-failing-build",
            "safe-refactor",
            "verify-after-edit"
        ]
    );
    for s in cat.skills.values() {
        assert!(s.description.len() > 40, "{}: purpose too thin", s.name);
        assert!(
            s.body.lines().count() > 20,
            "{}: instructions too thin",
            s.name
        );
    }
    let build = cat.get("investigate-failing-build").unwrap();
    assert_eq!(build.references, vec!["reference/error-patterns.md"]);
    // The catalog summary exposes names and purposes only, never bodies.
    let summary = cat.summary();
    assert!(summary.contains("- verify-after-edit: "));
    assert!(!summary.contains("## 1."), "{summary}");
}

#[test]
fn later_roots_override_and_malformed_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (b, u, p) = (
        tmp.path().join("b"),
        tmp.path().join("u"),
        tmp.path().join("p"),
    );
    skill(&b, "shared", "from bundled");
    skill(&b, "only-bundled", "bundled only");
    skill(&u, "shared", "from user");
    skill(&p, "shared", "from project");
    write(
        &p.join("broken/SKILL.md"),
        "---\nname: broken\ndescription: [oops\n---\nbody\n",
    );
    write(&p.join("nofront/SKILL.md"), "# just markdown\n");
    std::fs::create_dir_all(p.join("not-a-skill")).unwrap(); // no SKILL.md: ignored
    write(
        &p.join("dup-a/SKILL.md"),
        "---\nname: dup\ndescription: first\n---\nbody\n",
    );
    write(
        &p.join("dup-b/SKILL.md"),
        "---\nname: dup\ndescription: second\n---\nbody\n",
    );
    let cat = load_catalog(&[
        SkillRoot {
            kind: RootKind::Project,
            path: p.clone(),
        },
        SkillRoot {
            kind: RootKind::Bundled,
            path: b,
        },
        SkillRoot {
            kind: RootKind::User,
            path: u,
        },
        SkillRoot {
            kind: RootKind::User,
            path: tmp.path().join("missing"),
        },
    ]);
    assert_eq!(cat.get("shared").unwrap().description, "from project");
    assert_eq!(cat.get("shared").unwrap().root, RootKind::Project);
    assert!(cat.get("only-bundled").is_some());
    assert!(cat.get("broken").is_none() && cat.get("nofront").is_none());
    assert_eq!(cat.problems.len(), 3, "{:?}", cat.problems);
    assert_eq!(cat.get("dup").unwrap().description, "first");
    let dup = cat
        .problems
        .iter()
        .find(|p| p.file.contains("dup-b"))
        .unwrap();
    assert!(dup.message.contains("already used"), "{dup}");
    let broken = cat
        .problems
        .iter()
        .find(|p| p.file.contains("broken"))
        .unwrap();
    assert!(broken.file.ends_with("broken/SKILL.md"), "{broken}");
    assert!(broken.line >= 3, "{broken}");
    let nofront = cat
        .problems
        .iter()
        .find(|p| p.file.contains("nofront"))
        .unwrap();
    assert_eq!(nofront.line, 1);
    assert!(
        nofront.to_string().contains("nofront/SKILL.md:1:"),
        "{nofront}"
    );
}

fn wait_for(
    svc: &SkillsService,
    what: &str,
    cond: impl Fn(&aibuddy::skills::SkillCatalog) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond(&svc.catalog()) {
        assert!(Instant::now() < deadline, "watcher did not see: {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn watcher_follows_add_edit_remove_and_late_roots() {
    let tmp = tempfile::tempdir().unwrap();
    let user = tmp.path().join("user-skills");
    let project = tmp.path().join("proj/.aibuddy/skills"); // does not exist yet
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(tmp.path().join("proj")).unwrap();
    let svc = SkillsService::watched(vec![
        SkillRoot {
            kind: RootKind::User,
            path: user.clone(),
        },
        SkillRoot {
            kind: RootKind::Project,
            path: project.clone(),
        },
    ]);
    assert!(svc.catalog().is_empty());

    skill(&user, "alpha", "first version");
    wait_for(&svc, "added skill", |c| c.get("alpha").is_some());

    skill(&user, "alpha", "second version");
    wait_for(&svc, "edited skill", |c| {
        c.get("alpha")
            .is_some_and(|s| s.description == "second version")
    });

    write(&user.join("alpha/notes.md"), "reference text\n");
    wait_for(&svc, "new reference", |c| {
        c.get("alpha")
            .is_some_and(|s| s.references == vec!["notes.md".to_string()])
    });

    // Breaking the file reports it and leaves the skill out.
    write(&user.join("alpha/SKILL.md"), "no frontmatter\n");
    wait_for(&svc, "malformed skill", |c| {
        c.get("alpha").is_none() && c.problems.len() == 1
    });

    std::fs::remove_dir_all(user.join("alpha")).unwrap();
    wait_for(&svc, "removed skill", |c| {
        c.is_empty() && c.problems.is_empty()
    });

    // A root created after start (the project's .aibuddy/skills) is picked up too.
    skill(&project, "late", "created later");
    wait_for(&svc, "skill in a late root", |c| c.get("late").is_some());
    skill(&project, "later", "in the now-watched root");
    wait_for(&svc, "second skill in the late root", |c| {
        c.get("later").is_some()
    });
}
