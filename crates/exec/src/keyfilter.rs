//! A seccomp filter that keeps commands away from the kernel's key store.
//!
//! Keyrings are not namespaced: a command runs as the person, and any process of the person may
//! link the user keyring (or the persistent keyring) into its own session keyring, possess the keys
//! in it and read them: the provider API keys and MCP tokens the app keeps there. Commands get
//! `keyctl`, `add_key` and `request_key` refused with `EPERM` (what Docker's default profile does
//! for the same reason); every other system call is untouched. Installed in the forked child just
//! before `exec` (async-signal-safe: one `prctl` on static data), after `PR_SET_NO_NEW_PRIVS`.

/// `offsetof(struct seccomp_data, nr)` and `arch`.
const NR: u32 = 0;
const ARCH: u32 = 4;

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64

/// x32 system calls carry this bit in `nr` on x86_64; refused too, so they cannot bypass the
/// numbers below (x32 programs are next to nonexistent).
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;
#[cfg(not(target_arch = "x86_64"))]
const X32_BIT: u32 = u32::MAX;

const fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const DENY: u32 = libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32);

/// The program: another architecture's calls pass untouched (a foreign ABI's numbers are not
/// ours to guess), x32 calls and the three key calls are refused, everything else allowed.
static FILTER: [libc::sock_filter; 10] = [
    stmt(BPF_LD_W_ABS, ARCH),
    jump(BPF_JEQ_K, AUDIT_ARCH, 1, 0),
    stmt(BPF_RET_K, ALLOW),
    stmt(BPF_LD_W_ABS, NR),
    jump(BPF_JGE_K, X32_BIT, 3, 0),
    jump(BPF_JEQ_K, libc::SYS_keyctl as u32, 2, 0),
    jump(BPF_JEQ_K, libc::SYS_add_key as u32, 1, 0),
    jump(BPF_JEQ_K, libc::SYS_request_key as u32, 0, 1),
    stmt(BPF_RET_K, DENY),
    stmt(BPF_RET_K, ALLOW),
];

/// Sets `PR_SET_NO_NEW_PRIVS` and installs the filter on the calling thread (the forked child).
///
/// # Safety
/// Only between `fork` and `exec` (or in a single-threaded process).
pub(crate) unsafe fn install() -> std::io::Result<()> {
    let fprog = libc::sock_fprog {
        len: FILTER.len() as u16,
        filter: FILTER.as_ptr() as *mut libc::sock_filter,
    };
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
        ) == -1
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
