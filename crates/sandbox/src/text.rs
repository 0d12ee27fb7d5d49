//! Pure text helpers: binary and image sniffing, bounded line cutting, fingerprints.

use crate::api::{FileStats, Fingerprint};

/// Bytes inspected to decide whether a file is text.
pub const SNIFF_BYTES: usize = 8192;

/// A known image format with its dimensions when cheap to read from the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageKind {
    pub format: &'static str,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

/// Recognise an image by its magic bytes.
pub fn sniff_image(head: &[u8]) -> Option<ImageKind> {
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let le16 = |b: &[u8]| u32::from(u16::from_le_bytes([b[0], b[1]]));
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        let dims = (head.len() >= 24).then(|| (be32(&head[16..20]), be32(&head[20..24])));
        return Some(ImageKind {
            format: "png",
            width: dims.map(|d| d.0),
            height: dims.map(|d| d.1),
        });
    }
    if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        let dims = (head.len() >= 10).then(|| (le16(&head[6..8]), le16(&head[8..10])));
        return Some(ImageKind {
            format: "gif",
            width: dims.map(|d| d.0),
            height: dims.map(|d| d.1),
        });
    }
    if head.starts_with(b"\xff\xd8\xff") {
        let (width, height) = jpeg_dimensions(head).unzip();
        return Some(ImageKind {
            format: "jpeg",
            width,
            height,
        });
    }
    if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        return Some(ImageKind {
            format: "webp",
            width: None,
            height: None,
        });
    }
    if head.starts_with(b"BM") && head.len() >= 26 {
        let w = u32::from_le_bytes([head[18], head[19], head[20], head[21]]);
        let h = i32::from_le_bytes([head[22], head[23], head[24], head[25]]).unsigned_abs();
        return Some(ImageKind {
            format: "bmp",
            width: Some(w),
            height: Some(h),
        });
    }
    if head.starts_with(b"\x00\x00\x01\x00") {
        return Some(ImageKind {
            format: "ico",
            width: None,
            height: None,
        });
    }
    if head.starts_with(b"II*\x00") || head.starts_with(b"MM\x00*") {
        return Some(ImageKind {
            format: "tiff",
            width: None,
            height: None,
        });
    }
    None
}

/// Walk JPEG segments to the first start-of-frame marker (within the sniffed head only).
fn jpeg_dimensions(head: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 9 < head.len() {
        if head[i] != 0xff {
            return None;
        }
        let marker = head[i + 1];
        let len = usize::from(u16::from_be_bytes([head[i + 2], head[i + 3]]));
        let is_sof = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if is_sof {
            let h = u32::from(u16::from_be_bytes([head[i + 5], head[i + 6]]));
            let w = u32::from(u16::from_be_bytes([head[i + 7], head[i + 8]]));
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

/// Why `head` does not look like text, if it does not (a NUL byte, as ripgrep decides).
pub fn binary_reason(head: &[u8]) -> Option<String> {
    memchr::memchr(0, head).map(|at| format!("contains a NUL byte at offset {at}"))
}

/// Cut `line` to at most `max_chars` characters; returns the kept text and the chars cut.
pub fn cut_line(line: &str, max_chars: usize) -> (String, u64) {
    match line.char_indices().nth(max_chars) {
        None => (line.to_string(), 0),
        Some((at, _)) => (line[..at].to_string(), line[at..].chars().count() as u64),
    }
}

/// Strip one trailing `\n` (and a `\r` before it).
pub fn trim_eol(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

/// FNV-1a over the bytes; stable across runs and processes.
pub fn fingerprint(bytes: &[u8]) -> Fingerprint {
    let mut f = Fingerprinter::default();
    f.update(bytes);
    f.finish()
}

/// [`fingerprint`] and [`stats`] computed chunk by chunk, so a large file need not be in memory.
#[derive(Debug, Clone, Copy)]
pub struct Fingerprinter {
    hash: u64,
    len: u64,
    newlines: u64,
    last: Option<u8>,
}

impl Default for Fingerprinter {
    fn default() -> Self {
        Fingerprinter {
            hash: 0xcbf2_9ce4_8422_2325,
            len: 0,
            newlines: 0,
            last: None,
        }
    }
}

impl Fingerprinter {
    pub fn update(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.hash ^= u64::from(*b);
            self.hash = self.hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.len += bytes.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        if let Some(b) = bytes.last() {
            self.last = Some(*b);
        }
    }

    pub fn finish(&self) -> Fingerprint {
        Fingerprint {
            len: self.len,
            hash: self.hash,
        }
    }

    /// The [`stats`] of everything given to [`Fingerprinter::update`].
    pub fn stats(&self) -> FileStats {
        let partial = matches!(self.last, Some(b) if b != b'\n');
        FileStats {
            bytes: self.len,
            lines: self.newlines + u64::from(partial),
        }
    }
}

/// Lines as an editor counts them: a final line without `\n` still counts.
pub fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        newlines
    } else {
        newlines + 1
    }
}

pub fn stats(bytes: &[u8]) -> FileStats {
    FileStats {
        bytes: bytes.len() as u64,
        lines: count_lines(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_fingerprint_and_stats_equal_the_whole() {
        for text in ["", "a", "a\n", "a\nb", "\n\n", "x\ny\nzz"] {
            for split in 0..=text.len() {
                let mut f = Fingerprinter::default();
                f.update(&text.as_bytes()[..split]);
                f.update(&text.as_bytes()[split..]);
                assert_eq!(
                    (f.finish(), f.stats()),
                    (fingerprint(text.as_bytes()), stats(text.as_bytes())),
                    "{text:?} split at {split}"
                );
            }
        }
    }

    #[test]
    fn images_are_recognised_with_dimensions() {
        let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        png.extend_from_slice(&640u32.to_be_bytes());
        png.extend_from_slice(&480u32.to_be_bytes());
        assert_eq!(
            sniff_image(&png),
            Some(ImageKind {
                format: "png",
                width: Some(640),
                height: Some(480)
            })
        );
        let gif = b"GIF89a\x20\x00\x10\x00rest";
        assert_eq!(sniff_image(gif).unwrap().width, Some(32));
        assert_eq!(sniff_image(b"hello"), None);
    }

    #[test]
    fn line_cutting_counts_chars_not_bytes() {
        assert_eq!(cut_line("héllo", 10), ("héllo".into(), 0));
        assert_eq!(cut_line("héllo", 2), ("hé".into(), 3));
    }

    #[test]
    fn line_counts() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(
            binary_reason(b"ab\0"),
            Some("contains a NUL byte at offset 2".into())
        );
    }
}
