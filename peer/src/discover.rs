//! `abp-peer discover URL [--timeout MS]`: ABP discovery from the command line, with the same core as the
//! browser's `discover()` (`abp_wasm::core::discovery`): this file only moves bytes.
//!
//! HTTP/1.1 and https through `ureq` (rustls with Mozilla's root certificates, or the certificates in the PEM
//! file `SSL_CERT_FILE` names when it is set). Redirects are not followed here: each is reported to the core,
//! which follows at most 5. Prints the `DiscoveryResult` as JSON on stdout; the exit code is 0 when the app is
//! supported, 1 when not, 2 for bad arguments.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use abp_wasm::core::discovery::{
    Discovery, DiscoveryResult, Failure, Request, ResponseHead, TIMEOUT_MS,
};
use serde_json::Value;
use ureq::tls::{PemItem, RootCerts, TlsConfig};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The page (http:// or https://).
    url: String,
    /// Time limit for the whole discovery in milliseconds (connects, redirects, page and manifest).
    #[arg(long, value_name = "MS", default_value_t = u64::from(TIMEOUT_MS))]
    timeout: u64,
}

/// The `discover` subcommand. Returns the process exit code.
pub(crate) fn main(args: &Args) -> i32 {
    let result = match agent() {
        Ok(agent) => discover(&agent, &args.url, Duration::from_millis(args.timeout)),
        Err(e) => {
            eprintln!("abp-peer discover: {e}");
            return 2;
        }
    };
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

/// The HTTP client: no redirects followed, no status treated as an error, no compression asked for.
fn agent() -> Result<ureq::Agent, String> {
    let roots = match std::env::var_os("SSL_CERT_FILE") {
        Some(path) => {
            let pem = std::fs::read(&path).map_err(|e| {
                format!("cannot read SSL_CERT_FILE {}: {e}", path.to_string_lossy())
            })?;
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(format!(
                    "SSL_CERT_FILE {} has no certificates",
                    path.to_string_lossy()
                ));
            }
            RootCerts::Specific(Arc::new(certs))
        }
        None => RootCerts::WebPki,
    };
    Ok(ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .user_agent(format!(
            "abp-peer/{} (ABP discovery)",
            env!("CARGO_PKG_VERSION")
        ))
        .accept_encoding("identity")
        .tls_config(TlsConfig::builder().root_certs(roots).build())
        .build()
        .into())
}

/// Runs one discovery within `timeout` (for everything: connects, redirects, page and manifest).
fn discover(agent: &ureq::Agent, url: &str, timeout: Duration) -> DiscoveryResult<Value> {
    let deadline = Instant::now() + timeout;
    let ms = timeout.as_millis() as f64;
    let mut d = Discovery::new(url);
    while let Some(req) = d.request().cloned() {
        if let Err(e) = exchange(agent, &mut d, &req, deadline) {
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

impl From<ureq::Error> for Error {
    fn from(e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(_) => Error::Timeout,
            ureq::Error::Io(e) => e.into(),
            other => Error::Other(other.to_string()),
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout,
            _ => match e.into_inner() {
                // ureq reports its own errors (a timeout among them) through `io::Error` while a body is read.
                Some(inner) => match inner.downcast::<ureq::Error>() {
                    Ok(e) => (*e).into(),
                    Err(other) => Error::Other(other.to_string()),
                },
                None => Error::Other("the connection failed".to_owned()),
            },
        }
    }
}

/// One GET: the head goes to the core, then the body for as long as the core wants it.
fn exchange(
    agent: &ureq::Agent,
    d: &mut Discovery<Value>,
    req: &Request,
    deadline: Instant,
) -> Result<(), Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Error::Timeout);
    }
    let mut response = agent
        .get(&req.url)
        .header("Accept", req.accept)
        .config()
        .timeout_global(Some(left))
        .build()
        .call()?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (location, content_type) = (header("location"), header("content-type"));
    let wants_body = d.on_response(ResponseHead {
        status: response.status().as_u16(),
        url: None,
        location: location.as_deref(),
        content_type: content_type.as_deref(),
    });
    if !wants_body {
        return Ok(());
    }
    let mut body = response.body_mut().as_reader();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = body.read(&mut chunk).map_err(|e| {
            if Instant::now() >= deadline {
                Error::Timeout
            } else {
                e.into()
            }
        })?;
        if n == 0 {
            break;
        }
        if !d.on_body(&chunk[..n]) {
            break;
        }
    }
    d.on_end();
    Ok(())
}
