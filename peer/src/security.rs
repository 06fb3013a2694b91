//! Who may open what: the `Host` check (DNS rebinding), the `Origin` allow-list (web pages), and the launch
//! token (the endpoints that drive an app or impersonate an agent). Every request passes through
//! [`Guard::admit`] before anything is routed or upgraded; docs/peer.md's security model says what each check stops.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use axum::http::{header, request::Parts, HeaderMap, StatusCode};

use crate::token::{Source, Token, NEW_TOKEN_FLAG};

/// An origin as browsers send it in the `Origin` header: scheme, host and port, compared exactly (the default
/// port of http and https is spelled out, so `http://localhost` and `http://localhost:80` are the same).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    /// Parses `scheme://host[:port]`. Paths, queries, user names, `null` and `*` are refused: they are never
    /// what a browser sends for a page that should be trusted.
    pub(crate) fn parse(text: &str) -> Result<Origin, String> {
        let bad = |why: &str| {
            Err(format!(
                "{text:?} is not an origin ({why}); write scheme://host[:port]"
            ))
        };
        let Some((scheme, rest)) = text.split_once("://") else {
            return bad("no scheme");
        };
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return bad("a bad scheme");
        }
        if rest.is_empty()
            || rest.contains(['/', '?', '#', '@'])
            || rest.contains(char::is_whitespace)
        {
            return bad("an origin has no path, query, user name or spaces");
        }
        let (host, port) = split_host_port(rest).ok_or_else(|| {
            format!("{text:?} is not an origin (a bad host or port); write scheme://host[:port]")
        })?;
        let scheme = scheme.to_ascii_lowercase();
        let port = port.or(match scheme.as_str() {
            "http" | "ws" => Some(80),
            "https" | "wss" => Some(443),
            _ => None,
        });
        Ok(Origin {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)?;
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// `host[:port]` → (host, port); the host may be a bracketed IPv6 address. `None` for an empty host or a bad port.
fn split_host_port(text: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let host = &text[..inside.len() + 2];
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => return None, // an IPv6 address must be in brackets
            None => (text, None),
        }
    };
    if host.is_empty() || host == "[]" {
        return None;
    }
    let port = match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
        None => None,
    };
    Some((host, port))
}

/// Where the token goes without `--token-file`: `$XDG_RUNTIME_DIR/abp-peer/<port>.token` (a per-user tmpfs on
/// most Linux desktops), else `~/.local/state/abp-peer/<port>.token`, else the system temp dir.
pub(crate) fn default_token_file(port: u16) -> PathBuf {
    let name = format!("{port}.token");
    let nonempty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = nonempty("XDG_RUNTIME_DIR") {
        return dir.join("abp-peer").join(name);
    }
    if let Some(home) = nonempty("HOME") {
        return home.join(".local/state/abp-peer").join(name);
    }
    std::env::temp_dir().join(format!("abp-peer-{name}"))
}

/// Whether an endpoint may be opened by any allowed client, or only by one holding the launch token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// An app joining (`/agent/...`, `/relay/.../app`): browsers cannot send headers, and the page does not know
    /// the token; the Origin allow-list is what keeps other pages out.
    App,
    /// Driving an app or impersonating an agent (`/control/...`, `/relay/.../agent`, `/admin/exit`).
    Driver,
}

/// A refusal: the status and a line saying why (the body of the HTTP answer, and the log line).
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) why: String,
}

fn refuse(status: StatusCode, why: String) -> Refusal {
    Refusal { status, why }
}

/// The checks, configured once at start.
pub(crate) struct Guard {
    hosts: Vec<String>,
    origins: Vec<Origin>,
    token: Token,
}

impl Guard {
    /// `listen`: the `--listen` text; `bound`: the address actually bound (its port when `listen` said 0);
    /// `extra_hosts`: `--allow-host` values.
    pub(crate) fn new(
        listen: &str,
        bound: SocketAddr,
        extra_hosts: &[String],
        origins: Vec<Origin>,
        token: Token,
    ) -> Guard {
        let port = bound.port();
        let mut hosts = vec![
            bound.to_string(),
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ];
        // The host as `--listen` spelled it (a name such as `localhost`, or an address), with the real port.
        if let Some((host, _)) = split_host_port(listen) {
            hosts.push(format!("{host}:{port}"));
        }
        hosts.extend(extra_hosts.iter().cloned());
        let mut hosts: Vec<String> = hosts.iter().filter_map(|h| normal_host(h)).collect();
        hosts.sort();
        hosts.dedup();
        Guard {
            hosts,
            origins,
            token,
        }
    }

    /// The same checks for another listener of this process (`bound`, with `origins` allowed besides the
    /// configured ones), with the same token.
    pub(crate) fn beside(
        &self,
        listen: &str,
        bound: SocketAddr,
        extra_hosts: &[String],
        origins: Vec<Origin>,
    ) -> Guard {
        let mut all = self.origins.clone();
        all.extend(origins);
        Guard::new(listen, bound, extra_hosts, all, self.token.clone())
    }

