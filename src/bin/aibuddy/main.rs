//! The headless `aibuddy` CLI (see `aibuddy::cli`).
fn main() -> std::process::ExitCode {
    // When bubblewrap starts this binary as the sandbox's init for a command, run as that init.
    aibuddy::dispatch_exec_init();
    aibuddy::cli::main()
}
