//! Test helper: an init program that, like the desktop app, already runs another thread when
//! `main` starts (the desktop links WebKit, whose allocator starts a scavenger thread from a
//! library constructor). The init must not depend on SIGCHLD reaching its own thread.
//!
//! `aibuddy-exec-threaded-init --aibuddy-exec-init <spec>`; anything else exits 2.

use std::time::Duration;

fn main() {
    // An idle thread with SIGCHLD unblocked, present before the init starts, as in the desktop.
    std::thread::spawn(|| {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    });
    aibuddy_exec::dispatch_init();
    eprintln!("aibuddy-exec-threaded-init is a test helper started as a sandbox init");
    std::process::exit(2);
}
