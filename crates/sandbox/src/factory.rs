//! `create_sandbox`: the adapter for a sandbox kind. Only `local` is runnable; `daytona` and
//! `e2b` are explicit [`SandboxError::Unavailable`] errors (a kind in the enum is not a claim of
//! deployed support).

use std::sync::Arc;

use crate::api::Sandbox;
use crate::error::SandboxError;
use crate::kind::{SandboxKind, SandboxSettings};
use crate::local::LocalSandbox;

/// Create the sandbox for `kind`. Only `local` is runnable; other kinds are explicit errors.
pub fn create_sandbox(
    kind: SandboxKind,
    settings: &SandboxSettings,
) -> Result<Arc<dyn Sandbox>, SandboxError> {
    match kind {
        SandboxKind::Local => Ok(Arc::new(LocalSandbox::open(settings)?)),
        SandboxKind::Container => Err(SandboxError::Unavailable {
            kind,
            reason: "the container sandbox is opened by the host through `aibuddy-container` \
                     (settings `sandbox.container`), not by this factory"
                .into(),
        }),
        SandboxKind::Daytona | SandboxKind::E2b => Err(SandboxError::Unavailable {
            kind,
            reason: format!(
                "no {kind} adapter is built into this version of aibuddy; only `local` is runnable"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_kinds_are_explicitly_unavailable() {
        let settings = SandboxSettings::new("/");
        for kind in [SandboxKind::Daytona, SandboxKind::E2b] {
            let err = create_sandbox(kind, &settings).err().unwrap();
            assert!(matches!(err, SandboxError::Unavailable { kind: k, .. } if k == kind));
            assert_eq!(err.stage(), crate::Stage::Execution);
        }
    }
}
