//! [`Payload`] and [`Wire`] for `serde_json::Value`: the payload type of native peers and of the core's tests
//! (and, with discovery, `ParseJson`: manifests parsed by serde_json).

use serde_json::{Map, Value};

use super::payload::Wire;
use super::payload::{Kind, Payload};

impl Payload for Value {
    fn kind(&self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }
    fn get(&self, key: &str) -> Option<Self> {
        self.as_object()?.get(key).cloned()
    }
    fn as_f64(&self) -> Option<f64> {
        Value::as_f64(self)
    }
    fn as_bool(&self) -> Option<bool> {
        Value::as_bool(self)
    }
    fn as_string(&self) -> Option<String> {
        self.as_str().map(str::to_owned)
    }
    fn string_len(&self) -> Option<usize> {
        self.as_str().map(|s| s.encode_utf16().count())
    }
    fn array_len(&self) -> Option<usize> {
        self.as_array().map(Vec::len)
    }
    fn index(&self, i: usize) -> Option<Self> {
        self.as_array()?.get(i).cloned()
    }
    fn keys(&self) -> Vec<String> {
        self.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }
    fn same_value(&self, other: &Self) -> bool {
        self == other
    }
    fn matches_pattern(&self, pattern: &str) -> Option<bool> {
        let re = regex::Regex::new(pattern).ok()?;
        Some(re.is_match(self.as_str()?))
    }
}

impl Wire for Value {
    /// JSON has no `undefined`; `null` stands in (and is what JSON.stringify writes for it in arrays).
    fn undefined() -> Self {
        Value::Null
    }
    fn null() -> Self {
        Value::Null
    }
    fn json_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "null".to_owned())
    }
    fn object() -> Self {
        Value::Object(Map::new())
    }
    fn string(s: &str) -> Self {
        Value::String(s.to_owned())
    }
    fn number(n: f64) -> Self {
        // Integers as integers, as JavaScript's JSON.stringify writes them (`-32600`, not `-32600.0`).
        if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 {
            return Value::from(n as i64);
        }
        serde_json::Number::from_f64(n)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
    fn boolean(b: bool) -> Self {
        Value::Bool(b)
    }
    fn array(items: Vec<Self>) -> Self {
        Value::Array(items)
    }
    fn set(&mut self, key: &str, value: Self) {
        if let Value::Object(o) = self {
            o.insert(key.to_owned(), value);
        }
    }
    fn shallow_copy(&self) -> Self {
        match self {
            Value::Object(o) => Value::Object(o.clone()),
            _ => Value::Object(Map::new()),
        }
    }
}

#[cfg(feature = "discovery")]
impl super::discovery::ParseJson for Value {
    /// serde_json's parser; an error reads as its kind and position ("syntax error at line 2, column 14").
    fn parse_json(bytes: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(bytes).map_err(|e| {
            let mut s = String::from(match e.classify() {
                serde_json::error::Category::Eof => "it ends too early",
                serde_json::error::Category::Syntax => "syntax error",
                _ => "unreadable",
            });
            s.push_str(" at line ");
            super::text::push_u64(&mut s, e.line() as u64);
            s.push_str(", column ");
            super::text::push_u64(&mut s, e.column() as u64);
            s
        })
    }
}
