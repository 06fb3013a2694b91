//! ABP discovery (docs/DESIGN.md, section 7), sans-IO: given a page URL, find the page's
//! `<link rel="abp-manifest" href="…">`, fetch and check the manifest, and answer a [`DiscoveryResult`].
//!
//! [`Discovery`] decides everything and does no I/O and keeps no clock: a shell (the browser's `fetch`, or
//! `abp-peer`'s HTTP/1.1 client) asks it what to fetch ([`Discovery::request`]), tells it what came back
//! ([`Discovery::on_response`], [`Discovery::on_body`], [`Discovery::on_end`], [`Discovery::on_failure`]),
//! and takes the result at the end ([`Discovery::result`]). The limits are the constants below.
//!
//! ```text
//! let mut d = Discovery::new(url);
//! while let Some(req) = d.request() {
//!     match fetch(&req.url) {
//!         Err(e) => d.on_failure(e),
//!         Ok(mut response) => if d.on_response(response.head()) {
//!             while let Some(chunk) = response.next_chunk() { if !d.on_body(&chunk) { break } }
//!             d.on_end();
//!         },
//!     }
//! }
//! let result = d.result();
//! ```
//!
//! Nothing from a manifest is trusted or followed except its own URL: the result only describes what the
//! app says about itself until `initialize` confirms it.

mod html;
mod manifest;
mod url;

pub use html::{find_manifest_link, LinkScan, MANIFEST_REL};
pub use manifest::{
    check_manifest, check_manifest_value, compare_versions, nesting_depth, AbpManifest,
    ManifestApp, ManifestCapability, ParseJson, VersionCheck, MAX_DEPTH,
};
pub use url::Url;

use crate::core::payload::Wire;
use crate::core::text::{push_u64, text};
use url::{excerpt, excerpt_n};

/// How much of the page is read: at most this many bytes, up to `</head>`.
pub const MAX_PAGE_BYTES: usize = 50 * 1024;
/// The largest manifest accepted.
pub const MAX_MANIFEST_BYTES: usize = 1024 * 1024;
/// Redirects followed per fetch (where the shell lets the core follow them).
pub const MAX_REDIRECTS: u32 = 5;
/// Default time limit for the whole discovery, in milliseconds.
pub const TIMEOUT_MS: u32 = 10_000;
/// The most capabilities a manifest may list.
pub const MAX_CAPABILITIES: usize = 100;

/// What `discover()` answers. `supported` with a `manifest` (and maybe `warnings`), or not with a `reason`.
/// `P` is the payload type the manifest was parsed into.
#[derive(Clone, Debug, PartialEq)]
pub struct DiscoveryResult<P> {
    pub supported: bool,
    pub manifest: Option<AbpManifest<P>>,
    /// Where the manifest was found (resolved against the page URL, after redirects), once known.
    pub manifest_url: Option<String>,
    pub reason: Option<String>,
    pub warnings: Vec<String>,
}

impl<P: Wire> DiscoveryResult<P> {
    /// The result as a payload object, `{ supported, manifest?, manifestUrl?, reason?, warnings? }` with
    /// absent fields (and empty `warnings`) left out: what `discover()` resolves to in the browser and
    /// `abp-peer discover` prints.
    pub fn into_wire(self) -> P {
        let warnings = (!self.warnings.is_empty())
            .then(|| P::array(self.warnings.iter().map(|w| P::string(w)).collect()));
        P::object_of(&mut [
            ("supported", Some(P::boolean(self.supported))),
            ("manifest", self.manifest.map(AbpManifest::into_wire)),
            ("manifestUrl", self.manifest_url.as_deref().map(P::string)),
            ("reason", self.reason.as_deref().map(P::string)),
            ("warnings", warnings),
        ])
    }
}

/// Which document a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Page,
    Manifest,
}

impl Resource {
    fn name(self) -> &'static str {
        match self {
            Resource::Page => "the page",
            Resource::Manifest => "the manifest",
        }
    }
}

/// A GET the shell should make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Absolute http(s) URL, no fragment.
    pub url: String,
    pub resource: Resource,
    /// Read no more than this many bytes of the body.
    pub max_bytes: usize,
    /// The `Accept` header to send.
    pub accept: &'static str,
}

