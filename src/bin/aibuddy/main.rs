//! The headless `aibuddy` CLI. Its clap parsing, terminal prompts and human output live here, in
//! the binary, not in the core library (built only with the default `cli` feature).

mod cli;

fn main() -> std::process::ExitCode {
    // When bubblewrap starts this binary as the sandbox's init for a command, run as that init.
    aibuddy::dispatch_exec_init();
    // The sandbox probes (bubblewrap, Landlock) run on a thread while settings and the store open.
    aibuddy_sandbox::aibuddy_exec::prewarm_probes();
    cli::main()
}
