//! A minimal keep-alive HTTP/1.1 client, built for a load generator.
//!
//! Why not hyper's client: requests are serialised once per (host, task) and written as bytes,
//! responses are parsed with `httparse` into a per-connection buffer and the body is skipped, so
//! a request costs no allocation and no channel hop. It speaks what servers send: Content-Length,
//! chunked, and read-to-close bodies, `Connection: close`, 1xx interim responses. No TLS, no
//! pipelining, no redirects (a 3xx is a response like any other).
use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::tasks::Task;

/// Why a request failed. Status failures are responses with a status of 400 or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailKind {
    /// The TCP connection could not be opened (refused, unreachable).
    Connect,
    /// No complete response within `--timeout`.
    Timeout,
    /// The server closed or reset the connection before a complete response.
    Closed,
    /// The bytes received are not a valid HTTP/1 response.
    Protocol,
    /// An HTTP status of 400 or more.
    Status(u16),
}

impl fmt::Display for FailKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            FailKind::Connect => f.write_str("connect"),
            FailKind::Timeout => f.write_str("timeout"),
            FailKind::Closed => f.write_str("closed"),
            FailKind::Protocol => f.write_str("protocol"),
            FailKind::Status(code) => write!(f, "http_{code}"),
        }
    }
}

/// A parsed `--host`.
#[derive(Debug, Clone)]
pub struct Target {
    /// As given on the command line, minus a trailing '/'; labels the statistics.
    pub url: String,
    pub addr: SocketAddr,
    host_header: String,
    prefix: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target> {
        let ctx = || format!("--host {url:?}");
        let Some(rest) = url.strip_prefix("http://") else {
            if url.starts_with("https://") {
                bail!("--host {url:?}: https is not supported (plain http only)");
            }
            bail!("--host {url:?}: expected http://HOST[:PORT][/PREFIX]");
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            bail!("--host {url:?}: expected http://HOST[:PORT][/PREFIX]");
        }
        let with_port = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.contains(']'))
        {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let addr = with_port
            .to_socket_addrs()
            .with_context(|| format!("{}: cannot resolve {with_port}", ctx()))?
            .next()
            .with_context(|| format!("{}: {with_port} resolves to no address", ctx()))?;
        Ok(Target {
            url: url.trim_end_matches('/').to_string(),
            addr,
            host_header: authority.to_string(),
            prefix: prefix.to_string(),
        })
    }

    /// Serialises `task` once; the bytes are reused for every request.
    pub fn prepare(&self, task: &Task) -> Prepared {
        let mut head = format!(
            "{} {}{} HTTP/1.1\r\nHost: {}\r\nUser-Agent: neurogc-load/{}\r\nAccept: */*\r\n",
            task.method,
            self.prefix,
            task.path,
            self.host_header,
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in &task.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        let body = task.body.as_deref().unwrap_or("");
        if !body.is_empty()
            || !matches!(task.method.as_str(), "GET" | "HEAD" | "DELETE" | "OPTIONS")
        {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        head.push_str(body);
        Prepared {
            bytes: head.into_bytes(),
            head_only: task.method == "HEAD",
        }
    }
}

/// One serialised request.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub bytes: Vec<u8>,
    /// A HEAD response has headers but no body, whatever Content-Length says.
    head_only: bool,
}

/// Sends `req` on the connection in `slot` (opening one if empty) and reads the full response.
/// Returns the status; leaves a reusable connection in `slot`. A reused keep-alive connection
/// that the server had already closed is retried once on a fresh one, as browsers do; that is
/// not a failure of the request.
pub async fn send(
    slot: &mut Option<Conn>,
    addr: SocketAddr,
    req: &Prepared,
) -> Result<u16, FailKind> {
    let mut reused = slot.is_some();
    loop {
        let mut conn = match slot.take() {
            Some(c) => c,
            None => Conn::connect(addr).await.map_err(|_| FailKind::Connect)?,
        };
        match conn.exchange(req).await {
            Ok(done) => {
                if done.reusable {
                    *slot = Some(conn);
                }
                return if done.status >= 400 {
                    Err(FailKind::Status(done.status))
                } else {
                    Ok(done.status)
                };
            }
            Err(Error::Io { answered: false }) if reused => reused = false,
            Err(Error::Io { .. }) => return Err(FailKind::Closed),
            Err(Error::Protocol) => return Err(FailKind::Protocol),
        }
    }
}

/// Opens and checks a connection before the run, so a bad host is named up front.
pub async fn probe(target: &Target) -> io::Result<()> {
    TcpStream::connect(target.addr).await.map(drop)
}

enum Error {
    /// `answered`: whether any byte of a response arrived before the failure.
    Io {
        answered: bool,
    },
    Protocol,
}

struct Done {
    status: u16,
    reusable: bool,
}

enum Body {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

const BUF: usize = 16 * 1024;

/// One keep-alive TCP connection and its read buffer; `buf[start..end]` holds unread bytes.
pub struct Conn {
    stream: TcpStream,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    answered: bool,
}

impl Conn {
    async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        // Requests are written whole; Nagle would only add delay.
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: vec![0; BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            answered: false,
        })
    }

