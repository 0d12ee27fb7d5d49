//! The SOCKS5 side of the proxy: `CONNECT` with no authentication (names resolved here).

use super::*;

pub(super) async fn socks5<S>(mut c: Conn<S>, sh: &Shared) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + std::os::fd::AsRawFd,
{
    let hello = c.take(2).await?;
    let methods = c.take(usize::from(hello[1])).await?;
    if !methods.contains(&0) {
        c.s.write_all(&[5, 0xff]).await?;
        return Ok(());
    }
    c.s.write_all(&[5, 0]).await?;
    let req = c.take(4).await?;
    let host = match req[3] {
        1 => {
            let a = c.take(4).await?;
            IpAddr::from([a[0], a[1], a[2], a[3]]).to_string()
        }
        3 => {
            let n = c.take(1).await?[0];
            let name = c.take(usize::from(n)).await?;
            normalize_host(&String::from_utf8_lossy(&name))
        }
        4 => {
            let a = c.take(16).await?;
            let mut b = [0u8; 16];
            b.copy_from_slice(&a);
            IpAddr::from(b).to_string()
        }
        _ => {
            c.s.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Ok(());
        }
    };
    let p = c.take(2).await?;
    let port = u16::from_be_bytes([p[0], p[1]]);
    if req[1] != 1 {
        // BIND and UDP ASSOCIATE: not supported.
        c.s.write_all(&[5, 7, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
        return Ok(());
    }
    let (addrs, rule) = match admit(sh, &host, port, Protocol::Socks5).await {
        Ok(x) => x,
        Err(Refused(_)) => {
            c.s.write_all(&[5, 2, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Ok(());
        }
    };
    let up = match connect(sh, &host, port, Protocol::Socks5, &addrs, rule).await {
        Ok(up) => up,
        Err(_) => {
            c.s.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            return Ok(());
        }
    };
    c.s.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
    tunnel(c, up).await
}
