//! Rules the person adds while a project is open (a confirmation's "allow commands starting with
//! ..."): recorded at the user level (`record::add_rule`) for later sessions, and applied at once
//! to the later calls of this one. Settings are read when the project opens, so without this the
//! next identical command of the same run would be asked again.
//!
//! Only the person's own answer adds here (the CLI prompt's `a`, the window's offer button); the
//! record file itself is not re-read, so a record the project could write (a data directory
//! inside the project) gains nothing by being rewritten during a session.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use super::record::{self, ProjectApprovals, RecordError};
use super::rules::ApprovalRule;

/// The rules added during this session, shared by every runner of one open project.
#[derive(Debug, Clone, Default)]
pub struct SessionRules {
    added: Arc<RwLock<Vec<ApprovalRule>>>,
}

impl SessionRules {
    /// The rules added so far, in the order they were added.
    pub fn snapshot(&self) -> Vec<ApprovalRule> {
        self.added
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn add(&self, rule: ApprovalRule) {
        let mut added = self.added.write().unwrap_or_else(PoisonError::into_inner);
        if !added.contains(&rule) {
            added.push(rule);
        }
    }
}

/// Where a rule the person chose is kept: the record for `project` in `data_dir`, and this
/// session's rules. The one way both hosts store an offered rule.
#[derive(Debug, Clone)]
pub struct RuleBook {
    pub data_dir: PathBuf,
    pub project: PathBuf,
    pub session: SessionRules,
}

impl RuleBook {
    /// Records `rule` for the project at the user level and applies it to this session's later
    /// calls. Nothing is applied when it cannot be recorded (an invalid rule, an unwritable file).
    pub fn remember(&self, rule: ApprovalRule) -> Result<ProjectApprovals, RecordError> {
        let recorded = record::add_rule(&self.data_dir, &self.project, rule.clone())?;
        self.session.add(rule);
        Ok(recorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::rules::RuleDecision;

    #[test]
    fn a_remembered_rule_is_recorded_and_applies_to_the_session_once() {
        let data = tempfile::tempdir().unwrap();
        let book = RuleBook {
            data_dir: data.path().to_path_buf(),
            project: PathBuf::from("/p/a"),
            session: SessionRules::default(),
        };
        let seen_by_runner = book.session.clone();
        let rule = ApprovalRule::command("cargo test *", RuleDecision::Allow);
        book.remember(rule.clone()).unwrap();
        book.remember(rule.clone()).unwrap();
        assert_eq!(seen_by_runner.snapshot(), vec![rule.clone()]);
        let stored = record::lookup(data.path(), &book.project).unwrap().unwrap();
        assert_eq!(stored.rules, vec![rule]);
    }

    #[test]
    fn a_rule_that_cannot_be_recorded_is_not_applied() {
        let data = tempfile::tempdir().unwrap();
        let book = RuleBook {
            data_dir: data.path().to_path_buf(),
            project: PathBuf::from("/p/a"),
            session: SessionRules::default(),
        };
        let invalid = ApprovalRule::command("*", RuleDecision::Allow);
        assert!(book.remember(invalid).is_err());
        assert!(book.session.snapshot().is_empty());
    }
}
