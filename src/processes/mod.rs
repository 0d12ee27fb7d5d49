//! The background processes of a project's runs (`execute` with `"background": true`): the table
//! (`Processes`, per project, held by `crate::services::Services`) and each process's output
//! ring. Below `services`, so below the tools; the tools that start and manage processes are in
//! `crate::tools::process`.

mod ring;
mod table;

pub use ring::{RING_BYTES, Read, Ring};
pub use table::{MAX_LIVE_PER_RUN, Proc, ProcEnd, ProcInfo, Processes, STOP_WAIT};
