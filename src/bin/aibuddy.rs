//! The headless `aibuddy` CLI (see `aibuddy::cli`).
fn main() -> std::process::ExitCode {
    aibuddy::cli::main()
}
