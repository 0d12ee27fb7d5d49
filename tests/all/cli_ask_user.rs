//! Issue 11, `ask_user_question` through the real `aibuddy run` binary against the scripted fake
//! provider: at a terminal (a real pseudo-terminal: stdin and stderr are its slave side) the
//! person answers the prompt; with `--json` and no terminal the model gets the "no person" error
//! and the run goes on, and the `ask_user` event is on stdout.

use crate::support;

use support::cli_run::CliRun;

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aibuddy_provider::ProviderKind;
use aibuddy_provider::testing::Turn;
use serde_json::{Value, json};

struct Fx {
    run: CliRun,
}

impl std::ops::Deref for Fx {
    type Target = CliRun;
    fn deref(&self) -> &CliRun {
        &self.run
    }
}

async fn fx() -> Fx {
    Fx {
        run: CliRun::start(ProviderKind::Anthropic).await,
    }
}

impl Fx {
    fn push_question(&self, question: &str) {
        let ask = json!({"question": question, "options": ["Blue", "Green"]});
        self.server.push(
            Turn::text("Let me ask.")
                .call("call_q1", "ask_user_question", ask)
                .reply(ProviderKind::Anthropic),
        );
        self.server
            .push(Turn::text("Understood.").reply(ProviderKind::Anthropic));
    }
}

/// A pseudo-terminal: (master, slave), both owned.
fn pty() -> (std::fs::File, std::fs::File) {
    // SAFETY: plain libc calls on a descriptor we own; the name buffer is large enough and
    // NUL-terminated by ptsname_r on success.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt");
        let master = OwnedFd::from_raw_fd(master);
        use std::os::fd::AsRawFd;
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0);
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()),
            0
        );
        let path = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        (std::fs::File::from(master), slave)
    }
}

/// Everything the child writes to the terminal, collected by a reader thread.
fn collect(mut master: std::fs::File) -> Arc<Mutex<Vec<u8>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child (the last slave holder) is gone.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            s2.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    seen
}

fn wait_for(seen: &Mutex<Vec<u8>>, needle: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
        if text.contains(needle) {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("aibuddy exited ({status}) before showing {needle:?}:\n{text}");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "never saw {needle:?} in:
{text}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `aibuddy run … args` with stdin and stderr on a pseudo-terminal, answers the question
/// with `answer`, and returns (exit code, stdout, terminal text).
fn run_at_terminal(f: &Fx, args: &[&str], answer: &str) -> (i32, String, String) {
    let (master, slave) = pty();
    let mut writer = master.try_clone().unwrap();
    let seen = collect(master);
    // `run` on a terminal would first ask which approval mode to use: the flag chooses it here.
    let mut args = args.to_vec();
    if args.first() == Some(&"run") {
        args.splice(1..1, ["--approvals", "ask"]);
    }
    let mut child = f
        .std_command(&args)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&seen, "(empty line declines): ", &mut child);
    writer.write_all(answer.as_bytes()).unwrap();
    writer.write_all(b"\n").unwrap();
    let out = child.wait_with_output().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let terminal = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        terminal,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_answers_at_the_terminal() {
    let f = fx().await;
    // The model's question tries to redraw the screen and fake a second option list.
    f.push_question("Which color?\u{1b}[2J\r  1) Delete everything");
    let (code, stdout, terminal) =
        tokio::task::block_in_place(|| run_at_terminal(&f, &["run", "paint the door"], "2"));
    assert_eq!(code, 0, "stdout: {stdout}\nterminal: {terminal}");
    assert!(stdout.contains("Understood."), "{stdout}");
    assert!(
        terminal.contains("Which color?\\e[2J\\r  1) Delete everything"),
        "{terminal}"
    );
    assert!(
        terminal.contains("1) Blue") && terminal.contains("2) Green"),
        "{terminal}"
    );
    assert!(
        !terminal.contains('\u{1b}'),
        "a raw escape reached the terminal: {terminal:?}"
    );
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].raw_body.contains("[Answer] Green"),
        "{}",
        reqs[1].raw_body
    );
    f.server.assert_clean();
}

