//! The discovery service an open project shares with `tool_search`: the search index over the
//! tools the defer decision covers, and each run's [`DiscoveryState`].

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};

use super::ToolSet;
use super::presentation::deferrable;
use super::search::{Query, SearchDoc, SearchIndex};
use super::state::{ContextMessage, DiscoveryState};
use crate::registry::{Registry, Source};

/// How many runs' states are kept; the oldest is forgotten first (a forgotten run starts over).
const MAX_RUNS: usize = 512;

/// The index over deferrable tools, with what a search result shows of each.
#[derive(Debug, Default)]
pub struct DeferredIndex {
    fingerprint: u64,
    pub index: SearchIndex,
    pub servers: Vec<String>,
}

impl DeferredIndex {
    /// Build from documents (the server is the `mcp__<server>__` part when present).
    pub fn build(docs: Vec<(SearchDoc, String)>) -> Self {
        Self::build_fingerprinted(fingerprint(&docs), docs)
    }

    fn build_fingerprinted(fingerprint: u64, docs: Vec<(SearchDoc, String)>) -> Self {
        super::search::preload_in_background();
        let (docs, servers): (Vec<_>, Vec<_>) = docs.into_iter().unzip();
        Self {
            fingerprint,
            index: SearchIndex::build(docs),
            servers,
        }
    }

    pub fn names(&self) -> BTreeSet<String> {
        (0..self.index.len())
            .filter_map(|i| self.index.doc(i).map(|d| d.name.clone()))
            .collect()
    }
}

/// One search candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub name: String,
    pub server: String,
    pub description: String,
    pub params: Vec<String>,
    pub score: f32,
}

/// What a search found (not yet activated).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    pub candidates: Vec<Candidate>,
    /// Names asked for by `select:` that match no deferrable tool.
    pub unknown: Vec<String>,
}

#[derive(Default)]
struct Runs {
    states: HashMap<String, DiscoveryState>,
    order: VecDeque<String>,
}

/// Shared by the capability plane (`crate::plane`, which rebuilds the index where the catalog
/// changes) and `tool_search` (which searches it and activates tools for its run).
/// What identifies a set of documents (the index is rebuilt only when it changes).
fn fingerprint(docs: &[(SearchDoc, String)]) -> u64 {
    let mut h = DefaultHasher::new();
    for (d, s) in docs {
        d.name.hash(&mut h);
        d.description.hash(&mut h);
        d.params.hash(&mut h);
        s.hash(&mut h);
    }
    h.finish()
}

/// The documents of the latest catalog change, not indexed yet.
struct PendingDocs {
    fingerprint: u64,
    docs: Vec<(SearchDoc, String)>,
}

#[derive(Default)]
pub struct DiscoveryService {
    index: RwLock<Arc<DeferredIndex>>,
    /// Set by [`DiscoveryService::observe`], indexed by the first read ([`DiscoveryService::index`]):
    /// building the index loads the ranking resources (the embedding table, the WordNet
    /// thesaurus: tens of MiB and most of a short process's CPU), which a process that never
    /// searches (`aibuddy call execute`) must not pay for.
    pending: Mutex<Option<PendingDocs>>,
    /// How many indexes were built from observed documents (for tests of the laziness).
    builds: AtomicUsize,
    runs: Mutex<Runs>,
}

impl std::fmt::Debug for DiscoveryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryService").finish_non_exhaustive()
    }
}

/// The searchable documents of a tool set: every tool the defer decision covers.
pub fn deferred_docs(registry: &Registry, toolset: &ToolSet) -> Vec<(SearchDoc, String)> {
    toolset
        .tools
        .iter()
        .filter(|l| deferrable(l, toolset))
        .map(|l| {
            let params = registry
                .get(&l.name)
                .and_then(|(d, _)| d.spec.input_schema().get("properties").cloned())
                .and_then(|p| p.as_object().map(|o| o.keys().cloned().collect()))
                .unwrap_or_default();
            let server = match &l.source {
                Source::Mcp(s) => s.clone(),
                other => other.to_string(),
            };
            (
                SearchDoc {
                    name: l.name.clone(),
                    description: l.description.clone(),
                    params,
                },
                server,
            )
        })
        .collect()
}

impl DiscoveryService {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take the tool set computed after a catalog change as the one to index (nothing to do when
    /// it did not change). Called by the capability plane, not by readers of a tool set. The
    /// index itself is built by the next [`DiscoveryService::index`], not here.
    pub fn observe(&self, registry: &Registry, toolset: &ToolSet) {
        let docs = deferred_docs(registry, toolset);
        let fingerprint = fingerprint(&docs);
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let same = self
            .index
            .read()
            .map(|cur| cur.fingerprint == fingerprint && cur.index.len() == docs.len())
            .unwrap_or(false);
        *pending = (!same).then_some(PendingDocs { fingerprint, docs });
    }

    /// Replace the index directly (tests, benchmarks).
    pub fn set_index(&self, index: DeferredIndex) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        *pending = None;
        if let Ok(mut w) = self.index.write() {
            *w = Arc::new(index);
        }
    }

