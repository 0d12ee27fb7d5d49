//! The `stage` columns (`tool_calls.stage`, `runs.stage`): stored as [`Stage`]'s string form
//! (their CHECK constraints list the six names), read back typed.

use aibuddy_common::Stage;
use rusqlite::Row;
use rusqlite::types::{FromSqlError, Type};

/// The stored text of a stage.
pub(crate) fn text(stage: Option<Stage>) -> Option<&'static str> {
    stage.map(Stage::as_str)
}

/// Reads a stage column; a name the schema would not allow is a conversion error, not a panic.
pub(crate) fn read(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<Stage>> {
    let stored: Option<String> = row.get(idx)?;
    stored
        .map(|s| {
            Stage::parse(&s).ok_or_else(|| {
                rusqlite::Error::FromSqlConversionFailure(
                    idx,
                    Type::Text,
                    Box::new(FromSqlError::Other(format!("unknown stage {s:?}").into())),
                )
            })
        })
        .transpose()
}
