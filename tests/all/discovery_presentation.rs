//! One defer decision, two presentations (pure, no processes): the provider-native array keeps
//! every available tool with `defer_loading` on the deferred ones, the active-tools array holds
//! only what is active in the run; activation and the gates are read from the same `ToolSet`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use aibuddy::contract::{DefineError, ToolError, define_tool};
use aibuddy::discovery::service::DiscoveryService;
use aibuddy::discovery::{self, Exposure, HostCaps, Presentation, present};
use aibuddy::registry::{
    CallContext, DeclaredNames, RawOutput, Registry, Requirement, Risk, Source, ToolConfig,
    ToolConfigMeta, ToolDef, ToolHandler,
};
use aibuddy::settings::Settings;
use aibuddy::tools::tool_search::{self, ToolSearchConfig};
use async_trait::async_trait;
use serde_json::{Value, json};

struct Nop;
#[async_trait]
impl ToolHandler for Nop {
    async fn run(&self, _ctx: &CallContext, _args: &Value) -> Result<RawOutput, ToolError> {
        Ok(RawOutput::json(json!(null)))
    }
}

/// A config generating `n` tools named `<prefix><i>` from `source`.
struct Gen {
    key: String,
    prefix: String,
    n: usize,
    source: Source,
}
impl ToolConfig for Gen {
    fn key(&self) -> &str {
        &self.key
    }
    fn requirements(&self) -> Vec<Requirement> {
        match &self.source {
            Source::Mcp(s) => vec![Requirement::McpServer(s.clone())],
            _ => vec![],
        }
    }
    fn tools(&self) -> Result<Vec<ToolDef>, DefineError> {
        (0..self.n)
            .map(|i| {
                Ok(ToolDef {
                    spec: define_tool(
                        format!("{}{i}", self.prefix),
                        format!("tool {i}"),
                        json!({"type": "object", "properties": {"x": {"type": "string"}}}),
                    )?,
                    risk: Risk::ReadOnly,
                    source: self.source.clone(),
                    handler: Arc::new(Nop),
                })
            })
            .collect()
    }
}

fn gen_config(
    key: &str,
    prefix: &str,
    n: usize,
    source: Source,
) -> (Arc<dyn ToolConfig>, ToolConfigMeta) {
    let meta = ToolConfigMeta {
        key: key.into(),
        display_name: key.into(),
        category: "test".into(),
        risk: Risk::ReadOnly,
        disposable: false,
        names: DeclaredNames::Prefix(prefix.into()),
    };
    (
        Arc::new(Gen {
            key: key.into(),
            prefix: prefix.into(),
            n,
            source,
        }),
        meta,
    )
}

fn registry() -> Registry {
    let parts = [
        gen_config("core", "core_", 2, Source::Core),
        gen_config("mcp:big", "mcp__big__t", 12, Source::Mcp("big".into())),
        gen_config("mcp:small", "mcp__small__t", 2, Source::Mcp("small".into())),
    ];
    let mut configs: Vec<Arc<dyn ToolConfig>> = parts.iter().map(|(c, _)| c.clone()).collect();
    let mut metas: Vec<ToolConfigMeta> = parts.into_iter().map(|(_, m)| m).collect();
    configs.push(Arc::new(ToolSearchConfig::new(Arc::new(
        DiscoveryService::new(),
    ))));
    metas.push(tool_search::meta());
    Registry::build(configs, metas).expect("consistent")
}

fn host() -> HostCaps {
    HostCaps {
        mcp: BTreeMap::from([("big".to_string(), Ok(())), ("small".to_string(), Ok(()))]),
        ..Default::default()
    }
}

fn settings() -> Settings {
    let mut s = Settings::default();
    s.tools.enabled.push("core".into());
    s
}

#[test]
fn both_presentations_read_one_decision() {
    let reg = registry();
    let toolset = discovery::effective(&reg, &settings(), &host(), &BTreeSet::new());
    // The gates: big (12 > 10) is deferred alone.
    assert!(toolset.defer.defers("big") && !toolset.defer.defers("small"));
    assert_eq!(
        toolset.get("mcp__big__t0").unwrap().exposure,
        Exposure::Deferred
    );
    assert_eq!(
        toolset.get("tool_search").unwrap().exposure,
        Exposure::Active
    );

    let native = present(&toolset, &reg, Presentation::ProviderNative);
    let names: BTreeSet<&str> = native.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        native.len(),
        2 + 12 + 2 + 1,
        "every available tool, our client-side tool_search included"
    );
    assert!(names.contains("tool_search"));
    assert!(
        native
            .iter()
            .any(|t| t.name == "tool_search" && !t.defer_loading),
        "tool_search is never deferred"
    );
    for t in &native {
        assert_eq!(
            t.defer_loading,
            t.name.starts_with("mcp__big__"),
            "{}",
            t.name
        );
        assert_eq!(t.input_schema["type"], "object");
    }
    // Serialized, only deferred tools carry the flag.
    let wire = serde_json::to_value(&native).unwrap();
    assert!(
        wire.as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("defer_loading").is_none_or(|v| v == true))
    );

    let active = present(&toolset, &reg, Presentation::ActiveTools);
    let names: BTreeSet<&str> = active.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "core_0",
            "core_1",
            "mcp__small__t0",
            "mcp__small__t1",
            "tool_search"
        ])
    );
    assert!(active.iter().all(|t| !t.defer_loading));

    // Activation changes only the active-tools path; the native array is stable.
    let activated = BTreeSet::from(["mcp__big__t3".to_string()]);
    let toolset2 = discovery::effective(&reg, &settings(), &host(), &activated);
    assert_eq!(toolset2.defer, toolset.defer);
    let active2 = present(&toolset2, &reg, Presentation::ActiveTools);
    assert!(active2.iter().any(|t| t.name == "mcp__big__t3"));
    assert_eq!(active2.len(), active.len() + 1);
    assert_eq!(
        present(&toolset2, &reg, Presentation::ProviderNative),
        native
    );
}

#[test]
fn nothing_deferred_means_identical_arrays_and_no_tool_search() {
    let reg = registry();
    let mut h = host();
    h.mcp.insert("big".into(), Err("stopped".into()));
    let toolset = discovery::effective(&reg, &settings(), &h, &BTreeSet::new());
    assert!(!toolset.defer.any());
    assert_eq!(
        toolset.get("tool_search").unwrap().exposure,
        Exposure::Absent
    );
    let native = present(&toolset, &reg, Presentation::ProviderNative);
    let active = present(&toolset, &reg, Presentation::ActiveTools);
    assert_eq!(native, active);
    assert!(native.iter().all(|t| !t.name.starts_with("mcp__big__")));
}
