//! The headless `aibuddy` CLI. Its clap parsing, terminal prompts and human output live here, in
//! the binary, not in the core library (built only with the default `cli` feature).

mod cli;

fn main() -> std::process::ExitCode {
    // When bubblewrap starts this binary as the sandbox's init for a command, run as that init.
    aibuddy::dispatch_exec_init();
    // Before anything opens or starts: a Ctrl-C (or SIGTERM) during start-up ends the process.
    early_stop::install();
    cli::main()
}

/// SIGINT and SIGTERM from the first instant on.
///
/// Until a command registers its own cancellation handler (`call` and `run` do, through tokio,
/// before anything is started), nothing can be cancelled: a stop then ends the process at once, as
/// the default action would, even when the signal was inherited as ignored (a background job of a
/// non-interactive shell ignores SIGINT: before this, an early Ctrl-C from such a harness was lost
/// and the call ran to its timeout). Once a handler was installed over this one (tokio's registry
/// keeps calling the previous handler), this one does nothing and the command cancels cleanly.
mod early_stop {
    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    pub(crate) fn install() {
        for sig in SIGNALS {
            // SAFETY: installs an async-signal-safe handler (sigaction, signal and raise only).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                    tracing::warn!(sig, "could not install the start-up stop handler");
                }
            }
        }
    }

    extern "C" fn handler(sig: libc::c_int) {
        // SAFETY: sigaction (query), signal and raise are async-signal-safe.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut current) != 0 {
                return;
            }
            if current.sa_sigaction != handler as *const () as libc::sighandler_t {
                // A command's own handler is installed and called us: it cancels cleanly.
                return;
            }
            // Start-up: nothing to cancel yet. Die of the signal, as the default action does.
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}
