//! What makes a child run different from a top-level one while it runs: its tool set (at most
//! its parent's) and the text its system prompt gains. Held by `App::child_shapes` by run id for
//! the length of the child run; `App::run_toolset` narrows every tool set of that run through
//! it, so a tool outside it is neither presented nor callable (Discovery: absent, with the reason).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::discovery::{Exposure, ToolSet};

/// The reason a tool outside a child's set is absent.
pub const NOT_IN_CHILD_SET: &str = "not in this subagent's tool set (a subagent has at most its parent's tools, narrowed by the `agent` call)";

/// One child run's shape (stored with the run as JSON, `runs.child_shape`, so a continued
/// child keeps it).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChildShape {
    /// The tools it may use.
    pub tools: BTreeSet<String>,
    /// Text joining its system prompt (the subagent note and its profile's prompt).
    pub system: String,
}

/// The shapes of the running child runs, by run id.
#[derive(Default)]
pub struct ChildShapes {
    runs: Mutex<HashMap<String, Arc<ChildShape>>>,
}

impl ChildShapes {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<ChildShape>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shapes run `run_id` until the guard is dropped.
    pub fn attach(self: &Arc<Self>, run_id: &str, shape: ChildShape) -> ShapeGuard {
        self.lock().insert(run_id.to_string(), Arc::new(shape));
        ShapeGuard {
            shapes: self.clone(),
            run_id: run_id.to_string(),
        }
    }

    pub fn get(&self, run_id: &str) -> Option<Arc<ChildShape>> {
        self.lock().get(run_id).cloned()
    }

    /// `set` as run `run_id` may use it: unchanged for a run that is not a child.
    pub fn narrow(&self, run_id: &str, set: ToolSet) -> ToolSet {
        match self.get(run_id) {
            Some(shape) => narrow(set, &shape.tools),
            None => set,
        }
    }
}

/// `set` with every tool outside `allowed` absent (pure).
pub fn narrow(mut set: ToolSet, allowed: &BTreeSet<String>) -> ToolSet {
    for t in &mut set.tools {
        if t.exposure != Exposure::Absent && !allowed.contains(&t.name) {
            t.exposure = Exposure::Absent;
            t.deferred_reason = None;
            t.absent_reason = Some(NOT_IN_CHILD_SET.to_string());
        }
    }
    set
}

/// Removes its run's shape when dropped.
pub struct ShapeGuard {
    shapes: Arc<ChildShapes>,
    run_id: String,
}

impl Drop for ShapeGuard {
    fn drop(&mut self) {
        self.shapes.lock().remove(&self.run_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::ToolListing;
    use crate::registry::{Risk, Source};

    fn listing(name: &str, exposure: Exposure) -> ToolListing {
        ToolListing {
            name: name.into(),
            config: name.into(),
            source: Source::Core,
            exposure,
            absent_reason: None,
            deferred_reason: None,
            risk: Risk::ReadOnly,
            description: String::new(),
            display_name: String::new(),
            category: String::new(),
            confinement: None,
        }
    }

    #[test]
    fn a_child_sees_only_its_tools_and_a_guard_ends_the_shape() {
        let set = ToolSet {
            tools: vec![
                listing("read_file", Exposure::Active),
                listing("execute", Exposure::Active),
                listing("mcp__t__x", Exposure::Deferred),
            ],
            ..ToolSet::default()
        };
        let shapes = Arc::new(ChildShapes::default());
        let guard = shapes.attach(
            "child",
            ChildShape {
                tools: ["read_file".to_string(), "mcp__t__x".to_string()].into(),
                system: String::new(),
            },
        );
        let n = shapes.narrow("child", set.clone());
        assert_eq!(n.get("read_file").unwrap().exposure, Exposure::Active);
        assert_eq!(n.get("mcp__t__x").unwrap().exposure, Exposure::Deferred);
        let e = n.get("execute").unwrap();
        assert_eq!(e.exposure, Exposure::Absent);
        assert_eq!(e.absent_reason.as_deref(), Some(NOT_IN_CHILD_SET));
        assert_eq!(shapes.narrow("parent", set.clone()).tools, set.tools);
        drop(guard);
        assert_eq!(shapes.narrow("child", set.clone()).tools, set.tools);
    }
}
