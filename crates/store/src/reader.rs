//! `Reader`: a synchronous read-only view of the store for places that only look things up
//! (the `view_tool_call` tool, scripts). It takes no instance lock and runs no recovery, so it
//! is cheap to open per use; `Store` remains the only writer.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::connection::open_reader;
use crate::error::{Result, StoreError};
use crate::files;
use crate::migrations;
use crate::paths::DataPaths;
use crate::tables::tool_calls;
use crate::types::{CallRecord, HistoryFilter, HistoryRow, RawOutputLocation, RawSlice};

/// Where a call's whole raw output can be read from (for `show --raw`, streaming).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawSource {
    Inline(Vec<u8>),
    File(PathBuf),
}

#[derive(Debug)]
pub struct Reader {
    conn: Connection,
    paths: DataPaths,
}

impl Reader {
    /// Opens `<data_dir>/aibuddy.db` read-only. Fails when there is no database yet or its
    /// schema is not the one this build writes.
    pub fn open(data_dir: impl AsRef<Path>) -> Result<Reader> {
        let paths = DataPaths::new(data_dir.as_ref());
        let db = paths.db();
        if !db.exists() {
            return Err(StoreError::io(
                &db,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no call store yet"),
            ));
        }
        let conn = open_reader(&db)?;
        let found = migrations::current_version(&conn)?;
        if found > migrations::LATEST_VERSION {
            return Err(StoreError::SchemaTooNew {
                found,
                supported: migrations::LATEST_VERSION,
            });
        }
        if found < migrations::LATEST_VERSION {
            return Err(StoreError::SchemaOutdated {
                found,
                expected: migrations::LATEST_VERSION,
            });
        }
        Ok(Reader { conn, paths })
    }

    pub fn get_call(&self, tool_call_id: &str) -> Result<Option<CallRecord>> {
        tool_calls::get(&self.conn, tool_call_id)
    }

    /// The project root of the call's run: `None` when the call does not exist, `Some(None)` when
    /// its run has no project.
    pub fn project_root_of(&self, tool_call_id: &str) -> Result<Option<Option<String>>> {
        tool_calls::project_root_of(&self.conn, tool_call_id)
    }

    pub fn read_raw_slice(&self, tool_call_id: &str, offset: u64, limit: u64) -> Result<RawSlice> {
        raw_slice(&self.conn, &self.paths, tool_call_id, offset, limit)
    }

    pub fn raw_source(&self, tool_call_id: &str) -> Result<RawSource> {
        raw_source(&self.conn, &self.paths, tool_call_id)
    }

    pub fn history(&self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>> {
        tool_calls::history(&self.conn, filter)
    }
}

pub(crate) fn raw_slice(
    conn: &Connection,
    paths: &DataPaths,
    id: &str,
    offset: u64,
    limit: u64,
) -> Result<RawSlice> {
    let rec = tool_calls::get(conn, id)?.ok_or_else(|| StoreError::CallNotFound(id.to_string()))?;
    let total = u64::try_from(rec.raw_output_len.unwrap_or(0)).unwrap_or(0);
    let bytes = match &rec.raw_output {
        RawOutputLocation::None => Vec::new(),
        RawOutputLocation::Inline => {
            tool_calls::inline_slice(conn, id, offset, limit)?.unwrap_or_default()
        }
        RawOutputLocation::File { path } => {
            let abs = paths
                .resolve(path)
                .ok_or_else(|| StoreError::Corrupt(format!("raw output path {path:?}")))?;
            files::read_slice(&abs, offset, limit)?.0
        }
    };
    Ok(RawSlice {
        bytes,
        offset: offset.min(total),
        total_len: total,
        partial: rec.raw_output_partial,
    })
}

pub(crate) fn raw_source(conn: &Connection, paths: &DataPaths, id: &str) -> Result<RawSource> {
    let rec = tool_calls::get(conn, id)?.ok_or_else(|| StoreError::CallNotFound(id.to_string()))?;
    match &rec.raw_output {
        RawOutputLocation::None => Ok(RawSource::Inline(Vec::new())),
        RawOutputLocation::Inline => Ok(RawSource::Inline(
            tool_calls::inline_slice(conn, id, 0, u64::MAX >> 1)?.unwrap_or_default(),
        )),
        RawOutputLocation::File { path } => paths
            .resolve(path)
            .map(RawSource::File)
            .ok_or_else(|| StoreError::Corrupt(format!("raw output path {path:?}"))),
    }
}
