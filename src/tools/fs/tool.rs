//! The typed shape every filesystem tool has ([`FsTool`]) and the one adaptor ([`Handler`]) that
//! makes such a tool a registry [`ToolHandler`].
//!
//! Arguments are decoded into the tool's own `Args` type, the sandbox returns the tool's own
//! `Output` type, and the projections are functions of those two types. The stored raw output is
//! the serialised `Output`; a raw output or arguments that no longer decode as the tool's types
//! are a Projection-stage error (shown as such, logged), never a silent fallback to raw JSON.

use std::sync::Arc;

use aibuddy_sandbox::{Sandbox, SandboxError};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::projection;
use crate::contract::{DefineError, ToolError, define_tool};
use crate::registry::{CallContext, Prepared, RawOutput, Risk, Source, ToolDef, ToolHandler};

/// One filesystem tool: its definition (name, description, schema, risk) and its typed code.
#[async_trait]
pub trait FsTool: Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    const RISK: Risk;
    /// The decoded arguments (names are the stable contract of [`FsTool::schema`]).
    type Args: DeserializeOwned + Send + Sync;
    /// What the sandbox returns; serialised as the call's raw output.
    type Output: Serialize + DeserializeOwned + Send + Sync;

    /// The input schema (JSON Schema).
    fn schema() -> Value;

    /// Describes the call for confirmation, before any effect. Read-only tools name their path.
    async fn prepare(&self, _ctx: &CallContext, args: Self::Args) -> Result<Prepared, ToolError> {
        Ok(Prepared {
            target: Self::target(&args),
            inside_project: true,
            ..Prepared::default()
        })
    }

    /// The path a call is about, as given ("" when it defaults to the project root).
    fn target(args: &Self::Args) -> String;

    /// Performs the call on the run's sandbox.
    async fn run(
        &self,
        ctx: &CallContext,
        sandbox: Arc<dyn Sandbox>,
        args: Self::Args,
    ) -> Result<Self::Output, ToolError>;

    /// The model projection: the exact text later model steps see.
    fn model(args: &Self::Args, out: &Self::Output) -> String;

    /// The client projection; by default the model text's last line as a summary, and the result.
    fn client(args: &Self::Args, out: &Self::Output, raw: &Value) -> Value {
        json!({ "summary": Self::model(args, out).lines().last().unwrap_or_default(), "result": raw })
    }
}

/// The registry entry of one filesystem tool.
pub fn def<T: FsTool>(tool: T) -> Result<ToolDef, DefineError> {
    Ok(ToolDef {
        spec: define_tool(T::NAME, T::DESCRIPTION, T::schema())?,
        risk: T::RISK,
        source: Source::Core,
        handler: Arc::new(Handler(tool)),
    })
}

/// A sandbox failure as the typed tool error (stage and stable code from the sandbox); an escape
/// also says that nothing was touched.
pub fn tool_error(e: SandboxError) -> ToolError {
    let escape = e.is_escape();
    let mut err = ToolError::from(e);
    if escape {
        err.message
            .push_str(" (only paths inside the project are accessible; nothing was touched)");
    }
    err
}

/// Decodes a tool's arguments (a Parameters-stage error when they do not fit).
pub fn decode<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    T::deserialize(args)
        .map_err(|e| ToolError::parameters("invalid_arguments", format!("invalid arguments: {e}")))
}

/// The adaptor from a typed [`FsTool`] to the registry's [`ToolHandler`].
pub struct Handler<T>(pub T);

impl<T: FsTool> Handler<T> {
    /// The call's arguments and raw output as the tool's types, or the Projection-stage error.
    fn typed(&self, args: &Value, raw: &RawOutput) -> Result<(T::Args, T::Output), ToolError> {
        let mismatch = |what: &str, e: serde_json::Error| {
            let err = ToolError::projection(
                "result_mismatch",
                format!(
                    "the stored {what} of {} does not match the tool: {e}",
                    T::NAME
                ),
            );
            tracing::warn!(tool = T::NAME, "{err}");
            err
        };
        let a = T::Args::deserialize(args).map_err(|e| mismatch("arguments", e))?;
        let o = T::Output::deserialize(&raw.value).map_err(|e| mismatch("result", e))?;
        Ok((a, o))
    }
}

