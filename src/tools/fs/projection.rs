//! Pure projections of filesystem results: the model text (every bound that cut something says
//! how much and how to narrow) and the client display value (what was verified, the diff).

use aibuddy_sandbox::{
    EditOutcome, EntryKind, GlobOutcome, GrepMode, GrepOutcome, Listing, ReadContent, ReadOutcome,
    SkippedDirs, WriteOutcome,
};
use serde_json::{Value, json};

/// Diffs longer than this many lines are not repeated in the model text (the client has it).
pub const MODEL_DIFF_LINES: usize = 60;

/// A name from the project (file name, symlink target, path) as one visible line: a name may
/// hold a newline, a carriage return, escape sequences or bidi overrides, which would forge rows
/// of a listing for the model and for the person reading `aibuddy call` (controls shown as `\n`,
/// `\e`, ... as everywhere else untrusted text is printed).
fn name(s: &str) -> std::borrow::Cow<'_, str> {
    aibuddy_common::term::line(s)
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// "1 line", "120 lines".
pub fn lines(n: u64) -> String {
    plural(n, "line", "lines")
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

// ------------------------------------------------------------------ ls

pub fn ls_model(l: &Listing) -> String {
    let mut out = format!(
        "{}/ ({})\n",
        name(&l.path),
        plural(l.entries.len() as u64 + l.omitted, "entry", "entries")
    );
    for e in &l.entries {
        let line = match e.kind {
            EntryKind::Dir => match &e.ignored {
                Some(s) => format!(
                    "dir   {}/  [not expanded ({}): {}{} entries]",
                    name(&e.name),
                    s.reason,
                    s.children,
                    if s.more { "+" } else { "" }
                ),
                None => format!("dir   {}/", name(&e.name)),
            },
            EntryKind::File => format!(
                "file  {}  {}",
                name(&e.name),
                human_bytes(e.size.unwrap_or(0))
            ),
            EntryKind::Symlink => format!(
                "link  {} -> {}{}",
                name(&e.name),
                name(e.symlink_target.as_deref().unwrap_or("?")),
                match e.symlink_inside_root {
                    Some(false) => "  (outside the project: not accessible)",
                    None => "  (broken)",
                    Some(true) => "",
                }
            ),
            EntryKind::Other => format!(
                "other {}  (fifo, socket or device: not readable)",
                name(&e.name)
            ),
        };
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    if l.omitted > 0 {
        out.push_str(&format!(
            "[{} not shown (ls returns the first {} by name); list a subdirectory as `path`, or use glob with a pattern]\n",
            plural(l.omitted, "more entry", "more entries"),
            l.entries.len()
        ));
    }
    out
}

// ------------------------------------------------------------------ read_file

pub fn read_model(r: &ReadOutcome) -> String {
    match &r.content {
        ReadContent::Image {
            format,
            width,
            height,
        } => {
            let dims = match (width, height) {
                (Some(w), Some(h)) => format!(" {w}x{h}"),
                _ => String::new(),
            };
            format!(
                "[{}: {format} image{dims}, {}; not shown as text]\n",
                r.path,
                human_bytes(r.size)
            )
        }
        ReadContent::Binary { reason } => format!(
            "[{}: binary file, {} ({reason}); not shown]\n",
            r.path,
            human_bytes(r.size)
        ),
        ReadContent::Text {
            lines,
            lines_before,
            lines_after,
            more_after,
            cut_lines,
            lossy,
        } => {
            let mut out = String::new();
            for l in lines {
                out.push_str(&format!("{:>6}\t{}", l.number, l.text));
                if l.cut_chars > 0 {
                    out.push_str(&format!(" [line cut: {} more characters]", l.cut_chars));
                }
                out.push('\n');
            }
            if lines.is_empty() {
                if *lines_before > 0 {
                    out.push_str(&format!(
                        "[{}: the file has only {}; offset is past the end]\n",
                        r.path,
                        plural(*lines_before, "line", "lines")
                    ));
                } else {
                    out.push_str(&format!("[{}: empty file]\n", r.path));
                }
                return out;
            }
            let first = lines.first().map_or(0, |l| l.number);
            let last = lines.last().map_or(0, |l| l.number);
            let total = lines_after.map(|after| last + after);
            if *lines_before > 0 || *more_after {
                let of = match total {
                    Some(t) => format!("of {t}"),
                    None => format!("of a {} file", human_bytes(r.size)),
                };
                let next = if *more_after {
                    let more = match lines_after {
                        Some(n) => plural(*n, "more line", "more lines"),
                        None => "more lines (not counted)".to_string(),
                    };
                    format!("; {more}: call read_file with offset={}", last + 1)
                } else {
                    String::new()
                };
                out.push_str(&format!("[showing lines {first}-{last} {of}{next}]\n"));
            }
            if *cut_lines > 0 {
                out.push_str(&format!(
                    "[{} cut at the line bound; use grep to find text inside long lines]\n",
                    plural(*cut_lines, "line was", "lines were")
                ));
            }
            if *lossy {
                out.push_str(
                    "[the file is not valid UTF-8; invalid bytes are shown as \u{fffd}]\n",
                );
            }
            out
        }
    }
}

pub fn read_client(r: &ReadOutcome) -> Value {
    json!({ "summary": read_summary(r), "result": r })
}

fn read_summary(r: &ReadOutcome) -> String {
    match &r.content {
        ReadContent::Text { lines, .. } => match (lines.first(), lines.last()) {
            (Some(a), Some(b)) => format!("{}: lines {}-{}", r.path, a.number, b.number),
            _ => format!("{}: no lines", r.path),
        },
        ReadContent::Binary { .. } => format!("{}: binary, {}", r.path, human_bytes(r.size)),
        ReadContent::Image { format, .. } => {
            format!("{}: {format} image, {}", r.path, human_bytes(r.size))
        }
    }
}

// ------------------------------------------------------------------ write_file / edit_file

pub fn write_model(w: &WriteOutcome) -> String {
    let what = match &w.previous {
        None => format!(
            "Created {}: {}, {}",
            w.path,
            plural(w.lines, "line", "lines"),
            human_bytes(w.bytes_written)
        ),
        Some(p) => format!(
            "Overwrote {}: {} -> {} ({} written)",
            w.path,
            plural(p.lines, "line", "lines"),
            plural(w.lines, "line", "lines"),
            human_bytes(w.bytes_written)
        ),
    };
    format!(
        "{what}. Verified: read back the {} ({} bytes), identical to what was written.\n",
        w.verified.region, w.verified.bytes_compared
    )
}

pub fn write_client(w: &WriteOutcome) -> Value {
    json!({
        "summary": write_model(w).trim_end(),
        "verified": w.verified,
        "result": w,
    })
}

pub fn edit_model(e: &EditOutcome) -> String {
    let ranges: Vec<String> = e
        .changed_lines
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    let mut out = format!(
        "Edited {}: {} ({} -> {}); changed lines {}. Verified: read back {} ({} bytes), as intended.\n",
        e.path,
        plural(e.replacements as u64, "replacement", "replacements"),
        plural(e.before.lines, "line", "lines"),
        plural(e.after.lines, "line", "lines"),
        if ranges.is_empty() {
            "none".to_string()
        } else {
            ranges.join(", ")
        },
        e.verified.region,
        e.verified.bytes_compared
    );
    let diff_lines = e.diff.lines().count();
    if diff_lines <= MODEL_DIFF_LINES {
        out.push_str(&e.diff);
    } else {
        let first = e.changed_lines.first().map_or(1, |r| r.0);
        out.push_str(&format!(
            "[diff of {diff_lines} lines not repeated here; call read_file with offset={} to inspect the result]\n",
            first.saturating_sub(3).max(1)
        ));
    }
    out
}

pub fn edit_client(e: &EditOutcome) -> Value {
    json!({
        "summary": edit_model(e).lines().next().unwrap_or_default(),
        "diff": e.diff,
        "verified": e.verified,
        "result": e,
    })
}

// ------------------------------------------------------------------ glob

/// Directories named in the model text at most (the JSON result has up to `SkippedDirs::SHOWN`).
pub const SKIPPED_DIRS_IN_TEXT: usize = 5;

/// The note on directories a walk could not descend: what lies beneath them was not searched.
fn skipped_note(s: &SkippedDirs) -> String {
    if s.total == 0 {
        return String::new();
    }
    let shown: Vec<String> = s
        .dirs
        .iter()
        .take(SKIPPED_DIRS_IN_TEXT)
        .map(|d| format!("{}/ ({})", name(&d.path), d.reason))
        .collect();
    let more = s.total.saturating_sub(shown.len() as u64);
    format!(
        "[{} could not be descended, so what lies beneath was not searched: {}{}]\n",
        plural(s.total, "directory", "directories"),
        shown.join("; "),
        if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        }
    )
}

pub fn glob_model(pattern: &str, g: &GlobOutcome) -> String {
    let mut out = String::new();
    if g.entries.is_empty() {
        out.push_str(&format!(
            "No files match `{pattern}` under {}/ (gitignored and hidden files are skipped).\n",
            name(&g.path)
        ));
        out.push_str(&skipped_note(&g.skipped));
        return out;
    }
    for e in &g.entries {
        out.push_str(&name(e));
        out.push('\n');
    }
    if g.omitted > 0 {
        out.push_str(&format!(
            "[{} not shown (first {} in path order); narrow the pattern or pass a subdirectory as `path`]\n",
            plural(g.omitted, "more file", "more files"),
            g.entries.len()
        ));
    }
    out.push_str(&skipped_note(&g.skipped));
    out
}

// ------------------------------------------------------------------ grep

pub fn grep_model(pattern: &str, g: &GrepOutcome) -> String {
    let mut out = String::new();
    match g.mode {
        GrepMode::Content => {
            let mut last: Option<(&str, u64)> = None;
            for m in &g.matches {
                let first_line = m.before.first().map_or(m.number, |c| c.number);
                if has_context(g)
                    && let Some((path, n)) = last
                    && (path != m.path || first_line > n + 1)
                {
                    out.push_str("--\n");
                }
                let path = name(&m.path);
                for c in &m.before {
                    out.push_str(&format!("{path}-{}-{}\n", c.number, c.text));
                }
                out.push_str(&format!("{path}:{}:{}\n", m.number, m.text));
                for c in &m.after {
                    out.push_str(&format!("{path}-{}-{}\n", c.number, c.text));
                }
                last = Some((&m.path, m.after.last().map_or(m.number, |c| c.number)));
            }
        }
        GrepMode::FilesWithMatches => {
            for f in &g.files {
                out.push_str(&name(f));
                out.push('\n');
            }
        }
        GrepMode::Count => {
            for c in &g.counts {
                out.push_str(&format!("{}:{}\n", name(&c.path), c.count));
            }
        }
    }
    if g.total_files == 0 {
        out.push_str(&format!(
            "No matches for `{pattern}` in {} (gitignored and hidden files are skipped).\n",
            plural(g.files_searched, "file searched", "files searched")
        ));
    } else {
        let (shown, unit) = match g.mode {
            GrepMode::Content => (g.matches.len() as u64, "matching lines"),
            GrepMode::FilesWithMatches => (g.files.len() as u64, "files"),
            GrepMode::Count => (g.counts.len() as u64, "files"),
        };
        if g.omitted > 0 {
            out.push_str(&format!(
                "[showing the first {shown} {unit} in path order; {} more not shown ({} matching lines in {} in total); narrow with `path`, `glob` or a more specific pattern, or use output_mode \"files_with_matches\"/\"count\" first]\n",
                g.omitted,
                g.total_matches,
                plural(g.total_files, "file", "files"),
            ));
        }
    }
    if g.binary_files > 0 {
        out.push_str(&format!(
            "[{} skipped as binary]\n",
            plural(g.binary_files, "file", "files")
        ));
    }
    if g.unreadable_total > 0 {
        out.push_str(&format!(
            "[{} could not be read: {}]\n",
            plural(g.unreadable_total, "file", "files"),
            g.unreadable
                .iter()
                .take(3)
                .map(|u| name(u).into_owned())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    out.push_str(&skipped_note(&g.skipped));
    out
}

fn has_context(g: &GrepOutcome) -> bool {
    g.matches
        .iter()
        .any(|m| !m.before.is_empty() || !m.after.is_empty())
}

/// Structural trim for precompaction: whole lines from the head and the tail within
/// `max_chars`, with the count of what was dropped in between.
pub fn trim_lines(text: &str, max_chars: usize) -> Option<String> {
    if text.len() <= max_chars {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let budget = max_chars.saturating_sub(120) / 2;
    let mut head = Vec::new();
    let mut used = 0;
    for l in &lines {
        if used + l.len() + 1 > budget {
            break;
        }
        used += l.len() + 1;
        head.push(*l);
    }
    let mut tail = Vec::new();
    used = 0;
    for l in lines.iter().rev().take(lines.len() - head.len()) {
        if used + l.len() + 1 > budget {
            break;
        }
        used += l.len() + 1;
        tail.push(*l);
    }
    tail.reverse();
    let dropped = lines.len() - head.len() - tail.len();
    Some(format!(
        "{}\n[{dropped} lines trimmed from this older result; recover the full output with view_tool_call]\n{}\n",
        head.join("\n"),
        tail.join("\n")
    ))
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;
