//! Typed sandbox errors and the lifecycle stage each one belongs to.
//!
//! [`Stage`] is the one shared by every crate (`aibuddy_common::Stage`), so the core converts a
//! [`SandboxError`] with `From` and no table; [`SandboxError::code`] is a stable machine-readable
//! code so nothing downstream has to match on message text.

use std::io;

pub use aibuddy_common::Stage;

use crate::kind::SandboxKind;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The path (as given) would lead outside the project root. Nothing was touched.
    #[error("path escapes the project root: {path}")]
    Escape { path: String },
    /// The operating system (or the sandbox policy) does not permit this effect.
    #[error("permission denied: {path}: {reason}")]
    Denied { path: String, reason: String },
    /// The path cannot be used as given (NUL byte, too long, empty, symlink loop...).
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath { path: String, reason: String },
    #[error("no such file or directory: {path}")]
    NotFound { path: String },
    #[error("not a directory: {path}")]
    NotADirectory { path: String },
    #[error("is a directory (use ls or glob for directories): {path}")]
    IsADirectory { path: String },
    /// Fifos, sockets and device files are refused so that a read cannot hang or touch hardware.
    #[error("refusing {file_type} {path}: only regular files can be read or written")]
    NotRegular { path: String, file_type: String },
    #[error("{path} is a symlink; write to its target {target} instead")]
    SymlinkTarget { path: String, target: String },
    /// A bad argument value (invalid regex, glob, zero limit...).
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument { name: String, reason: String },
    #[error("edit {index}: old_string not found in {path}")]
    OldStringNotFound { path: String, index: usize },
    #[error(
        "edit {index}: old_string occurs {count} times in {path}; add surrounding context to make it unique or set replace_all"
    )]
    OldStringNotUnique {
        path: String,
        index: usize,
        count: usize,
    },
    #[error("{path} is not UTF-8 text ({reason}); it cannot be edited as text")]
    NotText { path: String, reason: String },
    #[error("{path} is too large for this operation: {size} bytes (max {max})")]
    TooLarge { path: String, size: u64, max: u64 },
    /// The file changed while it was read, or between the preview and the write.
    #[error("{path} changed while the operation ran; read it again and retry")]
    Changed { path: String },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{op} was cancelled")]
    Cancelled { op: &'static str },
    #[error("{op} timed out")]
    Timeout { op: &'static str },
    /// The sandbox kind is declared but has no runnable adapter on this host.
    #[error("sandbox `{kind}` is unavailable: {reason}")]
    Unavailable { kind: SandboxKind, reason: String },
    #[error("the `{kind}` sandbox does not support {capability}")]
    Unsupported {
        kind: SandboxKind,
        capability: &'static str,
    },
    /// The effect happened but reading it back did not show what was intended.
    #[error("verification of {path} failed: {detail}")]
    Verification { path: String, detail: String },
    /// A failure reported by the process runner, with the stage it chose.
    #[error("{message}")]
    Exec { stage: Stage, message: String },
}

impl SandboxError {
    pub fn stage(&self) -> Stage {
        use SandboxError::*;
        match self {
            Escape { .. } | Denied { .. } | NotRegular { .. } => Stage::Authorization,
            InvalidPath { .. }
            | NotFound { .. }
            | NotADirectory { .. }
            | IsADirectory { .. }
            | SymlinkTarget { .. }
            | InvalidArgument { .. }
            | OldStringNotFound { .. }
            | OldStringNotUnique { .. }
            | NotText { .. }
            | TooLarge { .. } => Stage::Parameters,
            Changed { .. }
            | Io { .. }
            | Cancelled { .. }
            | Timeout { .. }
            | Unavailable { .. }
            | Unsupported { .. } => Stage::Execution,
            Verification { .. } => Stage::Verification,
            Exec { stage, .. } => *stage,
        }
    }

    /// A stable snake_case code for typed error values crossing the IPC boundary.
    pub fn code(&self) -> &'static str {
        use SandboxError::*;
        match self {
            Escape { .. } => "path_escape",
            Denied { .. } => "permission_denied",
            InvalidPath { .. } => "invalid_path",
            NotFound { .. } => "not_found",
            NotADirectory { .. } => "not_a_directory",
            IsADirectory { .. } => "is_a_directory",
            NotRegular { .. } => "not_regular_file",
            SymlinkTarget { .. } => "symlink_target",
            InvalidArgument { .. } => "invalid_argument",
            OldStringNotFound { .. } => "old_string_not_found",
            OldStringNotUnique { .. } => "old_string_not_unique",
            NotText { .. } => "not_text",
            TooLarge { .. } => "too_large",
            Changed { .. } => "changed_during_operation",
            Io { .. } => "io",
            Cancelled { .. } => "cancelled",
            Timeout { .. } => "timeout",
            Unavailable { .. } => "sandbox_unavailable",
            Unsupported { .. } => "unsupported",
            Verification { .. } => "verification_failed",
            Exec { .. } => "exec",
        }
    }

    pub fn is_escape(&self) -> bool {
        matches!(self, SandboxError::Escape { .. })
    }

    /// Map an `io::Error` from a capability-scoped (cap-std) operation on `path` (as given).
    ///
    /// cap-std reports an escape either as the kernel's `EXDEV` (openat2 `RESOLVE_BENEATH`) or as
    /// its own `PermissionDenied` error without an OS error number; a real `EACCES`/`EPERM`
    /// carries the OS number, so the two are told apart structurally, not by message text.
    pub fn from_io(op: &'static str, path: &str, err: io::Error) -> Self {
        let path = path.to_string();
        match err.raw_os_error() {
            Some(code) if code == rustix::io::Errno::XDEV.raw_os_error() => {
                return SandboxError::Escape { path };
            }
            Some(code)
                if code == rustix::io::Errno::ACCESS.raw_os_error()
                    || code == rustix::io::Errno::PERM.raw_os_error() =>
            {
                return SandboxError::Denied {
                    path,
                    reason: err.to_string(),
                };
            }
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
                return SandboxError::InvalidPath {
                    path,
                    reason: "symlink loop or a symlink where none is allowed".into(),
                };
            }
            Some(code) if code == rustix::io::Errno::NAMETOOLONG.raw_os_error() => {
                return SandboxError::InvalidPath {
                    path,
                    reason: "name too long".into(),
                };
            }
            Some(code) if code == rustix::io::Errno::NOTDIR.raw_os_error() => {
                return SandboxError::NotADirectory { path };
            }
            Some(code) if code == rustix::io::Errno::ISDIR.raw_os_error() => {
                return SandboxError::IsADirectory { path };
            }
            _ => {}
        }
        match err.kind() {
            io::ErrorKind::PermissionDenied if err.raw_os_error().is_none() => {
                SandboxError::Escape { path }
            }
            io::ErrorKind::NotFound => SandboxError::NotFound { path },
            io::ErrorKind::InvalidInput if err.raw_os_error().is_none() => {
                SandboxError::InvalidPath {
                    path,
                    reason: err.to_string(),
                }
            }
            _ => SandboxError::Io {
                op,
                path,
                source: err,
            },
        }
    }
}

