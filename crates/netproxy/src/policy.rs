//! The allow-list decision (pure).
//!
//! An entry is `host`, `host:port`, `*.suffix[:port]` (any name ending in `.suffix`, not `suffix`
//! itself), `*[:port]` (every **public** host), or an IP literal (`10.0.0.5:8080`, `[::1]:3000`).
//! Names are compared lower-case, without a trailing dot.
//!
//! Order of a decision ([`Policy::verdict`], then [`Policy::usable`] on the resolved addresses):
//! 1. a deny entry matching the host and port: refused (deny wins over every allow);
//! 2. an allow entry matching: allowed; `names_host` when the entry is not `*`;
//! 3. otherwise [`Verdict::NotListed`]: the proxy asks its decider;
//! 4. after resolution, every address must be public ([`is_public`]) unless the allowing entry
//!    names the host (`localhost:5173`, `10.0.0.5`, `*.corp.example`); an IP literal in the deny
//!    list also removes that address. No usable address left: refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};

/// `exec.network: true`: the package registries of Rust, Node, Python, Go and Debian.
pub const DEFAULT_ALLOW: &[&str] = &[
    "crates.io",
    "static.crates.io",
    "index.crates.io",
    "registry.npmjs.org",
    "pypi.org",
    "files.pythonhosted.org",
    "proxy.golang.org",
    "sum.golang.org",
    "deb.debian.org",
    "security.debian.org",
];

/// The host part of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// `*`: every public host.
    Any,
    Exact(String),
    /// `*.suffix`: stored without `*.`.
    Suffix(String),
    Ip(IpAddr),
}

/// One allow or deny entry, kept as written (its text names it in decisions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Entry {
    text: String,
    pattern: Pattern,
    port: Option<u16>,
}

/// Why an entry is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryError(pub String);

impl std::fmt::Display for EntryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EntryError {}

impl From<Entry> for String {
    fn from(e: Entry) -> String {
        e.text
    }
}

