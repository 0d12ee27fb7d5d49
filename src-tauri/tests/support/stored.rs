//! A stored run with finished calls, as a reopened run or History reads it back.

use std::path::Path;

use aibuddy_store::{
    CallFinish, CallStart, CallStatus, NewMessage, NewRun, RawFormat, RequestedCall, Store,
};
use serde_json::Value;

/// Stores a finished run of `project` in the store at `data`: one assistant message asking for
/// `calls` (id, tool, stored client projection), each call finished ok with its projection and
/// its tool-result message. Returns the run id.
pub fn stored_run(
    project: &Path,
    data: &Path,
    title: &str,
    calls: &[(&str, &str, Value)],
) -> String {
    let root = std::fs::canonicalize(project)
        .unwrap()
        .display()
        .to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = Store::open(data).unwrap();
    rt.block_on(async {
        let run = store
            .create_run(NewRun {
                run_id: None,
                title: Some(title.into()),
                provider: "local".into(),
                model: "m".into(),
                presentation: "native".into(),
                project_root: Some(root.clone()),
            })
            .await
            .unwrap();
        let requested = calls
            .iter()
            .map(|(id, tool, _)| RequestedCall {
                tool_call_id: id.to_string(),
                tool: tool.to_string(),
            })
            .collect();
        store
            .append_message(
                &run,
                NewMessage::assistant("anthropic", "{}".into(), None, requested),
            )
            .await
            .unwrap();
        for (id, tool, client) in calls {
            store
                .begin_call(CallStart {
                    tool_call_id: id.to_string(),
                    run_id: run.clone(),
                    project_root: Some(root.clone()),
                    tool: tool.to_string(),
                    config: tool.to_string(),
                    input: r#"{"command":"make"}"#.into(),
                    started_at_ms: None,
                })
                .await
                .unwrap();
            store
                .finish_call(CallFinish {
                    tool_call_id: id.to_string(),
                    status: CallStatus::Ok,
                    stage: None,
                    error_code: None,
                    error_message: None,
                    raw_output: b"ok".to_vec(),
                    raw_output_file: None,
                    raw_format: RawFormat::Text,
                    output_json: None,
                    model_projection: Some("exit 0".into()),
                    client_projection: Some(client.clone()),
                    display_text: Some("make".into()),
                    finished_at_ms: None,
                })
                .await
                .unwrap();
            store
                .append_message(&run, NewMessage::tool_result(id))
                .await
                .unwrap();
        }
        run
    })
}