    /// The launch token these checks ask for.
    pub(crate) fn token(&self) -> &Token {
        &self.token
    }

    /// The `Host` and `Origin` checks, which every request passes before its path is even looked at.
    pub(crate) fn admit(&self, parts: &Parts) -> Result<(), Refusal> {
        let headers = &parts.headers;
        let host = single(headers, header::HOST)
            .map_err(|n| refuse(StatusCode::FORBIDDEN, format!("{n} Host headers")))?
            .and_then(normal_host);
        match host {
            Some(h) if self.hosts.contains(&h) => {}
            Some(h) => {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    format!(
                        "the Host {h} is not this server (allowed: {}; see --allow-host)",
                        self.hosts.join(", ")
                    ),
                ))
            }
            None => {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    "no usable Host header".to_owned(),
                ))
            }
        }
        let origin = single(headers, header::ORIGIN)
            .map_err(|n| refuse(StatusCode::FORBIDDEN, format!("{n} Origin headers")))?;
        if origin.is_none() && headers.contains_key(header::ORIGIN) {
            // Present but not text (bytes no browser sends): not to be mistaken for a native client's absent one.
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "an Origin header that is not readable text".to_owned(),
            ));
        }
        if let Some(origin) = origin {
            let allowed = Origin::parse(origin).is_ok_and(|o| self.origins.contains(&o));
            if !allowed {
                let mut why = format!("the Origin {origin} is not allowed");
                why += &if self.origins.is_empty() {
                    " (no origin is: start abp-peer with --allow-origin ORIGIN for the app's page)"
                        .to_owned()
                } else {
                    let list: Vec<String> = self.origins.iter().map(Origin::to_string).collect();
                    format!(" (allowed: {}; see --allow-origin)", list.join(", "))
                };
                return Err(refuse(StatusCode::FORBIDDEN, why));
            }
        }
        Ok(())
    }

    /// The token check of a [`Access::Driver`] endpoint: `Authorization: Bearer <token>` (the scheme in any case, as
    /// RFC 9110 says) or, where `query` is [`Query::Allowed`] (a WebSocket, which a browser cannot give headers),
    /// `?token=<token>`. A missing token and a wrong one are both 401, with a line saying which.
    pub(crate) fn authorize(&self, parts: &Parts, query: Query) -> Result<(), Refusal> {
        let bearer = single(&parts.headers, header::AUTHORIZATION)
            .map_err(|n| {
                refuse(
                    StatusCode::UNAUTHORIZED,
                    format!("{n} Authorization headers"),
                )
            })?
            .and_then(|v| v.trim_start().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let in_query = parts
            .uri
            .query()
            .unwrap_or("")
            .split('&')
            .find_map(|kv| kv.strip_prefix("token="));
        let token = match query {
            Query::Allowed => bearer.or(in_query),
            Query::Refused => bearer,
        };
        // 401 for a missing token and for a wrong one alike (RFC 6750: an invalid token is 401, as a missing one);
        // the text says which, and where the right one is, since a client that had it before (across a restart,
        // say) otherwise learns nothing.
        let unauthorized = |why: String| Err(refuse(StatusCode::UNAUTHORIZED, why));
        match token {
            None if in_query.is_some() => unauthorized(
                "the launch token goes in the Authorization header (Bearer), never in the URL, where it would \
                 reach logs and history"
                    .to_owned(),
            ),
            None => unauthorized(format!(
                "no token: send Authorization: Bearer TOKEN{}, TOKEN being {}",
                match query {
                    Query::Allowed => " (or ?token=TOKEN)",
                    Query::Refused => "",
                },
                self.token.whereabouts()
            )),
            Some(t) if self.token.matches(t) => Ok(()),
            Some(_) => unauthorized(match self.token.source() {
                Source::Stored { .. } => format!(
                    "wrong token: this abp-peer takes {} (it changes only with {NEW_TOKEN_FLAG}, and an abp-peer \
                     already running keeps the one it started with)",
                    self.token.whereabouts()
                ),
                Source::Env => format!("wrong token: this abp-peer takes {}", self.token.whereabouts()),
            }),
        }
    }
}

/// Whether an endpoint takes the launch token from the query string too.
#[derive(Clone, Copy)]
pub(crate) enum Query {
    /// WebSocket endpoints: a browser cannot set headers on a WebSocket.
    Allowed,
    /// `/mcp`: an MCP host always sends headers, and a token in a URL ends up in logs and history.
    Refused,
}

/// A header that may appear at most once: its value (`None` if absent or not text), or how many there were.
fn single(headers: &HeaderMap, name: header::HeaderName) -> Result<Option<&str>, usize> {
    let mut all = headers.get_all(name).iter();
    let first = all.next();
    match all.count() {
        0 => Ok(first.and_then(|v| v.to_str().ok())),
        more => Err(more + 1),
    }
}

