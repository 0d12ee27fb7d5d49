//! The Linux key store on kernel keyutils, independent of the calling thread.
//!
//! The keyring crate's keyutils store adds entries to the *session* keyring of the calling thread.
//! Session keyrings belong to a thread's credentials: a thread that first touched keyutils through
//! a call that creates one (or one started by such a thread) gets an anonymous session keyring of
//! its own, and a key stored from it was invisible to the app's other threads (measured: the
//! desktop stored a provider key from a command thread and a read from another thread found
//! nothing in about 1 run of 15). Here entries live in the *user* keyring (`@u`, one per user,
//! the same from every thread and process of that user), and every operation first links `@u`
//! into the calling thread's session keyring, so whichever session keyring a thread has, it
//! *possesses* `@u` and the keys in it. The keys keep the kernel's default permissions (their
//! owner may only view them without possessing them): a process of the person that does not
//! reach `@u` from its own keyrings cannot read them. They are also linked into the user's
//! persistent keyring when the thread may, as the keyring crate does, so they outlive a logout
//! for the kernel's persistent-keyring expiry. Entries stored by earlier versions (found through
//! the keyring crate's session path) are still read and deleted.
//!
//! The description is the keyring crate's (`keyring-rs:<account>@<service>`), so both paths name
//! the same entry.

use linux_keyutils::{Key, KeyError as KuError, KeyRing, KeyRingIdentifier};

use super::KeyError;

/// At most this many stale copies are removed by one delete (a loop bound, not a real count).
const MAX_COPIES: usize = 8;

fn description(service: &str, account: &str) -> String {
    format!("keyring-rs:{account}@{service}")
}

fn user_ring() -> Result<KeyRing, KeyError> {
    let ring = KeyRing::from_special_id(KeyRingIdentifier::User, true).map_err(map_err)?;
    // Possession: `@u` linked into this thread's session keyring (already there when that is the
    // user-session keyring; a thread with an anonymous session keyring of its own gets the link).
    let session = KeyRing::from_special_id(KeyRingIdentifier::Session, false).map_err(map_err)?;
    if let Err(e) = session.link_keyring_id(KeyRingIdentifier::User) {
        tracing::debug!(error = ?e, "could not link the user keyring into the session keyring");
    }
    // Best effort: links the persistent keyring into `@u` (so searches of `@u` see it) and resets
    // its expiry. Refused in some containers; the user keyring alone still works.
    let _ = KeyRing::get_persistent(KeyRingIdentifier::User);
    Ok(ring)
}

fn persistent_ring() -> Option<KeyRing> {
    KeyRing::get_persistent(KeyRingIdentifier::User).ok()
}

/// Whether an error means "no such entry" rather than a failing store.
fn is_absent(e: &KuError) -> bool {
    matches!(
        e,
        KuError::KeyDoesNotExist
            | KuError::KeyExpired
            | KuError::KeyRevoked
            | KuError::KeyRejected
            | KuError::AccessDenied
            | KuError::PermissionDenied
    )
}

fn map_err(e: KuError) -> KeyError {
    match e {
        KuError::OperationNotSupported
        | KuError::KeyringDoesNotExist
        | KuError::AccessDenied
        | KuError::PermissionDenied
        | KuError::Unknown(_) => KeyError::Unavailable,
        KuError::InvalidDescription | KuError::InvalidArguments => KeyError::Empty,
        _ => KeyError::Refused,
    }
}

/// The entry in the user keyring (or the persistent keyring linked into it), if any.
fn find_user(desc: &str) -> Result<Option<Key>, KeyError> {
    let ring = user_ring()?;
    match ring.search(desc) {
        Ok(k) => Ok(Some(k)),
        Err(e) if is_absent(&e) => Ok(None),
        Err(e) => Err(map_err(e)),
    }
}

fn read(key: Key) -> Result<Option<String>, KeyError> {
    match key.read_to_vec() {
        // Never carry the bytes in an error: a non-UTF-8 entry is reported without them.
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| KeyError::Refused),
        Err(e) if is_absent(&e) => Ok(None),
        Err(e) => Err(map_err(e)),
    }
}

/// Whether kernel keyutils takes a key at all here, probed with the syscalls alone (below this
/// store): a container whose seccomp profile blocks `keyctl` says no.
pub(crate) fn usable() -> bool {
    let Ok(ring) = KeyRing::from_special_id(KeyRingIdentifier::User, true) else {
        return false;
    };
    let desc = format!("aibuddy-probe-{}", std::process::id());
    match ring.add_key(&desc, b"probe") {
        Ok(key) => {
            let _ = key.invalidate();
            true
        }
        Err(_) => false,
    }
}

/// The secret stored under (`service`, `account`); `Ok(None)` when there is none.
pub(crate) fn get(service: &str, account: &str) -> Result<Option<String>, KeyError> {
    let desc = description(service, account);
    if let Some(key) = find_user(&desc)?
        && let Some(v) = read(key)?
    {
        return Ok(Some(v));
    }
    // An entry stored by an earlier version, through the calling thread's session keyring.
    legacy_get(service, account)
}

/// Stores `secret` under (`service`, `account`), replacing every earlier copy.
pub(crate) fn set(service: &str, account: &str, secret: &str) -> Result<(), KeyError> {
    if secret.is_empty() {
        return Err(KeyError::Empty);
    }
    let desc = description(service, account);
    let ring = user_ring()?;
    // `add_key` replaces a same-named key in `@u` itself; copies elsewhere (the persistent
    // keyring, an earlier version's session entry) would shadow or outlive it, so they go first.
    remove_all(service, account)?;
    let key = ring.add_key(&desc, secret.as_bytes()).map_err(map_err)?;
    if let Some(p) = persistent_ring() {
        // Best effort, as in the keyring crate: outlives a logout when linked.
        let _ = p.link_key(key);
    }
    Ok(())
}

