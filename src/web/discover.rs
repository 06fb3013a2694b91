//! `discover(url, options?)`: ABP discovery for agent pages. The core (`crate::core::discovery`) decides
//! everything; this file fetches bytes with `fetch` and hands them over.
//!
//! - The page and the manifest are fetched with `mode: 'cors'` and `credentials: 'omit'` (no cookies go to
//!   the app being discovered), so the app must send `Access-Control-Allow-Origin` for the agent's origin
//!   (or `*`) on both. Bodies are read as streams: the page only up to `</head>` (at most 50 KB), the manifest
//!   up to 1 MB; the rest is cancelled, not downloaded.
//! - Redirects: a page cannot see a cross-origin redirect's `Location` (`redirect: 'manual'` gives an opaque
//!   response), so the browser follows them itself, up to the Fetch standard's 20, and a loop ends as a
//!   network error. The core still refuses an https page whose link or final URL is plain http. (Natively,
//!   `abp-peer discover` follows at most 5.)
//! - One time limit (default 10 s, `options.timeout`) covers the whole discovery; the caller's
//!   `options.signal` ends it early. Both abort the fetch through one `AbortController`.
//! - It resolves `{ supported: false, reason }` for every network or format problem, and rejects only with a
//!   `TypeError` for a programmer error (a `url` that is not a string, bad options).
//!
//! The manifest is parsed by the browser (`parseJson` in `src/web/discover.js`: a strict UTF-8 decode, then
//! `JSON.parse`) and checked by the core through the `Payload` trait, and the result is built as a plain JS
//! object through `Wire`, the way the rest of the package handles payloads: no serde, serde_json or
//! serde-wasm-bindgen in the wasm. Built with those instead, discovery made the gzipped wasm much larger (they
//! also bring `core::fmt`, which the rest of the package avoids), and `JSON.parse` followed by
//! `serde_wasm_bindgen::from_value` cost more than serde_json's parser; reading the parsed value where it is,
//! through `Payload`, is what makes `JSON.parse` pay off. BENCHMARKS.md has the figures ("Changelog of
//! figures", discovery without serde, and the rest of ABP, discovery and the MCP dialect), and docs/DESIGN.md, "Why the browser build does not use serde-wasm-bindgen", the
//! decision. What discovery still costs (URL and HTML scanning, the state machine, fetch and streams) sits
//! behind the cargo feature `discovery` (on by default): a role build that does not discover leaves it out.
//!
//! Every reason is the same as natively except the detail of a JSON syntax error: after "the manifest is not
//! valid JSON: " comes the browser's own message (serde_json's kind and position in `abp-peer`). Nesting is
//! measured before parsing in both (at most 128 levels), so deep input is a reason, never a stack overflow.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, AbortSignal, ReadableStreamDefaultReader, RequestCredentials, RequestInit,
    RequestMode, RequestRedirect, Response,
};

use super::dom::{global, now, Listener, Timer};
use super::value::{to_str, type_error};
use crate::core::discovery::{
    Discovery, DiscoveryResult, Failure, ParseJson, Request, ResponseHead, Url, TIMEOUT_MS,
};
use crate::core::payload::{Kind, Payload};
use crate::core::text::text;

#[wasm_bindgen(typescript_custom_section)]
const TS_DISCOVERY: &'static str = r#"
export interface DiscoverOptions {
  /** Time limit for the whole discovery (page, redirects and manifest), in ms. Default 10000. */
  timeout?: number;
  /** Aborting it ends the discovery: it resolves `{ supported: false, reason }`. */
  signal?: AbortSignal;
}

/** What `discover` resolves to. Nothing in it is trusted before `initialize` confirms it. Narrows on
 * `supported`: `if (r.supported) r.manifest.app.name; else r.reason`. */
export type DiscoveryResult = DiscoverySupported | DiscoveryUnsupported;

export interface DiscoverySupported {
  supported: true;
  /** The checked manifest (known fields only). */
  manifest: AbpManifest;
  /** Where the manifest was found (the link's href resolved against the page URL). */
  manifestUrl: string;
  reason?: undefined;
  /** Things that did not stop discovery: a newer major ABP version, optional fields left out. */
  warnings?: string[];
}