/// `host[:port]` lowercased, with port 80 when none is given (a browser leaves out the default port of `ws://`).
fn normal_host(text: &str) -> Option<String> {
    let (host, port) = split_host_port(text.trim())?;
    Some(format!(
        "{}:{}",
        host.to_ascii_lowercase(),
        port.unwrap_or(80)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)], uri: &str) -> Parts {
        let mut req = axum::http::Request::builder().uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(()).expect("a request").into_parts().0
    }

    fn guard(origins: &[&str]) -> Guard {
        let origins = origins
            .iter()
            .map(|o| Origin::parse(o).expect("an origin"))
            .collect();
        let bound: SocketAddr = "127.0.0.1:4000".parse().expect("an address");
        Guard::new(
            "127.0.0.1:0",
            bound,
            &[],
            origins,
            Token::stored_for_tests(&"t".repeat(64), "/state/abp-peer/token"),
        )
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let o = |s: &str| Origin::parse(s).expect("an origin");
        assert_eq!(o("http://LocalHost"), o("http://localhost:80"));
        assert_eq!(o("https://app.example"), o("https://app.example:443"));
        assert_ne!(o("http://app.example"), o("https://app.example"));
        assert_ne!(o("http://127.0.0.1:8000"), o("http://127.0.0.1:8001"));
        assert_eq!(o("http://[::1]:9").to_string(), "http://[::1]:9");
        for bad in [
            "null",
            "*",
            "http://a/",
            "http://a:x",
            "http://",
            "a.example",
            "http://a:99999",
            "http://::1",
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_and_origin() {
        let g = guard(&["http://127.0.0.1:8000"]);
        let ok = |h: &[(&str, &str)]| g.admit(&parts(h, "/agent")).is_ok();
        assert!(ok(&[("host", "127.0.0.1:4000")]));
        assert!(ok(&[("host", "LOCALHOST:4000")]));
        assert!(ok(&[("host", "[::1]:4000")]));
        assert!(!ok(&[("host", "attacker.test:4000")]));
        assert!(!ok(&[("host", "127.0.0.1:4001")]));
        assert!(!ok(&[]));
        assert!(!ok(&[
            ("host", "127.0.0.1:4000"),
            ("host", "127.0.0.1:4000")
        ]));
        assert!(ok(&[
            ("host", "127.0.0.1:4000"),
            ("origin", "http://127.0.0.1:8000")
        ]));
        assert!(!ok(&[
            ("host", "127.0.0.1:4000"),
            ("origin", "http://localhost:8000")
        ]));
        assert!(!ok(&[("host", "127.0.0.1:4000"), ("origin", "null")]));
    }

    #[test]
    fn token_from_header_or_query() {
        let g = guard(&[]);
        let t = "t".repeat(64);
        let refusal = |h: &[(&str, &str)], uri: &str| {
            g.authorize(&parts(h, uri), Query::Allowed)
                .err()
                .map(|r| (r.status, r.why))
        };
        let missing = |h: &[(&str, &str)], uri: &str| {
            let (status, why) = refusal(h, uri).expect("refused");
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri}");
            assert!(why.starts_with("no token: "), "{why}");
            // Where it is kept, without the path (which names the user's home).
            assert!(
                why.contains("abp-peer/token in the state folder") && !why.contains("/state/"),
                "{why}"
            );
        };
        let wrong = |h: &[(&str, &str)], uri: &str| {
            let (status, why) = refusal(h, uri).expect("refused");
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri}");
            assert!(why.starts_with("wrong token: "), "{why}");
            assert!(
                why.contains("abp-peer/token in the state folder")
                    && !why.contains("/state/")
                    && why.contains("--new-token"),
                "{why}"
            );
        };
        missing(&[], "/control/x");
        wrong(&[], "/control/x?token=nope");
        assert_eq!(refusal(&[], &format!("/control/x?a=1&token={t}")), None);
        assert_eq!(
            refusal(&[("authorization", &format!("Bearer {t}"))], "/control/x"),
            None
        );
        wrong(&[("authorization", "Bearer x")], "/control/x");
        missing(&[("authorization", "Basic x")], "/control/x");
        // The scheme's name in any case (RFC 9110).
        for scheme in ["BEARER", "bEaReR"] {
            let h = format!("{scheme} {t}");
            assert_eq!(
                refusal(&[("authorization", &h)], "/control/x"),
                None,
                "{scheme}"
            );
        }
    }

    #[test]
    fn mcp_takes_the_token_from_the_header_only() {
        let g = guard(&[]);
        let t = "t".repeat(64);
        let status =
            |h: &[(&str, &str)], uri: &str| g.authorize(&parts(h, uri), Query::Refused).err();
        let refused = status(&[], &format!("/mcp?token={t}")).expect("refused");
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
        assert!(
            refused.why.contains("Authorization header"),
            "{}",
            refused.why
        );
        assert!(status(&[("authorization", &format!("bearer {t}"))], "/mcp").is_none());
    }
}
