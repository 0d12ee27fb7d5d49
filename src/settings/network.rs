//! `exec.network`: `false` (no egress at all), `true` (the default registries,
//! [`DEFAULT_ALLOW`]), or `{"allow": [...], "deny": [...]}` (entries: `host`, `*.suffix`, `*`, an
//! IP address, each with an optional `:port`; deny wins; `*` never covers loopback or private
//! addresses, which only an entry naming them allows, e.g. `localhost:5173`). A missing `allow`
//! is the default registries. Every command reaches the network only through the allow-list proxy
//! (`aibuddy_netproxy`); a host on no list is asked about (`execute`'s network question), or refused
//! when nobody can be asked, and a refusal is named in the result.

use aibuddy_sandbox::aibuddy_exec::netproxy::{DEFAULT_ALLOW, Entry, EntryError, Policy};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};

use super::authority::Effect;

/// The value of `exec.network`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NetworkSetting {
    /// `false`.
    Off,
    /// `true`: [`DEFAULT_ALLOW`].
    #[default]
    Registries,
    /// `{"allow": [...], "deny": [...]}`; `allow: None` = [`DEFAULT_ALLOW`].
    Lists {
        allow: Option<Vec<String>>,
        deny: Vec<String>,
    },
}

impl NetworkSetting {
    /// Any egress at all (through the proxy).
    pub fn is_on(&self) -> bool {
        !matches!(self, NetworkSetting::Off)
    }

    /// The effective allow and deny lists as written (empty when off).
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let defaults = || DEFAULT_ALLOW.iter().map(|s| s.to_string()).collect();
        match self {
            NetworkSetting::Off => (Vec::new(), Vec::new()),
            NetworkSetting::Registries => (defaults(), Vec::new()),
            NetworkSetting::Lists { allow, deny } => {
                (allow.clone().unwrap_or_else(defaults), deny.clone())
            }
        }
    }

    /// The proxy's policy (`None` when off); entries that do not parse are left out (they are
    /// settings problems, see [`NetworkSetting::entry_errors`]).
    pub fn policy(&self) -> Option<Policy> {
        self.is_on().then(|| {
            let (allow, deny) = self.lists();
            Policy::from_lists(&allow, &deny).0
        })
    }

    /// The entries that are not entries.
    pub fn entry_errors(&self) -> Vec<EntryError> {
        let (allow, deny) = self.lists();
        Policy::from_lists(&allow, &deny).1
    }
}

