//! The generic structural trim used when a tool has no trim hook of its own: keep whole lines
//! from the head and the tail, and say how much of the middle was omitted (the tail usually
//! holds the failure, so it is never dropped in favour of the head).

/// Trims `text` to about `max_chars` characters: ~60% head lines, ~40% tail lines, and a marker
/// line naming the omitted lines and characters. Text already within `max_chars` is returned as is.
pub fn head_tail_trim(text: &str, max_chars: usize) -> String {
    let total_chars = text.chars().count();
    if total_chars <= max_chars {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let head_budget = max_chars * 3 / 5;
    let tail_budget = max_chars - head_budget;
    let mut head = String::new();
    let mut used = 0;
    let mut h = 0;
    while h < lines.len() {
        let n = lines[h].chars().count();
        if used + n > head_budget {
            break;
        }
        head.push_str(lines[h]);
        used += n;
        h += 1;
    }
    let mut tail_parts: Vec<&str> = Vec::new();
    let mut used_tail = 0;
    let mut t = lines.len();
    while t > h {
        let n = lines[t - 1].chars().count();
        if used_tail + n > tail_budget {
            break;
        }
        tail_parts.push(lines[t - 1]);
        used_tail += n;
        t -= 1;
    }
    // A single huge line (minified JSON, a long log line): cut by characters instead.
    if h == 0 && tail_parts.is_empty() {
        let head: String = text.chars().take(head_budget).collect();
        let tail: String = text.chars().skip(total_chars - tail_budget).collect();
        let omitted = total_chars - head_budget - tail_budget;
        return format!("{head}\n[... {omitted} characters omitted ...]\n{tail}");
    }
    let omitted_lines = t - h;
    let omitted_chars = total_chars - used - used_tail;
    let mut out = head;
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[... {omitted_lines} lines ({omitted_chars} characters) omitted ...]\n"
    ));
    for part in tail_parts.into_iter().rev() {
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(head_tail_trim("a\nb\n", 100), "a\nb\n");
    }

    #[test]
    fn keeps_head_and_tail_lines_and_names_the_gap() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let out = head_tail_trim(&text, 200);
        assert!(out.starts_with("line 0\nline 1\n"), "{out}");
        assert!(out.ends_with("line 999\n"), "{out}");
        assert!(out.contains("lines ("), "{out}");
        assert!(out.chars().count() < 300);
    }

    #[test]
    fn one_long_line_is_cut_by_characters_on_char_boundaries() {
        let text = "é".repeat(5000);
        let out = head_tail_trim(&text, 100);
        assert!(out.contains("[... 4900 characters omitted ...]"), "{out}");
    }
}
