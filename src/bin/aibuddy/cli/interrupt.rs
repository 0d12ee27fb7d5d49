//! Ctrl-C and SIGTERM during a call or a run: the first cancels it cleanly (the call is recorded as
//! cancelled, its process tree ended), a second Ctrl-C exits at once.
//!
//! The signal streams are registered before this returns, so a signal that arrives between here
//! and the first poll of the spawned task is not lost (before that, `main`'s start-up handler
//! ends the process as interrupted).

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Cancels `cancel` on the first SIGINT or SIGTERM; exits with 130 on a second SIGINT.
pub(super) fn cancel_on_signals(cancel: CancellationToken) {
    let interrupt = signal(SignalKind::interrupt()).ok();
    let terminate = signal(SignalKind::terminate()).ok();
    tokio::spawn(async move {
        let mut interrupt = interrupt;
        let mut terminate = terminate;
        tokio::select! {
            _ = next(&mut interrupt) => {}
            _ = next(&mut terminate) => {}
        }
        eprintln!("\naibuddy: cancelling (Ctrl-C again to exit now)");
        cancel.cancel();
        next(&mut interrupt).await;
        std::process::exit(130);
    });
}

/// The next delivery of `s`; never, when the stream could not be registered.
async fn next(s: &mut Option<Signal>) {
    match s {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}
