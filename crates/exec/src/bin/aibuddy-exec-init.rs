//! `aibuddy-exec-init --aibuddy-exec-init <spec>`: the init program the namespace path runs as
//! PID 1 inside bubblewrap (see `aibuddy_exec::init_main`); `aibuddy-exec-init
//! --aibuddy-net-bridge SOCKET COMMAND`: the bridge program of a container command (see
//! `aibuddy_exec::bridge_main`). Binaries that call `aibuddy_exec::dispatch_init()` first in
//! `main` can play both roles themselves.

fn main() {
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(a) if a == aibuddy_exec::INIT_MARKER => {
            let spec = args.next().unwrap_or_default();
            std::process::exit(aibuddy_exec::init_main(&spec.to_string_lossy()));
        }
        Some(a) if a == aibuddy_exec::BRIDGE_MARKER => {
            let socket = args.next().unwrap_or_default();
            let command = args.next().unwrap_or_default();
            std::process::exit(aibuddy_exec::bridge_main(socket, command));
        }
        _ => {
            eprintln!(
                "aibuddy-exec-init is started by aibuddy inside its sandbox; not for direct use"
            );
            std::process::exit(2);
        }
    }
}
