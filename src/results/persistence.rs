//! Opening the persistence of an app: the store, its recorder and the background compactor.

use std::path::Path;
use std::sync::Arc;

use aibuddy_store::{Store, StoreError};

use super::{Compactor, StoreRecorder, Summarizer};
use crate::pipeline::{AfterCall, CallRecorder};

/// The store and the two pipeline hooks built on it.
#[derive(Clone)]
pub struct Persistence {
    pub store: Store,
    pub recorder: Arc<StoreRecorder>,
    pub compactor: Arc<Compactor>,
}

impl Persistence {
    /// Opens `<data_dir>/aibuddy.db` (migrating it and marking calls of dead processes
    /// `interrupted`) on a blocking thread.
    pub async fn open(
        data_dir: &Path,
        project_root: &Path,
        summarizer: Option<Arc<dyn Summarizer>>,
    ) -> Result<Persistence, StoreError> {
        let dir = data_dir.to_path_buf();
        let store = tokio::task::spawn_blocking(move || Store::open(&dir))
            .await
            .map_err(|e| StoreError::Transaction(format!("store open task failed: {e}")))??;
        for id in store.interrupted_at_open() {
            tracing::warn!(call = %id, "call of an earlier process was interrupted");
        }
        Ok(Persistence {
            recorder: Arc::new(StoreRecorder::new(store.clone(), Some(project_root))),
            compactor: Arc::new(Compactor::new(store.clone(), summarizer)),
            store,
        })
    }

    pub fn call_recorder(&self) -> Arc<dyn CallRecorder> {
        self.recorder.clone()
    }

    pub fn after_call(&self) -> Arc<dyn AfterCall> {
        Arc::new(self.compactor.clone())
    }
}
