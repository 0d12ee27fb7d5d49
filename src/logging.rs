//! Logging setup. The CLI logs warnings (or `AIBUDDY_LOG`) to stderr; the desktop app logs to a
//! daily-rolling file in `<data dir>/logs`. Secrets never reach a log line: environment values,
//! settings values and tool arguments are not logged, only names, ids and error texts.

use std::path::Path;

use tracing_subscriber::EnvFilter;

pub const LOG_ENV: &str = "AIBUDDY_LOG";

fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default))
}

/// Log to stderr (CLI). Safe to call more than once.
pub fn init_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter("warn"))
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Log to a rolling file in the data directory (desktop app). Keep the guard alive.
pub fn init_file(data_dir: &Path) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = data_dir.join("logs");
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::daily(dir, "aibuddy.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    tracing_subscriber::fmt()
        .with_env_filter(filter("info"))
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
