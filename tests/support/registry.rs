//! A host loopback HTTP server answering every request with `registry-ok`: the "package
//! registry" that network-policy tests allow, refuse or ask about. Shared by the root, exec,
//! container and desktop test binaries (the crates include this file by path).

use std::io::{Read, Write};
use std::net::TcpListener;

/// Starts the server on a free port of 127.0.0.1 (threads live as long as the test binary) and
/// returns the port.
pub fn registry() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = l.local_addr().expect("the bound address").port();
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
