//! [`LazyLabel`]: a shown text computed the first time something reads it. The label of the
//! confinement commands get comes from a probe that forks `bwrap`; a CLI `grep` builds the same
//! tool set as `tools list` but never shows the label, so it never pays for the probe.

use std::fmt;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

type Compute = Box<dyn FnOnce() -> String + Send>;

/// A label computed once, on first read; clones share the one computation.
#[derive(Clone)]
pub struct LazyLabel(Arc<LazyLock<String, Compute>>);

impl LazyLabel {
    /// A label computed by `compute` when first read.
    pub fn new(compute: impl FnOnce() -> String + Send + 'static) -> Self {
        Self(Arc::new(LazyLock::new(Box::new(compute))))
    }

    /// A label known already.
    pub fn ready(text: impl Into<String>) -> Self {
        let text = text.into();
        Self::new(move || text)
    }

    /// The text (computed now if nothing read it before).
    pub fn get(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Debug for LazyLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.get(), f)
    }
}

impl PartialEq for LazyLabel {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for LazyLabel {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.get())
    }
}

impl<'de> Deserialize<'de> for LazyLabel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::ready)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn computed_once_on_first_read_and_shared_by_clones() {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let label = LazyLabel::new(|| {
            RUNS.fetch_add(1, Ordering::SeqCst);
            "landlock-v7".to_string()
        });
        let copy = label.clone();
        assert_eq!(RUNS.load(Ordering::SeqCst), 0, "nothing read it yet");
        assert_eq!(copy.get(), "landlock-v7");
        assert_eq!(label.get(), "landlock-v7");
        assert_eq!(RUNS.load(Ordering::SeqCst), 1);
        let json = serde_json::to_string(&label).unwrap();
        assert_eq!(json, "\"landlock-v7\"");
        let back: LazyLabel = serde_json::from_str(&json).unwrap();
        assert_eq!(back, label);
    }
}
