//! `JsValue` as a core payload, plus the few JS conversions the glue needs.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::core::codec::{encode_error, Wire};
use crate::core::schema::{Kind, Payload};
use crate::core::AbpError;

#[wasm_bindgen(module = "/src/web/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = makeCtx)]
    pub(crate) fn make_ctx(
        dispatch: &JsValue,
        signal: &JsValue,
        call_id: &str,
        progress_token: &JsValue,
    ) -> JsValue;
    #[wasm_bindgen(js_name = isThenable)]
    pub(crate) fn is_thenable(v: &JsValue) -> bool;
    #[wasm_bindgen(js_name = toStr)]
    pub(crate) fn to_str(v: &JsValue) -> String;
    #[wasm_bindgen(js_name = errorWithCode)]
    pub(crate) fn error_with_code(code: &str, message: &str) -> JsValue;
    #[wasm_bindgen(js_name = wsEncode, catch)]
    pub(crate) fn ws_encode(msg: &JsValue, max: f64) -> Result<String, JsValue>;
    #[wasm_bindgen(js_name = wsDecode)]
    pub(crate) fn ws_decode(data: &JsValue, max: f64) -> JsValue;
    #[wasm_bindgen(js_name = makeGlobal)]
    pub(crate) fn make_global(dispatch: &JsValue, protocol_version: &str, app: &JsValue)
        -> JsValue;
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
        if self.is_undefined() {
            Kind::Undefined
        } else if self.is_null() {
            Kind::Null
        } else if self.as_bool().is_some() {
            Kind::Bool
        } else if self.as_f64().is_some() {
            Kind::Number
        } else if self.is_string() {
            Kind::String
        } else if Array::is_array(self) {
            Kind::Array
        } else if self.is_object() && !self.is_function() {
            Kind::Object
        } else {
            Kind::Other
        }
    }
    fn get(&self, key: &str) -> Option<Self> {
        if !self.is_object() {
            return None;
        }
        Reflect::get(self, &JsValue::from_str(key))
            .ok()
            .filter(|v| !v.is_undefined())
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
        match self.dyn_ref::<Object>() {
            Some(o) => Object::keys(o)
                .iter()
                .filter_map(|k| k.as_string())
                .collect(),
            None => Vec::new(),
        }
    }
    fn same_value(&self, other: &Self) -> bool {
        Object::is(self, other)
    }
}

impl Wire for JsValue {
    fn undefined() -> Self {
        JsValue::UNDEFINED
    }
    fn object() -> Self {
        Object::new().into()
    }
    fn string(s: &str) -> Self {
        JsValue::from_str(s)
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
        let _ = Reflect::set(self, &JsValue::from_str(key), &value);
    }
    fn shallow_copy(&self) -> Self {
        let target = Object::new();
        if let Some(o) = self.dyn_ref::<Object>() {
            return Object::assign(&target, o).into();
        }
        target.into()
    }
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
        r.set("callId", JsValue::from_str(c));
    }
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
    v.get(key).and_then(|x| x.as_string())
}

pub(crate) fn opt_number(v: &JsValue, key: &str) -> Option<f64> {
    v.get(key).and_then(|x| x.as_f64())
}

pub(crate) fn opt_function(v: &JsValue, key: &str) -> Option<js_sys::Function> {
    v.get(key)
        .and_then(|x| x.dyn_into::<js_sys::Function>().ok())
}

/// A random UUID v4: `crypto.randomUUID()` where it exists, else `crypto.getRandomValues`.
pub(crate) fn random_uuid() -> String {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).ok();
    if let Some(crypto) = crypto.as_ref().filter(|c| c.is_object()) {
        if let Some(f) = opt_function(crypto, "randomUUID") {
            if let Some(s) = f.call0(crypto).ok().and_then(|v| v.as_string()) {
                return s;
            }
        }
        if let Some(f) = opt_function(crypto, "getRandomValues") {
            let bytes = js_sys::Uint8Array::new_with_length(16);
            if f.call1(crypto, &bytes).is_ok() {
                let mut b = [0u8; 16];
                bytes.copy_to(&mut b);
                return crate::core::message::uuid_v4(b);
            }
        }
    }
    // No crypto at all: still unique enough per page for message correlation.
    let mut b = [0u8; 16];
    for (i, x) in b.iter_mut().enumerate() {
        *x = (js_sys::Math::random() * 256.0) as u8 ^ (i as u8);
    }
    crate::core::message::uuid_v4(b)
}

/// A short random prefix for message ids, so two connections never share ids.
pub(crate) fn id_prefix() -> String {
    let mut s: String = random_uuid().chars().take(8).collect();
    s.push('-');
    s
}