/// The head of a response, as the shell got it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResponseHead<'a> {
    pub status: u16,
    /// The URL the response came from, if the shell followed redirects itself (the browser does).
    pub url: Option<&'a str>,
    /// The `Location` header of a 3xx the shell did not follow.
    pub location: Option<&'a str>,
    pub content_type: Option<&'a str>,
}

/// Why a fetch produced no response (or no whole body).
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The time limit (in ms) ran out.
    Timeout(f64),
    /// The caller's signal aborted; its reason as text.
    Aborted(String),
    /// Anything else the network said (connection refused, DNS, TLS, CORS in a browser, …).
    Network(String),
}

#[derive(Debug)]
enum State<P> {
    /// A request to make.
    Fetch(Request, u32),
    /// Response head accepted; reading its body.
    Body(Request, u32),
    Done(Box<DiscoveryResult<P>>),
}

/// One discovery, from page URL to [`DiscoveryResult`]. See the module documentation for the driving loop.
/// `P` is the payload type the manifest is parsed into (`JsValue` in the browser, `serde_json::Value`
/// natively).
#[derive(Debug)]
pub struct Discovery<P> {
    state: State<P>,
    /// The URL of the document being fetched (updated by redirects).
    current: Option<Url>,
    page_https: bool,
    body: Vec<u8>,
    /// Length of `body` at the last full scan for the link.
    scanned: usize,
    found: Option<LinkScan>,
    manifest_url: Option<String>,
}

/// Accept header for the page.
const ACCEPT_HTML: &str = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1";
/// Accept header for the manifest.
const ACCEPT_JSON: &str = "application/json,*/*;q=0.1";
/// The page is re-scanned for the link after this many new bytes (or when a chunk holds `</head`/`<body`).
const RESCAN_BYTES: usize = 4096;

impl<P: ParseJson> Discovery<P> {
    /// Starts a discovery of the page at `page_url` (an absolute http or https URL).
    pub fn new(page_url: &str) -> Discovery<P> {
        let mut d = Discovery {
            state: State::Done(Box::new(unsupported(String::new()))),
            current: None,
            page_https: false,
            body: Vec::new(),
            scanned: 0,
            found: None,
            manifest_url: None,
        };
        match Url::parse(page_url) {
            Ok(url) => {
                d.page_https = url.is_https();
                d.state = State::Fetch(request(&url, Resource::Page), 0);
                d.current = Some(url);
            }
            Err(e) => d.finish_with(text(&["invalid page URL: ", &e])),
        }
        d
    }

    /// The request to make now, if one is due. The same request is returned until a response or failure is
    /// reported.
    pub fn request(&self) -> Option<&Request> {
        match &self.state {
            State::Fetch(r, _) => Some(r),
            _ => None,
        }
    }

    /// The response head for the current request. Returns true when the shell should read the body (then
    /// [`on_body`](Self::on_body) and [`on_end`](Self::on_end)); false when the core is done with this response
    /// (a redirect to follow, which [`request`](Self::request) now names, or a final answer).
    pub fn on_response(&mut self, head: ResponseHead<'_>) -> bool {
        let (req, redirects) = match std::mem::replace(
            &mut self.state,
            State::Done(Box::new(unsupported(String::new()))),
        ) {
            State::Fetch(r, n) => (r, n),
            other => {
                self.state = other;
                return false;
            }
        };
        let what = req.resource.name();
        // Where a shell followed redirects itself, the final URL must not have left https either.
        if let Some(u) = head.url.and_then(|u| Url::parse(u).ok()) {
            let refused = self.downgrade(&u, what);
            self.current = Some(u);
            if let Some(reason) = refused {
                self.finish_with(reason);
                return false;
            }
        }
        if (300..400).contains(&head.status) {
            let Some(location) = head.location else {
                self.finish_with(text(&[
                    what,
                    " answered HTTP ",
                    &status(head.status),
                    " without a Location",
                ]));
                return false;
            };
            if redirects >= MAX_REDIRECTS {
                self.finish_with(text(&[
                    what,
                    " redirected more than 5 times (at ",
                    &self.current_url(),
                    ")",
                ]));
                return false;
            }
            let next = match self.current.as_ref().map(|c| c.join(location)) {
                Some(Ok(u)) => u,
                Some(Err(e)) => {
                    self.finish_with(text(&[what, " redirected to an unusable URL: ", &e]));
                    return false;
                }
                None => {
                    self.finish_with(text(&[what, " redirected, but the current URL is unknown"]));
                    return false;
                }
            };
            if let Some(reason) = self.downgrade(&next, what) {
                self.finish_with(reason);
                return false;
            }
            self.state = State::Fetch(request(&next, req.resource), redirects + 1);
            self.current = Some(next);
            return false;
        }
        if !(200..300).contains(&head.status) {
            self.finish_with(text(&[
                what,
                " answered HTTP ",
                &status(head.status),
                " (",
                &self.current_url(),
                ")",
            ]));
            return false;
        }
        if req.resource == Resource::Manifest {
            if let Some(u) = &self.current {
                self.manifest_url = Some(u.as_string());
            }
            if let Err(reason) = check_content_type(head.content_type) {
                self.finish_with(reason);
                return false;
            }
        }
        self.body.clear();
        self.scanned = 0;
        self.found = None;
        self.state = State::Body(req, redirects);
        true
    }