impl TryFrom<String> for Entry {
    type Error = EntryError;
    fn try_from(s: String) -> Result<Self, EntryError> {
        Entry::parse(&s)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// `host:port`, an IPv6 host in brackets (`[::1]:80`). Pure.
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A host as the proxy compares it: lower-case, no trailing dot, no brackets.
pub fn normalize_host(host: &str) -> String {
    let h = host.trim();
    let h = h
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(h);
    h.trim_end_matches('.').to_ascii_lowercase()
}

impl Entry {
    /// Parses `host[:port]`, `*.suffix[:port]`, `*[:port]`, `ip`, `[ipv6]:port`.
    pub fn parse(text: &str) -> Result<Entry, EntryError> {
        let t = text.trim();
        let bad = |why: &str| EntryError(format!("`{}`: {why}", t.escape_debug()));
        if t.is_empty() {
            return Err(bad("empty entry"));
        }
        // A bare IPv6 literal (several colons, no brackets).
        if let Ok(ip) = t.parse::<Ipv6Addr>() {
            return Ok(Entry {
                text: t.to_string(),
                pattern: Pattern::Ip(IpAddr::V6(ip)),
                port: None,
            });
        }
        let (host, port) = if let Some(rest) = t.strip_prefix('[') {
            let (inner, after) = rest.split_once(']').ok_or_else(|| bad("unclosed `[`"))?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| bad("expected `:port` after `]`"))?,
                ),
            };
            (inner, port)
        } else {
            match t.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (t, None),
            }
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(bad("the port must be a number from 1 to 65535")),
            },
        };
        if host.starts_with("*.") && !valid_name(&normalize_host(&host[2..])) {
            return Err(bad("not a host name after `*.`"));
        }
        let host = normalize_host(host);
        let pattern = if host == "*" {
            Pattern::Any
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            Pattern::Ip(ip)
        } else if let Some(suffix) = host.strip_prefix("*.") {
            if !valid_name(suffix) {
                return Err(bad("not a host name after `*.`"));
            }
            Pattern::Suffix(suffix.to_string())
        } else if valid_name(&host) {
            Pattern::Exact(host)
        } else {
            return Err(bad(
                "not a host name (`example.com`, `*.example.com`, `*`, an IP address; optional `:port`)",
            ));
        };
        Ok(Entry {
            text: t.to_string(),
            pattern,
            port,
        })
    }

    /// The entry as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// `*` (every public host), with or without a port.
    pub fn is_any(&self) -> bool {
        self.pattern == Pattern::Any
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match &self.pattern {
            Pattern::Any => true,
            Pattern::Exact(name) => name == host,
            Pattern::Suffix(s) => under(host, s),
            Pattern::Ip(ip) => host
                .parse::<IpAddr>()
                .is_ok_and(|h| canonical(h) == canonical(*ip)),
        }
    }

    /// Whether every host and port this entry matches is matched by `other` too (used to decide
    /// whether a project's entry only narrows the person's list). `*` never covers a non-public
    /// host, so it does not cover names it cannot check (`localhost`, IP literals of private
    /// ranges): those must be named by the person.
    pub fn covered_by(&self, other: &Entry) -> bool {
        let port_ok = match (other.port, self.port) {
            (None, _) => true,
            (Some(o), Some(s)) => o == s,
            (Some(_), None) => false,
        };
        if !port_ok {
            return false;
        }
        match (&other.pattern, &self.pattern) {
            (Pattern::Any, Pattern::Any) => true,
            (Pattern::Any, Pattern::Ip(ip)) => is_public(*ip),
            (Pattern::Any, Pattern::Exact(n)) => n != "localhost" && !n.ends_with(".localhost"),
            (Pattern::Any, Pattern::Suffix(s)) => s != "localhost",
            (Pattern::Exact(a), Pattern::Exact(b)) => a == b,
            (Pattern::Suffix(s), Pattern::Exact(n)) => under(n, s),
            (Pattern::Suffix(a), Pattern::Suffix(b)) => b == a || under(b, a),
            (Pattern::Ip(a), Pattern::Ip(b)) => canonical(*a) == canonical(*b),
            _ => false,
        }
    }

    fn names_host(&self) -> bool {
        self.pattern != Pattern::Any
    }
}

/// `name` is a subdomain of `suffix` (`a.b.c` under `b.c`, not `b.c` itself, not `xb.c`).
fn under(name: &str, suffix: &str) -> bool {
    name.len() > suffix.len() + 1
        && name.ends_with(suffix)
        && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
}

/// IPv4-mapped IPv6 addresses compare as their IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Whether an address is on the public internet: not loopback, private (RFC 1918, unique local),
/// link-local, carrier-grade NAT, unspecified, multicast, broadcast, documentation or benchmark
/// ranges. IPv4-mapped IPv6 addresses are judged as their IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0064 && s[1] == 0xff9b) // NAT64 (maps IPv4, possibly private)
                || s[0] == 0x2002 // 6to4 (maps IPv4)
                || (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0 && s[4] == 0 && s[5] == 0)) // IPv4-compatible
        }
    }
}

fn public_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64.0.0/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0.0/24
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // 198.18.0.0/15
        || o[0] >= 240)
}

/// What the lists say about a host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A deny entry matches.
    Denied { rule: String },
    /// An allow entry matches; `names_host`: it is not `*` (non-public addresses allowed).
    Allowed { rule: String, names_host: bool },
    /// On no list: the decider is asked.
    NotListed,
}

/// `exec.network`'s lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    #[serde(default)]
    pub allow: Vec<Entry>,
    #[serde(default)]
    pub deny: Vec<Entry>,
}