#[async_trait]
impl<T: FsTool> ToolHandler for Handler<T> {
    async fn prepare(&self, ctx: &CallContext, args: &Value) -> Result<Prepared, ToolError> {
        self.0.prepare(ctx, decode(args)?).await
    }

    async fn run(&self, ctx: &CallContext, args: &Value) -> Result<RawOutput, ToolError> {
        let sandbox = ctx.services.sandbox().cloned()?;
        let out = self.0.run(ctx, sandbox, decode(args)?).await?;
        serde_json::to_value(&out)
            .map(RawOutput::json)
            .map_err(|e| {
                ToolError::projection("serialize", format!("could not serialise the result: {e}"))
            })
    }

    fn client(&self, args: &Value, raw: &RawOutput) -> Value {
        match self.typed(args, raw) {
            Ok((a, o)) => T::client(&a, &o, &raw.value),
            Err(e) => json!({ "summary": e.to_string(), "error": e }),
        }
    }

    fn model(&self, args: &Value, raw: &RawOutput) -> String {
        match self.typed(args, raw) {
            Ok((a, o)) => T::model(&a, &o),
            Err(e) => e.model_text(),
        }
    }

    /// A stored result of another shape is a failed call (Projection stage), not projection text.
    fn project(&self, args: &Value, raw: &RawOutput) -> Result<(Value, String), ToolError> {
        let (a, o) = self.typed(args, raw)?;
        Ok((T::client(&a, &o, &raw.value), T::model(&a, &o)))
    }

    fn trim(&self, args: &Value, raw: &RawOutput, max_chars: usize) -> Option<String> {
        projection::trim_lines(&self.model(args, raw), max_chars)
    }
}

#[cfg(test)]
mod tests {
    use aibuddy_sandbox::SandboxError;

    use super::*;
    use crate::contract::Stage;
    use crate::tools::fs::{Glob, ReadFile};

    #[test]
    fn sandbox_errors_keep_stage_and_code() {
        let e = tool_error(SandboxError::Escape {
            path: "../x".into(),
        });
        assert_eq!(
            (e.stage, e.code.as_str()),
            (Stage::Authorization, "path_escape")
        );
        assert!(e.message.contains("../x"));
        assert!(e.message.contains("nothing was touched"), "{}", e.message);
        let e = tool_error(SandboxError::Verification {
            path: "a".into(),
            detail: "d".into(),
        });
        assert_eq!(e.stage, Stage::Verification);
        assert!(!e.message.contains("nothing was touched"));
    }

    #[test]
    fn a_result_of_another_shape_is_a_projection_error_not_raw_json() {
        let handler = Handler(Glob);
        let args = json!({"pattern": "*.rs"});
        let raw = RawOutput::json(json!({"secret_field": "raw text the model must not get"}));
        let model = handler.model(&args, &raw);
        assert!(
            model.starts_with("Error [Projection/result_mismatch]"),
            "{model}"
        );
        assert!(
            !model.contains("raw text the model must not get"),
            "{model}"
        );
        // As a call outcome it is a failed call at the Projection stage, not projection text.
        let err = handler.project(&args, &raw).unwrap_err();
        assert_eq!(err.stage, Stage::Projection);
        assert_eq!(err.code, "result_mismatch");
        assert!(!err.message.contains("raw text the model must not get"));
        let client = handler.client(&args, &raw);
        assert_eq!(client["error"]["stage"], "Projection", "{client}");
        assert_eq!(client["error"]["code"], "result_mismatch", "{client}");
        assert!(client.get("result").is_none(), "{client}");
        // Arguments that no longer fit the tool are the same Projection error.
        let model = Handler(ReadFile).model(&json!({"offset": 1}), &raw);
        assert!(
            model.starts_with("Error [Projection/result_mismatch]"),
            "{model}"
        );
    }

    #[test]
    fn a_matching_result_is_projected_by_its_tool() {
        let handler = Handler(Glob);
        let args = json!({"pattern": "*.rs"});
        let raw = RawOutput::json(json!({"path": "", "entries": ["src/a.rs"], "omitted": 0}));
        let model = handler.model(&args, &raw);
        assert!(model.contains("src/a.rs"), "{model}");
        assert!(!model.starts_with("Error"), "{model}");
        let (client, projected) = handler.project(&args, &raw).unwrap();
        assert_eq!(projected, model);
        assert_eq!(client["result"], raw.value);
    }
}
