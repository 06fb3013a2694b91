//! `--nats` and the options beside it: how abp-peer logs in to a NATS server, and why it refuses one that anybody
//! could use. Every process holding the cluster's NATS credentials can drive every app in the cluster, so the
//! credentials are the cluster's trust: a server that asks for none (or credentials sent in clear over a network)
//! would hand the apps to whoever reaches it. Authentication and TLS are async-nats's own; this module only reads
//! the options, checks them at start, and says what happens to the link.
//!
//! Every subject abp-peer uses starts with one prefix (`--nats-prefix`, `abp` by default), reply inboxes included,
//! so a NATS user allowed `publish` and `subscribe` on `<prefix>.>` is all a process needs.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::{Client, ConnectErrorKind, ConnectOptions, Event, ServerAddr};

/// How often a process serving a room to the others (the holder of its app, a relay room's home) says it is
/// still there.
pub(crate) const ALIVE_EVERY: Duration = Duration::from_millis(250);
/// A process not heard from for this long is taken as gone: a controller settles the calls it waits for there,
/// a relay side or a room's home lets the other go, and a request to it stops waiting.
pub(crate) const GONE_AFTER: Duration = Duration::from_secs(1);

/// How long one attempt to reach the server may take (TCP, TLS and the login).
const ATTEMPT: Duration = Duration::from_secs(3);
/// The pause between attempts while the server cannot be reached at start.
const RETRY_EVERY: Duration = Duration::from_secs(1);
/// While it still cannot be reached, how often that is said again.
const SAY_AGAIN_EVERY: Duration = Duration::from_secs(60);

/// The NATS options of `abp-peer` and `abp-peer mcp` (the names follow the `nats` CLI's).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct NatsArgs {
    /// Share rooms with the other abp-peer processes given the same NATS server: nats://HOST:PORT, or
    /// tls://HOST:PORT. Credentials may be in it (nats://USER:PASSWORD@HOST:PORT, nats://TOKEN@HOST:PORT). The
    /// server must require a login, and one that is not on this machine must be reached over TLS (see
    /// --nats-insecure).
    #[arg(long, value_name = "URL")]
    pub(crate) nats: Option<String>,
    /// Log in to the NATS server with this nkey user seed (a file holding `SU…`).
    #[arg(long, value_name = "FILE", requires = "nats")]
    nats_nkey: Option<PathBuf>,
    /// Log in to the NATS server with this credentials file (a user JWT and its seed, as `nsc` writes them).
    #[arg(
        long,
        value_name = "FILE",
        requires = "nats",
        conflicts_with = "nats_nkey"
    )]
    nats_creds: Option<PathBuf>,
    /// Reach the NATS server over TLS, trusting the certificate authority in this PEM file.
    #[arg(long, value_name = "FILE", requires = "nats")]
    nats_tlsca: Option<PathBuf>,
    /// For mutual TLS: this process's certificate (PEM), with --nats-tlskey.
    #[arg(long, value_name = "FILE", requires = "nats", requires = "nats_tlskey")]
    nats_tlscert: Option<PathBuf>,
    /// For mutual TLS: the private key (PEM) of --nats-tlscert.
    #[arg(
        long,
        value_name = "FILE",
        requires = "nats",
        requires = "nats_tlscert"
    )]
    nats_tlskey: Option<PathBuf>,
    /// Run even though the NATS server takes anybody (it requires no login), or is on another machine and
    /// reached without TLS. Whoever reaches such a server can then call every app's capabilities, read every call
    /// and take rooms.
    #[arg(long, requires = "nats")]
    nats_insecure: bool,
    /// The first token(s) of every subject this process uses, its reply inboxes included: its NATS user needs
    /// permission to publish and subscribe on PREFIX.> and nothing else. Two clusters may share a server with
    /// different prefixes.
    #[arg(long, value_name = "PREFIX", default_value = "abp")]
    nats_prefix: String,
}

/// A process's link to the NATS server.
pub(crate) struct Link {
    pub(crate) client: Client,
    /// The subjects' first token(s).
    pub(crate) prefix: String,
    /// The server's URL as it may be shown (no password, token or user name in it).
    pub(crate) shown: String,
}

impl Link {
    /// Whether the connection to the NATS server is up at this moment.
    pub(crate) fn is_up(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }
}

/// The login and TLS settings read from the options, checked before any connection is tried.
struct Settings {
    server: ServerAddr,
    shown: String,
    url_login: Option<UrlLogin>,
    nkey: Option<String>,
    creds: Option<String>,
    tlsca: Option<PathBuf>,
    client_cert: Option<(PathBuf, PathBuf)>,
    tls: bool,
}

enum UrlLogin {
    UserPassword(String, String),
    Token(String),
}

