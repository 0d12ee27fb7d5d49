//! Qualified tool names: `mcp__<server>__<tool>`, sanitised to what model providers accept
//! (`^[a-zA-Z0-9_-]{1,64}$`) and mapped back to the exact server and tool names.
//!
//! Sanitising is lossy (`a.b` and `a_b` both become `a_b`, and `__` can appear inside either
//! part), so the way back is never parsing: it is the [`NameMap`] built from the catalog.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

/// Prefix of every MCP tool name exposed to a model.
pub const PREFIX: &str = "mcp__";
/// The longest name providers accept.
pub const MAX_NAME_LEN: usize = 64;
/// Most names a session's ledger ([`NameMap::remember`]) holds before it forgets the old names
/// of connected servers ([`NameMap::trim`]).
pub const MAX_REMEMBERED_NAMES: usize = 100_000;
/// Hex characters of the hash suffix (`_` + this many) used for long or colliding names.
const HASH_LEN: usize = 8;

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_`.
pub fn sanitize_part(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Stable 8-hex-digit hash of the exact (unsanitised) server and tool names.
pub fn stable_hash(server: &str, tool: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0u8]);
    hasher.update(tool.as_bytes());
    let digest = hasher.finalize();
    let mut out = String::with_capacity(HASH_LEN);
    for byte in digest.iter().take(HASH_LEN / 2) {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Cuts `base` so that `base + "_" + hash` fits in [`MAX_NAME_LEN`], then appends the suffix.
fn with_hash_suffix(base: &str, server: &str, tool: &str) -> String {
    let keep = MAX_NAME_LEN - HASH_LEN - 1;
    // `base` is ASCII after sanitising, so byte slicing is on char boundaries.
    let cut = if base.len() > keep {
        &base[..keep]
    } else {
        base
    };
    format!("{cut}_{}", stable_hash(server, tool))
}

/// The preferred qualified name of `tool` on `server`: `mcp__<server>__<tool>` sanitised, and
/// shortened with a stable hash suffix when longer than 64 characters. Pure and deterministic.
pub fn qualified_name(server: &str, tool: &str) -> String {
    let base = format!("{PREFIX}{}__{}", sanitize_part(server), sanitize_part(tool));
    if base.len() <= MAX_NAME_LEN {
        base
    } else {
        with_hash_suffix(&base, server, tool)
    }
}

/// The exact origin of a qualified name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolOrigin {
    pub server: String,
    pub tool: String,
}

/// Qualified name <-> exact (server, tool), built from a whole catalog at once.
///
/// Collisions (two origins whose preferred names are equal) are resolved deterministically:
/// origins are taken in (server, tool) order, the first keeps the preferred name, and each later
/// one gets the preferred name cut to fit plus `_<hash of its exact names>`.
#[derive(Debug, Clone, Default)]
pub struct NameMap {
    by_name: HashMap<String, ToolOrigin>,
    by_origin: BTreeMap<ToolOrigin, String>,
}

impl NameMap {
    /// Builds the map for every (server, tool) pair given, in any order.
    pub fn build<'a>(origins: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self::build_keeping(origins, &NameMap::default())
    }

    /// Like [`NameMap::build`], but every origin that `previous` named keeps its name, and no
    /// name of `previous` is given to another origin, even when its own origin is not in
    /// `origins` (its server is down or restarting): a tool that appears later (a
    /// `list_changed`, a server that connects later) and collides after sanitising gets the hash
    /// suffix, so it can never take over a name the model, or a stored approval, already uses
    /// for another tool (possibly another server's). Origins new to the map are then named in
    /// (server, tool) order as `build` does. Give it the session's record of every name given
    /// out ([`NameMap::remember`]) so that holds for the life of the host.
    pub fn build_keeping<'a>(
        origins: impl IntoIterator<Item = (&'a str, &'a str)>,
        previous: &NameMap,
    ) -> Self {
        let mut sorted: Vec<ToolOrigin> = origins
            .into_iter()
            .map(|(server, tool)| ToolOrigin {
                server: server.to_owned(),
                tool: tool.to_owned(),
            })
            .collect();
        sorted.sort();
        sorted.dedup();
        let mut map = NameMap::default();
        let (kept, new): (Vec<ToolOrigin>, Vec<ToolOrigin>) = sorted
            .into_iter()
            .partition(|o| previous.by_origin.contains_key(o));
        for origin in kept {
            if let Some(name) = previous.by_origin.get(&origin) {
                map.by_name.insert(name.clone(), origin.clone());
                map.by_origin.insert(origin, name.clone());
            }
        }
        for origin in new {
            let preferred = qualified_name(&origin.server, &origin.tool);
            // `origin` is not in `previous`, so a name `previous` holds is another origin's.
            let taken =
                |name: &str| map.by_name.contains_key(name) || previous.by_name.contains_key(name);
            let mut name = preferred.clone();
            if taken(&name) {
                name = with_hash_suffix(&preferred, &origin.server, &origin.tool);
                // A second-level clash would need a SHA-256 prefix collision on top of a name
                // clash; still, never hand out one name twice.
                let mut n = 1u32;
                while taken(&name) {
                    let salted = format!("{}#{n}", origin.tool);
                    name = with_hash_suffix(&preferred, &origin.server, &salted);
                    n += 1;
                }
            }
            map.by_name.insert(name.clone(), origin.clone());
            map.by_origin.insert(origin, name);
        }
        map
    }

    /// Adds every name of `current` to this record of the names given out so far (the
    /// session's ledger, handed to [`NameMap::build_keeping`] as `previous`). An origin keeps the
    /// name it has; a name recorded for another origin is moved (only a `current` not built
    /// from this record can disagree with it).
    pub fn remember(&mut self, current: &NameMap) {
        for (origin, name) in &current.by_origin {
            if self.by_origin.get(origin) == Some(name) {
                continue;
            }
            if let Some(old_name) = self.by_origin.remove(origin) {
                self.by_name.remove(&old_name);
            }
            if let Some(old_origin) = self.by_name.insert(name.clone(), origin.clone()) {
                self.by_origin.remove(&old_origin);
            }
            self.by_origin.insert(origin.clone(), name.clone());
        }
    }

    /// Bounds a ledger: past [`MAX_REMEMBERED_NAMES`], forgets the names of tools that their
    /// server, connected now (in `live`), no longer lists (not in `current`). A server that is
    /// down keeps every name it had; only a live server churning through new tool names can
    /// fill the ledger, and it loses only its own old names.
    pub fn trim(&mut self, current: &NameMap, live: &std::collections::BTreeSet<String>) {
        if self.by_origin.len() <= MAX_REMEMBERED_NAMES {
            return;
        }
        let before = self.by_origin.len();
        let by_name = &mut self.by_name;
        self.by_origin.retain(|origin, name| {
            let keep = !live.contains(&origin.server) || current.by_origin.contains_key(origin);
            if !keep {
                by_name.remove(name.as_str());
            }
            keep
        });
        tracing::debug!(
            before,
            after = self.by_origin.len(),
            "MCP qualified-name ledger trimmed"
        );
    }

    /// The exact server and tool behind a qualified name.
    pub fn resolve(&self, qualified: &str) -> Option<&ToolOrigin> {
        self.by_name.get(qualified)
    }

    /// The qualified name given to `tool` on `server`.
    pub fn qualified(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_origin
            .get(&ToolOrigin {
                server: server.to_owned(),
                tool: tool.to_owned(),
            })
            .map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_prefixed_and_kept() {
        assert_eq!(
            qualified_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(qualified_name("my-srv", "get-sum"), "mcp__my-srv__get-sum");
        assert!(is_valid_name(&qualified_name("github", "create_issue")));
    }

    #[test]
    fn invalid_characters_become_underscores() {
        assert_eq!(
            qualified_name("my server", "read.file"),
            "mcp__my_server__read_file"
        );
        assert_eq!(qualified_name("ünï", "a/b"), "mcp___n___a_b");
        assert!(is_valid_name(&qualified_name("ünï", "a/b")));
    }

    #[test]
    fn long_names_are_shortened_with_a_stable_hash() {
        let tool = "x".repeat(100);
        let a = qualified_name("server", &tool);
        let b = qualified_name("server", &tool);
        assert_eq!(a, b, "the hash suffix is stable");
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert!(is_valid_name(&a));
        assert!(a.starts_with("mcp__server__xxx"));
        assert!(a.ends_with(&format!("_{}", stable_hash("server", &tool))));
        let other = qualified_name("server", &"x".repeat(101));
        assert_ne!(
            a, other,
            "different long names sharing a prefix stay distinct"
        );
    }

    #[test]
    fn exactly_64_is_kept_65_is_hashed() {
        let base = "mcp__s__".len();
        let tool64 = "t".repeat(MAX_NAME_LEN - base);
        assert_eq!(qualified_name("s", &tool64), format!("mcp__s__{tool64}"));
        let tool65 = "t".repeat(MAX_NAME_LEN - base + 1);
        let q = qualified_name("s", &tool65);
        assert_eq!(q.len(), 64);
        assert!(q.ends_with(&stable_hash("s", &tool65)));
    }

    #[test]
    fn map_resolves_back_exactly() {
        let map = NameMap::build([("my server", "read.file"), ("github", "create_issue")]);
        let q = map.qualified("my server", "read.file").unwrap();
        assert_eq!(q, "mcp__my_server__read_file");
        let origin = map.resolve(q).unwrap();
        assert_eq!(origin.server, "my server");
        assert_eq!(origin.tool, "read.file");
        assert!(map.resolve("mcp__nope__x").is_none());
    }

    #[test]
    fn sanitising_collisions_get_distinct_names_in_a_stable_order() {
        // "a.b" and "a_b" sanitise to the same name; so do the two `__` splits.
        let pairs = [("srv", "a.b"), ("srv", "a_b"), ("a__b", "c"), ("a", "b__c")];
        let map = NameMap::build(pairs);
        assert_eq!(map.len(), 4);
        for (server, tool) in pairs {
            let q = map.qualified(server, tool).unwrap();
            assert!(is_valid_name(q), "{q}");
            let back = map.resolve(q).unwrap();
            assert_eq!((back.server.as_str(), back.tool.as_str()), (server, tool));
        }
        // (srv, a.b) sorts before (srv, a_b), so it keeps the plain name.
        assert_eq!(map.qualified("srv", "a.b"), Some("mcp__srv__a_b"));
        assert_ne!(map.qualified("srv", "a_b"), Some("mcp__srv__a_b"));
        // ("a", "b__c") sorts before ("a__b", "c").
        assert_eq!(map.qualified("a", "b__c"), Some("mcp__a__b__c"));
        // Input order does not matter.
        let reversed = NameMap::build(pairs.iter().rev().copied());
        for (server, tool) in pairs {
            assert_eq!(
                map.qualified(server, tool),
                reversed.qualified(server, tool)
            );
        }
    }

    #[test]
    fn long_name_collisions_stay_unique() {
        let long = "y".repeat(80);
        let pairs = [
            ("s", long.as_str()),
            ("s", "y"),
            ("s.", long.as_str()),
            ("s_", long.as_str()),
        ];
        let map = NameMap::build(pairs);
        let mut names: Vec<&str> = pairs
            .iter()
            .map(|(s, t)| map.qualified(s, t).unwrap())
            .collect();
        for n in &names {
            assert!(is_valid_name(n), "{n}");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 4);
    }

    #[test]
    fn a_later_colliding_tool_never_takes_over_a_name_in_use() {
        // `mcp__a__b__c` belongs to server `a__b`'s tool `c`; then server `a` lists `b__c`,
        // which sorts first and would take the plain name in a fresh build.
        let before = NameMap::build([("a__b", "c")]);
        assert_eq!(before.qualified("a__b", "c"), Some("mcp__a__b__c"));
        let after = NameMap::build_keeping([("a__b", "c"), ("a", "b__c")], &before);
        assert_eq!(after.qualified("a__b", "c"), Some("mcp__a__b__c"));
        let stolen = after.resolve("mcp__a__b__c").unwrap();
        assert_eq!(
            (stolen.server.as_str(), stolen.tool.as_str()),
            ("a__b", "c")
        );
        let newcomer = after.qualified("a", "b__c").unwrap();
        assert_ne!(newcomer, "mcp__a__b__c");
        assert!(is_valid_name(newcomer), "{newcomer}");
        assert_eq!(after.len(), 2);
        // A fresh build (a new process) still follows the (server, tool) order.
        let fresh = NameMap::build([("a__b", "c"), ("a", "b__c")]);
        assert_eq!(fresh.qualified("a", "b__c"), Some("mcp__a__b__c"));
        // The newcomer keeps its name when the other tool is gone.
        let later = NameMap::build_keeping([("a", "b__c")], &after);
        assert_eq!(later.qualified("a", "b__c"), Some(newcomer));
    }

    #[test]
    fn a_name_stays_with_its_server_while_the_server_is_down() {
        // Server `a__b` owns `mcp__a__b__c`, then goes down: its tools leave the catalog.
        let mut ledger = NameMap::default();
        let up = NameMap::build_keeping([("a__b", "c")], &ledger);
        ledger.remember(&up);
        let down = NameMap::build_keeping(std::iter::empty(), &ledger);
        ledger.remember(&down);
        assert!(down.is_empty());
        // Server `a` lists `b__c` meanwhile: same qualified name, and it sorts first.
        let taker = NameMap::build_keeping([("a", "b__c")], &ledger);
        ledger.remember(&taker);
        let other = taker.qualified("a", "b__c").unwrap();
        assert_ne!(other, "mcp__a__b__c");
        assert!(taker.resolve("mcp__a__b__c").is_none());
        assert!(is_valid_name(other), "{other}");
        // `a__b` comes back and gets its old name; `a`'s tool keeps its own.
        let back = NameMap::build_keeping([("a", "b__c"), ("a__b", "c")], &ledger);
        ledger.remember(&back);
        assert_eq!(back.qualified("a__b", "c"), Some("mcp__a__b__c"));
        assert_eq!(back.qualified("a", "b__c"), Some(other));
        let owner = back.resolve("mcp__a__b__c").unwrap();
        assert_eq!((owner.server.as_str(), owner.tool.as_str()), ("a__b", "c"));
    }

    #[test]
    fn remember_keeps_the_ledger_one_to_one() {
        let mut ledger = NameMap::build([("s", "a_b")]);
        // A map not built from the ledger gives the name to another origin: it moves.
        ledger.remember(&NameMap::build([("s", "a.b")]));
        assert_eq!(ledger.qualified("s", "a.b"), Some("mcp__s__a_b"));
        assert_eq!(ledger.qualified("s", "a_b"), None);
        ledger.remember(&NameMap::build([("s", "a_b")]));
        assert_eq!((ledger.len(), ledger.by_origin.len()), (1, 1));
        assert_eq!(ledger.qualified("s", "a_b"), Some("mcp__s__a_b"));
        assert_eq!(ledger.qualified("s", "a.b"), None);
    }

    #[test]
    fn the_ledger_is_bounded_by_forgetting_live_servers_old_names() {
        let mut ledger = NameMap::default();
        // Server `down` named one tool and went away; `churn` lists ever new names.
        ledger.remember(&NameMap::build([("down", "keep")]));
        let names: Vec<String> = (0..=MAX_REMEMBERED_NAMES)
            .map(|i| format!("t{i}"))
            .collect();
        ledger.remember(&NameMap::build(names.iter().map(|n| ("churn", n.as_str()))));
        let current = NameMap::build_keeping([("churn", "now")], &ledger);
        ledger.remember(&current);
        let live = std::collections::BTreeSet::from(["churn".to_owned()]);
        ledger.trim(&current, &live);
        assert_eq!(ledger.len(), 2);
        assert_eq!(ledger.qualified("down", "keep"), Some("mcp__down__keep"));
        assert_eq!(ledger.qualified("churn", "now"), Some("mcp__churn__now"));
        // Under the bound nothing is forgotten.
        let mut small = NameMap::build([("s", "a"), ("s", "b")]);
        small.trim(&NameMap::build([("s", "a")]), &live_of("s"));
        assert_eq!(small.len(), 2);
    }

    fn live_of(server: &str) -> std::collections::BTreeSet<String> {
        std::collections::BTreeSet::from([server.to_owned()])
    }
}
