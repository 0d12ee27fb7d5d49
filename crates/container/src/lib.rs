//! aibuddy-container: the `container` sandbox, over the Docker Engine API (Docker and Podman
//! serve it) with `bollard`.
//!
//! - [`ContainerSandbox`]: every `Sandbox` operation; the container is created on first use from
//!   `sandbox.container.image` with no network of its own (egress only through the app's
//!   allow-list proxy, bridged in per command) and the project bind-mounted at `workdir`; file
//!   operations on the mount with the local adapter's bounds and scoping; commands through exec
//!   create/start (`exec.rs`) under a wrapper of ours (`wrapper.rs`) that leaves no process behind.
//! - `project: "sync"` ([`sync`]): nothing bound; the project copied in before each command and
//!   the container's changes brought back after it, under the protected-path policy.
//! - [`ContainerSettings`] (the `sandbox.container` object) and the engine endpoint
//!   ([`engine::resolve`]: the settings, else `DOCKER_HOST`, else the usual sockets).
//!
//! Kept out of `aibuddy-sandbox` so the HTTP client is linked only where a host opens containers.

mod container;
pub mod engine;
pub mod env;
mod exec;
mod operations;
mod options;
mod removal;
pub mod sandbox;
pub mod settings;
mod state;
pub mod sync;
mod sync_container;
mod sync_state;
pub mod wrapper;

pub use engine::Endpoint;
pub use options::{ContainerOptions, DEFAULT_ENGINE_TIMEOUT};
pub use sandbox::ContainerSandbox;
pub use settings::{ContainerSettings, DEFAULT_WORKDIR, ProjectMode};
pub use sync::SyncLimits;
