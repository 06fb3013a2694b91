//! A small http(s) URL parser and resolver: enough to resolve a manifest link's `href` (absolute,
//! scheme-relative, root-relative, relative, query-only, fragment-only) against the page URL the way a
//! browser does for these schemes, and to write the request line of a native HTTP/1.1 client.
//!
//! Follows the WHATWG URL rules that matter here: leading and trailing spaces and controls are trimmed, tabs
//! and newlines removed, `\` counts as `/`, dot segments are removed, the scheme and host are lowercased, the
//! default port is dropped, the fragment is dropped (it never reaches the server), and bytes a URL may not
//! carry are percent-encoded. Not supported (refused with a reason): schemes other than http and https,
//! credentials in the URL, non-ASCII (internationalised) host names.

use crate::core::text::{push_u64, text};

/// An absolute http or https URL, without fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    https: bool,
    /// Lowercased; an IPv6 literal keeps its brackets.
    host: String,
    /// `None` for the scheme's default port.
    port: Option<u16>,
    /// Starts with `/`, percent-encoded.
    path: String,
    /// Without the `?`, percent-encoded.
    query: Option<String>,
}

impl Url {
    /// Parses an absolute http(s) URL.
    pub fn parse(input: &str) -> Result<Url, String> {
        let s = clean(input);
        let Some((scheme, rest)) = split_scheme(&s) else {
            return Err(text(&["not an absolute URL: ", &excerpt(input)]));
        };
        let https = match scheme.as_str() {
            "https" => true,
            "http" => false,
            _ => {
                return Err(text(&[
                    "only http and https URLs can be used, not ",
                    &excerpt(&scheme),
                    ":",
                ]))
            }
        };
        Url::parse_after_scheme(https, rest)
    }

    /// `rest` is what follows `scheme:`; for http(s) any number of slashes lead to the authority.
    fn parse_after_scheme(https: bool, rest: &str) -> Result<Url, String> {
        let rest = rest.trim_start_matches('/');
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.contains('@') {
            return Err("URLs with a user name or password are not supported".to_owned());
        }
        let (host, port) = split_port(authority)?;
        let host = check_host(host)?;
        let default = if https { 443 } else { 80 };
        let mut url = Url {
            https,
            host,
            port: port.filter(|p| *p != default),
            path: String::from("/"),
            query: None,
        };
        url.set_path_and_query(tail, None);
        Ok(url)
    }

    /// Resolves `reference` (an `href`, a `Location` header) against this URL.
    pub fn join(&self, reference: &str) -> Result<Url, String> {
        let r = clean(reference);
        if let Some((scheme, rest)) = split_scheme(&r) {
            let same = (scheme == "https") == self.https && (scheme == "http" || scheme == "https");
            // `http:foo` against an http base is relative (a WHATWG special case); otherwise absolute.
            if same && !rest.starts_with('/') {
                let mut url = self.clone();
                url.set_path_and_query(rest, Some(&self.path));
                return Ok(url);
            }
            return Url::parse(&r);
        }
        if let Some(rest) = r.strip_prefix("//") {
            return Url::parse_after_scheme(self.https, rest);
        }
        let mut url = self.clone();
        if r.is_empty() || r.starts_with('#') {
            return Ok(url);
        }
        if let Some(q) = r.strip_prefix('?') {
            let q = q.split('#').next().unwrap_or_default();
            url.query = Some(encode(q, QUERY));
            return Ok(url);
        }
        url.set_path_and_query(&r, Some(&self.path));
        Ok(url)
    }

