//! [`SseDecoder`]: the one `text/event-stream` decoder (the MCP legacy SSE transport and the
//! model providers' streams both use it). Incremental and bounded, pure.

/// A malformed or oversized event stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("an event exceeds the {0}-byte message limit; refused")]
    Oversized(usize),
    #[error("an event is not UTF-8")]
    NotUtf8,
}

/// One server-sent event (only what this transport reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, empty when absent (which means `message`).
    pub event: String,
    pub data: String,
}

/// An incremental, bounded `text/event-stream` decoder (the WHATWG rules this transport needs:
/// CRLF, LF or CR line ends, `:` comments, `event` and multi-line `data` fields, a blank line
/// dispatching). A line or an event's data longer than `max` bytes is an error as soon as it
/// grows past the limit, so a huge or endless event is never held whole. Pure.
#[derive(Debug)]
pub struct SseDecoder {
    max: usize,
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    pub fn new(max: usize) -> SseDecoder {
        SseDecoder {
            max,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
        }
    }

    /// Feeds a chunk; complete events are appended to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FrameError> {
        if !self.started && !chunk.is_empty() {
            self.started = true;
            chunk = chunk.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(chunk);
        }
        while !chunk.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if chunk[0] == b'\n' {
                    chunk = &chunk[1..];
                    continue;
                }
            }
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.grow(&chunk[..end])?;
                    self.after_cr = chunk[end] == b'\r';
                    chunk = &chunk[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, out)?;
                }
                None => {
                    self.grow(chunk)?;
                    chunk = &[];
                }
            }
        }
        Ok(())
    }

    fn grow(&mut self, part: &[u8]) -> Result<(), FrameError> {
        if self.line.len() + part.len() + self.data.len() > self.max {
            return Err(FrameError::Oversized(self.max));
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FrameError> {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| FrameError::NotUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > self.max {
                    return Err(FrameError::Oversized(self.max));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(max: usize, chunks: &[&[u8]]) -> Result<Vec<SseEvent>, FrameError> {
        let mut decoder = SseDecoder::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.feed(chunk, &mut out)?;
        }
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_split_anywhere_and_every_line_end_decode_alike() {
        let text = b"\xEF\xBB\xBF: comment\r\nevent: endpoint\r\ndata: /m?s=1\r\n\r\ndata:{\"a\":1}\rdata: x\r\revent:message\ndata\n\n";
        let whole = decode(1024, &[text]).unwrap();
        assert_eq!(
            whole,
            vec![
                ev("endpoint", "/m?s=1"),
                ev("", "{\"a\":1}\nx"),
                ev("message", "")
            ]
        );
        // Byte by byte (a CR LF split across chunks is one line end).
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(decode(1024, &bytes).unwrap(), whole);
        // An event without data is not dispatched.
        assert_eq!(decode(1024, &[b"event: x\n\n"]).unwrap(), vec![]);
    }

    #[test]
    fn an_oversized_event_is_refused_while_it_grows() {
        // One endless line: refused once past the limit, without a line end.
        let big = vec![b'a'; 100];
        assert_eq!(
            decode(64, &[b"data: ", &big]),
            Err(FrameError::Oversized(64))
        );
        // Many short data lines adding up past the limit.
        let lines = b"data: 0123456789\n".repeat(10);
        assert_eq!(decode(64, &[&lines]), Err(FrameError::Oversized(64)));
        // At the limit is fine.
        let ok = format!("data: {}\n\n", "b".repeat(58));
        assert_eq!(decode(64, &[ok.as_bytes()]).unwrap().len(), 1);
        assert_eq!(
            decode(64, &[b"data: \xFF\xFE\n\n"]),
            Err(FrameError::NotUtf8)
        );
    }
}