impl Policy {
    /// The lists from settings text; entries that do not parse are returned apart (the caller
    /// reports them; they are left out, so a bad allow entry allows nothing and a bad deny
    /// entry is reported as a problem).
    pub fn from_lists(allow: &[String], deny: &[String]) -> (Policy, Vec<EntryError>) {
        let mut errors = Vec::new();
        let mut parse = |list: &[String]| -> Vec<Entry> {
            list.iter()
                .filter_map(|s| Entry::parse(s).map_err(|e| errors.push(e)).ok())
                .collect()
        };
        let allow = parse(allow);
        let deny = parse(deny);
        (Policy { allow, deny }, errors)
    }

    /// `exec.network: true`: [`DEFAULT_ALLOW`].
    pub fn default_registries() -> Policy {
        Policy {
            allow: DEFAULT_ALLOW
                .iter()
                .map(|s| Entry::parse(s).expect("default entries parse"))
                .collect(),
            deny: Vec::new(),
        }
    }

    /// `{"allow": ["*"]}`: every public host.
    pub fn any_public() -> Policy {
        Policy {
            allow: vec![Entry::parse("*").expect("`*` parses")],
            deny: Vec::new(),
        }
    }

    /// Steps 1-3 of the decision (see the module documentation).
    pub fn verdict(&self, host: &str, port: u16) -> Verdict {
        let host = normalize_host(host);
        if let Some(d) = self.deny.iter().find(|e| e.matches(&host, port)) {
            return Verdict::Denied {
                rule: d.text.clone(),
            };
        }
        // An entry that names the host wins over `*` (it allows non-public addresses).
        let mut allowing = self.allow.iter().filter(|e| e.matches(&host, port));
        let first = allowing.next();
        match first {
            Some(e) if e.names_host() => Verdict::Allowed {
                rule: e.text.clone(),
                names_host: true,
            },
            Some(any) => match allowing.find(|e| e.names_host()) {
                Some(e) => Verdict::Allowed {
                    rule: e.text.clone(),
                    names_host: true,
                },
                None => Verdict::Allowed {
                    rule: any.text.clone(),
                    names_host: false,
                },
            },
            None => Verdict::NotListed,
        }
    }

    /// Step 4: the resolved addresses the proxy may connect to, or the first refused one when
    /// none is left.
    pub fn usable(
        &self,
        names_host: bool,
        addrs: &[SocketAddr],
    ) -> Result<Vec<SocketAddr>, IpAddr> {
        let denied = |a: &SocketAddr| {
            self.deny.iter().any(|e| {
                matches!(e.pattern, Pattern::Ip(_))
                    && e.matches(&canonical(a.ip()).to_string(), a.port())
            })
        };
        let ok: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| !denied(a) && (names_host || is_public(a.ip())))
            .collect();
        match (ok.is_empty(), addrs.first()) {
            (false, _) => Ok(ok),
            (true, Some(first)) => Err(first.ip()),
            (true, None) => Err(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        }
    }