    /// Sets path and query from `tail` (`path?query#fragment`); a path not starting with `/` is merged with
    /// the directory of `base`.
    fn set_path_and_query(&mut self, tail: &str, base: Option<&str>) {
        let tail = tail.split('#').next().unwrap_or_default();
        let (path, query) = match tail.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (tail, None),
        };
        let merged = if path.starts_with('/') || base.is_none() {
            path.to_owned()
        } else if path.is_empty() {
            base.unwrap_or("/").to_owned()
        } else {
            let base = base.unwrap_or("/");
            let dir = &base[..base.rfind('/').map_or(0, |i| i + 1)];
            text(&[dir, path])
        };
        self.path = remove_dot_segments(&encode(&merged, PATH));
        self.query = query.map(|q| encode(q, QUERY));
    }

    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The host, as it goes into a `Host` header and a socket address (IPv6 keeps its brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port to connect to.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(if self.https { 443 } else { 80 })
    }

    /// `host` or `host:port` when the port is not the default: the `Host` header.
    pub fn authority(&self) -> String {
        let mut s = self.host.clone();
        if let Some(p) = self.port {
            s.push(':');
            push_u64(&mut s, u64::from(p));
        }
        s
    }

    /// Path and query: the request target of an HTTP/1.1 request line.
    pub fn target(&self) -> String {
        match &self.query {
            Some(q) => text(&[&self.path, "?", q]),
            None => self.path.clone(),
        }
    }

    /// The serialised URL (no fragment).
    pub fn as_string(&self) -> String {
        text(&[
            if self.https { "https://" } else { "http://" },
            &self.authority(),
            &self.target(),
        ])
    }
}

/// Trims leading and trailing C0 controls and spaces, removes tabs and newlines, and turns `\` into `/`
/// (all of these schemes are "special" in WHATWG terms).
fn clean(s: &str) -> String {
    s.trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .map(|c| if c == '\\' { '/' } else { c })
        .collect()
}

/// `scheme` (lowercased) and the rest, if `s` starts with a valid scheme and `:`.
fn split_scheme(s: &str) -> Option<(String, &str)> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), &s[colon + 1..]))
}

fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    // The last `:` outside an IPv6 literal's brackets.
    let after_bracket = authority.rfind(']').map_or(0, |i| i + 1);
    let Some(i) = authority[after_bracket..]
        .rfind(':')
        .map(|i| i + after_bracket)
    else {
        return Ok((authority, None));
    };
    let digits = &authority[i + 1..];
    if digits.is_empty() {
        return Ok((&authority[..i], None));
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(text(&["invalid port in URL: ", &excerpt(digits)]));
    }
    let digits = digits.trim_start_matches('0');
    let port = if digits.is_empty() {
        Some(0)
    } else if digits.len() > 5 {
        None
    } else {
        digits.parse::<u32>().ok()
    };
    match port.and_then(|p| u16::try_from(p).ok()) {
        Some(p) => Ok((&authority[..i], Some(p))),
        None => Err(text(&["port out of range in URL: ", &excerpt(digits)])),
    }
}

fn check_host(host: &str) -> Result<String, String> {
    if host.is_empty() {
        return Err("URL has no host".to_owned());
    }
    if let Some(inner) = host.strip_prefix('[') {
        let ok = inner.strip_suffix(']').is_some_and(|v6| {
            !v6.is_empty()
                && v6
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        });
        if !ok {
            return Err(text(&["invalid IPv6 host in URL: ", &excerpt(host)]));
        }
        return Ok(host.to_ascii_lowercase());
    }
    if !host.is_ascii() {
        return Err(text(&[
            "internationalised host names are not supported (use the punycode form): ",
            &excerpt(host),
        ]));
    }
    if host
        .bytes()
        .any(|b| b <= b' ' || b"#%/:<>?@[\\]^|\"'`{}".contains(&b) || b == 0x7f)
    {
        return Err(text(&["invalid host in URL: ", &excerpt(host)]));
    }
    Ok(host.to_ascii_lowercase())
}

/// Which bytes `encode` escapes besides controls, space and non-ASCII.
const PATH: &[u8] = b"\"#<>?`{}";
const QUERY: &[u8] = b"\"#<>'";

fn encode(s: &str, set: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b <= b' ' || b >= 0x7f || set.contains(&b) {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        } else {
            out.push(b as char);
        }
    }
    out
}

fn is_dot(seg: &str) -> bool {
    seg == "." || seg.eq_ignore_ascii_case("%2e")
}

fn is_dot_dot(seg: &str) -> bool {
    matches!(seg.len(), 2 | 4 | 6) && {
        let l = seg.to_ascii_lowercase();
        matches!(l.as_str(), ".." | ".%2e" | "%2e." | "%2e%2e")
    }
}

