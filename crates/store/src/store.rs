//! `Store`: the async handle the core uses. Writes go to the writer thread (`writer`), reads to
//! a small pool of read-only connections on blocking threads; no SQLite call runs on the async
//! runtime's worker threads.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use crate::connection::{open_reader, open_writer};
use crate::error::{Result, StoreError};
use crate::files::{self, Spool};
use crate::ids::{new_id, now_ms, validate_id};
use crate::migrations;
use crate::paths::{DataPaths, INLINE_LIMIT};
use crate::reader::RawSource;
use crate::recovery;
use crate::tables::call_changes::{self, CallChanges};
use crate::tables::{confirm_decisions, projects, runs, tool_calls, user_answers};
use crate::types::{
    CallFinish, CallRecord, CallStart, CallStatus, CompactionState, ConfirmRecord, Decision,
    HistoryFilter, HistoryRow, RawSlice, UserAnswer,
};
use crate::writer::{Durability, Writer};

/// Cheap to clone; all clones share one writer thread and reader pool.
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    paths: DataPaths,
    instance: String,
    writer: Writer,
    readers: Mutex<Vec<Connection>>,
    interrupted_at_open: Vec<String>,
    runs_interrupted_at_open: Vec<String>,
    lock_file: PathBuf,
    _lock: File,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.lock_file);
    }
}

impl Store {
    /// Opens (creating and migrating) `<data_dir>/aibuddy.db`, takes this process's instance lock,
    /// marks calls of dead processes `interrupted` and removes orphaned files. Blocking: call it
    /// at start-up or inside `spawn_blocking`.
    pub fn open(data_dir: impl AsRef<Path>) -> Result<Store> {
        let paths = DataPaths::new(data_dir.as_ref());
        std::fs::create_dir_all(paths.root()).map_err(|e| StoreError::io(paths.root(), e))?;
        let mut conn = open_writer(&paths.db())?;
        migrations::upgrade(&mut conn)?;
        let instance = new_id();
        let lock = recovery::hold_instance_lock(&paths, &instance)?;
        let lock_file = paths.live_dir().join(format!("{instance}.lock"));
        let interrupted = recovery::interrupt_dead_calls(&conn, &paths)?;
        let runs_interrupted = recovery::interrupt_dead_runs(&conn, &paths)?;
        match recovery::remove_orphans(&conn, &paths) {
            Ok(0) => {}
            Ok(n) => tracing::info!(files = n, "removed orphaned store files"),
            Err(e) => tracing::warn!(error = %e, "orphan clean-up failed"),
        }
        let (writer, _handle) = Writer::spawn(conn)?;
        Ok(Store {
            inner: Arc::new(Inner {
                paths,
                instance,
                writer,
                readers: Mutex::new(Vec::new()),
                interrupted_at_open: interrupted,
                runs_interrupted_at_open: runs_interrupted,
                lock_file,
                _lock: lock,
            }),
        })
    }

    pub fn paths(&self) -> &DataPaths {
        &self.inner.paths
    }

    /// This process's instance id (stamped on its calls as `owner`).
    pub fn instance_id(&self) -> &str {
        &self.inner.instance
    }

    /// Calls of dead processes that `open` marked `interrupted`.
    pub fn interrupted_at_open(&self) -> &[String] {
        &self.inner.interrupted_at_open
    }

