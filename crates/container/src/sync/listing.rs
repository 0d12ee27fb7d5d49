//! The container's tree listed by its own `find` (GNU `-printf`: kind, size, mtime, ctime, mode,
//! name, link target), when the image has it: a path whose listed `stat` is the one recorded at the
//! last sync is not read again, so a command that changed little costs a listing and the
//! changed files, not the whole tree. Without it (or when it fails) the whole archive is read.
//!
//! The listing is the container's word: a command that replaced `find` can hide its changes
//! (they are then not brought back) or claim deletions (which it could make anyway); what is
//! written here always comes from the engine's archive of the path, judged by the policy.

use aibuddy_sandbox::aibuddy_exec::SyncReport;

use super::manifest::Rel;
use super::policy::check_name;
use super::shown;
use crate::state::Inner;

/// Bytes of listing read at most (beyond: the whole archive instead).
const MAX_LISTING_BYTES: usize = 64 * 1024 * 1024;

/// One listed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub rel: Rel,
    /// `f`, `d`, `l`, or another of `find`'s kinds.
    pub kind: u8,
    pub size: u64,
    pub exec: bool,
    /// Kind, size, mtime and mode as listed: unchanged means the same content.
    pub stat: Vec<u8>,
    pub target: Vec<u8>,
}

/// The `find` command of the listing.
pub(crate) fn argv(workdir: &str) -> Vec<String> {
    vec![
        "find".into(),
        workdir.into(),
        "-mindepth".into(),
        "1".into(),
        "-printf".into(),
        // The change time too: a command can set a file's mtime back (`touch -r`, `cp -p`),
        // never its ctime.
        "%y %s %T@ %C@ %m %P\\0%l\\0".into(),
    ]
}

/// Parses the listing (untrusted): names are checked as the archive's are (refusals noted in
/// `report`); a malformed record is an error (the whole archive is read instead).
pub(crate) fn parse(out: &[u8], report: &mut SyncReport) -> Result<Vec<Listed>, String> {
    if out.is_empty() {
        return Ok(Vec::new());
    }
    // `record NUL target NUL` each: an even number of fields, the output ending with a NUL.
    let body = out
        .strip_suffix(&[0])
        .ok_or("a listing that does not end with a NUL")?;
    let fields: Vec<&[u8]> = body.split(|b| *b == 0).collect();
    if !fields.len().is_multiple_of(2) {
        return Err("a listing record without its link field".into());
    }
    let mut listed = Vec::new();
    for pair in fields.chunks(2) {
        let (record, target) = (pair[0], pair[1]);
        let mut parts = record.splitn(6, |b| *b == b' ');
        let (Some(kind), Some(size), Some(_mtime), Some(_ctime), Some(mode), Some(name)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err("a listing record with missing fields".into());
        };
        let [kind] = kind else {
            return Err("a listing record with a bad kind".into());
        };
        let size: u64 = std::str::from_utf8(size)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or("a listing record with a bad size")?;
        let mode = std::str::from_utf8(mode)
            .ok()
            .and_then(|s| u32::from_str_radix(s, 8).ok())
            .ok_or("a listing record with a bad mode")?;
        let rel = match check_name(name) {
            Ok(r) => r,
            Err(why) => {
                report.refuse(&shown(name), why);
                continue;
            }
        };
        let mut stat = Vec::with_capacity(record.len() - name.len());
        stat.extend_from_slice(&record[..record.len() - name.len()]);
        listed.push(Listed {
            rel,
            kind: *kind,
            size,
            exec: mode & 0o111 != 0,
            stat,
            target: target.to_vec(),
        });
    }
    Ok(listed)
}

/// Lists the container's `workdir` (`Err`: no usable `find`, or it failed).
pub(crate) async fn list(
    inner: &Inner,
    container: &str,
    report: &mut SyncReport,
) -> Result<Vec<Listed>, String> {
    let out = super::container::run_capture(
        &inner.docker,
        container,
        argv(&inner.opts.workdir),
        MAX_LISTING_BYTES,
    )
    .await?;
    parse(&out, report)
}
