//! A stored call's raw output, recovered by call id: read in byte ranges (the viewer pages through
//! outputs of any size; the bytes cross IPC as an `ArrayBuffer`, exactly as stored), and saved to a
//! file the person picks in a native save dialog (copied in bounded slices, never whole in memory).

use std::io::Write;
use std::path::Path;

use aibuddy_store::Store;
use tauri::ipc::Response;
use tauri::{AppHandle, Runtime, State};
use tauri_plugin_dialog::DialogExt;

use crate::error::{CommandError, ErrorCode};
use crate::history_browser::{ensure_visible, record, scope_of, store_error};
use crate::state::ShellState;

/// The most bytes one `raw_output_range` returns.
pub const MAX_RANGE_BYTES: u64 = 1024 * 1024;
/// Slice size of a save to file.
const SAVE_SLICE_BYTES: u64 = 1024 * 1024;

/// Bytes `offset..offset+length` (length capped at [`MAX_RANGE_BYTES`]) of a call's raw output,
/// exactly as stored; fewer (or none) past its end.
pub async fn range(
    store: &Store,
    tool_call_id: &str,
    offset: u64,
    length: u64,
) -> Result<Vec<u8>, CommandError> {
    let length = length.min(MAX_RANGE_BYTES);
    if length == 0 {
        record(store, tool_call_id).await?;
        return Ok(Vec::new());
    }
    let slice = store
        .read_raw_slice(tool_call_id, offset, length)
        .await
        .map_err(store_error)?;
    Ok(slice.bytes)
}

/// Writes a call's whole raw output to `dest` (created or truncated), slice by slice. Returns the
/// number of bytes written.
pub async fn save_to(store: &Store, tool_call_id: &str, dest: &Path) -> Result<u64, CommandError> {
    let io = |e: std::io::Error| {
        CommandError::new(
            ErrorCode::Project,
            format!("cannot write {}: {e}", dest.display()),
        )
    };
    let mut file = std::io::BufWriter::new(std::fs::File::create(dest).map_err(io)?);
    let mut offset = 0u64;
    loop {
        let slice = store
            .read_raw_slice(tool_call_id, offset, SAVE_SLICE_BYTES)
            .await
            .map_err(store_error)?;
        if slice.bytes.is_empty() {
            break;
        }
        file.write_all(&slice.bytes).map_err(io)?;
        offset += slice.bytes.len() as u64;
        if offset >= slice.total_len {
            break;
        }
    }
    file.flush().map_err(io)?;
    Ok(offset)
}

/// Bytes `offset..offset+length` of a stored call's raw output (at most 1 MiB per call), as an
/// `ArrayBuffer`: byte-exact, whatever the encoding. The total size is in `call_record`.
#[tauri::command]
pub async fn raw_output_range(
    state: State<'_, ShellState>,
    tool_call_id: String,
    offset: u64,
    length: u64,
) -> Result<Response, CommandError> {
    let (store, root) = scope_of(&state)?;
    ensure_visible(&store, &root, &tool_call_id).await?;
    let bytes = range(&store, &tool_call_id, offset, length).await?;
    Ok(Response::new(bytes))
}

/// Saves a stored call's whole raw output to a file the person picks in a native save dialog.
/// Returns the path written, or `null` when the dialog was dismissed.
#[tauri::command]
pub async fn save_raw_output<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, ShellState>,
    tool_call_id: String,
) -> Result<Option<String>, CommandError> {
    let (store, root) = scope_of(&state)?;
    ensure_visible(&store, &root, &tool_call_id).await?;
    let name = aibuddy_store::safe_name(&tool_call_id);
    let dialog = app
        .dialog()
        .file()
        .set_title("Save raw output")
        .set_file_name(format!("{name}.out"));
    let picked = tokio::task::spawn_blocking(move || dialog.blocking_save_file())
        .await
        .map_err(|e| CommandError::new(ErrorCode::Internal, format!("save dialog: {e}")))?;
    let Some(picked) = picked else {
        return Ok(None);
    };
    let path = picked
        .into_path()
        .map_err(|e| CommandError::new(ErrorCode::Project, format!("not a file path: {e}")))?;
    let written = save_to(&store, &tool_call_id, &path).await?;
    tracing::info!(call = %tool_call_id, bytes = written, path = %path.display(), "raw output saved");
    Ok(Some(path.display().to_string()))
}
