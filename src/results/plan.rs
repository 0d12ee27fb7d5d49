//! The pure precompaction decision: given the config's strategy, its disposability, the size of
//! the model projection and whether a summarizer exists, what to do. Table-tested below.

use crate::registry::Compaction;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Below the threshold, or the config never compacts.
    Skip,
    Trim,
    Summarize,
    /// Disposable output: replaced by a one-line note, no recovery pointer.
    Drop,
    /// The config asks for `drop` without declaring its output disposable (startup refuses such
    /// a config; this guards hosts that bypass the check). A Projection-stage failure.
    RefuseDrop,
}

pub fn plan(
    strategy: Compaction,
    disposable: bool,
    tokens: usize,
    threshold: usize,
    has_summarizer: bool,
) -> Plan {
    if tokens < threshold {
        return Plan::Skip;
    }
    match strategy {
        Compaction::None => Plan::Skip,
        Compaction::Trim => Plan::Trim,
        Compaction::Summarize if has_summarizer => Plan::Summarize,
        Compaction::Summarize => Plan::Trim,
        Compaction::Drop if disposable => Plan::Drop,
        Compaction::Drop => Plan::RefuseDrop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Compaction::*;

    #[test]
    fn decision_table() {
        let t = 2500;
        let cases = [
            // strategy, disposable, tokens, summarizer -> plan
            (Trim, false, 2499, true, Plan::Skip),
            (Trim, false, 2500, false, Plan::Trim),
            (None, true, 9000, true, Plan::Skip),
            (Summarize, false, 3000, true, Plan::Summarize),
            (Summarize, false, 3000, false, Plan::Trim),
            (Drop, true, 3000, false, Plan::Drop),
            (Drop, false, 3000, false, Plan::RefuseDrop),
            (Drop, true, 10, false, Plan::Skip),
        ];
        for (strategy, disposable, tokens, summ, want) in cases {
            assert_eq!(
                plan(strategy, disposable, tokens, t, summ),
                want,
                "{strategy:?} disposable={disposable} tokens={tokens} summarizer={summ}"
            );
        }
    }
}
