//! aibuddy-sandbox: the execution plane's host boundary.
//!
//! - [`Sandbox`]: one object-safe async trait for ls, read, write, edit, glob and grep (and
//!   command execution); every operation takes a `CancellationToken`.
//! - [`create_sandbox`]: `local` runs; `daytona` and `e2b` return [`SandboxError::Unavailable`].
//! - [`LocalSandbox`]: confined to the project root by a cap-std directory handle (kernel
//!   `RESOLVE_BENEATH` resolution where available), never by string-prefix checks.
//! - Bounds apply at the source ([`Limits`]); writes are atomic and read back ([`Verified`]).
//! - [`ContainerSettings`]: the `sandbox.container` data (the adapter is `aibuddy-container`).
//! - [`ScopedDir`]: the same confinement, read-only, for readers outside the trait (skills).
//! - Errors are typed ([`SandboxError`]) and carry their lifecycle [`Stage`].

pub mod api;
pub mod bounded;
pub mod container_settings;
pub mod edits;
pub mod error;
pub mod factory;
pub mod kind;
pub mod limits;
pub mod local;
pub mod scope;
pub mod scoped_dir;
pub mod text;

pub use aibuddy_exec;
pub use api::*;
pub use container_settings::{ContainerSettings, ProjectMode};
pub use error::{SandboxError, Stage};
pub use factory::create_sandbox;
pub use kind::{Capabilities, Confinement, RemoteSettings, SandboxKind, SandboxSettings};
pub use limits::Limits;
pub use local::LocalSandbox;
pub use scoped_dir::{DirEntryInfo, ScopedDir};