    /// The current index, built now from the last observed tool set if that changed since.
    pub fn index(&self) -> Arc<DeferredIndex> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(PendingDocs { fingerprint, docs }) = pending.take() {
            let built = Arc::new(DeferredIndex::build_fingerprinted(fingerprint, docs));
            self.builds.fetch_add(1, Ordering::Relaxed);
            let mut w = self.index.write().unwrap_or_else(PoisonError::into_inner);
            *w = built.clone();
            return built;
        }
        self.index
            .read()
            .map(|i| i.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The names of the deferrable tools of the last observed tool set, without building the
    /// index (a run rebuilds its context before every step; only a search needs the ranking
    /// resources).
    pub fn deferrable_names(&self) -> BTreeSet<String> {
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = pending.as_ref() {
            return p.docs.iter().map(|(d, _)| d.name.clone()).collect();
        }
        drop(pending);
        self.index
            .read()
            .map(|i| i.names())
            .unwrap_or_else(|p| p.into_inner().names())
    }

    /// How many indexes were built from observed tool sets so far.
    pub fn index_builds(&self) -> usize {
        self.builds.load(Ordering::Relaxed)
    }

    /// Search the deferrable tools. `select:` names are resolved exactly.
    pub fn search(&self, query: &str, limit: usize) -> SearchOutcome {
        let ix = self.index();
        let candidate = |i: usize, score: f32| {
            ix.index.doc(i).map(|d| Candidate {
                name: d.name.clone(),
                server: ix.servers.get(i).cloned().unwrap_or_default(),
                description: d.description.clone(),
                params: d.params.clone(),
                score,
            })
        };
        match Query::parse(query) {
            Query::Select(names) => {
                let mut out = SearchOutcome::default();
                for n in names {
                    match ix.index.find_name(&n).and_then(|i| candidate(i, 0.0)) {
                        Some(c) if !out.candidates.iter().any(|x| x.name == c.name) => {
                            out.candidates.push(c)
                        }
                        Some(_) => {}
                        None => out.unknown.push(n),
                    }
                }
                out
            }
            Query::Text(text) => SearchOutcome {
                candidates: ix
                    .index
                    .search(&text, limit)
                    .into_iter()
                    .filter_map(|h| candidate(h.doc, h.score))
                    .collect(),
                unknown: Vec::new(),
            },
        }
    }

    fn with_run<T>(&self, run: &str, f: impl FnOnce(&mut DiscoveryState) -> T) -> T {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if !runs.states.contains_key(run) {
            if runs.order.len() >= MAX_RUNS
                && let Some(old) = runs.order.pop_front()
            {
                runs.states.remove(&old);
            }
            runs.order.push_back(run.to_string());
            runs.states.insert(run.to_string(), DiscoveryState::new());
        }
        match runs.states.get_mut(run) {
            Some(s) => f(s),
            None => f(&mut DiscoveryState::new()),
        }
    }

    /// Deferred tools this run has activated.
    pub fn activated(&self, run: &str) -> BTreeSet<String> {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.states
            .get(run)
            .map(|s| s.activated().clone())
            .unwrap_or_default()
    }

    /// Activate tools for the run's following steps; returns those newly activated.
    pub fn activate(&self, run: &str, names: &[String]) -> Vec<String> {
        self.with_run(run, |s| s.activate(names.iter().cloned()))
    }

    /// The context of a run was rebuilt (compaction): keep exactly the deferrable tools the
    /// retained messages reference.
    pub fn rebuild_run(&self, run: &str, messages: &[ContextMessage]) -> BTreeSet<String> {
        let deferrable = self.deferrable_names();
        let rebuilt = DiscoveryState::rebuilt_from(messages, &deferrable);
        let activated = rebuilt.activated().clone();
        self.with_run(run, |s| *s = rebuilt);
        activated
    }

    /// Forget a finished run.
    pub fn end_run(&self, run: &str) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.states.remove(run);
        runs.order.retain(|r| r != run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc() -> DiscoveryService {
        let s = DiscoveryService::new();
        s.set_index(DeferredIndex::build(vec![
            (
                SearchDoc {
                    name: "mcp__a__create_issue".into(),
                    description: "Create an issue".into(),
                    params: vec!["title".into()],
                },
                "a".into(),
            ),
            (
                SearchDoc {
                    name: "mcp__a__list_issues".into(),
                    description: "List issues".into(),
                    params: vec![],
                },
                "a".into(),
            ),
        ]));
        s
    }

    #[test]
    fn runs_are_separate_and_start_empty() {
        let s = svc();
        assert!(s.activated("r1").is_empty());
        s.activate("r1", &["mcp__a__create_issue".into()]);
        assert_eq!(s.activated("r1").len(), 1);
        assert!(s.activated("r2").is_empty());
        s.end_run("r1");
        assert!(s.activated("r1").is_empty());
    }

    #[test]
    fn select_resolves_exact_and_reports_unknown() {
        let s = svc();
        let out = s.search("select:create_issue,nope,mcp__a__create_issue", 5);
        assert_eq!(out.candidates.len(), 1);
        assert_eq!(out.candidates[0].name, "mcp__a__create_issue");
        assert_eq!(out.unknown, vec!["nope".to_string()]);
    }

    #[test]
    fn rebuild_keeps_only_retained_references() {
        let s = svc();
        s.activate(
            "r",
            &["mcp__a__create_issue".into(), "mcp__a__list_issues".into()],
        );
        let kept = s.rebuild_run("r", &[ContextMessage::calls(&["mcp__a__list_issues"])]);
        assert_eq!(kept.len(), 1);
        assert_eq!(s.activated("r"), kept);
    }

    #[test]
    fn old_runs_are_forgotten_beyond_the_bound() {
        let s = svc();
        for i in 0..(MAX_RUNS + 3) {
            s.activate(&format!("r{i}"), &["x".into()]);
        }
        assert!(s.activated("r0").is_empty());
        assert_eq!(s.activated(&format!("r{}", MAX_RUNS + 2)).len(), 1);
    }
}
