//! A small JSON Schema subset for capability `inputSchema`s: type, required, properties, enum,
//! minimum/maximum, minLength/maxLength, items. Works on any payload type through [`Payload`], so the
//! browser validates `JsValue`s in place and tests validate `serde_json::Value`s.

use super::message::{number, text};

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
    /// reasons): a payload type
    /// whose strings are costly to make from Rust keeps the original for the reply.
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
    /// Length of a string as JavaScript counts it (UTF-16 code units).
    fn string_len(&self) -> Option<usize>;
    fn array_len(&self) -> Option<usize>;
    fn index(&self, i: usize) -> Option<Self>;
    /// Own enumerable keys of an object.
    fn keys(&self) -> Vec<String>;
    /// Equality of primitives (for `enum`).
    fn same_value(&self, other: &Self) -> bool;
}

const MAX_DEPTH: usize = 64;

/// Checks `value` against `schema`. `Err` holds a message naming the first offending path.
pub fn validate<P: Payload>(schema: &P, value: &P) -> Result<(), String> {
    check(schema, value, &mut String::from("params"), 0)
}

fn type_matches<P: Payload>(ty: &str, value: &P) -> bool {
    match (ty, value.kind()) {
        ("object", Kind::Object) | ("array", Kind::Array) | ("string", Kind::String) => true,
        ("boolean", Kind::Bool) | ("null", Kind::Null) | ("number", Kind::Number) => true,
        ("integer", Kind::Number) => value
            .as_f64()
            .is_some_and(|n| n.fract() == 0.0 && n.is_finite()),
        _ => false,
    }
}

fn check<P: Payload>(schema: &P, value: &P, path: &mut String, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(text(&[path, ": nested deeper than 64 levels"]));
    }
    if schema.kind() != Kind::Object {
        return Ok(()); // `true`, `{}` or a schema we cannot read: accept
    }
    if let Some(ty) = schema.get("type") {
        let ok = match ty.kind() {
            Kind::String => ty.as_string().is_some_and(|t| type_matches(&t, value)),
            Kind::Array => (0..ty.array_len().unwrap_or(0))
                .filter_map(|i| ty.index(i).and_then(|t| t.as_string()))
                .any(|t| type_matches(&t, value)),
            _ => true,
        };
        if !ok {
            return Err(text(&[
                path,
                ": expected ",
                &describe_type(&ty),
                ", got ",
                kind_name(value.kind()),
            ]));
        }
    }
    if let Some(options) = schema.get("enum") {
        let n = options.array_len().unwrap_or(0);
        if !(0..n)
            .filter_map(|i| options.index(i))
            .any(|o| o.same_value(value))
        {
            return Err(text(&[path, ": not one of the allowed values"]));
        }
    }
    if value.kind() == Kind::Number {
        let n = value.as_f64().unwrap_or(f64::NAN);
        if let Some(min) = schema.get("minimum").and_then(|m| m.as_f64()) {
            if n.is_nan() || n < min {
                return Err(text(&[path, ": must be >= ", &number(min)]));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(|m| m.as_f64()) {
            if n.is_nan() || n > max {
                return Err(text(&[path, ": must be <= ", &number(max)]));
            }
        }
    }
    if let Some(len) = value.string_len() {
        if let Some(min) = schema.get("minLength").and_then(|m| m.as_f64()) {
            if (len as f64) < min {
                return Err(text(&[
                    path,
                    ": shorter than ",
                    &number(min),
                    " characters",
                ]));
            }
        }
        if let Some(max) = schema.get("maxLength").and_then(|m| m.as_f64()) {
            if (len as f64) > max {
                return Err(text(&[path, ": longer than ", &number(max), " characters"]));
            }
        }
    }
    if value.kind() == Kind::Object {
        if let Some(required) = schema.get("required") {
            for i in 0..required.array_len().unwrap_or(0) {
                if let Some(key) = required.index(i).and_then(|k| k.as_string()) {
                    if value.get(&key).is_none() {
                        return Err(text(&[path, ": missing required property '", &key, "'"]));
                    }
                }
            }
        }
        if let Some(props) = schema.get("properties") {
            for key in props.keys() {
                let (Some(sub), Some(v)) = (props.get(&key), value.get(&key)) else {
                    continue;
                };
                let len = path.len();
                path.push('.');
                path.push_str(&key);
                check(&sub, &v, path, depth + 1)?;
                path.truncate(len);
            }
        }
    }
    if value.kind() == Kind::Array {
        if let Some(items) = schema.get("items") {
            for i in 0..value.array_len().unwrap_or(0) {
                let Some(v) = value.index(i) else { continue };
                let len = path.len();
                path.push('[');
                super::message::push_u64(path, i as u64);
                path.push(']');
                check(&items, &v, path, depth + 1)?;
                path.truncate(len);
            }
        }
    }
    Ok(())
}

fn describe_type<P: Payload>(ty: &P) -> String {
    if let Some(s) = ty.as_string() {
        return s;
    }
    let names: Vec<String> = (0..ty.array_len().unwrap_or(0))
        .filter_map(|i| ty.index(i)?.as_string())
        .collect();
    names.join(" or ")
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Undefined => "undefined",
        Kind::Null => "null",
        Kind::Bool => "boolean",
        Kind::Number => "number",
        Kind::String => "string",
        Kind::Array => "array",
        Kind::Object => "object",
        Kind::Other => "a value that is not JSON data",
    }
}
