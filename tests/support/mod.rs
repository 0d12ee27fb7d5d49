//! Shared helpers for the tests that run the real `aibuddy` binary.
#![allow(dead_code)] // each test file uses a different subset

pub mod cli_run;
pub mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `aibuddy --project P --data-dir D` with a clean logging and data-dir environment, stdin closed.
pub fn aibuddy_cmd(project: &Path, data: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aibuddy"));
    cmd.arg("--project")
        .arg(project)
        .arg("--data-dir")
        .arg(data)
        .env_remove("AIBUDDY_LOG")
        .env_remove("AIBUDDY_DATA_DIR")
        .stdin(Stdio::null());
    cmd
}

/// Run `aibuddy` with `args` to completion.
pub fn aibuddy_output(project: &Path, data: &Path, args: &[&str]) -> Output {
    aibuddy_cmd(project, data)
        .args(args)
        .output()
        .expect("run aibuddy")
}

/// Run `aibuddy` with `args`: (exit code, stdout, stderr).
pub fn aibuddy(project: &Path, data: &Path, args: &[&str]) -> (i32, String, String) {
    let out = aibuddy_output(project, data, args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Where `make test` installed the real MCP servers (`AIBUDDY_MCP_TOOLS` overrides it, e.g. a
/// worktree pointing at the main checkout's); fails the test when they are not installed.
pub fn mcp_tools_dir() -> PathBuf {
    let dir = std::env::var_os("AIBUDDY_MCP_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/mcp"));
    assert!(
        dir.join(".installed").exists(),
        "the real MCP servers are not installed at {}; run `make test` or \
         `bash scripts/install-mcp-servers.sh` (or set AIBUDDY_MCP_TOOLS)",
        dir.display()
    );
    dir
}

/// Processes whose command line contains `needle` (Linux /proc), this test process excluded.
pub fn processes_with(needle: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}
