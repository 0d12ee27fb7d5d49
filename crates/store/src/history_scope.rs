//! Whose calls the history browser shows. The store is one per data directory, shared by every
//! project opened with it; a call belongs to the project of its run (`runs.project_id`).
//!
//! Schema version 7 (here) copies that project onto each call (`tool_calls.project_id`, filled
//! from the run by a trigger at insert, and for existing rows by the migration; a run that gets
//! its project later, which the store does once at most, hands it to its calls) with the index
//! `(project_id, started_at, seq)`, so a project's page is one index walk however many other
//! projects share the store.
//!
//! The rule for calls without a project (their run recorded none, or its project row is gone):
//! they cannot be attributed, so they are shown under **every** project, as `view_tool_call`
//! already lets every project read them. Calls of another project are never shown.

use rusqlite::{Connection, OptionalExtension};

use crate::error::Result;

/// Schema version 7: each call carries its run's project.
pub(crate) const MIGRATION_V7: &str = "
ALTER TABLE tool_calls ADD COLUMN project_id INTEGER REFERENCES projects(project_id) ON DELETE SET NULL;
UPDATE tool_calls SET project_id = (SELECT r.project_id FROM runs r WHERE r.run_id = tool_calls.run_id);
CREATE INDEX tool_calls_project_started ON tool_calls(project_id, started_at, seq);
CREATE TRIGGER tool_calls_project_ai AFTER INSERT ON tool_calls WHEN new.project_id IS NULL BEGIN
    UPDATE tool_calls SET project_id = (SELECT r.project_id FROM runs r WHERE r.run_id = new.run_id)
    WHERE seq = new.seq;
END;
CREATE TRIGGER runs_project_au AFTER UPDATE OF project_id ON runs
WHEN old.project_id IS NULL AND new.project_id IS NOT NULL BEGIN
    UPDATE tool_calls SET project_id = new.project_id
    WHERE run_id = new.run_id AND project_id IS NULL;
END;
";

/// The calls a query may see, resolved against the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every call of the store (the CLI's `aibuddy history`).
    All,
    /// One project's calls: `id` is `None` when the project has no row yet (no call recorded);
    /// `unattributed` adds the calls recorded without a project (only when some exist, so the
    /// common case stays a single index walk).
    Project { id: Option<i64>, unattributed: bool },
}

impl Scope {
    /// The SQL condition on `c.project_id` (`None`: no condition), given the argument binder.
    /// Pure.
    pub(crate) fn condition(self, mut arg: impl FnMut(i64) -> String) -> Option<String> {
        match self {
            Scope::All => None,
            Scope::Project {
                id: Some(id),
                unattributed: false,
            } => Some(format!("c.project_id = {}", arg(id))),
            Scope::Project {
                id: Some(id),
                unattributed: true,
            } => Some(format!(
                "(c.project_id = {} OR c.project_id IS NULL)",
                arg(id)
            )),
            Scope::Project {
                id: None,
                unattributed: true,
            } => Some("c.project_id IS NULL".into()),
            Scope::Project {
                id: None,
                unattributed: false,
            } => Some("0".into()),
        }
    }
}

/// Resolves `project_root` (`None`: every project) to the scope of a query.
pub(crate) fn resolve(conn: &Connection, project_root: Option<&str>) -> Result<Scope> {
    let Some(root) = project_root else {
        return Ok(Scope::All);
    };
    let id = conn
        .prepare_cached("SELECT project_id FROM projects WHERE root = ?1")?
        .query_row([root], |r| r.get::<_, i64>(0))
        .optional()?;
    let unattributed = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM tool_calls WHERE project_id IS NULL)")?
        .query_row([], |r| r.get::<_, bool>(0))?;
    Ok(Scope::Project { id, unattributed })
}

/// Whether call `tool_call_id` may be shown under `project_root`: it belongs to that project or
/// to none. `None` when no such call exists.
pub(crate) fn call_visible(
    conn: &Connection,
    tool_call_id: &str,
    project_root: &str,
) -> Result<Option<bool>> {
    Ok(conn
        .prepare_cached(
            "SELECT p.root FROM tool_calls c LEFT JOIN projects p ON p.project_id = c.project_id
             WHERE c.tool_call_id = ?1",
        )?
        .query_row([tool_call_id], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .map(|root| root.is_none_or(|r| r == project_root)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(scope: Scope) -> (Option<String>, Vec<i64>) {
        let mut args = Vec::new();
        let c = scope.condition(|v| {
            args.push(v);
            format!("?{}", args.len())
        });
        (c, args)
    }

    #[test]
    fn each_scope_is_one_condition_on_the_call_project() {
        assert_eq!(cond(Scope::All), (None, vec![]));
        assert_eq!(
            cond(Scope::Project {
                id: Some(3),
                unattributed: false
            }),
            (Some("c.project_id = ?1".into()), vec![3])
        );
        assert_eq!(
            cond(Scope::Project {
                id: Some(3),
                unattributed: true
            }),
            (
                Some("(c.project_id = ?1 OR c.project_id IS NULL)".into()),
                vec![3]
            )
        );
        assert_eq!(
            cond(Scope::Project {
                id: None,
                unattributed: true
            }),
            (Some("c.project_id IS NULL".into()), vec![])
        );
        assert_eq!(
            cond(Scope::Project {
                id: None,
                unattributed: false
            }),
            (Some("0".into()), vec![])
        );
    }
}