    /// A chunk of the body. Returns true while more is wanted; false once the core has what it needs (the
    /// page's `<head>` ended, the link was found, a limit was reached): the shell should stop reading (and
    /// cancel the rest) and call [`on_end`](Self::on_end).
    pub fn on_body(&mut self, chunk: &[u8]) -> bool {
        let State::Body(req, _) = &self.state else {
            return false;
        };
        match req.resource {
            Resource::Page => {
                let room = MAX_PAGE_BYTES.saturating_sub(self.body.len());
                let take = &chunk[..chunk.len().min(room)];
                // Look for the end of the head in the new bytes (and a few before them, for a split tag).
                let from = self.body.len().saturating_sub(6);
                self.body.extend_from_slice(take);
                let fresh = &self.body[from..];
                let hint =
                    html::contains_ci(fresh, b"</head") || html::contains_ci(fresh, b"<body");
                let full = self.body.len() >= MAX_PAGE_BYTES;
                if hint || full || self.body.len() - self.scanned >= RESCAN_BYTES {
                    self.scanned = self.body.len();
                    let scan = find_manifest_link(&self.body);
                    if scan != LinkScan::Incomplete || full {
                        self.found = Some(scan);
                        return false;
                    }
                }
                true
            }
            Resource::Manifest => {
                if self.body.len() + chunk.len() > MAX_MANIFEST_BYTES {
                    self.finish_with(text(&[
                        "the manifest is larger than 1 MB (",
                        &self.current_url(),
                        ")",
                    ]));
                    return false;
                }
                self.body.extend_from_slice(chunk);
                true
            }
        }
    }

    /// The body ended (or the shell stopped reading because [`on_body`](Self::on_body) said so).
    pub fn on_end(&mut self) {
        let (req, _) = match std::mem::replace(
            &mut self.state,
            State::Done(Box::new(unsupported(String::new()))),
        ) {
            State::Body(r, n) => (r, n),
            other => {
                self.state = other;
                return;
            }
        };
        match req.resource {
            Resource::Page => self.page_read(),
            Resource::Manifest => {
                let body = std::mem::take(&mut self.body);
                self.state = State::Done(Box::new(match check_manifest(&body) {
                    Ok((manifest, warnings)) => DiscoveryResult {
                        supported: true,
                        manifest: Some(manifest),
                        manifest_url: self.manifest_url.clone(),
                        reason: None,
                        warnings,
                    },
                    Err(reason) => {
                        let mut r = unsupported(reason);
                        r.manifest_url = self.manifest_url.clone();
                        r
                    }
                }));
            }
        }
    }

    /// The current request failed (or the body could not be read to its end).
    pub fn on_failure(&mut self, failure: Failure) {
        let what = match &self.state {
            State::Fetch(r, _) | State::Body(r, _) => r.resource.name(),
            State::Done(_) => return,
        };
        let url = self.current_url();
        let reason = match failure {
            Failure::Timeout(ms) => text(&[
                "timed out after ",
                &ms_text(ms),
                " ms while fetching ",
                what,
                " (",
                &url,
                ")",
            ]),
            Failure::Aborted(why) => text(&["aborted while fetching ", what, ": ", &excerpt(&why)]),
            Failure::Network(why) => text(&[
                "could not fetch ",
                what,
                " (",
                &url,
                "): ",
                &excerpt_n(&why, 300),
            ]),
        };
        self.finish_with(reason);
    }