    /// The lists as text, for a scope line: `allow: a, b; deny: c`.
    pub fn describe(&self) -> String {
        let join = |l: &[Entry]| {
            if l.is_empty() {
                "(none)".to_string()
            } else {
                l.iter()
                    .map(|e| e.text.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        if self.deny.is_empty() {
            format!("allow: {}", join(&self.allow))
        } else {
            format!("allow: {}; deny: {}", join(&self.allow), join(&self.deny))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (p, errors) = Policy::from_lists(&s(allow), &s(deny));
        assert!(errors.is_empty(), "{errors:?}");
        p
    }

    fn allowed(rule: &str, names_host: bool) -> Verdict {
        Verdict::Allowed {
            rule: rule.into(),
            names_host,
        }
    }

    #[test]
    fn the_decision_table() {
        let p = policy(
            &[
                "crates.io",
                "*.npmjs.org",
                "localhost:5173",
                "*",
                "10.0.0.5:8080",
            ],
            &["evil.npmjs.org", "*:25", "bad.example"],
        );
        let cases: &[(&str, u16, Verdict)] = &[
            ("crates.io", 443, allowed("crates.io", true)),
            ("CRATES.IO.", 443, allowed("crates.io", true)),
            ("registry.npmjs.org", 443, allowed("*.npmjs.org", true)),
            ("npmjs.org", 443, allowed("*", false)),
            (
                "evil.npmjs.org",
                443,
                Verdict::Denied {
                    rule: "evil.npmjs.org".into(),
                },
            ),
            (
                "crates.io",
                25,
                Verdict::Denied {
                    rule: "*:25".into(),
                },
            ),
            (
                "bad.example",
                80,
                Verdict::Denied {
                    rule: "bad.example".into(),
                },
            ),
            ("localhost", 5173, allowed("localhost:5173", true)),
            ("localhost", 5174, allowed("*", false)),
            ("10.0.0.5", 8080, allowed("10.0.0.5:8080", true)),
            ("example.com", 443, allowed("*", false)),
        ];
        for (host, port, want) in cases {
            assert_eq!(&p.verdict(host, *port), want, "{host}:{port}");
        }
        let narrow = policy(&["crates.io"], &[]);
        assert_eq!(narrow.verdict("example.com", 443), Verdict::NotListed);
        assert_eq!(narrow.verdict("sub.crates.io", 443), Verdict::NotListed);
    }

    #[test]
    fn addresses_are_checked_not_names() {
        let p = policy(&["*", "localhost:5173"], &["203.0.113.9"]);
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        // A public name that resolves to loopback (DNS rebinding) under `*`: refused.
        assert_eq!(
            p.usable(false, &[a("127.0.0.1:443")]),
            Err("127.0.0.1".parse().unwrap())
        );
        assert!(p.usable(false, &[a("[::ffff:10.1.2.3]:443")]).is_err());
        assert_eq!(
            p.usable(false, &[a("10.0.0.1:443"), a("93.184.216.34:443")]),
            Ok(vec![a("93.184.216.34:443")])
        );
        // Named by an entry: loopback allowed.
        assert_eq!(
            p.usable(true, &[a("127.0.0.1:5173")]),
            Ok(vec![a("127.0.0.1:5173")])
        );
        // An IP literal in the deny list removes that address.
        assert!(p.usable(true, &[a("203.0.113.9:80")]).is_err());
    }

    #[test]
    fn public_and_non_public_ranges() {
        for ip in [
            "127.0.0.1",
            "10.1.1.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:192.168.0.1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn entries_parse_or_say_why() {
        for ok in [
            "crates.io",
            "crates.io:443",
            "*.example.com",
            "*",
            "*:443",
            "10.0.0.1",
            "[::1]:3000",
            "::1",
            "localhost:5173",
        ] {
            assert!(Entry::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "exa mple.com",
            "crates.io:0",
            "crates.io:99999",
            "*.",
            "**.x",
            "[::1",
            "http://x",
            "a..b",
        ] {
            assert!(Entry::parse(bad).is_err(), "{bad}");
        }
        let e: Entry = serde_json::from_str("\"*.crates.io:443\"").unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), "\"*.crates.io:443\"");
    }

    #[test]
    fn coverage_for_narrowing() {
        let e = |s: &str| Entry::parse(s).unwrap();
        assert!(e("crates.io").covered_by(&e("crates.io")));
        assert!(e("crates.io:443").covered_by(&e("crates.io")));
        assert!(!e("crates.io").covered_by(&e("crates.io:443")));
        assert!(e("a.crates.io").covered_by(&e("*.crates.io")));
        assert!(e("*.a.crates.io").covered_by(&e("*.crates.io")));
        assert!(!e("crates.io").covered_by(&e("*.crates.io")));
        assert!(e("example.com").covered_by(&e("*")));
        assert!(!e("localhost:5173").covered_by(&e("*")));
        assert!(!e("127.0.0.1").covered_by(&e("*")));
        assert!(e("8.8.8.8").covered_by(&e("*")));
        assert!(!e("*").covered_by(&e("crates.io")));
    }
}
