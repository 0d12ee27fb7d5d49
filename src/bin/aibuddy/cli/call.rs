//! `aibuddy call TOOL 'ARGS_JSON' [--yes] [--json] [--stream]`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use aibuddy_common::term;
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{print_json, prompt};
use aibuddy::app::AppOptions;
use aibuddy::events::{CallStatus, Event, EventSink, OutputStream};
use aibuddy::human::HumanElicitation;
use aibuddy::pipeline::CallRequest;

#[derive(Debug, Args)]
pub struct CallArgs {
    /// Tool name.
    pub tool: String,
    /// Arguments as JSON text (default `{}`).
    #[arg(default_value = "{}")]
    pub args: String,
    /// Approve the confirmations of this one invocation.
    #[arg(long)]
    pub yes: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print live output to stderr even when stderr is not a terminal.
    #[arg(long)]
    pub stream: bool,
    /// Use this call id instead of a generated one.
    #[arg(long)]
    pub id: Option<String>,
    /// Record the call under this run id.
    #[arg(long)]
    pub run: Option<String>,
    /// The approval mode of this call: ask, auto or read-only (the project's own settings may
    /// still narrow it).
    #[arg(long, value_name = "MODE")]
    pub approvals: Option<aibuddy::approvals::ApprovalMode>,
}

/// Prints live output and progress to stderr, escaped: a command's output is untrusted and may
/// not move the cursor, retitle the terminal or overwrite a line (`\r` is shown as `\\r`).
///
/// Live output of `execute` arrives as raw bytes (`wants_raw_output`) and is escaped in one pass
/// (`term::BlockBytes`, one per stream, so a character split between deliveries stays whole) into
/// one reused buffer written with one `write` per delivery: no decode to text, no second scan.
#[derive(Default)]
struct StderrSink {
    raw: std::sync::Mutex<RawState>,
}

#[derive(Default)]
struct RawState {
    streams: [term::BlockBytes; 2],
    buf: Vec<u8>,
}

impl StderrSink {
    fn write_raw(&self, f: impl FnOnce(&mut [term::BlockBytes; 2], &mut Vec<u8>)) {
        use std::io::Write;
        let Ok(mut state) = self.raw.lock() else {
            return;
        };
        let RawState { streams, buf } = &mut *state;
        buf.clear();
        f(streams, buf);
        if !buf.is_empty() {
            let _ = std::io::stderr().lock().write_all(buf);
        }
        // A burst of binary output may have grown the buffer to 4x a delivery; keep it bounded.
        buf.clear();
        buf.shrink_to(1 << 20);
    }
}

impl EventSink for StderrSink {
    fn wants_raw_output(&self) -> bool {
        true
    }

    fn raw_output(&self, _call_id: &str, stream: OutputStream, bytes: &[u8]) {
        let idx = usize::from(stream == OutputStream::Stderr);
        self.write_raw(|streams, buf| streams[idx].push(bytes, buf));
    }

    fn raw_output_end(&self, _call_id: &str) {
        self.write_raw(|streams, buf| {
            for s in streams.iter_mut() {
                s.finish(buf);
            }
        });
    }

    fn emit(&self, event: Event) {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        match event {
            Event::ToolOutputDelta { stream, chunk, .. } => {
                // Printable ASCII, newlines and tabs (most output) need no escaping: one byte scan
                // instead of the per-character one.
                let plain = chunk
                    .bytes()
                    .all(|b| matches!(b, b' '..=b'~' | b'\n' | b'\t'));
                let _ = match stream {
                    OutputStream::Stdout | OutputStream::Stderr if plain => {
                        err.write_all(chunk.as_bytes())
                    }
                    OutputStream::Stdout | OutputStream::Stderr => {
                        err.write_all(term::block(&chunk).as_bytes())
                    }
                };
            }
            Event::ToolProgress {
                progress,
                total,
                message,
                ..
            } => {
                let total = total.map(|t| format!("/{t}")).unwrap_or_default();
                let _ = writeln!(
                    err,
                    "[progress {progress}{total}] {}",
                    term::line(&message.unwrap_or_default())
                );
            }
            _ => {}
        }
    }
}

pub fn exit_code(status: CallStatus) -> ExitCode {
    match status {
        CallStatus::Ok => ExitCode::SUCCESS,
        CallStatus::Rejected => ExitCode::from(3),
        CallStatus::Cancelled => ExitCode::from(130),
        _ => ExitCode::from(1),
    }
}

