//! `abp-peer discover URL [--timeout MS]`: ABP discovery from the command line, with the same core as the
//! browser's `discover()` (`abp_wasm::core::discovery`): this file only moves bytes.
//!
//! A plain HTTP/1.1 client over `std::net::TcpStream` (GET, `Connection: close`, chunked or sized bodies).
//! Redirects are reported to the core, which follows at most 5. `https://` URLs are refused with a reason:
//! there is no TLS client in this binary. Prints the `DiscoveryResult` as JSON on stdout; the exit code is 0
//! when the app is supported, 1 when not, 2 for bad arguments.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use abp_wasm::core::discovery::{
    Discovery, DiscoveryResult, Failure, Request, ResponseHead, Url, TIMEOUT_MS,
};
use serde_json::Value;

/// The longest response head (status line and headers) read.
const MAX_HEAD_BYTES: usize = 64 * 1024;

const USAGE: &str = "usage: abp-peer discover URL [--timeout MS]
  Finds the page's <link rel=\"abp-manifest\">, fetches and checks the manifest, and prints the
  DiscoveryResult as JSON. Exit code 0 when supported, 1 when not. http:// only (https is refused).
  --timeout   time limit for the whole discovery in milliseconds (default 10000)";

/// The `discover` subcommand; `args` are the arguments after it. Returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    let mut url = None;
    let mut timeout = Duration::from_millis(u64::from(TIMEOUT_MS));
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--timeout" => match it.next().and_then(|n| n.parse::<u64>().ok()) {
                Some(ms) => timeout = Duration::from_millis(ms),
                None => return usage("--timeout needs a number of milliseconds"),
            },
            "-h" | "--help" => return usage(""),
            other if url.is_none() && !other.starts_with("--") => url = Some(other.to_owned()),
            other => return usage(&format!("unexpected argument {other}")),
        }
    }
    let Some(url) = url else {
        return usage("discover needs a URL");
    };
    let result = discover(&url, timeout);
    let supported = result.supported;
    // The same object the browser's discover() resolves to, built by the core over serde_json's Value.
    println!("{}", result.into_wire());
    let _ = io::stdout().flush();
    if supported {
        0
    } else {
        1
    }
}

fn usage(error: &str) -> i32 {
    if !error.is_empty() {
        eprintln!("abp-peer discover: {error}");
    }
    eprintln!("{USAGE}");
    2
}

/// Runs one discovery within `timeout` (for everything: connects, redirects, page and manifest).
pub fn discover(url: &str, timeout: Duration) -> DiscoveryResult<Value> {
    let deadline = Instant::now() + timeout;
    let ms = timeout.as_millis() as f64;
    let mut d = Discovery::new(url);
    while let Some(req) = d.request().cloned() {
        if let Err(e) = exchange(&mut d, &req, deadline) {
            d.on_failure(match e {
                Error::Timeout => Failure::Timeout(ms),
                Error::Other(why) => Failure::Network(why),
            });
        }
    }
    d.result()
}

enum Error {
    Timeout,
    Other(String),
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout,
            _ => Error::Other(e.to_string()),
        }
    }
}

/// One GET: the head goes to the core, then the body for as long as the core wants it.
fn exchange(d: &mut Discovery<Value>, req: &Request, deadline: Instant) -> Result<(), Error> {
    let url = Url::parse(&req.url).map_err(Error::Other)?;
    if url.is_https() {
        return Err(Error::Other(
            "https is not supported by abp-peer discover (it has no TLS client); use an http:// URL, or \
             discover() from a browser"
                .to_owned(),
        ));
    }
    let mut conn = Conn::open(&url, deadline)?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: {}\r\nAccept-Encoding: identity\r\n\
         User-Agent: abp-peer/{} (ABP discovery)\r\nConnection: close\r\n\r\n",
        url.target(),
        url.authority(),
        req.accept,
        env!("CARGO_PKG_VERSION"),
    );
    conn.write_all(request.as_bytes())?;
    let head = loop {
        let head = conn.read_head()?;
        if !(100..200).contains(&head.status) {
            break head;
        }
    };
    let wants_body = d.on_response(ResponseHead {
        status: head.status,
        url: None,
        location: head.header("location"),
        content_type: head.header("content-type"),
    });
    if !wants_body {
        return Ok(());
    }
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    let length = head
        .header("content-length")
        .and_then(|n| n.trim().parse::<u64>().ok());
    let mut body = Body::new(chunked, length);
    while let Some(chunk) = body.next(&mut conn)? {
        if !d.on_body(&chunk) {
            break;
        }
    }
    d.on_end();
    Ok(())
}

/// A connection with a read buffer and a deadline applied to every read and write.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    deadline: Instant,
}

