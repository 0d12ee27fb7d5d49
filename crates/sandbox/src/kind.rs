//! Sandbox kinds, their settings and capabilities (data only; `factory::create_sandbox` makes
//! one).
//!
//! `local` has its adapter here; `container` has its own crate (`aibuddy-container`, over the
//! Docker Engine API), which the host opens. `daytona` and `e2b` exist in the kind enum and in the
//! settings so configurations can name them, but creating one returns an explicit
//! [`crate::SandboxError::Unavailable`]: presence in the enum is not a claim of deployed support.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

use crate::limits::Limits;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    #[default]
    Local,
    Daytona,
    E2b,
    /// A container of a Docker Engine API host (the `aibuddy-container` crate opens it).
    Container,
}

impl SandboxKind {
    pub const ALL: [SandboxKind; 4] = [
        SandboxKind::Local,
        SandboxKind::Daytona,
        SandboxKind::E2b,
        SandboxKind::Container,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::Local => "local",
            SandboxKind::Daytona => "daytona",
            SandboxKind::E2b => "e2b",
            SandboxKind::Container => "container",
        }
    }
}

impl fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SandboxKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "local" => Ok(SandboxKind::Local),
            "daytona" => Ok(SandboxKind::Daytona),
            "e2b" => Ok(SandboxKind::E2b),
            "container" => Ok(SandboxKind::Container),
            other => Err(format!(
                "unknown sandbox kind `{other}` (local, container, daytona, e2b)"
            )),
        }
    }
}

/// Settings for a remote kind. Declared so configurations round-trip; no adapter reads them yet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// What `create_sandbox` needs: the project root and the bounds applied at the source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxSettings {
    /// The project folder every path is resolved beneath.
    pub root: PathBuf,
    #[serde(default)]
    pub limits: Limits,
    /// Walker threads for glob and grep (default: available parallelism).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    #[serde(default)]
    pub daytona: RemoteSettings,
    #[serde(default)]
    pub e2b: RemoteSettings,
}

impl SandboxSettings {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SandboxSettings {
            root: root.into(),
            limits: Limits::default(),
            threads: None,
            daytona: RemoteSettings::default(),
            e2b: RemoteSettings::default(),
        }
    }
}

/// How strongly the adapter confines paths to the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confinement {
    /// Every open is resolved by the kernel beneath the root (openat2 `RESOLVE_BENEATH`).
    Kernel,
    /// cap-std resolves each component itself relative to directory handles (older kernels).
    Userspace,
}

/// What a sandbox can do, so the capability plane can intersect tool sets with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    pub kind: SandboxKind,
    pub fs_read: bool,
    pub fs_write: bool,
    pub exec: bool,
    pub confinement: Confinement,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_serde_and_strings() {
        for kind in SandboxKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<SandboxKind>(&json).unwrap(), kind);
            assert_eq!(kind.as_str().parse::<SandboxKind>().unwrap(), kind);
        }
        assert!("docker".parse::<SandboxKind>().is_err());
    }
}
