//! The HTTP side of the proxy: `CONNECT host:port` tunnels and absolute-form requests forwarded
//! in origin-form.

use super::*;

pub(super) fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// `host:port`, `[v6]:port` or `host` (with `default` port).
pub(crate) fn split_authority(auth: &str, default: Option<u16>) -> Option<(String, u16)> {
    let auth = auth.rsplit_once('@').map_or(auth, |(_, a)| a);
    let (host, port) = if let Some(rest) = auth.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return None,
        }
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (auth, None),
        }
    };
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0)?,
        None => default?,
    };
    let host = normalize_host(host);
    (!host.is_empty()).then_some((host, port))
}

/// `http://authority/path?q` -> (host, port, origin-form target).
pub(crate) fn split_absolute(url: &str) -> Option<(String, u16, String)> {
    let lower = url.get(..7)?.to_ascii_lowercase();
    if lower != "http://" {
        return None;
    }
    let rest = &url[7..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, path) = rest.split_at(end);
    let (host, port) = split_authority(auth, Some(80))?;
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    Some((host, port, path))
}

pub(super) async fn respond<S: AsyncWrite + Unpin>(s: &mut S, status: &str, body: &str) {
    let msg = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.write_all(msg.as_bytes()).await;
    let _ = s.shutdown().await;
}

pub(super) async fn http<S>(mut c: Conn<S>, sh: &Shared) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + std::os::fd::AsRawFd,
{
    let end = loop {
        if let Some(end) = find_head_end(&c.pending) {
            break end;
        }
        if c.pending.len() > MAX_HEAD {
            respond(
                &mut c.s,
                "431 Request Header Fields Too Large",
                "aibuddy: request head too large\n",
            )
            .await;
            return Ok(());
        }
        if c.fill().await? == 0 {
            return Ok(());
        }
    };
    let head: Vec<u8> = c.pending.drain(..end).collect();
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if !m.is_empty() => (m, t, v),
        _ => {
            respond(
                &mut c.s,
                "400 Bad Request",
                "aibuddy: not an HTTP proxy request\n",
            )
            .await;
            return Ok(());
        }
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_authority(target, None) else {
            respond(
                &mut c.s,
                "400 Bad Request",
                "aibuddy: CONNECT needs host:port\n",
            )
            .await;
            return Ok(());
        };
        let (addrs, rule) = match admit(sh, &host, port, Protocol::Connect).await {
            Ok(x) => x,
            Err(Refused(reason)) => {
                let body = format!("aibuddy: refused connection to {host}:{port} ({reason})\n");
                respond(&mut c.s, "403 Forbidden", &body).await;
                return Ok(());
            }
        };
        let up = match connect(sh, &host, port, Protocol::Connect, &addrs, rule).await {
            Ok(up) => up,
            Err(e) => {
                respond(
                    &mut c.s,
                    "502 Bad Gateway",
                    &format!("aibuddy: {host}:{port}: {e}\n"),
                )
                .await;
                return Ok(());
            }
        };
        c.s.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
        return tunnel(c, up).await;
    }
    let Some((host, port, path)) = split_absolute(target) else {
        respond(
            &mut c.s,
            "400 Bad Request",
            "aibuddy: the proxy serves CONNECT host:port and http:// absolute-form requests\n",
        )
        .await;
        return Ok(());
    };
    let (addrs, rule) = match admit(sh, &host, port, Protocol::Http).await {
        Ok(x) => x,
        Err(Refused(reason)) => {
            let body = format!("aibuddy: refused connection to {host}:{port} ({reason})\n");
            respond(&mut c.s, "403 Forbidden", &body).await;
            return Ok(());
        }
    };
    let mut up = match connect(sh, &host, port, Protocol::Http, &addrs, rule).await {
        Ok(up) => up,
        Err(e) => {
            respond(
                &mut c.s,
                "502 Bad Gateway",
                &format!("aibuddy: {host}:{port}: {e}\n"),
            )
            .await;
            return Ok(());
        }
    };
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if [
            "proxy-connection",
            "proxy-authorization",
            "connection",
            "keep-alive",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    up.write_all(out.as_bytes()).await?;
    tunnel(c, up).await
}