/// `--json` at a terminal: events on stdout (`ask_user` included), the prompt on the terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_events_with_a_terminal_to_answer() {
    let f = fx().await;
    f.push_question("Which color?");
    let (code, stdout, terminal) = tokio::task::block_in_place(|| {
        run_at_terminal(&f, &["run", "paint the door", "--json"], "1")
    });
    assert_eq!(code, 0, "stdout: {stdout}\nterminal: {terminal}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let ask = events
        .iter()
        .find(|e| e["type"] == "ask_user")
        .expect("an ask_user event");
    assert!(
        ask["tool_call_id"].as_str().unwrap().ends_with(":call_q1"),
        "{ask}"
    );
    assert_eq!(ask["question"], "Which color?");
    assert_eq!(ask["options"], json!(["Blue", "Green"]));
    assert_eq!(ask["multi_select"], false);
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["status"], "ok", "{result}");
    assert_eq!(result["model"], "The person answered: Blue");
    f.server.assert_clean();
}

/// No terminal (`--json`, stdin not a TTY): the model is told nobody can answer and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_without_a_terminal_gives_the_model_a_clear_error() {
    let f = fx().await;
    f.push_question("Which color?");
    let out = tokio::process::Command::from(f.std_command(&["run", "paint the door", "--json"]))
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let at = |t: &str| types.iter().position(|x| *x == t).unwrap_or(usize::MAX);
    assert!(at("ask_user") < at("tool_result"), "{types:?}");
    let result = &events[at("tool_result")];
    assert_eq!(result["status"], "error");
    assert_eq!(result["stage"], "Execution");
    let model = result["model"].as_str().unwrap();
    assert!(
        model
            .contains("no person is available to answer; proceed with your best judgement or stop"),
        "{model}"
    );
    assert_eq!(events.last().unwrap()["status"], "completed");
    let reqs = f.server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[1].raw_body.contains("no person is available"));
    f.server.assert_clean();
}

/// Ctrl-C (SIGINT) while the question waits at the terminal: the question is withdrawn, the run
/// ends `cancelled` with exit code 130, and the process does not wait for the abandoned read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_the_question_waits_at_the_terminal() {
    let f = fx().await;
    f.push_question("Which color?");
    let (code, stdout, terminal) = tokio::task::block_in_place(|| {
        let (master, slave) = pty();
        let seen = collect(master);
        let mut child = f
            .std_command(&["run", "paint the door", "--json"])
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&seen, "(empty line declines): ", &mut child);
        // SAFETY: signalling our own child by pid.
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
            0
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("aibuddy still ran 30 s after SIGINT");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let terminal = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            terminal,
        )
    });
    assert_eq!(code, 130, "stdout: {stdout}\nterminal: {terminal}");
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["status"], "cancelled");
    assert_eq!(f.server.requests().len(), 1, "no step after the stop");
    f.server.assert_clean();
}

/// Runs `aibuddy ARGS` with stdin and stderr on a pseudo-terminal; for each `(prompt, answer)`
/// waits for the prompt and types the answer; returns (exit code, stdout, terminal text).
fn at_terminal(f: &Fx, args: &[&str], dialog: &[(&str, &str)]) -> (i32, String, String) {
    let (master, slave) = pty();
    let mut writer = master.try_clone().unwrap();
    let seen = collect(master);
    let mut child = f
        .std_command(args)
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    for (prompt, answer) in dialog {
        wait_for(&seen, prompt, &mut child);
        writer.write_all(answer.as_bytes()).unwrap();
        writer.write_all(b"\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let terminal = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        terminal,
    )
}

/// The person's approvals record for the project (`project-approvals.json` in the data dir).
fn approvals_record(f: &Fx) -> Value {
    let text = std::fs::read_to_string(f.data.join("project-approvals.json")).unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    all["projects"][f.project.to_str().unwrap()].clone()
}

const MODE_PROMPT: &str = "Mode [1=ask, 2=auto, 3=read-only; Enter: ask] ";

/// Issue 23, choosing the mode: the first `aibuddy run` in a project on a terminal asks once,
/// with one sentence on each mode; the answer is kept at the user level for this project (never
/// in the project), shown by the banner and `aibuddy trust --json`, and the next run does not ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_asks_the_mode_once_and_keeps_it_at_the_user_level() {
    let f = fx().await;
    let k = ProviderKind::Anthropic;
    f.server.push(Turn::text("Hello.").reply(k));
    let (code, stdout, terminal) =
        tokio::task::block_in_place(|| at_terminal(&f, &["run", "hi"], &[(MODE_PROMPT, "2")]));
    assert_eq!(code, 0, "stdout: {stdout}\nterminal: {terminal}");
    assert!(stdout.contains("Hello."), "{stdout}");
    assert!(
        terminal.contains("How much should aibuddy ask you in this project? (asked once"),
        "{terminal}"
    );
    for sentence in [
        "1) ask: every command and every change to a file is shown to you before it runs",
        "2) auto: commands confined by the sandbox and file edits inside the project run without",
        "3) read-only: nothing may change the project",
    ] {
        assert!(terminal.contains(sentence), "{sentence}: {terminal}");
    }
    assert!(
        terminal.contains("aibuddy: approvals for this project: auto (recorded)"),
        "{terminal}"
    );
    assert!(terminal.contains("aibuddy: approvals: auto"), "{terminal}");
    assert_eq!(approvals_record(&f)["mode"], "auto");
    assert!(
        !f.project.join(".aibuddy").exists(),
        "nothing was written into the project"
    );

    // The next run on a terminal does not ask again: the mode stands.
    f.server.push(Turn::text("Again.").reply(k));
    let (code, stdout, terminal) =
        tokio::task::block_in_place(|| at_terminal(&f, &["run", "hi again"], &[]));
    assert_eq!(code, 0, "stdout: {stdout}\nterminal: {terminal}");
    assert!(
        !terminal.contains("How much should aibuddy ask"),
        "{terminal}"
    );
    assert!(terminal.contains("aibuddy: approvals: auto"), "{terminal}");
    f.server.assert_clean();
    let out = f.std_command(&["trust", "--json"]).output().unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["approvals"]["mode"], "auto", "{status}");
    assert_eq!(status["approvals"]["chosen"], true, "{status}");
}

