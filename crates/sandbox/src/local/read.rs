//! read: a line slice bounded while reading (offset, limit, long lines cut), binary files and
//! images described instead of dumped (their bytes handed back, bounded, for the caller to send
//! as an image), and a check that the file did not change meanwhile.

use std::io::{BufRead, BufReader, Read};
use tokio_util::sync::CancellationToken;

use super::Scoped;
use super::fsio::{CancelReader, identity, open_regular, read_error};
use crate::api::{IMAGE_BYTES_MAX, Line, ReadContent, ReadOutcome, ReadRequest};
use crate::error::SandboxError;
use crate::scope;
use crate::text::{SNIFF_BYTES, binary_reason, cut_line, sniff_image, trim_eol};

pub fn read(
    s: &Scoped,
    req: &ReadRequest,
    cancel: &CancellationToken,
) -> Result<ReadOutcome, SandboxError> {
    let rel = s.rel(&req.path)?;
    let limit = req.limit.unwrap_or(s.limits.read_lines);
    if limit == 0 {
        return Err(SandboxError::InvalidArgument {
            name: "limit".into(),
            reason: "must be at least 1".into(),
        });
    }
    let offset = req.offset.unwrap_or(1).max(1);
    let (file, meta) = open_regular(&s.dir, &rel, &req.path)?;
    let size = meta.len();
    let path = scope::display(&rel);
    let mut reader = BufReader::with_capacity(
        64 * 1024,
        CancelReader {
            inner: &file,
            cancel,
        },
    );
    let head = reader
        .fill_buf()
        .map_err(|e| read_error("read", &req.path, cancel, e))?;
    let head = &head[..head.len().min(SNIFF_BYTES)];
    if let Some(image) = sniff_image(head) {
        let image_bytes = if size <= IMAGE_BYTES_MAX {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            (&mut reader)
                .take(IMAGE_BYTES_MAX + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| read_error("read", &req.path, cancel, e))?;
            let after = file
                .metadata()
                .map_err(|e| SandboxError::from_io("stat", &req.path, e))?;
            if identity(&after) != identity(&meta) {
                return Err(SandboxError::Changed {
                    path: req.path.clone(),
                });
            }
            (bytes.len() as u64 <= IMAGE_BYTES_MAX).then_some(bytes)
        } else {
            None
        };
        return Ok(ReadOutcome {
            path,
            size,
            content: ReadContent::Image {
                format: image.format.to_string(),
                width: image.width,
                height: image.height,
            },
            image_bytes,
        });
    }
    if let Some(reason) = binary_reason(head) {
        return Ok(ReadOutcome {
            path,
            size,
            content: ReadContent::Binary { reason },
            image_bytes: None,
        });
    }

    let keep_bytes = s.limits.line_chars.saturating_mul(4).saturating_add(2);
    let mut buf = Vec::new();
    let mut lines = Vec::new();
    let mut number: u64 = 0;
    let mut consumed: u64 = 0;
    let mut cut_lines = 0;
    let mut lossy = false;
    let mut kept_bytes: usize = 0;
    let end = offset.saturating_add(limit);
    let io = |e| read_error("read", &req.path, cancel, e);
    while number + 1 < end {
        let keep = number + 1 >= offset;
        let Some((len, skipped_chars)) =
            read_line_bounded(&mut reader, &mut buf, if keep { keep_bytes } else { 0 })
                .map_err(io)?
        else {
            break;
        };
        number += 1;
        consumed += len;
        if keep {
            let raw = trim_eol(&buf);
            let decoded = String::from_utf8_lossy(raw);
            lossy |= matches!(decoded, std::borrow::Cow::Owned(_));
            let (text, cut) = cut_line(&decoded, s.limits.line_chars);
            let cut_chars = cut + skipped_chars;
            if cut_chars > 0 {
                cut_lines += 1;
            }
            kept_bytes = kept_bytes.saturating_add(text.len());
            lines.push(Line {
                number,
                text,
                cut_chars,
            });
            if kept_bytes >= s.limits.read_max_bytes {
                break;
            }
        }
    }
    let more_after = !reader.fill_buf().map_err(io)?.is_empty();
    let lines_after = if !more_after {
        Some(0)
    } else if size.saturating_sub(consumed) <= s.limits.read_count_tail_bytes {
        Some(count_remaining_lines(&mut reader).map_err(io)?)
    } else {
        None
    };
    let after = file
        .metadata()
        .map_err(|e| SandboxError::from_io("stat", &req.path, e))?;
    if identity(&after) != identity(&meta) {
        return Err(SandboxError::Changed {
            path: req.path.clone(),
        });
    }
    Ok(ReadOutcome {
        path,
        size,
        content: ReadContent::Text {
            lines_before: offset.saturating_sub(1).min(number),
            lines,
            lines_after,
            more_after,
            cut_lines,
            lossy,
        },
        image_bytes: None,
    })
}

/// Read one line, keeping at most `keep_bytes` of it in `out`.
/// Returns `None` at end of file, else (bytes consumed, characters skipped beyond the bound).
pub fn read_line_bounded(
    r: &mut impl BufRead,
    out: &mut Vec<u8>,
    keep_bytes: usize,
) -> std::io::Result<Option<(u64, u64)>> {
    out.clear();
    let mut consumed: u64 = 0;
    let mut skipped_chars: u64 = 0;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((consumed > 0).then_some((consumed, skipped_chars)));
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let take = keep_bytes.saturating_sub(out.len()).min(chunk.len());
        out.extend_from_slice(&chunk[..take]);
        skipped_chars += chunk[take..]
            .iter()
            .filter(|b| (**b & 0xc0) != 0x80 && **b != b'\n' && **b != b'\r')
            .count() as u64;
        let n = chunk.len();
        consumed += n as u64;
        r.consume(n);
        if done {
            return Ok(Some((consumed, skipped_chars)));
        }
    }
}

fn count_remaining_lines(r: &mut impl BufRead) -> std::io::Result<u64> {
    let mut lines = 0;
    let mut last = b'\n';
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        lines += memchr::memchr_iter(b'\n', buf).count() as u64;
        last = buf[buf.len() - 1];
        let n = buf.len();
        r.consume(n);
    }
    Ok(if last == b'\n' { lines } else { lines + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines_keep_a_prefix_and_count_the_rest() {
        let data = b"short\nabcdefgh\nlast";
        let mut r = std::io::BufReader::with_capacity(4, &data[..]);
        let mut out = Vec::new();
        assert_eq!(
            read_line_bounded(&mut r, &mut out, 100).unwrap(),
            Some((6, 0))
        );
        assert_eq!(out, b"short\n");
        assert_eq!(
            read_line_bounded(&mut r, &mut out, 3).unwrap(),
            Some((9, 5))
        );
        assert_eq!(out, b"abc");
        assert_eq!(
            read_line_bounded(&mut r, &mut out, 0).unwrap(),
            Some((4, 4))
        );
        assert_eq!(read_line_bounded(&mut r, &mut out, 10).unwrap(), None);
    }
}
