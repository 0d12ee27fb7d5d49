//! `sandbox.container`: which engine, which image, where the project is inside, and how it gets
//! there (pure data and its checks).

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
    /// Copied into a volume and the changes brought back (a remote engine). Not built yet:
    /// opening it is an explicit `Unavailable`.
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
            crate::engine::Endpoint::parse(engine)?;
        }
        Ok(())
    }

    pub fn workdir(&self) -> &str {
        self.workdir.as_deref().unwrap_or(DEFAULT_WORKDIR)
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
}
