//! `sandbox.container`: the settings and the engine address are data of `aibuddy-sandbox`
//! (`container_settings`), so the core reads and shows them without linking this crate.

pub use aibuddy_sandbox::container_settings::{
    ContainerSettings, DEFAULT_WORKDIR, Endpoint, ProjectMode, USUAL_SOCKETS,
};
