//! Loading skill folders into a catalog. Roots are read in order (bundled, user data dir, project);
//! a later root's skill replaces an earlier one of the same name.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

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

fn list_references(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut visited = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            visited += 1;
            if visited > MAX_VISITED {
                break;
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            let path = e.path();
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file() {
                let Ok(rel) = path.strip_prefix(dir) else {
                    continue;
                };
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                if rel != SKILL_FILE {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out.truncate(MAX_REFERENCES);
    out
}

/// Read one skill folder.
pub fn load_skill(dir: &Path, root: RootKind) -> Result<Skill, SkillProblem> {
    let file = dir.join(SKILL_FILE);
    let label = file.display().to_string();
    let too_big = std::fs::metadata(&file).map(|m| m.len() > MAX_FILE_BYTES);
    if let Ok(true) = too_big {
        return Err(SkillProblem {
            file: label,
            line: 1,
            message: format!("SKILL.md is larger than {MAX_FILE_BYTES} bytes"),
        });
    }
    let text = std::fs::read_to_string(&file).map_err(|e| SkillProblem {
        file: label.clone(),
        line: 1,
        message: format!("cannot read: {e}"),
    })?;
    let parsed = parse_skill(&label, &text)?;
    Ok(Skill {
        name: parsed.name,
        description: parsed.description,
        body: parsed.body,
        dir: dir.to_path_buf(),
        root,
        references: list_references(dir),
    })
}

/// Load every root. Folders without a SKILL.md are ignored; malformed ones are reported.
pub fn load_catalog(roots: &[SkillRoot]) -> SkillCatalog {
    let mut cat = SkillCatalog::default();
    let mut sorted: Vec<&SkillRoot> = roots.iter().collect();
    sorted.sort_by_key(|r| r.kind);
    for root in sorted {
        let Ok(entries) = std::fs::read_dir(&root.path) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
            .map(|e| e.path())
            .filter(|p| p.join(SKILL_FILE).is_file())
            .collect();
        dirs.sort();
        let mut seen_here: BTreeMap<String, PathBuf> = BTreeMap::new();
        for dir in dirs {
            match load_skill(&dir, root.kind) {
                Ok(skill) => {
                    if let Some(first) = seen_here.get(&skill.name) {
                        cat.problems.push(SkillProblem {
                            file: dir.join(SKILL_FILE).display().to_string(),
                            line: 2,
                            message: format!(
                                "skill name `{}` is already used by {} in the same folder; this one is left out",
                                skill.name,
                                first.display()
                            ),
                        });
                        continue;
                    }
                    seen_here.insert(skill.name.clone(), dir.clone());
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
    #[error("reference `{reference}` cannot be read: {reason}")]
    Unreadable { reference: String, reason: String },
}

/// Resolve a reference path inside a skill folder, refusing anything that escapes it (absolute
/// paths, `..`, symlinks pointing outside).
pub fn resolve_reference(skill: &Skill, reference: &str) -> Result<PathBuf, ReferenceError> {
    let rel = Path::new(reference);
    if reference.is_empty()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(ReferenceError::Escapes(reference.to_string()));
    }
    let candidate = skill.dir.join(rel);
    let not_found = || ReferenceError::NotFound {
        reference: reference.to_string(),
        available: if skill.references.is_empty() {
            "(none)".to_string()
        } else {
            skill.references.join(", ")
        },
    };
    let real = std::fs::canonicalize(&candidate).map_err(|_| not_found())?;
    let base = std::fs::canonicalize(&skill.dir).map_err(|e| ReferenceError::Unreadable {
        reference: reference.to_string(),
        reason: e.to_string(),
    })?;
    if !real.starts_with(&base) {
        return Err(ReferenceError::Escapes(reference.to_string()));
    }
    if !real.is_file() {
        return Err(not_found());
    }
    Ok(real)
}