/// Removes every copy of (`service`, `account`); `Ok(false)` when there was none.
pub(crate) fn delete(service: &str, account: &str) -> Result<bool, KeyError> {
    remove_all(service, account)
}

fn remove_all(service: &str, account: &str) -> Result<bool, KeyError> {
    let desc = description(service, account);
    let mut removed = false;
    for _ in 0..MAX_COPIES {
        let Some(key) = find_user(&desc)? else { break };
        key.invalidate().map_err(map_err)?;
        removed = true;
    }
    for _ in 0..MAX_COPIES {
        if !legacy_delete(service, account)? {
            break;
        }
        removed = true;
    }
    Ok(removed)
}

fn legacy_get(service: &str, account: &str) -> Result<Option<String>, KeyError> {
    let Ok(entry) = keyring::Entry::new(service, account) else {
        return Ok(None);
    };
    match entry.get_password() {
        Ok(v) => Ok(Some(v)),
        // An older store that cannot be reached is not an error of this one.
        Err(_) => Ok(None),
    }
}

fn legacy_delete(service: &str, account: &str) -> Result<bool, KeyError> {
    let Ok(entry) = keyring::Entry::new(service, account) else {
        return Ok(false);
    };
    match entry.delete_credential() {
        Ok(()) => Ok(true),
        Err(_) => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key stored from one thread is read from threads that touched keyutils differently: one
    /// that joined an anonymous session keyring of its own (what the keyring crate's store could
    /// not see across) and a fresh one.
    #[test]
    fn a_key_stored_in_one_thread_is_read_in_every_other() {
        let account = format!("aibuddy-threads-{}", std::process::id());
        let writer = std::thread::spawn({
            let account = account.clone();
            move || {
                // An anonymous session keyring for this thread only.
                let _ = KeyRing::from_special_id(KeyRingIdentifier::Session, true);
                set("aibuddy-test", &account, "sk-thread-test")
            }
        });
        match writer.join().expect("writer thread") {
            Ok(()) => {}
            Err(e) => {
                // Only where the platform refuses keyutils: the typed error, nothing else to check.
                assert!(
                    !usable(),
                    "keyutils works here but the store refused: {e:?}"
                );
                assert_eq!(e, KeyError::Unavailable);
                return;
            }
        }
        let reader = std::thread::spawn({
            let account = account.clone();
            move || {
                // A thread with a session keyring of its own again, and then the default one.
                let _ = KeyRing::from_special_id(KeyRingIdentifier::Session, true);
                get("aibuddy-test", &account)
            }
        });
        assert_eq!(
            reader.join().expect("reader thread"),
            Ok(Some("sk-thread-test".to_string()))
        );
        assert_eq!(
            get("aibuddy-test", &account),
            Ok(Some("sk-thread-test".to_string()))
        );
        // Replacing keeps one value; deleting from a third thread removes it for all.
        assert_eq!(set("aibuddy-test", &account, "sk-second"), Ok(()));
        assert_eq!(
            get("aibuddy-test", &account),
            Ok(Some("sk-second".to_string()))
        );
        let deleter = std::thread::spawn({
            let account = account.clone();
            move || {
                let _ = KeyRing::from_special_id(KeyRingIdentifier::Session, true);
                delete("aibuddy-test", &account)
            }
        });
        assert_eq!(deleter.join().expect("deleter thread"), Ok(true));
        assert_eq!(get("aibuddy-test", &account), Ok(None));
        assert_eq!(delete("aibuddy-test", &account), Ok(false));
    }

    /// The key grants nothing beyond the kernel's defaults: a thread of the same person that has
    /// its own session keyring and never linked `@u` into it (what a command given a fresh session
    /// keyring would be) finds nothing.
    #[test]
    fn a_thread_that_does_not_possess_the_user_keyring_cannot_read_a_key() {
        let account = format!("aibuddy-possession-{}", std::process::id());
        if let Err(e) = set("aibuddy-test", &account, "sk-possession") {
            assert!(
                !usable(),
                "keyutils works here but the store refused: {e:?}"
            );
            return;
        }
        let desc = description("aibuddy-test", &account);
        let outsider = std::thread::spawn(move || {
            KeyRing::from_special_id(KeyRingIdentifier::Session, true)
                .map_err(|e| format!("{e:?}"))?;
            let ring = KeyRing::from_special_id(KeyRingIdentifier::User, false)
                .map_err(|e| format!("{e:?}"))?;
            Ok::<bool, String>(ring.search(&desc).is_ok())
        });
        let found = outsider.join().expect("outsider thread");
        assert_eq!(
            found,
            Ok(false),
            "found without possessing the user keyring"
        );
        assert_eq!(delete("aibuddy-test", &account), Ok(true));
    }

    /// An entry written by the keyring crate's own store (earlier versions) is still read and
    /// removed.
    #[test]
    fn an_entry_of_an_earlier_version_is_read_and_removed() {
        let account = format!("aibuddy-legacy-{}", std::process::id());
        let Ok(entry) = keyring::Entry::new("aibuddy-test", &account) else {
            return;
        };
        if entry.set_password("sk-old").is_err() {
            return; // keyutils refused here: nothing to migrate from
        }
        assert_eq!(get("aibuddy-test", &account), Ok(Some("sk-old".into())));
        assert_eq!(delete("aibuddy-test", &account), Ok(true));
        assert_eq!(get("aibuddy-test", &account), Ok(None));
    }
}
