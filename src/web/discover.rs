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
//! The package's full build is made with `discovery-lazy` instead: its `discover()` is the same function to
//! TypeScript, and its first call loads the discovery build (`discover/`, beside the full build's files: the
//! wasm made with `discovery` alone) and hands every call to it (`load.js`). A page that never discovers does
//! not download discovery (BENCHMARKS.md, "Where the bytes are", has what it weighs). The implementation is
//! `here.rs`, compiled with `discovery`.
//!
//! Every reason is the same as natively except the detail of a JSON syntax error: after "the manifest is not
//! valid JSON: " comes the browser's own message (serde_json's kind and position in `abp-peer`). Nesting is
//! measured before parsing in both (at most 128 levels), so deep input is a reason, never a stack overflow.

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::AbortSignal;

use super::value::type_error;
use crate::core::payload::{Kind, Payload};

/// The default time limit of a whole discovery, in ms: `core::discovery`'s (here.rs checks they agree), which a
/// build without discovery's code does not have.
const TIMEOUT_MS: u32 = 10_000;

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
}

#[cfg(feature = "discovery")]
mod here;

#[cfg(not(feature = "discovery"))]
#[wasm_bindgen(module = "/src/web/discover/load.js")]
extern "C" {
    /// The discovery build's `discover(url, { timeout, signal })`, loaded on the first call; the time limit and
    /// the signal also cover the loading (see load.js).
    #[wasm_bindgen(js_name = discoverElsewhere)]
    fn discover_elsewhere(url: &str, timeout: f64, signal: Option<AbortSignal>) -> Promise;
}

/// Finds out whether the page at `url` is an ABP app: reads its `<head>` (at most 50 KB) for
/// `<link rel="abp-manifest">`, fetches the manifest it names (at most 1 MB, JSON) and checks it. Resolves to a
/// `DiscoveryResult`; never rejects for network or format problems (`supported` is then false and `reason`
/// says why). Rejects with a `TypeError` if `url` is not a string or the options are wrong. A relative `url`
/// is resolved against this page's URL, as `fetch` does. The app's server must allow this origin (CORS).
#[wasm_bindgen(unchecked_return_type = "Promise<DiscoveryResult>")]
pub fn discover(
    #[wasm_bindgen(unchecked_param_type = "string")] url: JsValue,
    options: Option<DiscoverOptions>,
) -> Promise {
    let Some(url) = url.as_string() else {
        return Promise::reject(&type_error("discover: url must be a string"));
    };
    let options: JsValue = options.map(Into::into).unwrap_or(JsValue::UNDEFINED);
    let (timeout, signal) = match read_options(&options) {
        Ok(read) => read,
        Err(e) => return Promise::reject(&e),
    };
    #[cfg(feature = "discovery")]
    return wasm_bindgen_futures::future_to_promise(here::discover(url, timeout, signal));
    #[cfg(not(feature = "discovery"))]
    return discover_elsewhere(&url, timeout, signal);
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
