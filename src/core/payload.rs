//! The ground floor: what the core needs of a payload value, to read it ([`Payload`]) and to build one
//! ([`Wire`]). The browser's payloads are `JsValue`s (`src/web/value.rs`); native peers and tests use
//! `serde_json::Value` (`json.rs`). Everything above is written once over these traits.

/// The JSON kinds a payload can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Undefined,
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
    /// Functions, symbols, bigints, class instances that are not plain data.
    Other,
}

/// Read access to a payload value, enough to validate it against a schema.
pub trait Payload: Clone {
    fn kind(&self) -> Kind;
    /// An own property of an object; `None` when missing or `undefined`.
    fn get(&self, key: &str) -> Option<Self>;
    /// `get(key)` if it is a string (one step where the payload type can do it in one).
    fn get_string(&self, key: &str) -> Option<String> {
        self.get(key).and_then(|v| v.as_string())
    }
    /// `get_string(key)` for a short string the receiver is likely to send back (message and call ids, cancel
    /// reasons): a payload type whose strings are costly to make from Rust keeps the original for the reply.
    fn get_id(&self, key: &str) -> Option<String> {
        self.get_string(key)
    }
    /// `get(key)` if it is an object (not null, not an array).
    fn get_object(&self, key: &str) -> Option<Self> {
        self.get(key).filter(|v| v.kind() == Kind::Object)
    }
    /// `get(key)` if it is a number.
    fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(|v| v.as_f64())
    }
    fn as_f64(&self) -> Option<f64>;
    fn as_bool(&self) -> Option<bool>;
    fn as_string(&self) -> Option<String>;
    /// `as_string()` for an id the receiver is likely to send back (see [`Payload::get_id`]).
    fn as_id(&self) -> Option<String> {
        self.as_string()
    }
    /// Length of a string as JavaScript counts it (UTF-16 code units).
    fn string_len(&self) -> Option<usize>;
    fn array_len(&self) -> Option<usize>;
    fn index(&self, i: usize) -> Option<Self>;
    /// Own enumerable keys of an object.
    fn keys(&self) -> Vec<String>;
    /// Equality of primitives (for `enum`).
    fn same_value(&self, other: &Self) -> bool;
    /// Whether this string matches `pattern` as the platform's regular expressions read it. `None`: not a
    /// string, a pattern the platform cannot read, or no regular expressions here (the check is skipped).
    fn matches_pattern(&self, _pattern: &str) -> Option<bool> {
        None
    }
}

/// A payload that can also be built: what a codec needs to write messages.
pub trait Wire: Payload {
    fn undefined() -> Self;
    fn null() -> Self;
    /// The value as JSON text (`JSON.stringify`); `"null"` for what JSON cannot write.
    fn json_text(&self) -> String;
    /// [`Wire::json_text`] as a string payload (one step where the payload type can make it in place).
    fn json_string(&self) -> Self {
        Self::string(&self.json_text())
    }
    fn object() -> Self;
    fn string(s: &str) -> Self;
    fn number(n: f64) -> Self;
    fn boolean(b: bool) -> Self;
    fn array(items: Vec<Self>) -> Self;
    /// Sets a property on an object this codec created.
    fn set(&mut self, key: &str, value: Self);
    /// A shallow copy of an object (or a fresh object if `self` is not one), for adding fields to a
    /// user's object without changing it.
    fn shallow_copy(&self) -> Self;
    /// A string that is one of the protocol's names (a payload type may keep these made).
    fn constant(s: &'static str) -> Self {
        Self::string(s)
    }
    /// ABP's `capabilities/call` built in one step, where the payload type can (the browser's does it in JS:
    /// each property set from Rust is a step across the boundary). `Err(params)`: no such build here, and the
    /// ABP codec writes it field by field. `timestamp` is the envelope's clock, read only by a build that
    /// needs it (the browser's builders read `Date.now()` where they build).
    fn call_message(
        call: &CallFields<'_>,
        timestamp: Timestamp<'_>,
        params: Self,
    ) -> Result<Self, Self> {
        let _ = (call, timestamp);
        Err(params)
    }
    /// ABP's `capabilities/call-result` for a call that succeeded, built in one step where the payload type
    /// can (see [`Wire::call_message`]); `Err(data)` otherwise.
    fn success_message(
        id: &str,
        timestamp: Timestamp<'_>,
        call_id: &str,
        data: Self,
        duration: f64,
    ) -> Result<Self, Self> {
        let _ = (id, timestamp, call_id, duration);
        Err(data)
    }
    /// A new object with the given properties in order; `None` values are left out. (One step where the
    /// payload type can do it in one; the values are taken out of `entries`.)
    fn object_of(entries: &mut [(&str, Option<Self>)]) -> Self {
        let mut o = Self::object();
        for (key, value) in entries.iter_mut() {
            if let Some(v) = value.take() {
                o.set(key, v);
            }
        }
        o
    }
}

/// The control fields of a `capabilities/call` (see [`Wire::call_message`]).
pub struct CallFields<'a> {
    pub id: &'a str,
    pub call_id: &'a str,
    pub capability: &'a str,
    pub timeout: Option<f64>,
    pub progress_token: Option<&'a str>,
    /// Written as the payload's `_meta` (`traceparent`, `tracestate`).
    pub trace: Option<&'a super::trace::Trace>,
}

/// The envelope's clock (Unix milliseconds), read when a message needs it.
pub type Timestamp<'a> = &'a dyn Fn() -> f64;
