//! The writer thread: the only connection that writes. Async callers send a job over a channel
//! and await a reply that arrives only AFTER the job's transaction committed, so database writes
//! never block the async runtime and "returned" means "durable".
//!
//! Group commit: the thread takes every job already queued (up to `MAX_BATCH`) and runs them in
//! one transaction, each inside its own savepoint, so one failing job does not undo the others.
//! A batch containing a durable job (finishing a call, a decision) commits with
//! `synchronous = FULL` (the WAL is fsynced); other batches (a call's `running` row) commit with
//! `NORMAL`, which survives the process being killed. Because the WAL is append-only, the fsync of
//! a later FULL commit also makes every earlier NORMAL commit durable.

use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::{Result, StoreError};

const MAX_BATCH: usize = 256;

/// Called after the batch's commit with its outcome (`Err` text when the commit failed).
type Completion = Box<dyn FnOnce(std::result::Result<(), String>) + Send>;

/// Runs the job; returns whether it succeeded and its completion.
type JobFn = Box<dyn FnOnce(Option<&Connection>) -> (bool, Completion) + Send>;

/// A unit of work: runs on the writer connection inside a savepoint; returns whether it
/// succeeded (else its savepoint is rolled back) and its completion.
pub(crate) struct Job {
    durable: bool,
    /// `None`: the transaction could not begin; the job must not run and reports failure.
    run: JobFn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Survives the process being killed (`synchronous = NORMAL`).
    Process,
    /// Also survives power loss (`synchronous = FULL`).
    Power,
}

#[derive(Debug)]
pub(crate) struct Writer {
    tx: mpsc::Sender<Job>,
}

impl Writer {
    pub(crate) fn spawn(conn: Connection) -> Result<(Writer, JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel::<Job>();
        let handle = std::thread::Builder::new()
            .name("aibuddy-store-writer".into())
            .spawn(move || run(conn, rx))
            .map_err(|e| StoreError::io("aibuddy-store-writer thread", e))?;
        Ok((Writer { tx }, handle))
    }

    /// Runs `f` on the writer connection; resolves after the transaction containing it committed.
    pub(crate) async fn write<T, F>(&self, durability: Durability, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply_tx, reply_rx) = oneshot::channel::<Result<T>>();
        let job = Job {
            durable: durability == Durability::Power,
            run: Box::new(move |conn| {
                let res = match conn {
                    Some(conn) => f(conn),
                    None => Err(StoreError::Transaction("could not begin".into())),
                };
                let ok = res.is_ok();
                let done: Completion = Box::new(move |commit| {
                    let out = match (res, commit) {
                        (Err(e), _) => Err(e),
                        (Ok(_), Err(msg)) => {
                            Err(StoreError::Transaction(format!("commit failed: {msg}")))
                        }
                        (Ok(v), Ok(())) => Ok(v),
                    };
                    let _ = reply_tx.send(out);
                });
                (ok, done)
            }),
        };
        self.tx.send(job).map_err(|_| StoreError::Closed)?;
        reply_rx.await.map_err(|_| StoreError::Closed)?
    }
}

fn run(mut conn: Connection, rx: mpsc::Receiver<Job>) {
    let mut full = false;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let want_full = batch.iter().any(|j| j.durable);
        if want_full != full {
            let level = if want_full { "FULL" } else { "NORMAL" };
            match conn.pragma_update(None, "synchronous", level) {
                Ok(()) => full = want_full,
                Err(e) => tracing::error!(error = %e, "cannot set synchronous={level}"),
            }
        }
        run_batch(&mut conn, batch);
    }
    tracing::debug!("store writer thread stopped");
}

fn run_batch(conn: &mut Connection, batch: Vec<Job>) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let msg = e.to_string();
        for job in batch {
            // Run nothing; report the failure to every caller.
            let (_, done) = (job.run)(None);
            done(Err(msg.clone()));
        }
        return;
    }
    let mut completions = Vec::with_capacity(batch.len());
    for job in batch {
        if let Err(e) = conn.execute_batch("SAVEPOINT job") {
            tracing::error!(error = %e, "savepoint failed");
        }
        let (ok, done) = (job.run)(Some(conn));
        let end = if ok {
            "RELEASE job"
        } else {
            "ROLLBACK TO job; RELEASE job"
        };
        if let Err(e) = conn.execute_batch(end) {
            tracing::error!(error = %e, "ending savepoint failed");
        }
        completions.push(done);
    }
    let commit = conn.execute_batch("COMMIT").map_err(|e| e.to_string());
    if commit.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for done in completions {
        done(commit.clone());
    }
}
