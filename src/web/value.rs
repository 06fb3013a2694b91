//! `JsValue` as a core payload, plus the few JS conversions the glue needs.

use std::cell::RefCell;

use js_sys::{Array, Object};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::error::encode_error;
use crate::core::map::{str_hash, StrMap};
#[cfg(feature = "agent")]
use crate::core::payload::CallFields;
#[cfg(any(feature = "agent", feature = "app"))]
use crate::core::payload::Timestamp;
use crate::core::payload::Wire;
use crate::core::payload::{Kind, Payload};
use crate::core::AbpError;

/// What every build has of the JS side: `value.js`.
#[wasm_bindgen(module = "/src/web/value.js")]
extern "C" {
    #[wasm_bindgen(js_name = randomUUID)]
    fn random_uuid_js() -> JsValue;
    #[wasm_bindgen(js_name = matchesPattern)]
    fn matches_pattern_js(s: &JsValue, pattern: &str) -> Option<bool>;
    #[wasm_bindgen(js_name = isThenable)]
    pub(crate) fn is_thenable(v: &JsValue) -> bool;
    #[wasm_bindgen(js_name = toStr)]
    pub(crate) fn to_str(v: &JsValue) -> String;
    #[wasm_bindgen(js_name = errorWithCode)]
    pub(crate) fn error_with_code(code: &str, message: &str) -> JsValue;
    #[wasm_bindgen(js_name = kindOf)]
    fn kind_of(v: &JsValue) -> u32;
    /// `JSON.stringify(v)`, or `'null'` for what JSON cannot write (undefined, a function, a cycle, a BigInt).
    #[wasm_bindgen(js_name = jsonString)]
    fn json_string_js(v: &JsValue) -> JsValue;
    /// `o[key]` for an object `o`, else undefined (also when a getter throws).
    fn field(o: &JsValue, key: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = fieldString)]
    fn field_string(o: &JsValue, key: &JsValue) -> Option<String>;
    /// `undefined` when absent: an `Option<JsValue>` return would cost a call back into wasm to store it.
    #[wasm_bindgen(js_name = fieldObject)]
    fn field_object(o: &JsValue, key: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = fieldNumber)]
    fn field_number(o: &JsValue, key: &JsValue) -> Option<f64>;
    /// Sets up to four properties (an `undefined` key ends the list) on `o`, or on a new object when `o` is
    /// undefined, and returns it.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = setFields)]
    fn set_fields(
        o: &JsValue,
        k1: &JsValue,
        v1: &JsValue,
        k2: &JsValue,
        v2: &JsValue,
        k3: &JsValue,
        v3: &JsValue,
        k4: &JsValue,
        v4: &JsValue,
    ) -> JsValue;
    /// A pending promise and its resolve function (value.js `Deferred`).
    pub(crate) type Deferred;
    #[wasm_bindgen(constructor)]
    pub(crate) fn new() -> Deferred;
    #[wasm_bindgen(method, getter)]
    pub(crate) fn promise(this: &Deferred) -> js_sys::Promise;
    /// Never throws: a promise's resolve function does not.
    #[wasm_bindgen(method)]
    pub(crate) fn resolve(this: &Deferred, value: &JsValue);
    /// Never throws: a promise's reject function does not.
    #[wasm_bindgen(method)]
    pub(crate) fn reject(this: &Deferred, error: &JsValue);
    #[wasm_bindgen(js_name = tryCall)]
    pub(crate) fn try_call(f: &js_sys::Function, arg: &JsValue) -> JsValue;
}

/// The one-step builds of a call's two messages (`Wire::call_message`, `Wire::success_message`), each with the
/// role that sends it.
#[cfg(feature = "agent")]
#[wasm_bindgen(module = "/src/web/client.js")]
extern "C" {
    /// The call message, built in one step (see `Wire::call_message`).
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = callMessage)]
    fn call_message(
        id: &JsValue,
        call_id: &JsValue,
        capability: &JsValue,
        params: &JsValue,
        timeout: Option<f64>,
        progress_token: &JsValue,
    ) -> JsValue;
}