/// RFC 3986 5.2.4 (with WHATWG's `%2e` spellings): `/a/b/../c/./d` → `/a/c/d`.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        if is_dot_dot(seg) {
            out.pop();
            if i == last {
                out.push("");
            }
        } else if is_dot(seg) {
            if i == last {
                out.push("");
            }
        } else {
            out.push(seg);
        }
    }
    let mut s = String::with_capacity(path.len());
    for seg in &out {
        s.push('/');
        s.push_str(seg);
    }
    if s.is_empty() {
        s.push('/');
    }
    s
}

/// At most 80 characters of untrusted text, for a reason string.
pub(crate) fn excerpt(s: &str) -> String {
    excerpt_n(s, 80)
}

/// At most `n` characters of `s`, without control characters.
pub(crate) fn excerpt_n(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).filter(|c| !c.is_control()).collect();
    if s.chars().count() > n {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(base: &str, r: &str) -> String {
        match Url::parse(base).and_then(|b| b.join(r)) {
            Ok(u) => u.as_string(),
            Err(e) => text(&["error: ", &e]),
        }
    }

    #[test]
    fn parses_and_normalises_absolute_urls() {
        let u = Url::parse("  HTTPS://App.Example:443/a/./b/../c?x=1#frag ").unwrap();
        assert_eq!(u.as_string(), "https://app.example/a/c?x=1");
        assert_eq!(u.port(), 443);
        assert_eq!(u.authority(), "app.example");
        assert_eq!(u.target(), "/a/c?x=1");
        let u = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(u.as_string(), "http://127.0.0.1:8080/");
        assert_eq!((u.host(), u.port()), ("127.0.0.1", 8080));
        assert_eq!(
            Url::parse("http://[::1]:9/x").unwrap().as_string(),
            "http://[::1]:9/x"
        );
        assert_eq!(
            Url::parse("http:\\\\example.com\\a b").unwrap().as_string(),
            "http://example.com/a%20b"
        );
    }

    #[test]
    fn refuses_what_it_cannot_fetch() {
        for bad in [
            "",
            "abp.json",
            "ftp://example.com/",
            "javascript:alert(1)",
            "data:application/json,{}",
            "http://",
            "http://user:pw@example.com/",
            "http://example.com:99999/",
            "http://example.com:12x/",
            "http://exa mple.com/",
            "http://bücher.example/",
            "http://[zz]/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn resolves_references_like_a_browser() {
        let base = "https://app.example/dir/page.html?q=1#top";
        for (r, want) in [
            ("/abp.json", "https://app.example/abp.json"),
            ("abp.json", "https://app.example/dir/abp.json"),
            ("./abp.json", "https://app.example/dir/abp.json"),
            ("../abp.json", "https://app.example/abp.json"),
            ("../../../abp.json", "https://app.example/abp.json"),
            ("sub/../m.json?v=2#x", "https://app.example/dir/m.json?v=2"),
            ("//cdn.example/abp.json", "https://cdn.example/abp.json"),
            ("http://other.example:8080/m", "http://other.example:8080/m"),
            ("?v=3", "https://app.example/dir/page.html?v=3"),
            ("#frag", "https://app.example/dir/page.html?q=1"),
            ("", "https://app.example/dir/page.html?q=1"),
            ("  /a b.json\n", "https://app.example/a%20b.json"),
            ("https:m.json", "https://app.example/dir/m.json"),
            ("/%2e%2E/x/.", "https://app.example/x/"),
            ("/é.json?ü", "https://app.example/%C3%A9.json?%C3%BC"),
            ("..", "https://app.example/"),
        ] {
            assert_eq!(join(base, r), want, "href {r:?}");
        }
        assert!(join(base, "javascript:alert(1)").starts_with("error: "));
        assert!(join(base, "//").starts_with("error: "));
    }

    #[test]
    fn never_panics_on_odd_input() {
        let base = Url::parse("http://a.example/b/c").unwrap();
        for s in [
            ":",
            "::::",
            "[",
            "http://[",
            "http://]:",
            "//:",
            "%",
            "\u{0}",
            "a:b:c",
            "http://a:/",
            "http://a:0000000000000000000080/",
            "?#?#",
            "/../../..",
            "\\\\x",
        ] {
            let _ = Url::parse(s);
            let _ = base.join(s);
        }
        assert_eq!(
            Url::parse("http://a:0000000000000000000080/").map(|u| u.port()),
            Ok(80)
        );
    }
}