    async fn exchange(&mut self, req: &Prepared) -> Result<Done, Error> {
        self.start = 0;
        self.end = 0;
        self.answered = false;
        self.stream
            .write_all(&req.bytes)
            .await
            .map_err(|_| Error::Io { answered: false })?;
        let head = loop {
            match parse_head(&self.buf[self.start..self.end], req.head_only)? {
                Some((used, head)) if (100..200).contains(&head.status) && head.status != 101 => {
                    self.start += used; // interim response: the real one follows
                }
                Some((used, head)) => {
                    self.start += used;
                    break head;
                }
                None => self.fill().await?,
            }
        };
        let mut reusable = !head.close;
        match head.body {
            Body::None => {}
            Body::Length(n) => self.skip(n).await?,
            Body::Chunked => self.skip_chunked().await?,
            Body::UntilClose => {
                reusable = false;
                while self.read_some().await? > 0 {}
            }
        }
        // We never pipeline, so leftover bytes mean a confused server: do not reuse.
        reusable &= self.start == self.end;
        Ok(Done {
            status: head.status,
            reusable,
        })
    }

    /// Reads more bytes after `end`, compacting first; EOF is an error here.
    async fn fill(&mut self) -> Result<(), Error> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start == 0 {
                return Err(Error::Protocol); // a head or chunk line longer than the buffer
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        match self.read_some().await? {
            0 => Err(Error::Io {
                answered: self.answered,
            }),
            _ => Ok(()),
        }
    }

    async fn read_some(&mut self) -> Result<usize, Error> {
        if self.end == self.buf.len() {
            // Only reached while reading to close: the bytes are body, drop them.
            self.start = 0;
            self.end = 0;
        }
        let n = self
            .stream
            .read(&mut self.buf[self.end..])
            .await
            .map_err(|_| Error::Io {
                answered: self.answered,
            })?;
        self.end += n;
        self.answered |= n > 0;
        Ok(n)
    }

    async fn skip(&mut self, mut n: u64) -> Result<(), Error> {
        loop {
            let take = ((self.end - self.start) as u64).min(n);
            self.start += take as usize;
            n -= take;
            if n == 0 {
                return Ok(());
            }
            self.fill().await?;
        }
    }

    /// Returns the next CRLF-terminated line's length and consumes it.
    async fn line<R>(&mut self, f: impl Fn(&[u8]) -> R) -> Result<R, Error> {
        loop {
            let avail = &self.buf[self.start..self.end];
            if let Some(i) = avail.windows(2).position(|w| w == b"\r\n") {
                let r = f(&avail[..i]);
                self.start += i + 2;
                return Ok(r);
            }
            self.fill().await?;
        }
    }

    async fn skip_chunked(&mut self) -> Result<(), Error> {
        loop {
            let size = self.line(parse_chunk_size).await?.ok_or(Error::Protocol)?;
            if size == 0 {
                // Trailer fields, then an empty line.
                while !self.line(|l| l.is_empty()).await? {}
                return Ok(());
            }
            self.skip(size).await?;
            if !self.line(|l| l.is_empty()).await? {
                return Err(Error::Protocol);
            }
        }
    }
}

struct Head {
    status: u16,
    body: Body,
    close: bool,
}

