//! Where the Docker Engine API is (pure resolution) and the client connected to it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::{API_DEFAULT_VERSION, Docker};

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

    /// A client of this endpoint; `timeout` bounds each request until its response starts (an
    /// attached exec stream is not cut by it).
    pub fn connect(&self, timeout: Duration) -> Result<Docker, String> {
        let secs = timeout.as_secs().max(1);
        let r = match self {
            Endpoint::Unix(p) => {
                Docker::connect_with_unix(&p.to_string_lossy(), secs, API_DEFAULT_VERSION)
            }
            Endpoint::Tcp(a) => Docker::connect_with_http(a, secs, API_DEFAULT_VERSION),
        };
        r.map_err(|e| format!("cannot use the container engine at {}: {e}", self.shown()))
    }
}

/// The endpoint to use: the configured one, else `DOCKER_HOST`, else the first usual socket that
/// exists (`exists` is asked; `runtime_dir` is `XDG_RUNTIME_DIR`).
pub fn resolve(
    configured: Option<&str>,
    docker_host: Option<&str>,
    runtime_dir: Option<&Path>,
    exists: impl Fn(&Path) -> bool,
) -> Result<Endpoint, String> {
    if let Some(c) = configured {
        return Endpoint::parse(c);
    }
    if let Some(h) = docker_host.filter(|h| !h.trim().is_empty()) {
        return Endpoint::parse(h).map_err(|e| format!("DOCKER_HOST: {e}"));
    }
    let mut tried: Vec<PathBuf> = USUAL_SOCKETS.iter().map(PathBuf::from).collect();
    if let Some(dir) = runtime_dir {
        tried.push(dir.join("podman/podman.sock"));
        tried.push(dir.join("docker.sock"));
    }
    tried
        .iter()
        .find(|p| exists(p))
        .map(|p| Endpoint::Unix(p.clone()))
        .ok_or_else(|| {
            let list: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
            format!(
                "no container engine found: `sandbox.container.engine` and DOCKER_HOST are unset and none of {} exists",
                list.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn resolution_order() {
        let none = |_: &Path| false;
        assert_eq!(
            resolve(Some("unix:///a.sock"), Some("tcp://h:1"), None, none),
            Ok(Endpoint::Unix("/a.sock".into()))
        );
        assert_eq!(
            resolve(None, Some("tcp://h:1"), None, none),
            Ok(Endpoint::Tcp("h:1".into()))
        );
        let podman = |p: &Path| p == Path::new("/run/user/7/podman/podman.sock");
        assert_eq!(
            resolve(None, None, Some(Path::new("/run/user/7")), podman),
            Ok(Endpoint::Unix("/run/user/7/podman/podman.sock".into()))
        );
        let err = resolve(None, Some(" "), None, none).unwrap_err();
        assert!(err.contains("/var/run/docker.sock"), "{err}");
    }
}
