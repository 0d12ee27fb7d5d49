//! Loading skill folders into a catalog. Roots are read in order (bundled, user data dir, project);
//! a later root's skill replaces an earlier one of the same name. Every read goes through
//! [`super::access`] (capability-scoped, beneath the root and the skill's own folder).

use std::collections::BTreeMap;
use std::path::PathBuf;

use aibuddy_sandbox::ScopedDir;
use serde::Serialize;

use super::access::{self, OpenFailure, ReadFailure};
use super::parse::{SkillProblem, parse_skill};

pub const SKILL_FILE: &str = "SKILL.md";
/// At most this many reference files are listed per skill.
pub const MAX_REFERENCES: usize = 200;
/// At most this many directory entries are visited while listing a skill's references.
pub const MAX_VISITED: usize = 5_000;
/// Largest SKILL.md or reference file read (bytes).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Where a skill root comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootKind {
    Bundled,
    User,
    Project,
}

/// One folder holding skill folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    pub kind: RootKind,
    pub path: PathBuf,
}

/// A loaded skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The markdown instructions (after the frontmatter).
    pub body: String,
    pub dir: PathBuf,
    pub root: RootKind,
    /// Reference files, relative to `dir`, `/`-separated, sorted.
    pub references: Vec<String>,
    /// Where it was loaded from: its root and its folder's name there (to re-open it, confined).
    #[serde(skip)]
    pub origin: (SkillRoot, String),
}

/// Every loaded skill and the problems that left others out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SkillCatalog {
    pub skills: BTreeMap<String, Skill>,
    pub problems: Vec<SkillProblem>,
}

