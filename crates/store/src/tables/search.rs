//! `tool_calls_fts`: FTS5 index over tool name, raw input and display text of every call.
//! External-content table over `tool_calls` (keyed by its stable `seq` rowid), kept current by
//! triggers. Added in schema version 2; the migration rebuilds the index from existing rows.
//! Version 6 rebuilds it with the model's text and adds the history browser's ordering index.

pub(crate) const MIGRATION_V2: &str = "
CREATE VIRTUAL TABLE tool_calls_fts USING fts5(
    tool, input, display_text,
    content = 'tool_calls', content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER tool_calls_fts_ai AFTER INSERT ON tool_calls BEGIN
    INSERT INTO tool_calls_fts (rowid, tool, input, display_text)
    VALUES (new.seq, new.tool, new.input, new.display_text);
END;
CREATE TRIGGER tool_calls_fts_ad AFTER DELETE ON tool_calls BEGIN
    INSERT INTO tool_calls_fts (tool_calls_fts, rowid, tool, input, display_text)
    VALUES ('delete', old.seq, old.tool, old.input, old.display_text);
END;
CREATE TRIGGER tool_calls_fts_au AFTER UPDATE OF tool, input, display_text ON tool_calls BEGIN
    INSERT INTO tool_calls_fts (tool_calls_fts, rowid, tool, input, display_text)
    VALUES ('delete', old.seq, old.tool, old.input, old.display_text);
    INSERT INTO tool_calls_fts (rowid, tool, input, display_text)
    VALUES (new.seq, new.tool, new.input, new.display_text);
END;
INSERT INTO tool_calls_fts (tool_calls_fts) VALUES ('rebuild');
";

/// Schema version 6: the ordering index of the history browser, and the FTS index rebuilt over
/// tool, input, display text and the model's text (`model_projection`, set when a call finishes).
pub(crate) const MIGRATION_V6: &str = "
CREATE INDEX tool_calls_started ON tool_calls(started_at, seq);
CREATE INDEX tool_calls_stage ON tool_calls(stage);
DROP TRIGGER tool_calls_fts_ai;
DROP TRIGGER tool_calls_fts_ad;
DROP TRIGGER tool_calls_fts_au;
DROP TABLE tool_calls_fts;
CREATE VIRTUAL TABLE tool_calls_fts USING fts5(
    tool, input, display_text, model_projection,
    content = 'tool_calls', content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER tool_calls_fts_ai AFTER INSERT ON tool_calls BEGIN
    INSERT INTO tool_calls_fts (rowid, tool, input, display_text, model_projection)
    VALUES (new.seq, new.tool, new.input, new.display_text, new.model_projection);
END;
CREATE TRIGGER tool_calls_fts_ad AFTER DELETE ON tool_calls BEGIN
    INSERT INTO tool_calls_fts (tool_calls_fts, rowid, tool, input, display_text, model_projection)
    VALUES ('delete', old.seq, old.tool, old.input, old.display_text, old.model_projection);
END;
CREATE TRIGGER tool_calls_fts_au
AFTER UPDATE OF tool, input, display_text, model_projection ON tool_calls BEGIN
    INSERT INTO tool_calls_fts (tool_calls_fts, rowid, tool, input, display_text, model_projection)
    VALUES ('delete', old.seq, old.tool, old.input, old.display_text, old.model_projection);
    INSERT INTO tool_calls_fts (rowid, tool, input, display_text, model_projection)
    VALUES (new.seq, new.tool, new.input, new.display_text, new.model_projection);
END;
INSERT INTO tool_calls_fts (tool_calls_fts) VALUES ('rebuild');
";

/// Turns free text into an FTS5 query: every whitespace-separated word becomes a quoted prefix
/// term (`\"word\"*`), terms are ANDed. FTS syntax typed by a person (`AND`, `-`, `:`, quotes) is
/// thereby matched as plain words instead of failing to parse. `None` when there is no word.
pub fn fts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = text
        .split_whitespace()
        .map(|w| format!("\"{}\"*", w.replace('"', "\"\"")))
        .collect();
    if terms.is_empty() {
        None
    } else {
        Some(terms.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn quotes_every_word_as_a_prefix_term() {
        assert_eq!(fts_query("  "), None);
        assert_eq!(
            fts_query("read_file src"),
            Some("\"read_file\"* \"src\"*".into())
        );
        assert_eq!(fts_query("a\"b OR"), Some("\"a\"\"b\"* \"OR\"*".into()));
    }
}