/// Whether calling `tool` can reach an MCP server: an MCP tool (`mcp__<server>__<tool>`) or
/// `tool_search` (it searches the servers' tools). Built-in tools and skills never do, so for them
/// the project's MCP servers are not started at all (no processes, no connect wait).
pub fn reaches_mcp(tool: &str) -> bool {
    tool.starts_with("mcp__") || tool == aibuddy::tools::tool_search::TOOL_NAME
}

pub async fn run(args: CallArgs, opts: AppOptions) -> ExitCode {
    let plane = aibuddy::plane::PlaneOptions {
        mcp: reaches_mcp(&args.tool),
        ..super::plane_options()
    };
    let mut app = match aibuddy::app::App::open_with(opts, plane).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("aibuddy: {}", term::block(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    if let Some(mode) = args.approvals {
        app.set_approval_mode(mode);
    }
    // With a provider configured, the `summarize` precompaction strategy asks it (else it trims).
    // Its HTTP client (TLS roots) is built by the first summary, not by every call.
    install_lazy_summarizer(&app);
    let runner = app.runner(
        args.run.clone(),
        prompt::broker_in(args.yes, app.rule_book()),
    );
    // A person naming a tool on the command line is an exact selection: a deferred tool of that
    // name is activated for this one-call run (as `tool_search` with `select:` would).
    let toolset = app.toolset(&std::collections::BTreeSet::from([args.tool.clone()]));
    let cancel = CancellationToken::new();
    // MCP elicitation requests and `ask_user_question` go to the one broker for the person's
    // questions: the terminal when there is one; nobody otherwise (declined / a clear error).
    let human = super::ask::human_broker();
    let _desk = app
        .capabilities
        .human_desk()
        .attach(&runner.run_id, human.clone());
    let elicitation = HumanElicitation::new(human, cancel.clone());
    app.capabilities
        .set_elicitation_broker(Arc::new(elicitation));
    // Ctrl-C cancels the call cleanly; a second Ctrl-C exits at once.
    let stop = cancel.clone();
    super::interrupt::cancel_on_signals(cancel.clone());
    let sink: Arc<dyn EventSink> = if args.stream || std::io::stderr().is_terminal() {
        Arc::new(StderrSink::default())
    } else {
        Arc::new(aibuddy::events::NullSink)
    };
    let outcome = runner
        .call(
            &toolset,
            CallRequest {
                id: args.id.clone(),
                name: args.tool.clone(),
                arguments: args.args.clone(),
            },
            cancel,
            sink,
        )
        .await;
    // The approval mode, and why the call ran or was refused without asking (the record's), on stderr in
    // both forms.
    let policy = match &app.persistence {
        Some(p) => p
            .store
            .confirm_records(&outcome.tool_call_id)
            .await
            .ok()
            .and_then(|r| r.into_iter().rev().find_map(|c| c.policy)),
        None => None,
    };
    eprintln!(
        "aibuddy: {}{}",
        super::approvals::banner(&app.settings.settings.approvals),
        policy
            .map(|p| format!("; {}", term::line(&p)))
            .unwrap_or_default()
    );
    if args.json {
        let _ = print_json(&outcome);
    } else {
        // The model text carries tool output and error messages (targets, file names, server
        // text): printed escaped. `--json` is escaped by serde; `show --raw` gives the bytes.
        // A closed stdout (`| head`) is not an error of the call: its exit code still says how
        // the call went (println! would panic).
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), "{}", term::block(&outcome.model));
        if outcome.status != CallStatus::Ok {
            eprintln!(
                "aibuddy: {} ({}){}",
                outcome.status.as_str(),
                term::line(&outcome.tool_call_id),
                outcome
                    .stage
                    .map(|s| format!(", stage {s}"))
                    .unwrap_or_default()
            );
        }
    }
    // A background process started by this one call ends with the command, recorded, and said.
    let stopped = app.services.processes.stop_all().await;
    for line in super::run::stopped_lines(&stopped) {
        eprintln!("{line}");
    }
    super::settle_precompaction(&app, &stop).await;
    exit_code(outcome.status)
}

/// What `aibuddy::agent::summarize::install_configured_summarizer` installs, with the provider
/// (its HTTP client: TLS set-up, root certificates) built by the first summary instead of by
/// every `call`: most calls never summarize. The route and key are still resolved here, so a call
/// without a usable provider keeps trimming exactly as before.
fn install_lazy_summarizer(app: &aibuddy::app::App) {
    let settings = &app.settings.settings;
    let Some(persistence) = &app.persistence else {
        return;
    };
    if settings.providers.entries.is_empty() {
        return;
    }
    let env = aibuddy_provider::BaseUrlOverrides::from_env();
    let Ok(route) = settings.providers.resolve(None, &env) else {
        return;
    };
    let key = aibuddy_provider::KeyStore::from_env()
        .key_for_route(&route)
        .map(|(k, _)| k);
    // The one check of `HttpProvider::new` that does not need the client: decided now.
    if key.is_none() && route.kind != aibuddy_provider::ProviderKind::OpenAiChat {
        tracing::debug!("no provider-backed summarizer for calls: no key");
        return;
    }
    persistence
        .compactor
        .set_summarizer(Arc::new(LazySummarizer {
            parts: std::sync::Mutex::new(Some((route, key))),
            model: settings.agent.summary_model.clone(),
            limits: aibuddy::agent::summarize::SummaryLimits::of(
                &aibuddy::agent::AgentOptions::from_settings(settings),
            ),
            built: tokio::sync::OnceCell::new(),
        }));
}

