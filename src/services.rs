//! Capability services the host injects into a run: the project, the data directory, settings, and
//! (as later parts land) the sandbox, the store, a summarizer, skills and MCP connections. The
//! effective tool set is intersected with what is present here.

use std::path::PathBuf;

use crate::settings::Settings;

/// What the host provides to tools. Absent services make the tools that need them absent.
pub struct Services {
    pub project_root: PathBuf,
    pub data_dir: PathBuf,
    pub settings: Settings,
}
