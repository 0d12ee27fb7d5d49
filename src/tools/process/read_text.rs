//! The bounded text of a read of a background process's output (pure): what the model gets from
//! `process_output` / `process_input`.

use crate::processes::Read;

/// Bytes of new output one read shows at most (head and tail of what is new); the model text
/// stays within `execute`'s 30,000 characters.
pub const READ_SHOW_BYTES: usize = 24_000;

/// The model's text of a read: the new output (its head and tail when it is longer than
/// [`READ_SHOW_BYTES`]), and where the bytes it leaves out can be read (`record_id`: the stored
/// call holding the process's output, when there is one).
pub fn read_text(read: &Read, record_id: Option<&str>) -> String {
    let mut out = String::new();
    let recover = |from: u64, n: u64| match record_id {
        Some(id) => format!(
            "read them with view_tool_call {{\"tool_call_id\": \"{id}\", \"offset\": {from}, \"limit\": {}}} and page on with its next_offset",
            n.min(crate::tools::view_tool_call::MAX_LIMIT)
        ),
        None => "they are not stored".to_string(),
    };
    if read.dropped > 0 {
        out.push_str(&format!(
            "[{} earlier bytes (output bytes {}..{}) left the in-memory buffer before this read; {}]\n",
            read.dropped,
            read.from,
            read.from + read.dropped,
            recover(read.from, read.dropped)
        ));
    }
    let held_from = read.from + read.dropped;
    let bytes = &read.bytes;
    if bytes.len() <= READ_SHOW_BYTES {
        out.push_str(&String::from_utf8_lossy(bytes));
        return out;
    }
    let half = READ_SHOW_BYTES / 2;
    let head_end = char_boundary(bytes, half);
    let tail_start = char_boundary(bytes, bytes.len() - half);
    let omitted = (tail_start - head_end) as u64;
    let from = held_from + head_end as u64;
    out.push_str(&String::from_utf8_lossy(&bytes[..head_end]));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[... {omitted} bytes omitted (output bytes {from}..{}); {} ...]\n",
        from + omitted,
        recover(from, omitted)
    ));
    out.push_str(&String::from_utf8_lossy(&bytes[tail_start..]));
    out
}

/// The first index at or after `i` that does not start inside a UTF-8 sequence (at most 3 on).
fn char_boundary(bytes: &[u8], i: usize) -> usize {
    let mut i = i.min(bytes.len());
    let limit = (i + 3).min(bytes.len());
    while i < limit && (0x80..0xC0).contains(&bytes[i]) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::processes::Ring;

    #[test]
    fn a_long_read_shows_head_and_tail_and_names_the_range() {
        let mut r = Ring::default();
        let data: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        r.push(&data);
        let text = read_text(&r.read_from(0), Some("run:bg-1"));
        assert!(text.len() < 30_000, "{}", text.len());
        let (from, to) = (12_000u64, 100_000u64 - 12_000);
        assert!(text.contains(&format!(
            "[... {} bytes omitted (output bytes {from}..{to}); read them with view_tool_call {{\"tool_call_id\": \"run:bg-1\", \"offset\": {from}, \"limit\": 30000}}",
            to - from
        )), "{text}");
        assert!(text.starts_with(std::str::from_utf8(&data[..100]).unwrap()));
        assert!(text.ends_with(std::str::from_utf8(&data[data.len() - 100..]).unwrap()));
    }
}
