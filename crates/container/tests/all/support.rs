//! A real engine for the tests: Podman's Docker-compatible API service on a temporary socket,
//! with its own storage (never the person's containers), and the test image made by
//! `scripts/test-image.sh` from this machine's binaries (nothing pulled from a registry).
//!
//! No podman: the tests SKIP with a loud message, except under `CI` (any non-empty value; `make
//! test` sets it), where they fail: the test scripts install podman (`scripts/setup.sh`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use aibuddy_container::{ContainerOptions, ContainerSandbox, Endpoint, ProjectMode};
use aibuddy_sandbox::SandboxSettings;

/// The engine shared by the tests of this binary.
pub struct Engine {
    pub socket: PathBuf,
    pub image: String,
    /// Global podman options of the test store (for `podman exec`, the bench's reference).
    pub podman_args: Vec<String>,
}

/// Where the store lives: kept between runs, so the image is imported once.
const STORE: &str = "/var/tmp/aibuddy-container-tests";

fn podman_installed() -> bool {
    Command::new("podman")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The engine, or `None` (after a loud message) when podman is not installed outside CI.
pub fn engine() -> Option<&'static Engine> {
    static ENGINE: OnceLock<Option<Engine>> = OnceLock::new();
    ENGINE.get_or_init(start).as_ref()
}