impl NatsArgs {
    /// Connects to the NATS server, if `--nats` was given: checks the options at once (a clear error, never a
    /// wait), then tries until the server answers (saying so within [`ATTEMPT`] and each minute while it does
    /// not). A server that refuses the login, or requires none without `--nats-insecure`, is an error.
    pub(crate) async fn connect(&self, name: String) -> Result<Option<Link>, String> {
        let Some(url) = &self.nats else {
            return Ok(None);
        };
        let prefix = check_prefix(&self.nats_prefix)?;
        let settings = self.settings(url)?;
        let loopback = is_loopback(settings.server.host());
        if !loopback && !settings.tls && !self.nats_insecure {
            return Err(format!(
                "--nats {}: the NATS server is on another machine and would be reached without TLS, so its \
                 login and every call would cross the network in clear. Use tls://… (with --nats-tlsca for a \
                 private certificate authority), or pass --nats-insecure to run like this anyway",
                settings.shown
            ));
        }
        let lost = Arc::new(AtomicBool::new(false));
        let mut said: Option<Instant> = None;
        let client = loop {
            match settings
                .options(&prefix, &name, lost.clone())?
                .connect(settings.server.clone())
                .await
            {
                Ok(client) => break client,
                Err(e) => match e.kind() {
                    ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                        return Err(format!(
                            "the NATS server at {} refused abp-peer's login ({e}): check the credentials \
                             (in the URL, --nats-nkey or --nats-creds)",
                            settings.shown
                        ));
                    }
                    _ if is_tls_failure(&e) => {
                        return Err(format!(
                            "TLS with the NATS server at {} failed: {e}",
                            settings.shown
                        ));
                    }
                    _ => {
                        if said.is_none_or(|at| at.elapsed() >= SAY_AGAIN_EVERY) {
                            eprintln!(
                                "abp-peer: cannot reach the NATS server at {} ({e}); retrying",
                                settings.shown
                            );
                            said = Some(Instant::now());
                        }
                        tokio::time::sleep(RETRY_EVERY).await;
                    }
                },
            }
        };
        if !client.server_info().auth_required {
            if !self.nats_insecure {
                return Err(format!(
                    "the NATS server at {} lets anybody in (it requires no login), and whoever reaches it could \
                     drive every app in the cluster. Lock it (users or nkeys with permissions on {prefix}.>; \
                     see docs/peer.md), or pass --nats-insecure to use it anyway",
                    settings.shown
                ));
            }
            eprintln!(
                "abp-peer: WARNING: the NATS server at {} requires no login (--nats-insecure): whoever reaches it \
                 can call every app's capabilities, read every call and take rooms",
                settings.shown
            );
        } else if !loopback && !settings.tls {
            eprintln!(
                "abp-peer: WARNING: the NATS server at {} is reached without TLS (--nats-insecure): its login and \
                 every call cross the network in clear",
                settings.shown
            );
        }
        Ok(Some(Link {
            client,
            prefix,
            shown: settings.shown,
        }))
    }

    fn settings(&self, url: &str) -> Result<Settings, String> {
        let server: ServerAddr = url.parse().map_err(|e: std::io::Error| {
            format!("--nats: not a NATS URL ({e}); expected nats://HOST:PORT or tls://HOST:PORT")
        })?;
        if !matches!(server.scheme(), "nats" | "tls") || server.host().is_empty() {
            return Err(format!(
                "--nats {}: expected nats://HOST:PORT or tls://HOST:PORT",
                shown(&server)
            ));
        }
        let url_login = match (server.username(), server.password()) {
            (None, _) => None,
            (Some(user), Some(password)) => {
                Some(UrlLogin::UserPassword(decoded(user), decoded(password)))
            }
            (Some(token), None) => Some(UrlLogin::Token(decoded(token))),
        };
        let nkey = match &self.nats_nkey {
            Some(path) => {
                let seed = read(path, "--nats-nkey")?.trim().to_owned();
                // A user seed is 58 characters of base32 that start with `SU`.
                if !(seed.starts_with("SU") && seed.len() == 58) {
                    return Err(format!(
                        "--nats-nkey {}: not an nkey user seed (a line that starts with SU)",
                        path.display()
                    ));
                }
                Some(seed)
            }
            None => None,
        };
        let creds = match &self.nats_creds {
            Some(path) => {
                let text = read(path, "--nats-creds")?;
                // Checked here, so that a broken file is an error at start rather than a refused login.
                ConnectOptions::new().credentials(&text).map_err(|e| {
                    format!(
                        "--nats-creds {}: not a NATS credentials file ({e})",
                        path.display()
                    )
                })?;
                Some(text)
            }
            None => None,
        };
        if let Some(path) = &self.nats_tlsca {
            pem(path, "--nats-tlsca")?;
        }
        let client_cert = match (&self.nats_tlscert, &self.nats_tlskey) {
            (Some(cert), Some(key)) => {
                pem(cert, "--nats-tlscert")?;
                pem(key, "--nats-tlskey")?;
                Some((cert.clone(), key.clone()))
            }
            _ => None,
        };
        let tls = server.tls_required() || self.nats_tlsca.is_some() || client_cert.is_some();
        Ok(Settings {
            shown: shown(&server),
            server,
            url_login,
            nkey,
            creds,
            tlsca: self.nats_tlsca.clone(),
            client_cert,
            tls,
        })
    }
}

