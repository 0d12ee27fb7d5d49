//! A fake provider server for tests (feature `testing`): real HTTP on 127.0.0.1:0, the three wire
//! formats with SSE, scripted per test, checking protocol invariants on every request.
//!
//! ```text
//! let server = FakeServer::start().await?;
//! server.expect_key("sk-test");
//! server.push(Turn::text("hi").reply(ProviderKind::Anthropic));
//! // ... point a route at server.anthropic_base(), run, then:
//! server.assert_clean();
//! ```

pub mod images;
pub mod invariants;
pub mod scenario;
pub mod script;
pub mod server;

pub use invariants::{Violation, check_request, valid_tool_name};
pub use scenario::{Scenario, ScenarioError, Step, Verdict};
pub use script::{Chunk, Reply, ScriptCall, Turn};
pub use server::{FakeServer, RecordedRequest};