fn start() -> Option<Engine> {
    if !podman_installed() {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty());
        assert!(
            !ci,
            "podman is not installed but CI is set: the container tests must run (scripts/setup.sh installs podman)"
        );
        eprintln!(
            "\n\n*** SKIPPED: podman is not installed; the aibuddy-container tests need a real engine (apt-get install podman runc) ***\n"
        );
        return None;
    }
    // Run folders of earlier test processes that are gone.
    if let Ok(entries) = std::fs::read_dir("/tmp") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("aibuddy-container-tests-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let run = PathBuf::from(format!(
        "/tmp/aibuddy-container-tests-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&run).expect("test run dir");
    std::fs::create_dir_all(STORE).expect("test store dir");
    lock_store();
    // This kind of VM refuses podman's default rlimits and its default runtime (crun): explicit
    // limits and runc, for the test store only.
    let conf = run.join("containers.conf");
    std::fs::write(
        &conf,
        "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n[engine]\nruntime = \"runc\"\n",
    )
    .expect("containers.conf");
    let podman_args: Vec<String> = vec![
        "--root".into(),
        format!("{STORE}/storage"),
        "--runroot".into(),
        format!("{STORE}/run"),
        "--cgroup-manager".into(),
        "cgroupfs".into(),
    ];
    let podman = |args: &[&str]| {
        let mut c = Command::new("podman");
        c.env("CONTAINERS_CONF", &conf)
            .args(&podman_args)
            .args(args);
        c
    };
    // Containers a killed earlier run left in the test store.
    let _ = podman(&["rm", "--all", "--force", "--time", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    // This file is also the root crate's test support (`tests/all/main.rs`).
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = [
        manifest.join("scripts/test-image.sh"),
        manifest.join("crates/container/scripts/test-image.sh"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .expect("crates/container/scripts/test-image.sh");
    let t = Instant::now();
    let out = Command::new("bash")
        .arg(&script)
        .args(&podman_args)
        .env("CONTAINERS_CONF", &conf)
        .output()
        .expect("run test-image.sh");
    assert!(
        out.status.success(),
        "test-image.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let image = String::from_utf8_lossy(&out.stdout).trim().to_string();
    eprintln!("container tests: image {image} ready in {:?}", t.elapsed());
    let socket = run.join("engine.sock");
    // The service lives as long as this test process: started from a thread that never ends
    // (PDEATHSIG follows the thread that forked), killed when the process dies.
    let (tx, rx) = std::sync::mpsc::channel();
    let mut service = podman(&[
        "system",
        "service",
        "--time=0",
        &format!("unix://{}", socket.display()),
    ]);
    service.stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: prctl only, async-signal-safe, between fork and exec.
    unsafe {
        service.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    std::thread::spawn(move || {
        let child = service.spawn();
        let _ = tx.send(child.map(|c| c.id()).map_err(|e| e.to_string()));
        loop {
            std::thread::park();
        }
    });
    rx.recv()
        .expect("service thread")
        .expect("podman system service starts");
    let t = Instant::now();
    while !socket.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "podman system service did not create {}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("container tests: engine up in {:?}", t.elapsed());
    Some(Engine {
        socket,
        image,
        podman_args,
    })
}

/// Holds the test store for this test process: a second test run at the same time (this crate's
/// and the root crate's tests share the store) waits here instead of removing this run's
/// containers (`podman rm --all` below) and racing on the image. The lock is released when the
/// process ends (`flock` on a descriptor that stays open).
fn lock_store() {
    use std::os::fd::AsRawFd;
    static LOCK: OnceLock<std::fs::File> = OnceLock::new();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(Path::new(STORE).join("lock"))
        .expect("test store lock file");
    let t = Instant::now();
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        eprintln!("container tests: another test run holds {STORE}; waiting for it");
        // SAFETY: as above, blocking.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(r, 0, "lock {STORE}: {}", std::io::Error::last_os_error());
        eprintln!("container tests: got {STORE} after {:?}", t.elapsed());
    }
    let _ = LOCK.set(file);
}

impl Engine {
    /// Options for a sandbox on `socket` (the engine's, or a test proxy's in front of it).
    pub fn options_on(&self, socket: &Path, engine_timeout: Duration) -> ContainerOptions {
        ContainerOptions {
            endpoint: Endpoint::Unix(socket.to_path_buf()),
            image: self.image.clone(),
            workdir: "/workspace".into(),
            project: ProjectMode::Bind,
            engine_timeout,
            // This crate's bridge binary; the root crate's tests (which share this file) find
            // the init program as the app does.
            bridge_program: option_env!("CARGO_BIN_EXE_aibuddy-container-bridge")
                .map(PathBuf::from)
                .or_else(|| aibuddy_sandbox::aibuddy_exec::init_program(None).ok()),
            sync: Default::default(),
        }
    }

    /// A sandbox on the engine for the project `root`.
    pub fn sandbox(&self, root: &Path) -> ContainerSandbox {
        self.sandbox_on(root, &self.socket, Duration::from_secs(30))
    }

    pub fn sandbox_on(&self, root: &Path, socket: &Path, t: Duration) -> ContainerSandbox {
        ContainerSandbox::open(&SandboxSettings::new(root), self.options_on(socket, t))
            .expect("open the container sandbox")
    }

    /// `podman exec` into a container of the test store (the reference the bench compares with).
    pub fn podman(&self) -> Command {
        let mut c = Command::new("podman");
        c.env(
            "CONTAINERS_CONF",
            self.socket.parent().unwrap().join("containers.conf"),
        )
        .args(&self.podman_args);
        c
    }
}

/// A project folder with a few files.
pub fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\n// TODO one\n").unwrap();
    std::fs::write(dir.path().join("README.md"), "hello\nworld\n").unwrap();
    dir
}

/// The engine, or return from the test (skipped, said loudly) when there is none.
#[macro_export]
macro_rules! engine_or_skip {
    () => {
        match $crate::support::engine() {
            Some(e) => e,
            None => return,
        }
    };
}

impl Engine {
    /// The same engine also served on `tcp://127.0.0.1:PORT` (a second `podman system service`
    /// on the test store, for as long as this test process lives); its address.
    pub fn tcp(&self) -> &'static str {
        static TCP: OnceLock<String> = OnceLock::new();
        TCP.get_or_init(|| {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let addr = format!("127.0.0.1:{port}");
            let mut service = self.podman();
            service
                .args(["system", "service", "--time=0", &format!("tcp://{addr}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: prctl only, async-signal-safe, between fork and exec.
            unsafe {
                service.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let child = service.spawn();
                let _ = tx.send(child.map(|c| c.id()).map_err(|e| e.to_string()));
                loop {
                    std::thread::park();
                }
            });
            rx.recv()
                .expect("service thread")
                .expect("podman system service (tcp) starts");
            let t = Instant::now();
            while std::net::TcpStream::connect(&addr).is_err() {
                assert!(
                    t.elapsed() < Duration::from_secs(30),
                    "podman system service did not listen on {addr}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            addr
        })
    }

    /// A `project: "sync"` sandbox for `root` on the engine's TCP endpoint.
    pub fn sync_sandbox(
        &self,
        root: &Path,
        sync: aibuddy_container::SyncLimits,
    ) -> ContainerSandbox {
        let endpoint = Endpoint::Tcp(self.tcp().to_string());
        self.sync_sandbox_at(root, endpoint, Duration::from_secs(30), sync)
    }

    /// A `project: "sync"` sandbox for `root` on `endpoint`.
    pub fn sync_sandbox_at(
        &self,
        root: &Path,
        endpoint: Endpoint,
        engine_timeout: Duration,
        sync: aibuddy_container::SyncLimits,
    ) -> ContainerSandbox {
        let mut opts = self.options_on(&self.socket, engine_timeout);
        opts.endpoint = endpoint;
        opts.project = ProjectMode::Sync;
        opts.sync = sync;
        ContainerSandbox::open(&SandboxSettings::new(root), opts)
            .expect("open the sync container sandbox")
    }
}
