//! `discover()` done in this wasm (the `discovery` feature), its arguments already checked by `discover.rs`: the
//! page and the manifest fetched and streamed to the core, the result built. See `discover.rs` for what it does
//! and why.

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

use super::super::dom::{global, now, Listener, Timer};
use super::super::value::to_str;
use crate::core::discovery::{
    Discovery, DiscoveryResult, Failure, ParseJson, Request, ResponseHead, Url, TIMEOUT_MS,
};
use crate::core::text::text;

#[wasm_bindgen]
extern "C" {
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

/// `discover(url, options)` (its doc comment in `discover.rs`), its arguments checked there.
pub(super) async fn discover(
    url: String,
    timeout: f64,
    signal: Option<AbortSignal>,
) -> Result<JsValue, JsValue> {
    let result = run(&absolute(&url), timeout, signal).await;
    Ok(result.into_wire())
}

// discover.rs has the default time limit too (a build without this file uses it): the same as natively.
const _: () = assert!(super::TIMEOUT_MS == TIMEOUT_MS);

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