#[cfg(feature = "app")]
#[wasm_bindgen(module = "/src/web/app.js")]
extern "C" {
    /// A success result, built in one step (see `Wire::success_message`).
    #[wasm_bindgen(js_name = successMessage)]
    fn success_message(id: &JsValue, call_id: &JsValue, data: &JsValue, duration: f64) -> JsValue;
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = warn)]
    pub(crate) fn console_warn(s: &str);
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    pub(crate) fn console_error2(s: &str, v: &JsValue);
}

impl Payload for JsValue {
    fn kind(&self) -> Kind {
        match kind_of(self) {
            0 => Kind::Undefined,
            1 => Kind::Null,
            2 => Kind::Bool,
            3 => Kind::Number,
            4 => Kind::String,
            5 => Kind::Array,
            6 => Kind::Object,
            _ => Kind::Other,
        }
    }
    fn get(&self, key: &str) -> Option<Self> {
        let v = field(self, &key_js(key));
        (!v.is_undefined()).then_some(v)
    }
    fn get_string(&self, key: &str) -> Option<String> {
        field_string(self, &key_js(key))
    }
    fn get_id(&self, key: &str) -> Option<String> {
        id_of(&field(self, &key_js(key)))
    }
    fn get_f64(&self, key: &str) -> Option<f64> {
        field_number(self, &key_js(key))
    }
    fn get_object(&self, key: &str) -> Option<Self> {
        let v = field_object(self, &key_js(key));
        (!v.is_undefined()).then_some(v)
    }
    fn as_f64(&self) -> Option<f64> {
        JsValue::as_f64(self)
    }
    fn as_bool(&self) -> Option<bool> {
        JsValue::as_bool(self)
    }
    fn as_string(&self) -> Option<String> {
        JsValue::as_string(self)
    }
    fn as_id(&self) -> Option<String> {
        id_of(self)
    }
    fn string_len(&self) -> Option<usize> {
        self.dyn_ref::<js_sys::JsString>()
            .map(|s| s.length() as usize)
    }
    fn array_len(&self) -> Option<usize> {
        self.dyn_ref::<Array>().map(|a| a.length() as usize)
    }
    fn index(&self, i: usize) -> Option<Self> {
        self.dyn_ref::<Array>().map(|a| a.get(i as u32))
    }
    fn keys(&self) -> Vec<String> {
        // By kind, not `instanceof Object`: an object made in another realm (a parent page calling into an
        // iframe's SDK) is still an object.
        if self.kind() != Kind::Object {
            return Vec::new();
        }
        Object::keys(self.unchecked_ref::<Object>())
            .iter()
            .filter_map(|k| k.as_string())
            .collect()
    }
    fn same_value(&self, other: &Self) -> bool {
        Object::is(self, other)
    }
    fn matches_pattern(&self, pattern: &str) -> Option<bool> {
        matches_pattern_js(self, pattern)
    }
}

impl Wire for JsValue {
    fn null() -> Self {
        JsValue::NULL
    }
    fn json_text(&self) -> String {
        json_string_js(self)
            .as_string()
            .unwrap_or_else(|| "null".to_owned())
    }
    // Made in JS: the text is not copied into wasm and back out.
    fn json_string(&self) -> Self {
        json_string_js(self)
    }
    fn undefined() -> Self {
        JsValue::UNDEFINED
    }
    fn object() -> Self {
        Object::new().into()
    }
    fn string(s: &str) -> Self {
        js_string(s)
    }
    fn number(n: f64) -> Self {
        JsValue::from_f64(n)
    }
    fn boolean(b: bool) -> Self {
        JsValue::from_bool(b)
    }
    fn array(items: Vec<Self>) -> Self {
        items.into_iter().collect::<Array>().into()
    }
    fn set(&mut self, key: &str, value: Self) {
        let u = &JsValue::UNDEFINED;
        set_fields(self, &key_js(key), &value, u, u, u, u, u, u);
    }
    fn constant(s: &'static str) -> Self {
        key_js(s)
    }
    // The builders read `Date.now()` in JS for the timestamp.
    #[cfg(feature = "agent")]
    fn call_message(call: &CallFields<'_>, _: Timestamp<'_>, params: Self) -> Result<Self, Self> {
        // A traced call is built field by field: the one-step build stays the shape of every other call.
        if call.trace.is_some() {
            return Err(params);
        }
        let (id, call_id) = (js_string(call.id), js_string(call.call_id));
        let token = call.progress_token.map(js_string);
        Ok(call_message(
            &id,
            &call_id,
            &js_string(call.capability),
            &params,
            call.timeout,
            token.as_ref().unwrap_or(&JsValue::UNDEFINED),
        ))
    }
    #[cfg(feature = "app")]
    fn success_message(
        id: &str,
        _: Timestamp<'_>,
        call_id: &str,
        data: Self,
        duration: f64,
    ) -> Result<Self, Self> {
        Ok(success_message(
            &js_string(id),
            &js_string(call_id),
            &data,
            duration,
        ))
    }
    fn object_of(entries: &mut [(&str, Option<Self>)]) -> Self {
        // The first batch makes the object (`setFields` with no object); later ones add to it.
        let mut o = JsValue::UNDEFINED;
        let mut batch: [(JsValue, JsValue); 4] = Default::default();
        let mut n = 0;
        for (key, value) in entries.iter_mut() {
            let Some(v) = value.take() else { continue };
            batch[n] = (key_js(key), v);
            n += 1;
            if n == 4 {
                o = flush(&o, &mut batch);
                n = 0;
            }
        }
        if n > 0 {
            o = flush(&o, &mut batch);
        }
        if o.is_undefined() {
            o = Object::new().into();
        }
        o
    }
    fn shallow_copy(&self) -> Self {
        let target = Object::new();
        if self.kind() == Kind::Object {
            // By kind, not `instanceof Object`, as in `keys`.
            return Object::assign(&target, self.unchecked_ref::<Object>()).into();
        }
        target.into()
    }
}