/// A process-runner failure keeps the stage the runner chose and its message.
impl From<aibuddy_exec::ExecError> for SandboxError {
    fn from(e: aibuddy_exec::ExecError) -> Self {
        SandboxError::Exec {
            stage: e.stage(),
            message: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_follow_the_seed_table() {
        let cases = [
            (
                SandboxError::Escape {
                    path: "../x".into(),
                },
                Stage::Authorization,
            ),
            (
                SandboxError::OldStringNotFound {
                    path: "a".into(),
                    index: 0,
                },
                Stage::Parameters,
            ),
            (SandboxError::Cancelled { op: "grep" }, Stage::Execution),
            (
                SandboxError::Unavailable {
                    kind: SandboxKind::E2b,
                    reason: "x".into(),
                },
                Stage::Execution,
            ),
            (
                SandboxError::Verification {
                    path: "a".into(),
                    detail: "d".into(),
                },
                Stage::Verification,
            ),
        ];
        for (err, stage) in cases {
            assert_eq!(err.stage(), stage, "{err}");
        }
    }

    #[test]
    fn exec_failures_keep_the_runners_stage() {
        let bad = aibuddy_exec::ExecError::InvalidRequest("empty command".into());
        let e = SandboxError::from(bad);
        assert_eq!((e.stage(), e.code()), (Stage::Parameters, "exec"));
        assert!(e.to_string().contains("empty command"), "{e}");
        let moved = aibuddy_exec::ExecError::RootChanged {
            root: "/a".into(),
            now: "/b".into(),
        };
        assert_eq!(SandboxError::from(moved).stage(), Stage::Authorization);
    }

    #[test]
    fn cap_std_escape_is_told_apart_from_a_real_permission_error() {
        let escape = io::Error::new(io::ErrorKind::PermissionDenied, "a path led outside");
        assert!(SandboxError::from_io("open", "x", escape).is_escape());
        let xdev = io::Error::from_raw_os_error(rustix::io::Errno::XDEV.raw_os_error());
        assert!(SandboxError::from_io("open", "x", xdev).is_escape());
        let eacces = io::Error::from_raw_os_error(rustix::io::Errno::ACCESS.raw_os_error());
        assert_eq!(
            SandboxError::from_io("open", "x", eacces).code(),
            "permission_denied"
        );
    }
}