    /// Agent runs of dead processes that `open` marked `interrupted`.
    pub fn runs_interrupted_at_open(&self) -> &[String] {
        &self.inner.runs_interrupted_at_open
    }

    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &DataPaths) -> Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = inner
                .readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop();
            let conn = match pooled {
                Some(c) => c,
                None => open_reader(&inner.paths.db())?,
            };
            let res = f(&conn, &inner.paths);
            let mut pool = inner.readers.lock().unwrap_or_else(|p| p.into_inner());
            if pool.len() < 4 {
                pool.push(conn);
            }
            res
        })
        .await
        .map_err(|e| StoreError::Transaction(format!("reader task failed: {e}")))?
    }

    pub(crate) async fn write<T, F>(&self, durability: Durability, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.inner.writer.write(durability, f).await
    }

    /// Writes the call's `running` row (creating its run/project rows on first use). Call it
    /// BEFORE executing; returns after commit.
    pub async fn begin_call(&self, start: CallStart) -> Result<()> {
        validate_id(&start.tool_call_id)?;
        validate_id(&start.run_id)?;
        let owner = self.inner.instance.clone();
        self.write(Durability::Process, move |conn| {
            insert_start(conn, &start, &owner)
        })
        .await
    }

    /// Opens the output spool of a running call (`spool/<id>.out`): what is appended there becomes
    /// the call's partial raw output if the process dies. Removed by `finish_call`.
    pub fn spool(&self, tool_call_id: &str) -> Result<Spool> {
        Spool::create(self.inner.paths.spool_file(tool_call_id)?)
    }

    /// Commits the call's raw output, projections and final status. Only after this returns may
    /// the caller report the call finished. Fails when the call is not `running`.
    pub async fn finish_call(&self, fin: CallFinish) -> Result<()> {
        validate_id(&fin.tool_call_id)?;
        if fin.status == CallStatus::Running {
            return Err(StoreError::NotRunning {
                id: fin.tool_call_id,
                status: "running (a finish needs a final status)".into(),
            });
        }
        // The call's own spool, when it is the raw output, is consumed by the finish: a small
        // one is read inline and removed after the commit, a large one is moved into `blobs/`.
        // (A spool nobody handed over is removed by the orphan clean-up of a later open.)
        let own_spool = self.inner.paths.spool_file(&fin.tool_call_id)?;
        let consumes_spool = fin.raw_output_file.as_deref() == Some(own_spool.as_path());
        let staged = self.stage_output(fin).await?;
        let root = self.inner.paths.root().to_path_buf();
        self.write(Durability::Power, move |conn| staged.commit(conn, &root))
            .await?;
        if consumes_spool {
            let _ = tokio::fs::remove_file(own_spool).await;
        }
        Ok(())
    }

    /// Records a call that never ran (failed lookup, invalid arguments, rejected) in one
    /// transaction: its `running` row and its finish.
    pub async fn record_call(&self, start: CallStart, fin: CallFinish) -> Result<()> {
        validate_id(&start.tool_call_id)?;
        validate_id(&start.run_id)?;
        if fin.tool_call_id != start.tool_call_id || fin.status == CallStatus::Running {
            return Err(StoreError::InvalidId {
                id: fin.tool_call_id,
                reason: "finish must name the started call and a final status",
            });
        }
        let owner = self.inner.instance.clone();
        let staged = self.stage_output(fin).await?;
        let root = self.inner.paths.root().to_path_buf();
        self.write(Durability::Power, move |conn| {
            insert_start(conn, &start, &owner)?;
            staged.commit(conn, &root)
        })
        .await
    }

    /// Large outputs are written (fsynced) to a temp file on a blocking thread first. A raw
    /// output file is read inline when small; when large, the call's own spool file is moved
    /// (fsynced first), any other file is copied.
    async fn stage_output(&self, mut fin: CallFinish) -> Result<StagedFinish> {
        let rel = DataPaths::blob_rel(&fin.tool_call_id)?;
        let dest = self.inner.paths.root().join(&rel);
        let own_spool = self.inner.paths.spool_file(&fin.tool_call_id)?;
        let source = fin.raw_output_file.take();
        if source.is_none() && fin.raw_output.len() <= INLINE_LIMIT {
            return Ok(StagedFinish { fin, file: None });
        }
        let bytes = std::mem::take(&mut fin.raw_output);
        let staged =
            tokio::task::spawn_blocking(move || -> Result<(Option<StagedFile>, Vec<u8>)> {
                let Some(src) = source else {
                    let len = bytes.len() as u64;
                    let tmp = files::write_temp_durable(&dest, &bytes)?;
                    return Ok((
                        Some(StagedFile {
                            tmp,
                            rel,
                            len,
                            moved_spool: false,
                        }),
                        Vec::new(),
                    ));
                };
                let len = std::fs::metadata(&src)
                    .map_err(|e| StoreError::io(&src, e))?
                    .len();
                if len <= INLINE_LIMIT as u64 {
                    let inline = std::fs::read(&src).map_err(|e| StoreError::io(&src, e))?;
                    return Ok((None, inline));
                }
                if src == own_spool {
                    File::open(&src)
                        .and_then(|f| f.sync_all())
                        .map_err(|e| StoreError::io(&src, e))?;
                    return Ok((
                        Some(StagedFile {
                            tmp: src,
                            rel,
                            len,
                            moved_spool: true,
                        }),
                        Vec::new(),
                    ));
                }
                let tmp = files::copy_temp_durable(&src, &dest)?;
                Ok((
                    Some(StagedFile {
                        tmp,
                        rel,
                        len,
                        moved_spool: false,
                    }),
                    Vec::new(),
                ))
            })
            .await
            .map_err(|e| StoreError::Transaction(format!("blob writer failed: {e}")))??;
        let (file, inline) = staged;
        if file.is_none() {
            fin.raw_output = inline;
        }
        Ok(StagedFinish { fin, file })
    }

    /// The spool file of a call (`spool/<id>.out`). A tool that streams raw output (execute)
    /// writes it here: if the process dies mid-call the next open attaches it as partial output,
    /// and `finish_call` with `raw_output_file` set to it moves it into place without a copy.
    pub fn spool_path(&self, tool_call_id: &str) -> Result<PathBuf> {
        self.inner.paths.spool_file(tool_call_id)
    }

    pub async fn get_call(&self, tool_call_id: &str) -> Result<Option<CallRecord>> {
        let id = tool_call_id.to_string();
        self.read(move |conn, _| tool_calls::get(conn, &id)).await
    }

    /// At most `limit` bytes of the raw output starting at byte `offset`.
    pub async fn read_raw_slice(
        &self,
        tool_call_id: &str,
        offset: u64,
        limit: u64,
    ) -> Result<RawSlice> {
        let id = tool_call_id.to_string();
        self.read(move |conn, paths| crate::reader::raw_slice(conn, paths, &id, offset, limit))
            .await
    }

    /// Where the whole raw output can be read from (inline bytes or the blob file).
    pub async fn raw_source(&self, tool_call_id: &str) -> Result<RawSource> {
        let id = tool_call_id.to_string();
        self.read(move |conn, paths| crate::reader::raw_source(conn, paths, &id))
            .await
    }

    /// Calls newest first, narrowed by `filter`.
    pub async fn history(&self, filter: HistoryFilter) -> Result<Vec<HistoryRow>> {
        self.read(move |conn, _| tool_calls::history(conn, &filter))
            .await
    }

    /// Full-text search over tool names, inputs and display text, newest first.
    pub async fn search(&self, text: &str, limit: usize) -> Result<Vec<HistoryRow>> {
        self.history(HistoryFilter {
            search: Some(text.to_string()),
            limit: Some(limit),
            ..HistoryFilter::default()
        })
        .await
    }

    /// Sets a call's compaction state (`pending` when it starts, `failed` with the error, ...).
    pub async fn set_compaction(
        &self,
        tool_call_id: &str,
        state: CompactionState,
        strategy: Option<&str>,
        error: Option<&str>,
    ) -> Result<bool> {
        let (id, strategy, error) = (
            tool_call_id.to_string(),
            strategy.map(str::to_string),
            error.map(str::to_string),
        );
        self.write(Durability::Process, move |conn| {
            tool_calls::set_compaction(conn, &id, state, strategy.as_deref(), error.as_deref())
        })
        .await
    }

    /// Replaces the model projection only when `compacted` is smaller; returns whether it did.
    pub async fn replace_model_projection(
        &self,
        tool_call_id: &str,
        compacted: &str,
        state: CompactionState,
        strategy: &str,
        recovery_pointer: Option<&str>,
    ) -> Result<bool> {
        let (id, compacted, strategy, pointer) = (
            tool_call_id.to_string(),
            compacted.to_string(),
            strategy.to_string(),
            recovery_pointer.map(str::to_string),
        );
        self.write(Durability::Power, move |conn| {
            tool_calls::replace_model_projection(
                conn,
                &id,
                &compacted,
                state,
                &strategy,
                pointer.as_deref(),
            )
        })
        .await
    }

    /// Writes `compacted_outputs/<run_id>/<id>.json` durably; returns the relative recovery pointer.
    pub async fn write_compacted_output(
        &self,
        run_id: &str,
        tool_call_id: &str,
        document: &serde_json::Value,
    ) -> Result<String> {
        let rel = DataPaths::compacted_rel(run_id, tool_call_id)?;
        let abs = self.inner.paths.root().join(&rel);
        let bytes = serde_json::to_vec(document)
            .map_err(|e| StoreError::Corrupt(format!("offload document: {e}")))?;
        tokio::task::spawn_blocking(move || files::write_atomic(&abs, &bytes))
            .await
            .map_err(|e| StoreError::Transaction(format!("offload writer failed: {e}")))??;
        Ok(rel)
    }

    /// Reads an offloaded document by its recovery pointer.
    pub async fn read_compacted_output(&self, pointer: &str) -> Result<serde_json::Value> {
        let abs = self
            .inner
            .paths
            .resolve(pointer)
            .filter(|_| pointer.starts_with("compacted_outputs/"))
            .ok_or_else(|| StoreError::Corrupt(format!("recovery pointer {pointer:?}")))?;
        let bytes = tokio::fs::read(&abs)
            .await
            .map_err(|e| StoreError::io(&abs, e))?;
        serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt(format!("{pointer}: {e}")))
    }

    /// Records a confirm request BEFORE the effect; returns its id for `record_decision`.
    pub async fn record_confirm_request(&self, rec: ConfirmRecord) -> Result<i64> {
        self.write(Durability::Power, move |conn| {
            confirm_decisions::insert(conn, &rec)
        })
        .await
    }

    /// Records the person's decision on a pending request; false when it was not pending.
    pub async fn record_decision(&self, decision_id: i64, decision: Decision) -> Result<bool> {
        self.write(Durability::Power, move |conn| {
            confirm_decisions::decide(conn, decision_id, decision, now_ms())
        })
        .await
    }

    /// Records a call's before-snapshot. Call it BEFORE the call runs; returns after commit, so
    /// a process killed during the call leaves a rewindable call behind.
    pub async fn begin_call_changes(
        &self,
        tool_call_id: &str,
        project_key: &str,
        before_snapshot: &str,
    ) -> Result<()> {
        validate_id(tool_call_id)?;
        let (id, key, before) = (
            tool_call_id.to_string(),
            project_key.to_string(),
            before_snapshot.to_string(),
        );
        self.write(Durability::Process, move |conn| {
            call_changes::insert_before(conn, &id, &key, &before, now_ms())
        })
        .await
    }

    /// Records a call's after-snapshot and change set (JSON); `rewind_of` names the calls a
    /// rewind put back (JSON list).
    pub async fn finish_call_changes(
        &self,
        tool_call_id: &str,
        after_snapshot: &str,
        changes_json: String,
        rewind_of: Option<String>,
    ) -> Result<()> {
        validate_id(tool_call_id)?;
        let (id, after) = (tool_call_id.to_string(), after_snapshot.to_string());
        self.write(Durability::Power, move |conn| {
            call_changes::set_after(
                conn,
                &id,
                &after,
                &changes_json,
                rewind_of.as_deref(),
                now_ms(),
            )
        })
        .await
    }

    /// A call's checkpoints, when it has them.
    pub async fn call_changes(&self, tool_call_id: &str) -> Result<Option<CallChanges>> {
        let id = tool_call_id.to_string();
        self.read(move |conn, _| call_changes::get(conn, &id)).await
    }

    /// The checkpointed calls of a run, oldest first.
    pub async fn run_call_changes(&self, run_id: &str) -> Result<Vec<CallChanges>> {
        let id = run_id.to_string();
        self.read(move |conn, _| call_changes::of_run(conn, &id))
            .await
    }

    /// Records one run of a hook (with its call, or only its run).
    pub async fn record_hook_run(&self, row: crate::HookRunRow) -> Result<i64> {
        if let Some(id) = &row.tool_call_id {
            validate_id(id)?;
        }
        self.write(Durability::Process, move |conn| {
            crate::tables::hook_runs::insert(conn, &row)
        })
        .await
    }

    /// The hook runs of one call, in order.
    pub async fn hook_runs(&self, tool_call_id: &str) -> Result<Vec<crate::HookRunRow>> {
        let id = tool_call_id.to_string();
        self.read(move |conn, _| crate::tables::hook_runs::for_call(conn, &id))
            .await
    }

    /// The hook runs of several calls (one query), in order.
    pub async fn hook_runs_of_calls(&self, call_ids: &[String]) -> Result<Vec<crate::HookRunRow>> {
        let ids =
            serde_json::to_string(call_ids).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.read(move |conn, _| crate::tables::hook_runs::for_calls(conn, &ids))
            .await
    }

    /// Every hook run of a run (its calls' and its own), in order.
    pub async fn run_hook_runs(&self, run_id: &str) -> Result<Vec<crate::HookRunRow>> {
        let id = run_id.to_string();
        self.read(move |conn, _| crate::tables::hook_runs::for_run(conn, &id))
            .await
    }

    pub async fn confirm_records(&self, tool_call_id: &str) -> Result<Vec<ConfirmRecord>> {
        let id = tool_call_id.to_string();
        self.read(move |conn, _| confirm_decisions::for_call(conn, &id))
            .await
    }

    pub async fn record_user_answer(&self, answer: UserAnswer) -> Result<i64> {
        self.write(Durability::Power, move |conn| {
            user_answers::insert(conn, &answer)
        })
        .await
    }

    pub async fn user_answers(&self, tool_call_id: &str) -> Result<Vec<UserAnswer>> {
        let id = tool_call_id.to_string();
        self.read(move |conn, _| user_answers::for_call(conn, &id))
            .await
    }
}