    /// True once the result is ready.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done(_))
    }

    /// The result. Before [`is_done`](Self::is_done), an unsupported result saying discovery did not finish.
    pub fn result(self) -> DiscoveryResult<P> {
        match self.state {
            State::Done(r) => *r,
            _ => unsupported("discovery did not finish".to_owned()),
        }
    }

    fn page_read(&mut self) {
        let scan = match self.found.take() {
            Some(s) => s,
            None => find_manifest_link(&self.body[..self.body.len().min(MAX_PAGE_BYTES)]),
        };
        let truncated = self.body.len() >= MAX_PAGE_BYTES;
        self.body = Vec::new();
        let href = match scan {
            LinkScan::Found(href) => href,
            LinkScan::HeadEnded => {
                return self.finish_with(text(&[
                    "the page's <head> has no <link rel=\"abp-manifest\"> (",
                    &self.current_url(),
                    ")",
                ]))
            }
            LinkScan::Incomplete if truncated => {
                return self.finish_with(text(&[
                    "no <link rel=\"abp-manifest\"> in the first 50 KB of the page (",
                    &self.current_url(),
                    ")",
                ]))
            }
            LinkScan::Incomplete => {
                return self.finish_with(text(&[
                    "the page has no <link rel=\"abp-manifest\"> (",
                    &self.current_url(),
                    ")",
                ]))
            }
        };
        let manifest = match self.current.as_ref().map(|c| c.join(&href)) {
            Some(Ok(u)) => u,
            Some(Err(e)) => {
                return self
                    .finish_with(text(&["the abp-manifest link's href is not usable: ", &e]))
            }
            None => return self.finish_with("the page URL is unknown".to_owned()),
        };
        if let Some(reason) = self.downgrade(&manifest, "the manifest link") {
            return self.finish_with(reason);
        }
        self.state = State::Fetch(request(&manifest, Resource::Manifest), 0);
        self.current = Some(manifest);
    }

    /// A reason to refuse `next` if it leaves https for http.
    fn downgrade(&self, next: &Url, what: &str) -> Option<String> {
        (self.page_https && !next.is_https()).then(|| {
            text(&[
                what,
                " leads from https to plain http (",
                &next.as_string(),
                "); refused",
            ])
        })
    }

    fn current_url(&self) -> String {
        self.current
            .as_ref()
            .map(Url::as_string)
            .unwrap_or_default()
    }

    fn finish_with(&mut self, reason: String) {
        let mut r = unsupported(reason);
        r.manifest_url = self.manifest_url.clone();
        self.state = State::Done(Box::new(r));
    }
}

fn request(url: &Url, resource: Resource) -> Request {
    Request {
        url: url.as_string(),
        resource,
        max_bytes: match resource {
            Resource::Page => MAX_PAGE_BYTES,
            Resource::Manifest => MAX_MANIFEST_BYTES,
        },
        accept: match resource {
            Resource::Page => ACCEPT_HTML,
            Resource::Manifest => ACCEPT_JSON,
        },
    }
}

fn unsupported<P>(reason: String) -> DiscoveryResult<P> {
    DiscoveryResult {
        supported: false,
        manifest: None,
        manifest_url: None,
        reason: Some(reason),
        warnings: Vec::new(),
    }
}

fn status(code: u16) -> String {
    let mut s = String::new();
    push_u64(&mut s, u64::from(code));
    s
}

fn ms_text(ms: f64) -> String {
    let mut s = String::new();
    push_u64(
        &mut s,
        if ms.is_finite() && ms > 0.0 {
            ms.round() as u64
        } else {
            0
        },
    );
    s
}

/// The manifest must be served as JSON: `application/json`, `text/json` or any `…/…+json`, parameters
/// (such as `charset`) ignored.
pub fn check_content_type(content_type: Option<&str>) -> Result<(), String> {
    let Some(ct) = content_type else {
        return Err(
            "the manifest was served without a Content-Type; it must be application/json"
                .to_owned(),
        );
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let json = essence == "application/json"
        || essence == "text/json"
        || (essence.ends_with("+json") && essence.contains('/'));
    if json {
        Ok(())
    } else {
        Err(text(&[
            "the manifest was served as ",
            &excerpt(ct),
            ", not application/json",
        ]))
    }
}

#[cfg(test)]
mod tests;
