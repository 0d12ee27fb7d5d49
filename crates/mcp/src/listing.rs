//! `tools/list` with bounds. rmcp's `list_all_tools` follows `nextCursor` for as long as the
//! server names one and keeps every page: a server that repeats a cursor, or names a new one
//! forever, would grow the list without bound until the connect timeout (and with a `ttlMs` on
//! its pages rmcp answers the repeated cursor from its cache, without any I/O). Here the pages are
//! followed by hand and [`Pager`] (pure) stops the listing with a reason when the server repeats
//! a cursor, sends more than [`MAX_LIST_PAGES`] pages, more than [`MAX_LISTED_TOOLS`] tools, or
//! more bytes of tools in all than one message may hold (`McpOptions::max_message_bytes`, so a
//! paginated list is bounded as a single-page one is).

use std::collections::HashSet;

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};

use crate::shared::tidy;

/// Most pages one listing may take.
pub const MAX_LIST_PAGES: usize = 1_000;
/// Most tools one server may list.
pub const MAX_LISTED_TOOLS: usize = 10_000;

/// The state of one listing: what has been seen so far, checked page by page. Pure.
#[derive(Debug)]
pub(crate) struct Pager {
    max_bytes: usize,
    pages: usize,
    bytes: usize,
    cursors: HashSet<String>,
    tools: Vec<Tool>,
}

impl Pager {
    pub fn new(max_bytes: usize) -> Self {
        Pager {
            max_bytes,
            pages: 0,
            bytes: 0,
            cursors: HashSet::new(),
            tools: Vec::new(),
        }
    }

    /// Takes one page; `Ok(Some(cursor))` asks for the next page, `Ok(None)` is the end, and
    /// `Err(reason)` stops the listing (the server breaks the pagination contract or a bound).
    pub fn page(
        &mut self,
        tools: Vec<Tool>,
        next: Option<String>,
    ) -> Result<Option<String>, String> {
        self.pages += 1;
        // The size of the page as the server sent it, give or take whitespace.
        let size = serde_json::to_vec(&tools).map_or(usize::MAX, |v| v.len());
        self.bytes = self
            .bytes
            .saturating_add(size)
            .saturating_add(next.as_ref().map_or(0, String::len));
        if self.bytes > self.max_bytes {
            return Err(format!(
                "tools/list pages add up to more than {} bytes (after {} pages)",
                self.max_bytes, self.pages
            ));
        }
        if self.tools.len() + tools.len() > MAX_LISTED_TOOLS {
            return Err(format!(
                "tools/list gives more than {MAX_LISTED_TOOLS} tools (after {} pages)",
                self.pages
            ));
        }
        self.tools.extend(tools);
        let Some(cursor) = next else {
            return Ok(None);
        };
        if self.pages >= MAX_LIST_PAGES {
            return Err(format!(
                "tools/list names a next page after {MAX_LIST_PAGES} pages"
            ));
        }
        if !self.cursors.insert(cursor.clone()) {
            return Err(format!(
                "tools/list names the cursor \"{}\" again after {} pages (a pagination loop)",
                crate::stdio::quote(&cursor),
                self.pages
            ));
        }
        Ok(Some(cursor))
    }

    pub fn into_tools(self) -> Vec<Tool> {
        self.tools
    }
}

/// Lists every page of a server's tools within the bounds of [`Pager`].
pub(crate) async fn list_tools_bounded(
    peer: &Peer<RoleClient>,
    max_bytes: usize,
) -> Result<Vec<Tool>, String> {
    let mut pager = Pager::new(max_bytes);
    let mut cursor = None;
    loop {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer
            .list_tools(params)
            .await
            .map_err(|e| format!("tools/list failed: {}", tidy(&e)))?;
        match pager.page(page.tools, page.next_cursor)? {
            Some(next) => cursor = Some(next),
            None => return Ok(pager.into_tools()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tools(prefix: &str, n: usize) -> Vec<Tool> {
        (0..n)
            .map(|i| {
                Tool::new(
                    format!("{prefix}{i}"),
                    "d",
                    Arc::new(serde_json::Map::from_iter([(
                        "type".to_owned(),
                        serde_json::Value::String("object".into()),
                    )])),
                )
            })
            .collect()
    }

    #[test]
    fn pages_are_followed_to_the_end() {
        let mut pager = Pager::new(1 << 20);
        assert_eq!(
            pager.page(tools("a", 3), Some("c1".into())),
            Ok(Some("c1".into()))
        );
        assert_eq!(
            pager.page(tools("b", 3), Some("c2".into())),
            Ok(Some("c2".into()))
        );
        assert_eq!(pager.page(tools("c", 1), None), Ok(None));
        assert_eq!(pager.into_tools().len(), 7);
    }

    #[test]
    fn a_repeated_cursor_is_a_loop() {
        let mut pager = Pager::new(1 << 20);
        assert!(pager.page(tools("a", 1), Some("x".into())).is_ok());
        assert!(pager.page(tools("b", 1), Some("y".into())).is_ok());
        let err = pager.page(tools("c", 1), Some("x".into())).unwrap_err();
        assert!(err.contains("\"x\" again after 3 pages"), "{err}");
    }

    #[test]
    fn escape_sequences_in_a_looping_cursor_are_quoted_escaped() {
        let mut pager = Pager::new(1 << 20);
        let evil = "\u{1b}[2K\rok".to_owned();
        assert!(pager.page(vec![], Some(evil.clone())).is_ok());
        let err = pager.page(vec![], Some(evil)).unwrap_err();
        assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
    }

    #[test]
    fn endless_new_cursors_stop_at_the_page_bound() {
        let mut pager = Pager::new(usize::MAX);
        let mut n = 0;
        let err = loop {
            match pager.page(vec![], Some(format!("p{n}"))) {
                Ok(_) => n += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(n, MAX_LIST_PAGES - 1);
        assert!(err.contains("after 1000 pages"), "{err}");
    }

    #[test]
    fn tool_count_is_bounded_inclusively() {
        let mut pager = Pager::new(usize::MAX);
        assert!(
            pager
                .page(tools("a", MAX_LISTED_TOOLS - 1), Some("c".into()))
                .is_ok()
        );
        assert_eq!(
            pager.page(tools("b", 1), Some("d".into())),
            Ok(Some("d".into()))
        );
        let err = pager.page(tools("c", 1), None).unwrap_err();
        assert!(err.contains("more than 10000 tools"), "{err}");
    }

    #[test]
    fn bytes_are_bounded_over_all_pages() {
        let one_page = serde_json::to_vec(&tools("a", 10)).unwrap().len();
        let mut pager = Pager::new(one_page * 2 + 10);
        assert!(pager.page(tools("a", 10), Some("c1".into())).is_ok());
        assert!(pager.page(tools("a", 10), Some("c2".into())).is_ok());
        let err = pager.page(tools("a", 10), None).unwrap_err();
        assert!(err.contains("add up to more than"), "{err}");
    }
}