pub(crate) fn insert_start(conn: &Connection, start: &CallStart, owner: &str) -> Result<()> {
    let now = now_ms();
    let project = match &start.project_root {
        Some(root) => Some(projects::ensure(conn, root, now)?),
        None => None,
    };
    runs::ensure(conn, &start.run_id, project, now)?;
    tool_calls::insert_start(conn, start, owner, now)
}

struct StagedFile {
    tmp: PathBuf,
    rel: String,
    len: u64,
    /// `tmp` is the call's spool file: on failure it must stay (it is the partial output).
    moved_spool: bool,
}

/// A finish whose large output (if any) is already in a durable temp file.
struct StagedFinish {
    fin: CallFinish,
    file: Option<StagedFile>,
}

impl StagedFinish {
    /// On the writer thread: moves the blob into place (only if the call is still running, so a
    /// finished call's blob is never overwritten), then updates the row.
    fn commit(self, conn: &Connection, root: &Path) -> Result<()> {
        let StagedFinish { fin, file } = self;
        let Some(file) = file else {
            return tool_calls::finish(
                conn,
                &fin,
                tool_calls::OutputRef::Inline(&fin.raw_output),
                now_ms(),
            );
        };
        let dest = root.join(&file.rel);
        let res = (|| {
            match tool_calls::status_of(conn, &fin.tool_call_id)? {
                Some(s) if s == "running" => {}
                Some(s) => {
                    return Err(StoreError::NotRunning {
                        id: fin.tool_call_id.clone(),
                        status: s,
                    });
                }
                None => return Err(StoreError::CallNotFound(fin.tool_call_id.clone())),
            }
            files::rename_durable(&file.tmp, &dest)?;
            let out = tool_calls::OutputRef::File {
                rel_path: &file.rel,
                len: file.len,
            };
            tool_calls::finish(conn, &fin, out, now_ms()).inspect_err(|_| {
                let _ = std::fs::remove_file(&dest);
            })
        })();
        if res.is_err() && !file.moved_spool {
            let _ = std::fs::remove_file(&file.tmp);
        }
        res
    }
}