impl Conn {
    fn open(url: &Url, deadline: Instant) -> Result<Conn, Error> {
        let host = url.host().trim_start_matches('[').trim_end_matches(']');
        let addrs = (host, url.port())
            .to_socket_addrs()
            .map_err(|e| Error::Other(format!("cannot resolve {}: {e}", url.host())))?;
        let mut last = Error::Other(format!("no address for {}", url.host()));
        for addr in addrs {
            let left = remaining(deadline)?;
            match TcpStream::connect_timeout(&addr, left) {
                Ok(stream) => {
                    return Ok(Conn {
                        stream,
                        buf: Vec::new(),
                        deadline,
                    })
                }
                Err(e) => last = e.into(),
            }
        }
        Err(last)
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.stream
            .set_write_timeout(Some(remaining(self.deadline)?))?;
        self.stream.write_all(bytes)?;
        Ok(())
    }

    /// Reads more into the buffer; false at end of stream.
    fn fill(&mut self) -> Result<bool, Error> {
        self.stream
            .set_read_timeout(Some(remaining(self.deadline)?))?;
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    /// A line ending in CRLF (or LF), without it; at most `max` bytes.
    fn read_line(&mut self, max: usize) -> Result<Vec<u8>, Error> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=i).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            if self.buf.len() > max {
                return Err(Error::Other(
                    "a line of the response is too long".to_owned(),
                ));
            }
            if !self.fill()? {
                return Err(Error::Other(
                    "the connection closed in the middle of the response".to_owned(),
                ));
            }
        }
    }

    fn read_head(&mut self) -> Result<Head, Error> {
        let status_line = self.read_line(MAX_HEAD_BYTES)?;
        let status_line = String::from_utf8_lossy(&status_line).into_owned();
        let mut parts = status_line.split_whitespace();
        let status = match (
            parts.next(),
            parts.next().and_then(|s| s.parse::<u16>().ok()),
        ) {
            (Some(v), Some(s)) if v.starts_with("HTTP/1.") && (100..1000).contains(&s) => s,
            _ => {
                return Err(Error::Other(format!(
                    "not an HTTP/1.x response: {}",
                    status_line.chars().take(80).collect::<String>()
                )))
            }
        };
        let mut headers = Vec::new();
        let mut size = status_line.len();
        loop {
            let line = self.read_line(MAX_HEAD_BYTES)?;
            size += line.len() + 2;
            if size > MAX_HEAD_BYTES {
                return Err(Error::Other(
                    "the response head is larger than 64 KB".to_owned(),
                ));
            }
            if line.is_empty() {
                break;
            }
            let line = String::from_utf8_lossy(&line);
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        Ok(Head { status, headers })
    }
}

fn remaining(deadline: Instant) -> Result<Duration, Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(Error::Timeout)
    } else {
        Ok(left)
    }
}

struct Head {
    status: u16,
    headers: Vec<(String, String)>,
}

impl Head {
    /// The first header of that (lowercase) name.
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a body: chunked, of a given length, or up to the end of the connection.
struct Body {
    chunked: bool,
    /// Bytes left: of the body (sized), or of the current chunk (chunked).
    left: Option<u64>,
    done: bool,
}

impl Body {
    fn new(chunked: bool, length: Option<u64>) -> Body {
        Body {
            chunked,
            left: if chunked { Some(0) } else { length },
            done: length == Some(0) && !chunked,
        }
    }

    /// The next piece of the body; `None` at its end.
    fn next(&mut self, conn: &mut Conn) -> Result<Option<Vec<u8>>, Error> {
        if self.done {
            return Ok(None);
        }
        if self.chunked && self.left == Some(0) {
            let line = conn.read_line(4096)?;
            let line = String::from_utf8_lossy(&line);
            let size = line.split(';').next().unwrap_or_default().trim();
            let size = u64::from_str_radix(size, 16)
                .map_err(|_| Error::Other("bad chunk size in a chunked response".to_owned()))?;
            if size == 0 {
                self.done = true; // trailers, if any, are not needed
                return Ok(None);
            }
            self.left = Some(size);
        }
        if conn.buf.is_empty() && !conn.fill()? {
            self.done = true;
            return match self.left {
                Some(n) if n > 0 => Err(Error::Other(
                    "the connection closed before the body ended".to_owned(),
                )),
                _ => Ok(None),
            };
        }
        let take = match self.left {
            Some(n) => conn.buf.len().min(usize::try_from(n).unwrap_or(usize::MAX)),
            None => conn.buf.len(),
        };
        let piece: Vec<u8> = conn.buf.drain(..take).collect();
        if let Some(n) = self.left.as_mut() {
            *n -= piece.len() as u64;
            if *n == 0 {
                if self.chunked {
                    conn.read_line(2)?; // the CRLF after the chunk
                } else {
                    self.done = true;
                }
            }
        }
        Ok(Some(piece))
    }
}
