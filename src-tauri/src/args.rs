//! Command-line arguments of the desktop app. The project root comes from here (or the environment)
//! at startup and is held in Rust state; the UI can never choose it.

use std::path::PathBuf;

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "aibuddy-desktop",
    version,
    about = "The aibuddy desktop app: the tool system of an AI agent, on one project folder"
)]
pub struct Args {
    /// Project folder to open (default: none; the window opens on the welcome view).
    #[arg(value_name = "PROJECT_DIR", env = "AIBUDDY_PROJECT")]
    pub project: Option<PathBuf>,

    /// Data directory for history, settings and logs (default: the OS app-data dir, shared with the CLI).
    #[arg(long, value_name = "DIR", env = "AIBUDDY_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// Passed by WebKitWebDriver when it launches the app for an automation session; nothing to do.
    #[arg(long, hide = true)]
    pub automation: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webdriver_launch_arguments_parse() {
        let args = Args::try_parse_from([
            "aibuddy-desktop",
            "--automation",
            "/tmp/p",
            "--data-dir",
            "/tmp/d",
        ])
        .unwrap();
        assert_eq!(args.project, Some(PathBuf::from("/tmp/p")));
        assert_eq!(args.data_dir, Some(PathBuf::from("/tmp/d")));
        assert!(args.automation);
    }
}
