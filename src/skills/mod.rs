//! Skills: reusable procedures loaded on demand. Each skill is a folder with a `SKILL.md` (YAML
//! frontmatter `name`, `description`; markdown body) and optional reference files. Roots: the
//! bundled `skills/` folder, the user's data directory `skills/`, and the project's
//! `.aibuddy/skills/` (later roots override earlier ones by name).
//!
//! The catalog exposes only names and purposes (in `view_skill`'s instructions); `view_skill` reads
//! the full instructions and references. The roots are watched: adding, editing or removing a skill
//! updates the catalog without restart; a malformed SKILL.md is reported with file and line and
//! left out.
//!
//! Every read is capability-scoped (`access`: the sandbox crate's `ScopedDir`, kernel
//! `RESOLVE_BENEATH`): a project skill reads nothing outside the project, a user or bundled skill
//! nothing outside its root, and each skill nothing outside its own folder.

mod access;
pub mod catalog;
pub mod parse;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

pub use catalog::{RootKind, Skill, SkillCatalog, SkillRoot, load_catalog, read_reference};
pub use parse::{SkillProblem, parse_skill};

/// The environment variable the hosts (CLI, desktop) read to override the bundled skills folder;
/// the library never reads it: the host passes the value in `PlaneOptions::bundled_skills`.
pub const SKILLS_DIR_ENV: &str = "AIBUDDY_SKILLS_DIR";
pub const PROJECT_SKILLS: &str = ".aibuddy/skills";

/// The bundled skills folder: `override_dir` when given, else `skills/` next to the executable
/// (or in `../share/aibuddy/skills`, or the source tree's for development builds).
pub fn bundled_dir_in(override_dir: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = override_dir {
        return Some(p.to_path_buf());
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        candidates.push(dir.join("skills"));
        candidates.push(dir.join("../share/aibuddy/skills"));
    }
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("skills"));
    candidates.into_iter().find(|p| p.is_dir())
}

/// The standard roots for a project; `bundled`: the host's bundled skills folder (`None`: the
/// default search, [`bundled_dir_in`]).
pub fn default_roots(
    project_root: &Path,
    data_dir: &Path,
    bundled: Option<&Path>,
) -> Vec<SkillRoot> {
    let mut roots = Vec::new();
    if let Some(b) = bundled_dir_in(bundled) {
        roots.push(SkillRoot {
            kind: RootKind::Bundled,
            path: b,
        });
    }
    roots.push(SkillRoot {
        kind: RootKind::User,
        path: data_dir.join("skills"),
    });
    roots.push(SkillRoot {
        kind: RootKind::Project,
        path: project_root.join(PROJECT_SKILLS),
    });
    roots
}

/// The live catalog of an open project.
pub struct SkillsService {
    roots: Vec<SkillRoot>,
    catalog: RwLock<Arc<SkillCatalog>>,
    watcher: Mutex<Option<watch::Watch>>,
}

impl std::fmt::Debug for SkillsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillsService")
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl SkillsService {
    /// Load the roots once, without watching.
    pub fn load(roots: Vec<SkillRoot>) -> Arc<Self> {
        let catalog = load_catalog(&roots);
        for p in &catalog.problems {
            tracing::warn!("skill left out: {p}");
        }
        Arc::new(Self {
            roots,
            catalog: RwLock::new(Arc::new(catalog)),
            watcher: Mutex::new(None),
        })
    }

    /// An empty service (no roots).
    pub fn empty() -> Arc<Self> {
        Self::load(Vec::new())
    }

    /// Load and watch the roots; changes reload the catalog in the background.
    pub fn watched(roots: Vec<SkillRoot>) -> Arc<Self> {
        let svc = Self::load(roots);
        match watch::Watch::start(&svc) {
            Ok(w) => {
                if let Ok(mut slot) = svc.watcher.lock() {
                    *slot = Some(w);
                }
            }
            Err(e) => tracing::warn!("skill folders are not watched (changes need a restart): {e}"),
        }
        svc
    }

    pub fn roots(&self) -> &[SkillRoot] {
        &self.roots
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<SkillCatalog> {
        self.catalog
            .read()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Reload every root now.
    pub fn reload(&self) {
        let next = load_catalog(&self.roots);
        if let Ok(mut w) = self.catalog.write() {
            if **w != next {
                for p in next.problems.iter().filter(|p| !w.problems.contains(p)) {
                    tracing::warn!("skill left out: {p}");
                }
                tracing::info!(
                    skills = next.len(),
                    problems = next.problems.len(),
                    "skills reloaded"
                );
            }
            *w = Arc::new(next);
        }
    }
}

/// Problems of the skills a project would load (for `aibuddy tools check`), without watching.
pub fn skills_catalog_problems(
    project_root: &Path,
    data_dir: &Path,
    bundled: Option<&Path>,
) -> Vec<String> {
    catalog::load_catalog(&default_roots(project_root, data_dir, bundled))
        .problems
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[cfg(test)]
mod bundled_tests {
    use super::*;

    #[test]
    fn the_hosts_choice_wins_and_the_default_search_finds_the_source_tree() {
        let chosen = Path::new("/nonexistent/skills-override");
        assert_eq!(bundled_dir_in(Some(chosen)), Some(chosen.to_path_buf()));
        // Without a choice, a development build finds the repository's skills/ folder.
        let found = bundled_dir_in(None).expect("a bundled skills folder");
        assert!(found.is_dir(), "{}", found.display());
    }
}