export interface DiscoveryUnsupported {
  supported: false;
  manifest?: undefined;
  /** Where the manifest was looked for, when the page named one. */
  manifestUrl?: string;
  /** Why the page is not supported. */
  reason: string;
  warnings?: string[];
}
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "DiscoverOptions")]
    pub type DiscoverOptions;

    #[wasm_bindgen(catch, js_name = fetch)]
    fn fetch_with_init(input: &str, init: &RequestInit) -> Result<Promise, JsValue>;
}

#[wasm_bindgen(module = "/src/web/discover.js")]
extern "C" {
    /// `bytes` as JSON: decoded as UTF-8 (bad UTF-8 is an error), then `JSON.parse`. Throws a string saying
    /// what is wrong.
    #[wasm_bindgen(catch, js_name = parseJson)]
    fn parse_json_js(bytes: &[u8]) -> Result<JsValue, JsValue>;
}

/// Manifests are parsed by the browser: the wasm carries no JSON parser (see the figures above).
impl ParseJson for JsValue {
    fn parse_json(bytes: &[u8]) -> Result<JsValue, String> {
        parse_json_js(bytes).map_err(|e| to_str(&e))
    }
}

/// Finds out whether the page at `url` is an ABP app: reads its `<head>` (at most 50 KB) for
/// `<link rel="abp-manifest">`, fetches the manifest it names (at most 1 MB, JSON) and checks it. Resolves to a
/// `DiscoveryResult`; never rejects for network or format problems (`supported` is then false and `reason`
/// says why). Rejects with a `TypeError` if `url` is not a string or the options are wrong. A relative `url`
/// is resolved against this page's URL, as `fetch` does. The app's server must allow this origin (CORS).
#[wasm_bindgen(unchecked_return_type = "DiscoveryResult")]
pub async fn discover(
    #[wasm_bindgen(unchecked_param_type = "string")] url: JsValue,
    options: Option<DiscoverOptions>,
) -> Result<JsValue, JsValue> {
    let Some(url) = url.as_string() else {
        return Err(type_error("discover: url must be a string"));
    };
    let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
    let (timeout, signal) = read_options(&options)?;
    let result = run(&absolute(&url), timeout, signal).await;
    Ok(result.into_wire())
}

fn read_options(options: &JsValue) -> Result<(f64, Option<AbortSignal>), JsValue> {
    match options.kind() {
        Kind::Undefined | Kind::Null => return Ok((f64::from(TIMEOUT_MS), None)),
        Kind::Object => {}
        _ => return Err(type_error("discover: options must be an object")),
    }
    let timeout = match options.get("timeout") {
        None => f64::from(TIMEOUT_MS),
        Some(t) => match t.as_f64() {
            // setTimeout treats delays over 2^31 - 1 ms (24.8 days) as 0: clamp, or a long limit would fire at once.
            Some(ms) if ms.is_finite() && ms >= 0.0 => ms.min(2_147_483_647.0),
            _ => {
                return Err(type_error(
                    "discover: timeout must be a finite number of milliseconds, 0 or more",
                ))
            }
        },
    };
    let signal = match options.get("signal") {
        None => None,
        Some(s) => match s.dyn_into::<AbortSignal>() {
            Ok(s) => Some(s),
            Err(_) => return Err(type_error("discover: signal must be an AbortSignal")),
        },
    };
    Ok((timeout, signal))
}

/// `url` resolved against this page's URL when it is relative (and there is a page URL).
fn absolute(url: &str) -> String {
    if Url::parse(url).is_ok() {
        return url.to_owned();
    }
    let base = Reflect::get(&global(), &"location".into())
        .ok()
        .filter(|l| l.is_object())
        .and_then(|l| Reflect::get(&l, &"href".into()).ok())
        .and_then(|h| h.as_string());
    match base.map(|b| Url::parse(&b).and_then(|b| b.join(url))) {
        Some(Ok(u)) => u.as_string(),
        _ => url.to_owned(), // the core reports it as an invalid URL
    }
}

