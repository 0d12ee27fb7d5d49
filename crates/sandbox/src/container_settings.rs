//! `sandbox.container`: which engine, which image, where the project is inside, and how it gets
//! there (pure data and its checks; the adapter is the `aibuddy-container` crate, so settings can
//! be read and shown without linking its HTTP client).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The default folder of the project inside the container.
pub const DEFAULT_WORKDIR: &str = "/workspace";

/// How the project reaches the container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectMode {
    /// The project folder is bind-mounted at `workdir` (a local engine: same machine).
    #[default]
    Bind,
    /// Copied into the container and its changes brought back after each command (any engine,
    /// a remote one included; `aibuddy-container`'s `sync`).
    Sync,
}

impl ProjectMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectMode::Bind => "bind",
            ProjectMode::Sync => "sync",
        }
    }
}

/// The `sandbox.container` settings object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContainerSettings {
    /// `unix:///path` or `tcp://host:port` (user level only); default: `DOCKER_HOST`, else the
    /// usual socket paths (Docker's, then Podman's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The image the container is created from (required; never pulled: it must be on the engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The project's folder inside the container (absolute; default `/workspace`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    pub project: ProjectMode,
}

impl ContainerSettings {
    /// The settings of a JSON value (the `sandbox.container` object), or what is wrong with it.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, String> {
        let s: ContainerSettings =
            serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        s.check()?;
        Ok(s)
    }

    /// The values that are well typed but not allowed.
    pub fn check(&self) -> Result<(), String> {
        if let Some(w) = &self.workdir
            && (!w.starts_with('/') || w.split('/').any(|c| c == ".." || c == ".") || w == "/")
        {
            return Err(format!(
                "`workdir` must be an absolute folder other than `/`, without `.` or `..`: {w:?}"
            ));
        }
        if let Some(image) = &self.image
            && (image.trim().is_empty() || image.chars().any(char::is_control))
        {
            return Err("`image` must name an image".into());
        }
        if let Some(engine) = &self.engine {
            Endpoint::parse(engine)?;
        }
        Ok(())
    }

    pub fn workdir(&self) -> &str {
        self.workdir.as_deref().unwrap_or(DEFAULT_WORKDIR)
    }
}

/// An engine endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    /// `host:port`, plain HTTP.
    Tcp(String),
}

/// Socket paths tried when neither the settings nor `DOCKER_HOST` name an engine, in order:
/// Docker's, then rootful Podman's (rootless Podman's comes from `XDG_RUNTIME_DIR`).
pub const USUAL_SOCKETS: &[&str] = &["/var/run/docker.sock", "/run/podman/podman.sock"];

impl Endpoint {
    /// `unix:///absolute/path` or `tcp://host:port` (`http://` is read as `tcp://`).
    pub fn parse(given: &str) -> Result<Endpoint, String> {
        if let Some(path) = given.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "`{given}`: a unix:// engine needs an absolute path"
                ));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        let rest = given
            .strip_prefix("tcp://")
            .or_else(|| given.strip_prefix("http://"));
        match rest {
            Some(addr)
                if !addr.is_empty()
                    && addr
                        .rsplit_once(':')
                        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
                    && !addr.contains('/')
                    && !addr.contains('@') =>
            {
                Ok(Endpoint::Tcp(addr.to_string()))
            }
            _ => Err(format!(
                "`{given}` is not an engine address (unix:///path/to/socket or tcp://host:port)"
            )),
        }
    }

    /// As people write it.
    pub fn shown(&self) -> String {
        match self {
            Endpoint::Unix(p) => format!("unix://{}", p.display()),
            Endpoint::Tcp(a) => format!("tcp://{a}"),
        }
    }

    /// Whether the engine is on this machine (a bind mount of the project means something there).
    pub fn is_local(&self) -> bool {
        match self {
            Endpoint::Unix(_) => true,
            Endpoint::Tcp(a) => {
                let host = a.rsplit_once(':').map_or(a.as_str(), |(h, _)| h);
                matches!(host, "localhost" | "127.0.0.1" | "[::1]")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_checked() {
        let ok = ContainerSettings::from_value(&json!({
            "engine": "unix:///run/podman/podman.sock", "image": "debian:12",
            "workdir": "/src", "project": "bind"
        }))
        .unwrap();
        assert_eq!((ok.workdir(), ok.project), ("/src", ProjectMode::Bind));
        for bad in [
            json!({"workdir": "rel"}),
            json!({"workdir": "/a/../b"}),
            json!({"workdir": "/"}),
            json!({"image": " "}),
            json!({"engine": "ssh://h"}),
            json!({"project": "copy"}),
            json!({"nope": 1}),
        ] {
            assert!(ContainerSettings::from_value(&bad).is_err(), "{bad}");
        }
        assert_eq!(ContainerSettings::default().workdir(), DEFAULT_WORKDIR);
    }

    #[test]
    fn endpoints_parse_strictly() {
        assert_eq!(
            Endpoint::parse("unix:///run/x.sock"),
            Ok(Endpoint::Unix("/run/x.sock".into()))
        );
        assert_eq!(
            Endpoint::parse("tcp://10.0.0.2:2375"),
            Ok(Endpoint::Tcp("10.0.0.2:2375".into()))
        );
        for bad in [
            "unix://rel.sock",
            "tcp://host",
            "tcp://:1",
            "ssh://h",
            "/run/x.sock",
            "tcp://u:p@h:1",
            "tcp://h:1/path",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        assert!(Endpoint::parse("tcp://localhost:2375").unwrap().is_local());
        assert!(!Endpoint::parse("tcp://build:2375").unwrap().is_local());
    }
}
