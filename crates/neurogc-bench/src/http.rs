//! Just enough HTTP/1.1 for health checks and posting samples to a dashboard on 127.0.0.1.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// Sends one request (`Connection: close`) and returns the status code and the body.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>)> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("cannot connect to {addr}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(b) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    if let Some(b) = body {
        stream.write_all(b)?;
    }
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(response.len());
    let head = String::from_utf8_lossy(&response[..text_end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(code) => Ok((
            code,
            response[(text_end + 4).min(response.len())..].to_vec(),
        )),
        None => bail!("{addr} answered {method} {path} with something that is not HTTP"),
    }
}

/// The status of `GET path`.
pub fn get_status(addr: SocketAddr, path: &str, timeout: Duration) -> Result<u16> {
    request(addr, "GET", path, None, timeout).map(|(code, _)| code)
}