impl SkillCatalog {
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }
    pub fn len(&self) -> usize {
        self.skills.len()
    }
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The catalog as the model sees it: only names and purposes.
    pub fn summary(&self) -> String {
        self.skills
            .values()
            .map(|s| format!("- {}: {}", s.name, s.description.replace('\n', " ")))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn problem(file: String, message: String) -> SkillProblem {
    SkillProblem {
        file,
        line: 1,
        message,
    }
}

/// Read one skill folder (already opened beneath its root).
fn load_skill(folder: &ScopedDir, root: &SkillRoot, name: &str) -> Result<Skill, SkillProblem> {
    let dir = root.path.join(name);
    let label = dir.join(SKILL_FILE).display().to_string();
    let bytes = access::read_file(folder, SKILL_FILE).map_err(|e| match e {
        ReadFailure::TooLarge { .. } => problem(
            label.clone(),
            format!("SKILL.md is larger than {MAX_FILE_BYTES} bytes"),
        ),
        ReadFailure::Escapes => problem(
            label.clone(),
            "SKILL.md leads outside its skill folder (a symlink); refused, nothing was read".into(),
        ),
        ReadFailure::Missing => problem(label.clone(), "SKILL.md is not a regular file".into()),
        ReadFailure::Other(e) => problem(label.clone(), format!("cannot read: {e}")),
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|e| problem(label.clone(), format!("cannot read: not UTF-8 text ({e})")))?;
    let parsed = parse_skill(&label, &text)?;
    Ok(Skill {
        name: parsed.name,
        description: parsed.description,
        body: parsed.body,
        dir,
        root: root.kind,
        references: access::list_references(folder),
        origin: (root.clone(), name.to_string()),
    })
}

/// Load every root. Folders without a SKILL.md are ignored; malformed ones, and folders or
/// `SKILL.md` files that lead outside what their root may read, are reported and left out.
pub fn load_catalog(roots: &[SkillRoot]) -> SkillCatalog {
    let mut cat = SkillCatalog::default();
    let mut sorted: Vec<&SkillRoot> = roots.iter().collect();
    sorted.sort_by_key(|r| r.kind);
    for root in sorted {
        let dir = match access::open_root(root) {
            Ok(d) => d,
            Err(OpenFailure::Missing) => continue,
            Err(OpenFailure::Escapes) => {
                cat.problems.push(problem(
                    root.path.display().to_string(),
                    format!(
                        "the skill folder leads outside {} (a symlink); refused, no skill loaded from it",
                        access::confinement_of(root)
                    ),
                ));
                continue;
            }
            Err(OpenFailure::Other(e)) => {
                tracing::debug!("skill root {} not read: {e}", root.path.display());
                continue;
            }
        };
        let mut seen_here: BTreeMap<String, PathBuf> = BTreeMap::new();
        for (name, folder) in access::skill_folders(&dir) {
            let path = root.path.join(&name);
            let folder = match folder {
                Ok(f) => f,
                Err(OpenFailure::Escapes) => {
                    cat.problems.push(problem(
                        path.display().to_string(),
                        format!(
                            "skill folder `{name}` leads outside {} (a symlink); refused, nothing was read",
                            access::confinement_of(root)
                        ),
                    ));
                    continue;
                }
                Err(OpenFailure::Missing) => continue,
                Err(OpenFailure::Other(e)) => {
                    cat.problems.push(problem(
                        path.join(SKILL_FILE).display().to_string(),
                        format!("cannot read: {e}"),
                    ));
                    continue;
                }
            };
            match load_skill(&folder, root, &name) {
                Ok(skill) => {
                    if let Some(first) = seen_here.get(&skill.name) {
                        cat.problems.push(SkillProblem {
                            file: path.join(SKILL_FILE).display().to_string(),
                            line: 2,
                            message: format!(
                                "skill name `{}` is already used by {} in the same folder; this one is left out",
                                skill.name,
                                first.display()
                            ),
                        });
                        continue;
                    }
                    seen_here.insert(skill.name.clone(), path);
                    cat.skills.insert(skill.name.clone(), skill);
                }
                Err(p) => cat.problems.push(p),
            }
        }
    }
    cat
}

/// Why a reference cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("reference `{0}` escapes the skill folder")]
    Escapes(String),
    #[error("skill has no reference `{reference}`; its references: {available}")]
    NotFound {
        reference: String,
        available: String,
    },
    #[error("reference `{reference}` is {size} bytes, above the {max}-byte bound")]
    TooLarge {
        reference: String,
        size: u64,
        max: u64,
    },
    #[error("reference `{reference}` cannot be read: {reason}")]
    Unreadable { reference: String, reason: String },
}

/// Read a reference file of a skill, confined to the skill's folder: absolute paths, `..` and
/// symlinks leading outside the folder (also the folder itself turned into a symlink since it was
/// loaded) are refused as [`ReferenceError::Escapes`] before anything outside is read. Blocking.
pub fn read_reference(skill: &Skill, reference: &str) -> Result<Vec<u8>, ReferenceError> {
    if !access::is_relative_beneath(reference) {
        return Err(ReferenceError::Escapes(reference.to_string()));
    }
    let not_found = || ReferenceError::NotFound {
        reference: reference.to_string(),
        available: if skill.references.is_empty() {
            "(none)".to_string()
        } else {
            skill.references.join(", ")
        },
    };
    let unreadable = |reason: String| ReferenceError::Unreadable {
        reference: reference.to_string(),
        reason,
    };
    let (root, folder) = &skill.origin;
    let opened = access::open_root(root).and_then(|dir| access::open_skill(&dir, folder));
    let folder = match opened {
        Ok(f) => f,
        Err(OpenFailure::Escapes) => return Err(ReferenceError::Escapes(reference.to_string())),
        Err(OpenFailure::Missing) => return Err(not_found()),
        Err(OpenFailure::Other(e)) => return Err(unreadable(e.to_string())),
    };
    access::read_file(&folder, reference).map_err(|e| match e {
        ReadFailure::Escapes => ReferenceError::Escapes(reference.to_string()),
        ReadFailure::Missing => not_found(),
        ReadFailure::TooLarge { size, max } => ReferenceError::TooLarge {
            reference: reference.to_string(),
            size,
            max,
        },
        ReadFailure::Other(e) => unreadable(e.to_string()),
    })
}
