//! Blocking HTTP for health checks and posting samples to a dashboard on 127.0.0.1, through
//! `ureq` (plain HTTP, no TLS). A thin wrapper: the callers' timeouts and error messages that
//! name the address. The load generator has its own client (`neurogc-load`).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{anyhow, Result};

/// Sends one request and returns the status code and the body, whatever the status.
///
/// `timeout` bounds connecting and each read and write on the socket, as `TcpStream`'s
/// timeouts did. No proxy (the environment's `HTTP_PROXY` does not apply to 127.0.0.1 here) and
/// no redirects are followed.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_connect(Some(timeout))
        .timeout_per_read(Some(timeout))
        .timeout_per_write(Some(timeout))
        .build()
        .into();
    let slash = if path.starts_with('/') { "" } else { "/" };
    let url = format!("http://{addr}{slash}{path}");
    let sent = match (method, body) {
        ("GET", None) => agent.get(&url).call(),
        ("POST", Some(b)) => agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(b),
        ("POST", None) => agent.post(&url).send_empty(),
        _ => {
            return Err(anyhow!(
                "http::request: {method} with this body is not supported"
            ))
        }
    };
    let describe = |e: ureq::Error| describe(e, addr, method, path);
    let response = sent.map_err(describe)?;
    let code = response.status().as_u16();
    let body = response.into_body().read_to_vec().map_err(describe)?;
    Ok((code, body))
}

/// The status of `GET path`.
pub fn get_status(addr: SocketAddr, path: &str, timeout: Duration) -> Result<u16> {
    request(addr, "GET", path, None, timeout).map(|(code, _)| code)
}

/// An error that names the address, and what went wrong in the words the old client used.
fn describe(e: ureq::Error, addr: SocketAddr, method: &str, path: &str) -> anyhow::Error {
    use std::io::ErrorKind;
    use ureq::{Error, Timeout};
    match &e {
        Error::ConnectionFailed | Error::Timeout(Timeout::Connect) => {
            anyhow!("cannot connect to {addr}: {e}")
        }
        Error::Io(io)
            if matches!(
                io.kind(),
                ErrorKind::ConnectionRefused | ErrorKind::AddrNotAvailable
            ) =>
        {
            anyhow!("cannot connect to {addr}: {e}")
        }
        Error::Protocol(_) | Error::LargeResponseHeader(..) => {
            anyhow!("{addr} answered {method} {path} with something that is not HTTP ({e})")
        }
        _ => anyhow!("{method} {path} to {addr} failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener};

    /// A one-shot server: answers the first connection with `reply`, returns what it received.
    fn serve_once(reply: &'static [u8]) -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            // Read the head, then the body its Content-Length announces.
            loop {
                let n = s.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if got.len() >= end + 4 + len {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            s.write_all(reply).unwrap();
            got
        });
        (addr, handle)
    }

    #[test]
    fn posts_json_and_reads_status_and_body() {
        let (addr, server) =
            serve_once(b"HTTP/1.1 422 Unprocessable\r\nContent-Length: 4\r\n\r\nnope");
        let (code, body) = request(
            addr,
            "POST",
            "/api/metrics",
            Some(b"[1]"),
            Duration::from_secs(2),
        )
        .unwrap();
        assert_eq!((code, body.as_slice()), (422, &b"nope"[..]));
        let got = String::from_utf8(server.join().unwrap()).unwrap();
        assert!(got.starts_with("POST /api/metrics HTTP/1.1\r\n"), "{got}");
        assert!(
            got.to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{got}"
        );
        assert!(got.ends_with("\r\n\r\n[1]"), "{got}");
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        let (addr, server) = serve_once(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
        );
        let (code, body) =
            request(addr, "GET", "/api/status", None, Duration::from_secs(2)).unwrap();
        assert_eq!((code, body.as_slice()), (200, &br#"{"a":1}"#[..]));
        server.join().unwrap();
    }

    #[test]
    fn errors_name_the_address() {
        // A port that was free a moment ago: nothing listens there.
        let addr = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap();
        let e = get_status(addr, "/health", Duration::from_millis(500)).unwrap_err();
        assert!(
            format!("{e:#}").contains(&format!("cannot connect to {addr}")),
            "{e:#}"
        );
        let (addr, server) = serve_once(b"SSH-2.0-OpenSSH\r\n\r\n");
        let e = get_status(addr, "/health", Duration::from_secs(2)).unwrap_err();
        assert!(
            format!("{e:#}").contains(&format!("{addr} answered GET /health")),
            "{e:#}"
        );
        server.join().unwrap();
    }
}