/// Why the fetch stopped, as the core words it.
fn failure(e: &JsValue, signal: Option<&AbortSignal>, timed_out: bool, timeout: f64) -> Failure {
    if let Some(s) = signal.filter(|s| s.aborted()) {
        return Failure::Aborted(to_str(&s.reason()));
    }
    if timed_out {
        return Failure::Timeout(timeout);
    }
    Failure::Network(text(&[
        &to_str(e),
        " (a network error, a server that does not allow this origin (CORS), or more than 20 redirects)",
    ]))
}

async fn run(url: &str, timeout: f64, signal: Option<AbortSignal>) -> DiscoveryResult<JsValue> {
    let mut d = Discovery::new(url);
    if let Some(s) = signal.as_ref().filter(|s| s.aborted()) {
        d.on_failure(Failure::Aborted(to_str(&s.reason())));
        return d.result();
    }
    let Ok(controller) = AbortController::new() else {
        d.on_failure(Failure::Network(
            "AbortController is not available".to_owned(),
        ));
        return d.result();
    };
    let timed_out = Rc::new(Cell::new(false));
    // Both end the fetch through the one controller; both are removed when this function returns.
    let timer = {
        let (c, flag) = (controller.clone(), timed_out.clone());
        Timer::new(move || {
            flag.set(true);
            c.abort();
        })
    };
    timer.arm(Some(now() + timeout));
    let _on_abort = signal.as_ref().map(|s| {
        let c = controller.clone();
        Listener::new(s, "abort", move |_| c.abort())
    });
    let fetch_signal = controller.signal();
    while let Some(req) = d.request().cloned() {
        if let Err(e) = exchange(&mut d, &req, &fetch_signal).await {
            d.on_failure(failure(&e, signal.as_ref(), timed_out.get(), timeout));
        }
    }
    // Anything still streaming (a response the core stopped reading) is cut off.
    controller.abort();
    drop(timer);
    d.result()
}

/// One fetch: the head goes to the core, then the body, chunk by chunk, for as long as the core wants it.
async fn exchange(
    d: &mut Discovery<JsValue>,
    req: &Request,
    signal: &AbortSignal,
) -> Result<(), JsValue> {
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(RequestMode::Cors);
    init.set_credentials(RequestCredentials::Omit);
    init.set_redirect(RequestRedirect::Follow);
    init.set_signal(Some(signal));
    let headers = js_sys::Object::new();
    Reflect::set(&headers, &"accept".into(), &req.accept.into())?;
    init.set_headers(&headers);
    let response: Response = JsFuture::from(fetch_with_init(&req.url, &init)?)
        .await?
        .dyn_into()?;
    let content_type = response.headers().get("content-type").ok().flatten();
    let final_url = response.url();
    let wants_body = d.on_response(ResponseHead {
        status: response.status(),
        url: Some(final_url.as_str()).filter(|u| !u.is_empty()),
        location: None,
        content_type: content_type.as_deref(),
    });
    let Some(body) = response.body() else {
        if wants_body {
            d.on_end();
        }
        return Ok(());
    };
    if !wants_body {
        let _ = JsFuture::from(body.cancel()).await;
        return Ok(());
    }
    let reader: ReadableStreamDefaultReader = body.get_reader().dyn_into()?;
    loop {
        let step = JsFuture::from(reader.read()).await?;
        if Reflect::get(&step, &"done".into())?.is_truthy() {
            break;
        }
        let Ok(value) = Reflect::get(&step, &"value".into())?.dyn_into::<Uint8Array>() else {
            continue;
        };
        // Never copy more than the core could take (a stream may hand over one huge chunk).
        let cap = u32::try_from(req.max_bytes + 1).unwrap_or(u32::MAX);
        let chunk = if value.length() > cap {
            value.subarray(0, cap).to_vec()
        } else {
            value.to_vec()
        };
        if !d.on_body(&chunk) {
            let _ = JsFuture::from(reader.cancel()).await;
            break;
        }
    }
    d.on_end();
    Ok(())
}