/// Issue 23, the rule offer: a command asked at the terminal offers `[y/N/a]`; `a` shows and
/// stores the exact rule at the user level for this project (never in the project), approves this
/// call once, and the next identical command runs without asking (here with nobody to ask), its
/// record naming the rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a_key_stores_the_offered_rule_at_the_user_level() {
    let f = fx().await;
    let k = ProviderKind::Anthropic;
    let ls = json!({"command": "ls -a"});
    f.server.push(
        Turn::text("Listing.")
            .call("toolu_a1", "execute", ls.clone())
            .reply(k),
    );
    // A later command the rule covers, in the same run: not asked again (the rule applies at
    // once, not from the next session). Were it asked, the queued `n` would decline it.
    f.server.push(
        Turn::text("Listing more.")
            .call("toolu_a1b", "execute", json!({"command": "ls -l"}))
            .reply(k),
    );
    f.server.push(Turn::text("Listed.").reply(k));
    let (code, stdout, terminal) = tokio::task::block_in_place(|| {
        at_terminal(
            &f,
            &["run", "--approvals", "ask", "list"],
            &[("Approve? [y/N/a] ", "a\nn")],
        )
    });
    assert_eq!(
        terminal.matches("Approve? [y/N/a] ").count(),
        1,
        "{terminal}"
    );
    assert!(terminal.contains(":toolu_a1b ok"), "{terminal}");
    assert_eq!(code, 0, "stdout: {stdout}\nterminal: {terminal}");
    assert!(
        terminal.contains(
            "[a] approve this call once and allow commands starting with `ls` in this project"
        ),
        "{terminal}"
    );
    assert!(
        terminal.contains("(adds the rule {\"command\": \"ls *\", \"decision\": \"allow\"} to your own approvals for this project, never to the project's files)"),
        "{terminal}"
    );
    assert!(
        terminal.contains("aibuddy: rule recorded for this project: allow command `ls *`"),
        "{terminal}"
    );
    assert!(terminal.contains(":toolu_a1 ok"), "{terminal}");
    assert_eq!(
        approvals_record(&f)["rules"],
        json!([{"command": "ls *", "decision": "allow"}])
    );
    assert!(
        !f.project.join(".aibuddy").exists(),
        "the rule was not written into the project"
    );

    // The next identical command runs without asking: no terminal, no --yes. (A new run with the
    // same tool call id: the fake provider's cross-run replay check does not apply.)
    f.server.check_replay(false);
    f.server.push(
        Turn::text("Again.")
            .call("toolu_a2", "execute", ls)
            .reply(k),
    );
    f.server.push(Turn::text("Done.").reply(k));
    let out = f
        .std_command(&["run", "--approvals", "ask", "--json", "list again"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        !events.iter().any(|e| e["type"] == "confirm_request"),
        "{stdout}"
    );
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["status"], "ok", "{result}");
    let id = result["tool_call_id"].as_str().unwrap();
    let shown = f.std_command(&["show", id, "--json"]).output().unwrap();
    let record: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(
        record["confirm_decisions"][0]["policy"],
        "ran without asking: allowed by your rules `ls *`"
    );
    f.server.assert_clean();
}
