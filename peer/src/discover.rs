//! `abp-peer discover URL [--timeout MS]`: ABP discovery from the command line, with the same core as the
//! browser's `discover()` (`abp_wasm::core::discovery`): this file only moves bytes.
//!
//! HTTP/1.1 and https through `ureq` (rustls with Mozilla's root certificates, or the certificates in the PEM
//! file `SSL_CERT_FILE` names when it is set). Redirects are not followed here: each is reported to the core,
//! which follows at most 5. Prints the `DiscoveryResult` as JSON on stdout; the exit code is 0 when the app is
//! supported, 1 when not, 2 for bad arguments.
//!
//! A page's links and redirects are the page's to choose, and this runs on the user's machine: a URL whose host
//! is (or resolves to) a loopback, private, link-local or unspecified address is not fetched unless discovery
//! started on such an address itself, so a public page cannot make it probe the user's own network.

use std::io::{self, Read, Write};
use std::net::{IpAddr, ToSocketAddrs};
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
    let local_start = is_local(url);
    while let Some(req) = d.request().cloned() {
        if !may_fetch(local_start, &req.url) {
            d.on_failure(Failure::Network(format!(
                "refused: {} is on a loopback, private or link-local address, and discovery did not start on one",
                req.url
            )));
            continue;
        }
        if let Err(e) = exchange(agent, &mut d, &req, deadline) {
            d.on_failure(match e {
                Error::Timeout => Failure::Timeout(ms),
                Error::Other(why) => Failure::Network(why),
            });
        }
    }
    d.result()
}

/// Whether discovery may fetch `url`: a local address only when discovery started on one (`local_start`).
fn may_fetch(local_start: bool, url: &str) -> bool {
    local_start || !is_local(url)
}

/// Whether `url`'s host is, or resolves to, an address of this machine or its network: loopback, private
/// (RFC 1918, fc00::/7, 100.64/10), link-local, or unspecified. A URL that cannot be read counts as local.
fn is_local(url: &str) -> bool {
    let Ok(uri) = url.parse::<ureq::http::Uri>() else {
        return true;
    };
    let Some(host) = uri.host() else {
        return true;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return local_ip(ip);
    }
    if host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("http") {
            80
        } else {
            443
        });
    // A name that does not resolve here fails when fetched anyway.
    (host, port)
        .to_socket_addrs()
        .map(|mut addrs| addrs.any(|a| local_ip(a.ip())))
        .unwrap_or(false)
}

fn local_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return local_ip(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_of_the_users_machine_and_network_are_local() {
        for url in [
            "http://127.0.0.1:8080/",
            "https://localhost/",
            "https://app.localhost/x",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://172.16.5.5/",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]:9000/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "not a url",
        ] {
            assert!(is_local(url), "{url}");
        }
        for url in [
            "https://8.8.8.8/",
            "http://[2001:4860::8888]/",
            "https://1.1.1.1:8443/x",
        ] {
            assert!(!is_local(url), "{url}");
        }
    }

    #[test]
    fn a_public_start_is_not_led_to_a_local_address() {
        let metadata = "http://169.254.169.254/.well-known/abp";
        assert!(
            !may_fetch(false, metadata),
            "a public page's link to the cloud metadata service"
        );
        assert!(!may_fetch(false, "http://127.0.0.1:8787/admin/exit"));
        assert!(may_fetch(false, "https://1.1.1.1/app"), "public to public");
        assert!(
            may_fetch(true, metadata),
            "discovery that started on a local address may stay local"
        );
    }
}
