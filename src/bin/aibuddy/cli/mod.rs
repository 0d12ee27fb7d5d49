//! The headless CLI: `aibuddy tools list|check`, `aibuddy call`, `aibuddy run|runs|auth`
//! (agent runs), and (from the results layer)
//! `history` and `show`. Each subcommand has `--json` for machine-readable output. The binary in
//! `src/bin/aibuddy/main.rs` only calls [`main`].
//!
//! Exit codes: 0 ok; 1 a call or check failed (error status, problems found); 2 usage or startup
//! error; 3 the call was rejected by the person; 130 the call was cancelled (Ctrl-C).
//!
//! A closed stdout (`aibuddy tools list --json | head -c 10`) is not an error: every line goes
//! through [`outln!`] / [`out!`] ([`write_stdout`]), which drop the output quietly once the
//! reader is gone (no panic, nothing on stderr); the command ends as it would have, with its own
//! exit code (0 for a listing).

/// `println!` for the CLI's stdout: a closed pipe ends the output quietly (see [`write_stdout`]).
macro_rules! outln {
    () => { $crate::cli::write_stdout(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::write_stdout(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` for the CLI's stdout (see [`outln!`]).
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::write_stdout(format_args!($($t)*)) };
}

mod approvals;
mod ask;
mod auth;
mod call;
mod changes;
mod history;
mod interrupt;
mod mcp;
mod prompt;
mod rewind;
mod run;
mod runs;
mod search;
mod show;
mod tools;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use aibuddy::app::{App, AppError, AppOptions, DATA_DIR_ENV, default_data_dir};
use aibuddy::plane::{MCP_CONNECT_WAIT_ENV, PlaneOptions, connect_wait};

#[derive(Debug, Parser)]
#[command(
    name = "aibuddy",
    version,
    about = "The tool plane of an AI agent working inside a project folder"
)]
pub struct Cli {
    /// The project folder (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The data directory (default: the OS app-data dir, e.g. ~/.local/share/aibuddy).
    #[arg(long, global = true, value_name = "DIR", env = DATA_DIR_ENV)]
    pub data_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect the tool set.
    Tools {
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// Run one tool call through the full pipeline.
    Call(call::CallArgs),
    /// List stored calls, newest first.
    History(history::HistoryArgs),
    /// Show one stored call (raw output with --raw).
    Show(show::ShowArgs),
    /// What a call (or each call of a run) changed in the project: per-file diffs.
    Changes(changes::ChangesArgs),
    /// Put back the files a call (or a run's calls, newest first) changed.
    Rewind(rewind::RewindArgs),
    /// Show what trusting the project grants (its MCP servers, settings beyond yours) and trust it.
    Trust(trust::TrustArgs),
    /// Run an agent: a model (settings `providers`) drives the tools.
    Run(run::RunArgs),
    /// List agent runs, newest first, or show one (`runs show RUN_ID`).
    Runs(runs::RunsArgs),
    /// Provider API keys: store one in the OS keyring, or see which providers have one.
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
    },
    /// Remote MCP servers: OAuth login and logout, and each server's state.
    Mcp {
        #[command(subcommand)]
        command: mcp::McpCommand,
    },
}

impl Cli {
    pub fn options(&self) -> Result<AppOptions, String> {
        let project = match &self.project {
            Some(p) => p.clone(),
            None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
        };
        Ok(AppOptions {
            project,
            data_dir: self.data_dir.clone().unwrap_or_else(default_data_dir),
        })
    }
}

static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes to stdout; once a write finds the reader gone (`EPIPE`), this and every later output
/// is dropped quietly. Another write error is said once on stderr.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        if !STDOUT_CLOSED.swap(true, Ordering::Relaxed)
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            eprintln!("aibuddy: cannot write to stdout: {e}");
        }
    }
}

/// Open the project with the plane options this process's environment sets (the CLI is an edge:
/// the library reads no environment).
pub(crate) async fn open_app(opts: AppOptions) -> Result<App, AppError> {
    App::open_with(opts, plane_options()).await
}

/// The plane options of a one-shot command: the MCP connect wait from the environment; skill
/// folders are not watched (the process ends with its command, and a watcher costs a thread and
/// an inotify watch per folder at start-up).
pub(crate) fn plane_options() -> PlaneOptions {
    PlaneOptions {
        mcp_connect_wait: connect_wait(std::env::var(MCP_CONNECT_WAIT_ENV).ok().as_deref()),
        mcp_token_vault: Some(std::sync::Arc::new(aibuddy::plane::KeyringVault)),
        watch_skills: false,
        bundled_skills: bundled_skills(),
        ..PlaneOptions::default()
    }
}

/// The bundled skills folder the person chose (`AIBUDDY_SKILLS_DIR`): the CLI is an edge, it reads
/// the environment and hands the value to the library.
pub(crate) fn bundled_skills() -> Option<std::path::PathBuf> {
    std::env::var_os(aibuddy::skills::SKILLS_DIR_ENV).map(Into::into)
}

/// The result is already delivered; lets background precompaction finish before the process
/// exits. Ctrl-C (`stop`) cancels it, and the original projection stays.
pub(crate) async fn settle_precompaction(app: &App, stop: &tokio_util::sync::CancellationToken) {
    if let Some(p) = &app.persistence {
        tokio::select! {
            _ = p.compactor.wait_idle() => {}
            _ = stop.cancelled() => {
                p.compactor.cancel();
                p.compactor.wait_idle().await;
            }
        }
    }
}

/// Print a value as pretty JSON on stdout: every `--json` output of the CLI goes through here
/// (`run --json` events through [`aibuddy_common::term::json`] too). serde escapes C0 controls
/// in strings; the C1 controls (U+0080..U+009F: 0x9B is a CSI on some terminals), DEL, line
/// separators and bidi controls it leaves raw become `\uXXXX` escapes too (same JSON value).
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(s) => {
            outln!("{}", aibuddy_common::term::json(&s));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("aibuddy: cannot serialize output: {e}");
            ExitCode::from(2)
        }
    }
}

impl Command {
    /// Whether this command may start a confined command (or a sandboxed MCP server), so the
    /// sandbox probes are worth starting early. Calls of the built-in file tools never do.
    fn may_start_commands(&self) -> bool {
        const FILE_TOOLS: [&str; 8] = [
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "grep",
            "view_tool_call",
            "view_skill",
        ];
        match self {
            Command::Call(args) => !FILE_TOOLS.contains(&args.tool.as_str()),
            Command::Tools { .. } | Command::Run(_) | Command::Mcp { .. } => true,
            _ => false,
        }
    }
}

pub fn main() -> ExitCode {
    aibuddy::logging::init_stderr();
    let cli = Cli::parse();
    if cli.command.may_start_commands() {
        // The sandbox probes (bubblewrap, Landlock) run on a thread while settings and the store
        // open. A file tool's call never needs them: it does not fork `bwrap` for nothing.
        aibuddy_sandbox::aibuddy_exec::prewarm_probes();
    }
    let opts = match cli.options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("aibuddy: {}", aibuddy_common::term::block(&e));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("aibuddy: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async move {
        match cli.command {
            Command::Tools { command } => tools::run(command, opts).await,
            Command::Call(args) => call::run(args, opts).await,
            Command::History(args) => history::run(args, opts).await,
            Command::Show(args) => show::run(args, opts).await,
            Command::Changes(args) => changes::run(args, opts).await,
            Command::Rewind(args) => rewind::run(args, opts).await,
            Command::Trust(args) => trust::run(args, opts),
            Command::Run(args) => run::run(args, opts).await,
            Command::Runs(args) => runs::run(args, opts).await,
            Command::Auth { command } => auth::run(command, opts),
            Command::Mcp { command } => mcp::run(command, opts).await,
        }
    })
}
