//! Logging setup. The CLI logs warnings (or `AIBUDDY_LOG`) to stderr; the desktop app logs to a
//! daily-rolling file in `<data dir>/logs`. Secrets never reach a log line: environment values,
//! settings values and tool arguments are not logged, only names, ids and error texts.
//!
//! Log lines carry untrusted text (an MCP server's stderr line, a file name from the project, an
//! error a server sent). `tracing-subscriber` (0.3.20 and later) escapes ESC, BEL, BS, FF, DEL and
//! the C1 controls in the *message* only: `\r`, newlines, bidirectional overrides and every
//! `%`-formatted field reach the writer raw. So the stderr writer escapes each whole record with
//! [`aibuddy_common::term::line`] (one record, one line; its final newline kept), and the
//! formatter's own colours are off on stderr so nothing legitimate needs to pass.

use std::io::Write;
use std::path::Path;

use aibuddy_common::term;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

pub const LOG_ENV: &str = "AIBUDDY_LOG";

fn filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default))
}

/// One formatted record made terminal-safe: every control character escaped except the record's
/// final newline, so a record can neither redraw the terminal nor forge a second log line. Pure.
pub fn escape_record(record: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(record);
    let (body, newline) = match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text.as_ref(), false),
    };
    let mut out = term::line(body).into_owned().into_bytes();
    if newline {
        out.push(b'\n');
    }
    out
}

/// A writer that escapes each record before it reaches the inner writer. The fmt layer formats a
/// whole record into a buffer and writes it with one `write_all`, so each `write` sees a record.
pub struct EscapingWriter<W: Write> {
    inner: W,
}

impl<W: Write> Write for EscapingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write_all(&escape_record(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Wraps a [`MakeWriter`] so every record it writes is escaped ([`EscapingWriter`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Escaped<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Escaped<M> {
    type Writer = EscapingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        EscapingWriter {
            inner: self.0.make_writer(),
        }
    }
}

/// Log to stderr (CLI), every record escaped. Safe to call more than once.
pub fn init_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter("warn"))
        .with_writer(Escaped(std::io::stderr))
        .with_ansi(false)
        .with_target(false)
        .try_init();
}

/// Log to a rolling file in the data directory (desktop app), every record escaped too (the file
/// is read with `tail -f` and `less` on a terminal). Keep the guard alive.
pub fn init_file(data_dir: &Path) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = data_dir.join("logs");
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::daily(dir, "aibuddy.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    tracing_subscriber::fmt()
        .with_env_filter(filter("info"))
        .with_writer(Escaped(writer))
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_record_keeps_only_its_final_newline() {
        assert_eq!(
            escape_record(b"WARN file \x1b[2K\rok\nWARN forged\n"),
            b"WARN file \\e[2K\\rok\\nWARN forged\n".to_vec()
        );
        assert_eq!(escape_record(b"plain"), b"plain".to_vec());
        assert_eq!(
            escape_record(b"bad \xff\xc2\x9b\n"),
            "bad \u{fffd}\\x9b\n".as_bytes()
        );
    }

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);
    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Through the real formatter: a `%` field, a message and an error all carrying escapes.
    #[test]
    fn the_formatter_output_is_escaped_whole() {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(Escaped(move || sink.clone()))
            .with_ansi(false)
            .with_target(false)
            .finish();
        let name = "evil\u{1b}]0;pwned\u{7}\r\u{202e}txt";
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(path = %name, "cannot watch skill folder {name}: gone\nERROR forged");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert!(text.ends_with('\n'));
        assert!(
            !text.trim_end_matches('\n').chars().any(term::is_unsafe),
            "{text:?}"
        );
        assert!(
            text.contains("evil\\e]0;pwned\\x07\\r\\u{202e}txt"),
            "{text}"
        );
        assert!(text.contains("gone\\nERROR forged"), "{text}");
    }
}
