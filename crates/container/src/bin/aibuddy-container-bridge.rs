//! `aibuddy-container-bridge --aibuddy-net-bridge SOCKET COMMAND`: the bridge program of a
//! container command (`aibuddy_exec::bridge_main`), for hosts and tests that have no
//! `aibuddy-exec-init` at hand (`ContainerOptions::bridge_program`). It links libc only, so it
//! runs in any glibc image.

fn main() {
    aibuddy_sandbox::aibuddy_exec::dispatch_init();
    eprintln!(
        "aibuddy-container-bridge is started by aibuddy inside a container; not for direct use"
    );
    std::process::exit(2);
}