thread_local! {
    /// Property names as JS strings, made once: a string made from Rust is decoded from UTF-8 every time, and
    /// envelope keys are a few dozen literals read and written on every message.
    static KEYS: RefCell<StrMap<JsValue>> = const { RefCell::new(StrMap::new()) };
    /// JS strings of recent ids, in slots by a hash of their text (see [`js_string`]).
    static ID_STRINGS: RefCell<Vec<Option<(String, JsValue)>>> = const { RefCell::new(Vec::new()) };
}

/// How many property names are kept (names from users' schemas count too; beyond this each is made afresh).
const KEY_CACHE: usize = 4096;

/// Property name `key` as a JS string.
fn key_js(key: &str) -> JsValue {
    KEYS.with(|k| {
        if let Some(v) = k.borrow().get(key) {
            return v.clone();
        }
        let v = JsValue::from_str(key);
        let mut keys = k.borrow_mut();
        if keys.len() < KEY_CACHE {
            keys.insert(key.to_owned(), v.clone());
        }
        v
    })
}

/// Slots for id strings, and the longest string kept (UUIDs and this SDK's message ids are 36 or less; abort
/// reasons are often longer).
const ID_SLOTS: usize = 64;
const ID_MAX_LEN: usize = 128;

fn id_slot(s: &str) -> usize {
    str_hash(s) as usize % ID_SLOTS
}

/// Keeps `js`, a JS string equal to `s` (an id read from a message or made in JS, a capability name, an abort
/// reason), so that sending `s` back reuses it: a string made from Rust is decoded from UTF-8 by the browser
/// each time, which was the largest single cost of encoding a small message.
pub(crate) fn keep_id(s: &str, js: &JsValue) {
    if s.len() > ID_MAX_LEN {
        return;
    }
    ID_STRINGS.with(|c| {
        let mut slots = c.borrow_mut();
        if slots.is_empty() {
            slots.resize_with(ID_SLOTS, || None);
        }
        match &mut slots[id_slot(s)] {
            Some((text, value)) => {
                text.clear();
                text.push_str(s);
                *value = js.clone();
            }
            empty => *empty = Some((s.to_owned(), js.clone())),
        }
    })
}

/// The text of `v` if it is a string, kept (as by [`keep_id`]) for the messages that send it back.
pub(crate) fn id_of(v: &JsValue) -> Option<String> {
    let s = v.as_string()?;
    keep_id(&s, v);
    Some(s)
}

/// `s` as a JS string: the kept one if `s` is a recent id, else a new one.
pub(crate) fn js_string(s: &str) -> JsValue {
    if s.len() <= ID_MAX_LEN {
        let kept = ID_STRINGS.with(|c| {
            c.borrow()
                .get(id_slot(s))
                .and_then(|e| e.as_ref())
                .filter(|(text, _)| text == s)
                .map(|(_, value)| value.clone())
        });
        if let Some(v) = kept {
            return v;
        }
    }
    JsValue::from_str(s)
}

