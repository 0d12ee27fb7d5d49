//! Run-scoped call ids (schema version 5). Providers number calls per response or per run
//! (`call_0`, `call_1`, ...), so the same id comes back in another run; the store keys a call
//! globally (`tool_calls.tool_call_id`, blob and spool file names), so an agent run stores its
//! calls under `<run_id>:<provider id>`. Pure and deterministic: the run loop maps the model's ids
//! to stored ids with it, and the context rebuild maps them back by recomputing it.

use crate::ids::MAX_ID_LEN;

/// The stored id of the provider's call `provider_id` in run `run_id`. An id that would pass
/// [`MAX_ID_LEN`] keeps a prefix and ends in a 64-bit FNV-1a digest of the whole provider id, so
/// it stays valid, deterministic and (in practice) unique.
pub fn scoped_call_id(run_id: &str, provider_id: &str) -> String {
    let full = format!("{run_id}:{provider_id}");
    if full.len() <= MAX_ID_LEN {
        return full;
    }
    let digest = format!("-h{:016x}", fnv1a(provider_id.as_bytes()));
    let room = MAX_ID_LEN.saturating_sub(run_id.len() + 1 + digest.len());
    let mut prefix: String = provider_id.chars().take(room).collect();
    while prefix.len() > room {
        prefix.pop();
    }
    format!("{run_id}:{prefix}{digest}")
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::validate_id;

    #[test]
    fn scoped_ids_differ_per_run_and_stay_valid() {
        let a = scoped_call_id("01RUNA", "call_0");
        let b = scoped_call_id("01RUNB", "call_0");
        assert_eq!(a, "01RUNA:call_0");
        assert_ne!(a, b);
        validate_id(&a).unwrap();
        let long = "x".repeat(200);
        let l1 = scoped_call_id("01JRUN0000000000000000000A", &long);
        let l2 = scoped_call_id("01JRUN0000000000000000000A", &format!("{long}y"));
        assert_eq!(l1.len(), MAX_ID_LEN);
        assert_ne!(l1, l2);
        validate_id(&l1).unwrap();
        assert_eq!(l1, scoped_call_id("01JRUN0000000000000000000A", &long));
    }
}
