//! Helpers shared by the fuzz targets: splitting one input into fields, and the few invariant
//! checks more than one target needs. Inputs are plain bytes so the seed corpus stays writable by
//! hand (`printf`): fields are separated by the ASCII record separator 0x1E.

/// Field separator inside one fuzz input.
pub const SEP: u8 = 0x1e;

/// Split `data` into at most `n` fields on [`SEP`]; missing fields are empty.
pub fn fields(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = data.splitn(n.max(1), |b| *b == SEP).collect();
    out.resize(n.max(1), &[]);
    out
}

/// Bytes as text, invalid UTF-8 replaced (the APIs under test take `&str`).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A tokio runtime for the async APIs (sandbox operations): one per process, current thread,
/// with the blocking pool the sandbox's workers need.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .max_blocking_threads(2)
            .build()
            .expect("a tokio runtime for the fuzz target")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_pad_and_keep_the_rest() {
        assert_eq!(
            fields(b"a\x1eb\x1ec\x1ed", 3),
            vec![&b"a"[..], b"b", b"c\x1ed"]
        );
        assert_eq!(fields(b"a", 3), vec![&b"a"[..], b"", b""]);
    }
}
