//! Approvals: how much the person is asked (issue 23). Pure decisions apart from the one file of
//! per-project choices:
//!
//! - [`mode`]: `approvals.mode` (`ask`, `auto`, `read-only`) and its strictness order;
//! - [`shell`]: a command line taken apart into its simple commands (tree-sitter-bash);
//! - [`rules`]: `approvals.rules`, command and tool patterns, the verdict on a line;
//! - [`policy`]: the precedence table deciding run / ask / refuse for one call;
//! - [`record`]: `project-approvals.json` in the data directory, the person's mode and rules for
//!   one project (never stored in the project);
//! - [`learned`]: a rule the person adds at a confirmation, recorded and applied at once.
//!
//! See `docs/approvals.md`.

pub mod learned;
pub mod mode;
pub mod policy;
pub mod record;
pub mod rules;
pub mod shell;

pub use learned::{RuleBook, SessionRules};
pub use mode::ApprovalMode;
pub use policy::{CallKind, Facts, Launch, Verdict, decide};
pub use rules::{ApprovalRule, RuleDecision};