impl Settings {
    fn options(
        &self,
        prefix: &str,
        name: &str,
        lost: Arc<AtomicBool>,
    ) -> Result<ConnectOptions, String> {
        let mut options = ConnectOptions::new()
            .name(name)
            .custom_inbox_prefix(format!("{prefix}._INBOX"))
            .connection_timeout(ATTEMPT)
            .request_timeout(Some(GONE_AFTER))
            .require_tls(self.tls);
        options = match &self.url_login {
            Some(UrlLogin::UserPassword(user, password)) => {
                options.user_and_password(user.clone(), password.clone())
            }
            Some(UrlLogin::Token(token)) => options.token(token.clone()),
            None => options,
        };
        if let Some(seed) = &self.nkey {
            options = options.nkey(seed.clone());
        }
        if let Some(creds) = &self.creds {
            options = options
                .credentials(creds)
                .map_err(|e| format!("--nats-creds: {e}"))?;
        }
        if let Some(ca) = &self.tlsca {
            options = options.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &self.client_cert {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        let shown = self.shown.clone();
        Ok(options.event_callback(move |event| {
            let (shown, lost) = (shown.clone(), lost.clone());
            async move { say(&event, &shown, &lost) }
        }))
    }
}

/// One line on stderr for what happened to the link (once it was up: the first connection says nothing here).
fn say(event: &Event, shown: &str, lost: &AtomicBool) {
    match event {
        Event::Disconnected => {
            if !lost.swap(true, Ordering::SeqCst) {
                eprintln!(
                    "abp-peer: lost the NATS server at {shown}; reconnecting (rooms on other processes cannot be \
                     reached until it is back)"
                );
            }
        }
        Event::Connected => {
            if lost.swap(false, Ordering::SeqCst) {
                eprintln!("abp-peer: the NATS server at {shown} is back");
            }
        }
        Event::ServerError(e) => eprintln!("abp-peer: the NATS server at {shown} says: {e}"),
        Event::LameDuckMode => {
            eprintln!("abp-peer: the NATS server at {shown} is shutting down (lame duck mode)")
        }
        Event::SlowConsumer(_) | Event::Draining | Event::Closed | Event::ClientError(_) => {}
    }
}

/// Whether a connection failed in its TLS handshake (an untrusted certificate, a client certificate refused): the
/// same again would fail the same way, so it is said and the process stops. async-nats reports the handshake's
/// errors as I/O errors of the kind `InvalidData` (how rustls's errors reach the socket), or as its own `Tls`.
fn is_tls_failure(e: &async_nats::ConnectError) -> bool {
    if e.kind() == ConnectErrorKind::Tls {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidData)
        {
            return true;
        }
        source = s.source();
    }
    false
}

/// The subject prefix, if it is one or more plain tokens (no spaces, no wildcards).
fn check_prefix(prefix: &str) -> Result<String, String> {
    let plain = |token: &str| {
        !token.is_empty()
            && token
                .chars()
                .all(|c| !c.is_whitespace() && !c.is_control() && c != '*' && c != '>')
    };
    if prefix.split('.').all(plain) {
        Ok(prefix.to_owned())
    } else {
        Err(format!(
            "--nats-prefix {prefix:?}: a subject prefix is one or more tokens separated by dots, without spaces, \
             empty tokens or the wildcards * and >"
        ))
    }
}

/// `url` with its user name and password replaced by `***` (a token is the user name), for logs.
fn shown(server: &ServerAddr) -> String {
    let mut url = server.clone().into_inner();
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    } else if !url.username().is_empty() {
        let _ = url.set_username("***");
    }
    url.to_string().trim_end_matches('/').to_owned()
}

/// A URL's user name or password as written (percent-decoded).
fn decoded(part: &str) -> String {
    percent_encoding::percent_decode_str(part)
        .decode_utf8_lossy()
        .into_owned()
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn read(path: &Path, option: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map_err(|e| format!("{option} {}: cannot read it ({e})", path.display()))
}

/// Checks that `path` can be read and holds PEM (async-nats reads it again when it connects).
fn pem(path: &Path, option: &str) -> Result<(), String> {
    if read(path, option)?.contains("-----BEGIN ") {
        Ok(())
    } else {
        Err(format!(
            "{option} {}: not a PEM file (no -----BEGIN line)",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_shown() {
        let shown_of = |url: &str| shown(&url.parse().expect("a URL"));
        assert_eq!(
            shown_of("nats://abp:s3cret@127.0.0.1:4222"),
            "nats://abp:***@127.0.0.1:4222"
        );
        assert_eq!(
            shown_of("nats://t0ken@10.0.0.5:4222"),
            "nats://***@10.0.0.5:4222"
        );
        assert_eq!(
            shown_of("tls://nats.example:4443"),
            "tls://nats.example:4443"
        );
    }

    #[test]
    fn prefixes_are_plain_tokens() {
        assert!(check_prefix("abp").is_ok());
        assert!(check_prefix("team-a.abp").is_ok());
        for bad in ["", "a b", "abp.*", "abp.>", "abp..x", ".abp", "abp."] {
            assert!(check_prefix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn loopback_is_this_machine_only() {
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("LOCALHOST"));
        assert!(!is_loopback("10.0.0.5") && !is_loopback("nats.example"));
    }
}
