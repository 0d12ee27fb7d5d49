//! Where the person's data lives by default. Low in the layers: the commands of `execute`, the
//! hooks and confined MCP servers hide it, and the hosts open it (re-exported by `crate::app`).

use std::path::PathBuf;

/// The data directory the hosts read (the CLI's `--data-dir` default); the library never reads it.
pub const DATA_DIR_ENV: &str = "AIBUDDY_DATA_DIR";

/// The OS app-data directory (`~/.local/share/aibuddy` on Linux).
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("aibuddy-data"))
        .join("aibuddy")
}