/// Parses a response head; `None` while incomplete.
fn parse_head(bytes: &[u8], head_only: bool) -> Result<Option<(usize, Head)>, Error> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let used = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Error::Protocol),
    };
    let status = resp.code.ok_or(Error::Protocol)?;
    let mut close = resp.version == Some(0);
    let (mut length, mut chunked) = (None, false);
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value).map_err(|_| Error::Protocol)?;
            length = Some(v.trim().parse::<u64>().map_err(|_| Error::Protocol)?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = has_token(h.value, b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            if has_token(h.value, b"close") {
                close = true;
            } else if has_token(h.value, b"keep-alive") {
                close = false;
            }
        }
    }
    let body = if head_only || (100..200).contains(&status) || status == 204 || status == 304 {
        Body::None
    } else if chunked {
        Body::Chunked
    } else if let Some(n) = length {
        Body::Length(n)
    } else {
        Body::UntilClose
    };
    Ok(Some((
        used,
        Head {
            status,
            body,
            close,
        },
    )))
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

fn parse_chunk_size(line: &[u8]) -> Option<u64> {
    let hex = line.split(|&b| b == b';').next()?.trim_ascii();
    let s = std::str::from_utf8(hex).ok()?;
    if s.is_empty() {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    /// Serves canned byte responses, one per request read, on one connection per entry.
    async fn canned(conns: Vec<Vec<&'static [u8]>>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            for replies in conns {
                let (mut s, _) = l.accept().await.unwrap();
                for r in replies {
                    let mut b = [0u8; 4096];
                    let _ = s.read(&mut b).await;
                    for piece in r.split_inclusive(|&c| c == b'|') {
                        let piece = piece.strip_suffix(b"|").unwrap_or(piece);
                        s.write_all(piece).await.unwrap();
                        s.flush().await.unwrap();
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                }
                // dropping `s` closes the connection
            }
        });
        addr
    }

    fn get() -> Prepared {
        let t = Target::parse("http://127.0.0.1:9").unwrap();
        t.prepare(&crate::tasks::TaskSet::seed().tasks()[4])
    }

    #[tokio::test]
    async fn reads_length_chunked_and_close_delimited_bodies() {
        let addr = canned(vec![vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel|lo",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n|a\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.0 200 OK\r\n\r\nbody until close",
        ]])
        .await;
        let mut slot = None;
        let req = get();
        assert_eq!(send(&mut slot, addr, &req).await, Ok(200));
        assert!(slot.is_some());
        assert_eq!(
            send(&mut slot, addr, &req).await,
            Err(FailKind::Status(404))
        );
        assert!(slot.is_some());
        assert_eq!(send(&mut slot, addr, &req).await, Ok(204));
        assert_eq!(send(&mut slot, addr, &req).await, Ok(200));
        assert!(slot.is_none(), "a read-to-close body ends the connection");
    }

    #[tokio::test]
    async fn stale_keepalive_is_retried_but_a_midresponse_close_fails() {
        let addr = canned(vec![
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"], // then closes: slot is stale
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"],
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"],
            vec![b"garbage\r\n\r\n"],
        ])
        .await;
        let mut slot = None;
        let req = get();
        assert_eq!(send(&mut slot, addr, &req).await, Ok(200));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(
            send(&mut slot, addr, &req).await,
            Ok(200),
            "retried on a fresh connection"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(send(&mut slot, addr, &req).await, Err(FailKind::Closed));
        assert_eq!(send(&mut slot, addr, &req).await, Err(FailKind::Protocol));
    }

    #[test]
    fn targets_and_request_bytes() {
        let t = Target::parse("http://localhost:8001/api/").unwrap();
        assert_eq!(t.url, "http://localhost:8001/api");
        assert_eq!(t.addr.port(), 8001);
        let task = crate::tasks::TaskSet::from_toml(
            "[[task]]\nmethod='POST'\npath='/x'\nbody='{}'\nheaders={X-A='b'}",
        )
        .unwrap();
        let bytes = String::from_utf8(t.prepare(&task.tasks()[0]).bytes).unwrap();
        assert!(
            bytes.starts_with("POST /api/x HTTP/1.1\r\nHost: localhost:8001\r\n"),
            "{bytes}"
        );
        assert!(
            bytes.ends_with("X-A: b\r\nContent-Length: 2\r\n\r\n{}"),
            "{bytes}"
        );
        assert_eq!(Target::parse("http://127.0.0.1").unwrap().addr.port(), 80);
        assert_eq!(Target::parse("http://[::1]:81").unwrap().addr.port(), 81);
        assert!(Target::parse("ftp://x").is_err());
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size(b"1a"), Some(26));
        assert_eq!(parse_chunk_size(b"0;ext=1"), Some(0));
        assert_eq!(parse_chunk_size(b""), None);
        assert_eq!(parse_chunk_size(b"zz"), None);
    }
}
