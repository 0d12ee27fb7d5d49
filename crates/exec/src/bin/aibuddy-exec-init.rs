//! `aibuddy-exec-init --aibuddy-exec-init <spec>`: the init program the namespace path runs as
//! PID 1 inside bubblewrap (see `aibuddy_exec::init_main`). Binaries that call
//! `aibuddy_exec::dispatch_init()` first in `main` can play this role themselves.

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some(aibuddy_exec::INIT_MARKER) {
        eprintln!("aibuddy-exec-init is started by aibuddy inside its sandbox; not for direct use");
        std::process::exit(2);
    }
    let spec = args.next().unwrap_or_default();
    std::process::exit(aibuddy_exec::init_main(&spec));
}