impl Serialize for NetworkSetting {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            NetworkSetting::Off => s.serialize_bool(false),
            NetworkSetting::Registries => s.serialize_bool(true),
            NetworkSetting::Lists { allow, deny } => {
                let mut v = serde_json::Map::new();
                if let Some(a) = allow {
                    v.insert("allow".into(), json!(a));
                }
                v.insert("deny".into(), json!(deny));
                Value::Object(v).serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for NetworkSetting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NetworkSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a boolean or an object with `allow` and `deny` lists")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<NetworkSetting, E> {
                Ok(if b {
                    NetworkSetting::Registries
                } else {
                    NetworkSetting::Off
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<NetworkSetting, A::Error> {
                let (mut allow, mut deny) = (None, Vec::new());
                while let Some(k) = m.next_key::<String>()? {
                    match k.as_str() {
                        "allow" => allow = Some(m.next_value::<Vec<String>>()?),
                        "deny" => deny = m.next_value::<Vec<String>>()?,
                        other => return Err(de::Error::unknown_field(other, &["allow", "deny"])),
                    }
                }
                Ok(NetworkSetting::Lists { allow, deny })
            }
        }
        d.deserialize_any(V)
    }
}

/// The settings problem of a value with entries that do not parse (never quoting the whole value).
pub(crate) fn invalid(value: &Value) -> Option<String> {
    let setting: NetworkSetting = serde_json::from_value(value.clone()).ok()?;
    let errors = setting.entry_errors();
    (!errors.is_empty()).then(|| {
        let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
        format!(
            "not a network entry: {} (`host`, `*.suffix`, `*` or an IP address, with an optional `:port`); using the default",
            list.join("; ")
        )
    })
}

/// Whether a project's `exec.network` only narrows the person's: it is off, or every allow entry
/// is covered by one of the person's and it keeps every deny entry of the person's. Otherwise,
/// untrusted, the covered allow entries and the union of the deny lists apply.
pub(crate) fn effect(value: &Value, user: &NetworkSetting) -> Effect {
    let Ok(project) = serde_json::from_value::<NetworkSetting>(value.clone()) else {
        return Effect::Widens;
    };
    if !project.is_on() {
        return Effect::Narrows;
    }
    if !user.is_on() {
        return Effect::Widens;
    }
    let (pa, pd) = project.lists();
    let (ua, ud) = user.lists();
    let parse =
        |l: &[String]| -> Vec<Entry> { l.iter().filter_map(|s| Entry::parse(s).ok()).collect() };
    let user_allow = parse(&ua);
    let covered: Vec<String> = pa
        .iter()
        .filter(|s| Entry::parse(s).is_ok_and(|e| user_allow.iter().any(|u| e.covered_by(u))))
        .cloned()
        .collect();
    let keeps_deny = ud.iter().all(|d| pd.contains(d));
    if covered.len() == pa.len() && keeps_deny {
        return Effect::Narrows;
    }
    let mut deny = ud.clone();
    deny.extend(pd.into_iter().filter(|d| !ud.contains(d)));
    Effect::WidensPartly(json!({ "allow": covered, "deny": deny }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn user(v: Value) -> NetworkSetting {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn values_round_trip_and_bad_ones_say_why() {
        for v in [
            json!(true),
            json!(false),
            json!({"allow": ["*"], "deny": ["x.org"]}),
            json!({"deny": []}),
        ] {
            let s: NetworkSetting = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&s).unwrap(), v);
        }
        let e = serde_json::from_value::<NetworkSetting>(json!({"allow": ["a"], "nope": 1}));
        assert!(e.unwrap_err().to_string().contains("unknown field `nope`"));
        assert!(
            invalid(&json!({"allow": ["exa mple.com"]}))
                .unwrap()
                .contains("not a network entry")
        );
        assert_eq!(invalid(&json!(true)), None);
        assert_eq!(
            user(json!({"deny": ["x.org"]})).lists().0.len(),
            DEFAULT_ALLOW.len(),
            "a missing allow is the default registries"
        );
    }

    #[test]
    fn a_bad_entry_is_a_problem_line_and_the_field_falls_back() {
        let mut problems = Vec::new();
        let c = super::super::parse::clean(
            "s.json",
            r#"{"exec": {"network": {"allow": ["crates.io", "exa mple"]}}}"#,
            &mut problems,
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].field, "exec.network");
        assert!(
            problems[0].message.contains("not a network entry"),
            "{}",
            problems[0].message
        );
        assert!(c.map["exec"].get("network").is_none());
    }

    #[test]
    fn a_project_only_narrows_unless_trusted() {
        let cases = [
            // (project, user, effect)
            (json!(false), json!(true), Effect::Narrows),
            (json!(true), json!(false), Effect::Widens),
            (json!(true), json!(true), Effect::Narrows),
            (
                json!({"allow": ["crates.io"]}),
                json!(true),
                Effect::Narrows,
            ),
            (
                json!({"allow": ["a.example.com"]}),
                json!({"allow": ["*.example.com"]}),
                Effect::Narrows,
            ),
            (
                json!({"allow": ["example.com"]}),
                json!({"allow": ["*"]}),
                Effect::Narrows,
            ),
            (
                json!({"allow": ["localhost:5173", "crates.io"]}),
                json!({"allow": ["*"]}),
                Effect::WidensPartly(json!({"allow": ["crates.io"], "deny": []})),
            ),
            (
                json!({"allow": ["*"]}),
                json!(true),
                Effect::WidensPartly(json!({"allow": [], "deny": []})),
            ),
            (
                json!({"allow": ["crates.io"], "deny": []}),
                json!({"allow": ["crates.io"], "deny": ["static.crates.io"]}),
                Effect::WidensPartly(json!({"allow": ["crates.io"], "deny": ["static.crates.io"]})),
            ),
            (json!({"deny": ["crates.io"]}), json!(true), Effect::Narrows),
            (
                json!({"deny": ["crates.io"]}),
                json!({"allow": ["pypi.org"]}),
                Effect::WidensPartly(json!({"allow": ["pypi.org"], "deny": ["crates.io"]})),
            ),
        ];
        for (project, u, want) in cases {
            assert_eq!(
                effect(&project, &user(u.clone())),
                want,
                "{project} over {u}"
            );
        }
    }
}
