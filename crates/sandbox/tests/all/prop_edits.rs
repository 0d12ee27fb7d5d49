//! Property tests of `edit_file` application (`apply_edits`), the diff and the changed line ranges,
//! against a straightforward reference model of the documented rules.

use aibuddy_sandbox::edits::{apply_edits, changed_lines, unified_diff};
use aibuddy_sandbox::{EditSpec, SandboxError};
use proptest::prelude::*;

#[derive(Debug, PartialEq)]
enum Outcome {
    Ok(String, usize),
    Invalid,
    NotFound(usize),
    NotUnique(usize, usize),
}

fn reference(original: &str, edits: &[EditSpec]) -> Outcome {
    if edits.is_empty() {
        return Outcome::Invalid;
    }
    let mut current = original.to_string();
    let mut total = 0;
    for (i, e) in edits.iter().enumerate() {
        if e.old_string.is_empty() || e.old_string == e.new_string {
            return Outcome::Invalid;
        }
        let mut at = Vec::new();
        let mut from = 0;
        while let Some(pos) = current[from..].find(&e.old_string) {
            at.push(from + pos);
            from += pos + e.old_string.len();
        }
        match at.len() {
            0 => return Outcome::NotFound(i),
            1 => {}
            n if !e.replace_all => return Outcome::NotUnique(i, n),
            _ => {}
        }
        let mut next = String::new();
        let mut last = 0;
        for pos in &at {
            next.push_str(&current[last..*pos]);
            next.push_str(&e.new_string);
            last = pos + e.old_string.len();
        }
        next.push_str(&current[last..]);
        current = next;
        total += at.len();
    }
    Outcome::Ok(current, total)
}

/// Small alphabets so occurrences, repeats and newlines are frequent.
fn small_text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!['a', 'b', '\n', 'é', '😀', ' ']),
        0..max,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn edit() -> impl Strategy<Value = EditSpec> {
    (small_text(4), small_text(4), any::<bool>()).prop_map(
        |(old_string, new_string, replace_all)| EditSpec {
            old_string,
            new_string,
            replace_all,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn apply_edits_follows_the_rules(original in small_text(40), edits in prop::collection::vec(edit(), 0..4)) {
        let got = match apply_edits("f.txt", &original, &edits) {
            Ok((t, n)) => Outcome::Ok(t, n),
            Err(SandboxError::InvalidArgument { .. }) => Outcome::Invalid,
            Err(SandboxError::OldStringNotFound { index, .. }) => Outcome::NotFound(index),
            Err(SandboxError::OldStringNotUnique { index, count, .. }) => Outcome::NotUnique(index, count),
            Err(other) => return Err(TestCaseError::fail(format!("unexpected {other:?}"))),
        };
        prop_assert_eq!(&got, &reference(&original, &edits));
        if let Outcome::Ok(new, _) = got {
            let diff = unified_diff("f.txt", &original, &new);
            let ranges = changed_lines(&original, &new);
            prop_assert_eq!(diff.is_empty(), original == new);
            prop_assert_eq!(ranges.is_empty(), original == new);
            let lines = new.lines().count().max(1) as u64;
            let mut prev = 0u64;
            for (a, b) in &ranges {
                prop_assert!(*a >= 1 && a <= b && *b <= lines, "{ranges:?} in {lines} lines");
                prop_assert!(prev == 0 || *a > prev + 1, "{ranges:?} not merged");
                prev = *b;
            }
        }
    }
}
