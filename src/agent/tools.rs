//! The tool array of one step: the discovery plane's presentation turned into provider specs.
//! Pure.

use aibuddy_provider::{Presentation as Wire, ToolSpec};

use crate::discovery::{Presentation, PresentedTool};

/// The discovery presentation that matches a route's.
pub fn discovery_presentation(p: Wire) -> Presentation {
    match p {
        Wire::Native => Presentation::ProviderNative,
        Wire::ActiveTools => Presentation::ActiveTools,
    }
}

/// The stored name of a presentation (`runs.presentation`, `run_started`).
pub fn presentation_name(p: Wire) -> &'static str {
    match p {
        Wire::Native => "native",
        Wire::ActiveTools => "active_tools",
    }
}

/// Provider tool specs from the presented tools. The native array carries every available tool
/// (deferred ones flagged); activeTools only the active and activated ones.
pub fn tool_specs(presented: Vec<PresentedTool>) -> Vec<ToolSpec> {
    presented
        .into_iter()
        .map(|t| ToolSpec {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            deferred: t.defer_loading,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deferral_flag_and_presentation_map_through() {
        let specs = tool_specs(vec![
            PresentedTool {
                name: "read_file".into(),
                description: "Read".into(),
                input_schema: json!({"type": "object"}),
                defer_loading: false,
            },
            PresentedTool {
                name: "mcp__gh__create_issue".into(),
                description: "Create".into(),
                input_schema: json!({"type": "object"}),
                defer_loading: true,
            },
        ]);
        assert_eq!(specs.len(), 2);
        assert!(!specs[0].deferred && specs[1].deferred);
        assert_eq!(specs[1].name, "mcp__gh__create_issue");
        assert_eq!(
            discovery_presentation(Wire::Native),
            Presentation::ProviderNative
        );
        assert_eq!(presentation_name(Wire::ActiveTools), "active_tools");
    }
}
