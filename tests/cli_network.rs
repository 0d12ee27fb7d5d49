//! Issue 22 through the real CLI: `aibuddy call execute` with `exec.network` lists in the user's
//! `settings.json`, against a REAL loopback server on the host. The command reaches the listed
//! loopback "registry" only through the proxy, the host port directly not at all; the refused host
//! is named in the result with how to allow it, and recorded with the call (`aibuddy show --json`).

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::Value;
use support::aibuddy;

fn registry() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nregistry-ok\n",
                );
            });
        }
    });
    port
}

#[test]
fn call_execute_reaches_only_listed_hosts_and_names_the_refused_one() {
    let port = registry();
    let other = registry();
    let p = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("settings.json"),
        format!(r#"{{"exec": {{"network": {{"allow": ["localhost:{port}"]}}}}}}"#),
    )
    .unwrap();
    let command = format!(
        "NO_PROXY= no_proxy= curl -sS --max-time 10 http://localhost:{port}/; \
         NO_PROXY= no_proxy= curl -sS --max-time 10 http://localhost:{other}/; \
         bash -c 'echo hi > /dev/tcp/127.0.0.1/{other}' 2>/dev/null && echo direct-connected || echo direct-refused"
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let (code, out, err) = aibuddy(
        p.path(),
        d.path(),
        &[
            "call",
            "execute",
            &args,
            "--yes",
            "--json",
            "--id",
            "call-net-1",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).expect("one JSON result");
    let model = v["model"].as_str().unwrap_or_default();
    assert_eq!(model.matches("registry-ok").count(), 1, "{model}");
    assert!(model.contains("direct-refused"), "{model}");
    assert!(
        model.contains(&format!(
            "network: refused connection to localhost:{other} (not on exec.network.allow); \
             the person can add it to exec.network.allow in settings.json"
        )),
        "{model}"
    );
    let (code, shown, err) = aibuddy(p.path(), d.path(), &["show", "call-net-1", "--json"]);
    assert_eq!(code, 0, "{shown}\n{err}");
    let rec: Value = serde_json::from_str(&shown).unwrap();
    let text = rec.to_string();
    let net = find_network(&rec).unwrap_or_else(|| panic!("no network report in {text}"));
    let events = net["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["port"] == other && e["allowed"] == false && e["host"] == "localhost"),
        "{net}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["port"] == port && e["allowed"] == true),
        "{net}"
    );
}

/// The stored outcome's `network` object, wherever the record keeps the raw value.
fn find_network(v: &Value) -> Option<&Value> {
    match v {
        Value::Object(m) => {
            if let Some(n) = m.get("network").filter(|n| n.get("events").is_some()) {
                return Some(n);
            }
            m.values().find_map(find_network)
        }
        Value::Array(a) => a.iter().find_map(find_network),
        _ => None,
    }
}