/// A new call id (a UUID v4 made in JS), kept as a JS string for the messages that carry it.
pub(crate) fn new_call_id() -> String {
    let js = random_uuid_js();
    let s = js.as_string().unwrap_or_default();
    keep_id(&s, &js);
    s
}

/// Writes the pairs in `batch` (key number -1: unused) onto `o` (undefined: a new object) in one call,
/// empties the batch and returns the object.
fn flush(o: &JsValue, batch: &mut [(JsValue, JsValue); 4]) -> JsValue {
    let [(k1, v1), (k2, v2), (k3, v3), (k4, v4)] = batch;
    let o = set_fields(o, k1, v1, k2, v2, k3, v3, k4, v4);
    *batch = Default::default();
    o
}

/// `{ success:false, error, cancelled? }`: a response settled on this side.
pub(crate) fn local_response(
    error: AbpError<JsValue>,
    cancelled: bool,
    call_id: Option<&str>,
) -> JsValue {
    let mut r = JsValue::object();
    r.set("success", JsValue::FALSE);
    if cancelled {
        r.set("cancelled", JsValue::TRUE);
    }
    r.set("error", encode_error(error));
    if let Some(c) = call_id {
        r.set("callId", js_string(c));
    }
    r
}

/// A call's response settled on this side (cancelled, timed out, refused, disconnected), with
/// `metadata: { duration }` (ms since the call started; 0 for one refused before it was sent) as every
/// response from an app carries it, so a response has the same shape whichever side settled it.
pub(crate) fn local_call_response(
    error: AbpError<JsValue>,
    cancelled: bool,
    call_id: &str,
    duration: f64,
) -> JsValue {
    let mut r = local_response(error, cancelled, Some(call_id));
    let mut meta = JsValue::object();
    meta.set("duration", JsValue::from_f64(duration));
    r.set("metadata", meta);
    r
}

/// A JS `Error` with `code`, for rejections (programmer errors and failed connects).
pub(crate) fn js_error(error: &AbpError<JsValue>) -> JsValue {
    error_with_code(error.code.as_str(), &error.message)
}

pub(crate) fn type_error(message: &str) -> JsValue {
    js_sys::TypeError::new(message).into()
}

pub(crate) fn opt_string(v: &JsValue, key: &str) -> Option<String> {
    v.get_string(key)
}

pub(crate) fn opt_number(v: &JsValue, key: &str) -> Option<f64> {
    v.get_f64(key)
}

pub(crate) fn opt_function(v: &JsValue, key: &str) -> Option<js_sys::Function> {
    v.get(key)
        .and_then(|x| x.dyn_into::<js_sys::Function>().ok())
}

/// A short random prefix for message ids, so two connections never share ids.
pub(crate) fn id_prefix() -> String {
    // A UUID's first 8 characters (ASCII); `get` rather than a char iterator keeps the wasm smaller.
    let id = new_call_id();
    let mut s = String::from(id.get(..8).unwrap_or(&id));
    s.push('-');
    s
}

/// Reads the `dialect` option (`'abp'`, the default, `'mcp'`, `'acp'` or `'tesseron'`).
pub(crate) fn dialect_option(
    options: &JsValue,
    what: &str,
) -> Result<crate::core::dialect::DialectKind, JsValue> {
    use crate::core::dialect::DialectKind;
    let Some(d) = options.get(super::options::connect::DIALECT.name) else {
        return Ok(DialectKind::Abp);
    };
    let name = d.as_string().unwrap_or_default();
    match DialectKind::parse(&name) {
        Some(kind) if kind.built() => Ok(kind),
        Some(_) => Err(type_error(&crate::core::text::text(&[
            what,
            ": this build of abp-wasm speaks ABP only; import 'abp-wasm' (the full package) for dialect '",
            &name,
            "'",
        ]))),
        None => {
            let mut message = crate::core::text::text(&[what, ": options.dialect must be one of"]);
            for d in DialectKind::ALL {
                message.push_str(if message.ends_with("of") { " '" } else { ", '" });
                message.push_str(d.name());
                message.push('\'');
            }
            Err(type_error(&message))
        }
    }
}