/// A `ProviderSummarizer` built on first use.
struct LazySummarizer {
    parts: std::sync::Mutex<Option<(aibuddy_provider::Route, Option<aibuddy_provider::ApiKey>)>>,
    model: Option<String>,
    /// The time limits of a run's step (`agent.*_timeout_secs`).
    limits: aibuddy::agent::summarize::SummaryLimits,
    built: tokio::sync::OnceCell<Option<aibuddy::agent::summarize::ProviderSummarizer>>,
}

impl LazySummarizer {
    fn build(&self) -> Option<aibuddy::agent::summarize::ProviderSummarizer> {
        let (route, key) = self.parts.lock().ok()?.take()?;
        match aibuddy_provider::HttpProvider::new(route, key) {
            Ok(p) => Some(
                aibuddy::agent::summarize::ProviderSummarizer::new(
                    Arc::new(p),
                    self.model.clone(),
                    aibuddy::agent::DEFAULT_IDLE_TIMEOUT,
                )
                .with_limits(self.limits),
            ),
            Err(e) => {
                tracing::debug!("no provider-backed summarizer for calls: {e}");
                None
            }
        }
    }
}

#[async_trait::async_trait]
impl aibuddy::results::Summarizer for LazySummarizer {
    async fn summarize(
        &self,
        req: &aibuddy::results::SummaryRequest<'_>,
        cancel: &CancellationToken,
    ) -> Result<String, aibuddy::results::SummarizeError> {
        let built = self.built.get_or_init(|| async { self.build() }).await;
        match built {
            Some(s) => s.summarize(req, cancel).await,
            None => Err(aibuddy::results::SummarizeError(
                "the provider for summaries could not be set up; the original stays".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aibuddy::results::{Summarizer, SummaryRequest};

    fn lazy(kind: aibuddy_provider::ProviderKind) -> LazySummarizer {
        let route = aibuddy_provider::Route {
            name: "local".into(),
            kind,
            model: "m".into(),
            // Nothing listens there: the test never gets as far as a request.
            base_url: "http://127.0.0.1:9".into(),
            first_party: false,
            base_url_from: aibuddy_provider::BaseUrlFrom::Settings,
            presentation: aibuddy_provider::Presentation::ActiveTools,
            context_window: 8192,
            stream: None,
            images: true,
        };
        LazySummarizer {
            parts: std::sync::Mutex::new(Some((route, None))),
            model: None,
            limits: aibuddy::agent::summarize::SummaryLimits::of(
                &aibuddy::agent::AgentOptions::default(),
            ),
            built: tokio::sync::OnceCell::new(),
        }
    }

    #[tokio::test]
    async fn the_summarizer_builds_its_provider_on_first_use_only() {
        let s = lazy(aibuddy_provider::ProviderKind::OpenAiChat);
        assert!(s.built.get().is_none(), "nothing built before a summary");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let input = serde_json::json!({});
        let req = SummaryRequest {
            tool: "execute",
            input: &input,
            text: "long output",
            max_tokens: 10,
        };
        assert!(s.summarize(&req, &cancel).await.is_err());
        assert!(
            matches!(s.built.get(), Some(Some(_))),
            "built by the first summary"
        );
        // Built once: the parts were taken.
        assert!(s.parts.lock().unwrap().is_none());
    }

    #[tokio::test]
    async fn a_provider_that_cannot_be_built_fails_the_summary_not_the_call() {
        // Anthropic without a key: `HttpProvider::new` refuses it.
        let s = lazy(aibuddy_provider::ProviderKind::Anthropic);
        let cancel = CancellationToken::new();
        let input = serde_json::json!({});
        let req = SummaryRequest {
            tool: "execute",
            input: &input,
            text: "long output",
            max_tokens: 10,
        };
        let err = s.summarize(&req, &cancel).await.unwrap_err();
        assert!(err.0.contains("could not be set up"), "{err}");
        assert!(matches!(s.built.get(), Some(None)));
    }
}
