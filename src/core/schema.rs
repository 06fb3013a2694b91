//! A small JSON Schema subset for capability `inputSchema`s: type, required, properties, enum, const,
//! minimum/maximum, minLength/maxLength, pattern, format (date-time, email, uri, uuid), items. Works on any
//! payload type through [`Payload`], so the browser validates `JsValue`s in place and tests validate
//! `serde_json::Value`s.

use super::payload::{Kind, Payload};
use super::text::{number, text};

/// Structural equality of JSON values (for `const`).
fn deep_equal<P: Payload>(a: &P, b: &P, depth: usize) -> bool {
    if depth > MAX_DEPTH || a.kind() != b.kind() {
        return false;
    }
    match a.kind() {
        Kind::Array => {
            let n = a.array_len().unwrap_or(0);
            n == b.array_len().unwrap_or(0)
                && (0..n).all(|i| match (a.index(i), b.index(i)) {
                    (Some(x), Some(y)) => deep_equal(&x, &y, depth + 1),
                    (x, y) => x.is_none() && y.is_none(),
                })
        }
        Kind::Object => {
            let (ka, kb) = (a.keys(), b.keys());
            ka.len() == kb.len()
                && ka.iter().all(|k| match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => deep_equal(&x, &y, depth + 1),
                    _ => false,
                })
        }
        _ => a.same_value(b),
    }
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

/// [`validate`] at one level: the keywords that apply to `value`'s kind, in a fixed order, the first failure
/// reported; `properties` and `items` recurse with `path` extended.
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
    if let Some(c) = schema.get("const") {
        if !deep_equal(&c, value, 0) {
            return Err(text(&[path, ": not the required value"]));
        }
    }
    // At most one kind applies: a number's bounds, an object's properties, an array's items, a string's
    // length, pattern and format.
    match value.kind() {
        Kind::Number => check_number(schema, value, path),
        Kind::Object => check_object(schema, value, path, depth),
        Kind::Array => check_items(schema, value, path, depth),
        _ => match value.string_len() {
            Some(len) => check_string(schema, value, len, path),
            None => Ok(()),
        },
    }
}

/// `minimum` and `maximum` of a number.
fn check_number<P: Payload>(schema: &P, value: &P, path: &str) -> Result<(), String> {
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
    Ok(())
}

/// `minLength`, `maxLength` (in UTF-16 code units, `len`), `pattern` and `format` of a string.
fn check_string<P: Payload>(schema: &P, value: &P, len: usize, path: &str) -> Result<(), String> {
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
    if let Some(pattern) = schema.get("pattern").and_then(|p| p.as_string()) {
        if value.matches_pattern(&pattern) == Some(false) {
            return Err(text(&[path, ": does not match the pattern ", &pattern]));
        }
    }
    let format = schema.get("format").and_then(|f| f.as_string());
    if let (Some(format), Some(s)) = (format, value.as_string()) {
        if format_ok(&format, &s) == Some(false) {
            return Err(text(&[path, ": not a valid ", &format]));
        }
    }
    Ok(())
}

/// `required`, then each of `properties` the object has (`path.key`).
fn check_object<P: Payload>(
    schema: &P,
    value: &P,
    path: &mut String,
    depth: usize,
) -> Result<(), String> {
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
    Ok(())
}

/// `items`: every element of the array (`path[i]`).
fn check_items<P: Payload>(
    schema: &P,
    value: &P,
    path: &mut String,
    depth: usize,
) -> Result<(), String> {
    if let Some(items) = schema.get("items") {
        for i in 0..value.array_len().unwrap_or(0) {
            let Some(v) = value.index(i) else { continue };
            let len = path.len();
            path.push('[');
            super::text::push_u64(path, i as u64);
            path.push(']');
            check(&items, &v, path, depth + 1)?;
            path.truncate(len);
        }
    }
    Ok(())
}

fn describe_type<P: Payload>(ty: &P) -> String {
    if let Some(s) = ty.as_string() {
        return s;
    }
    // Joined by hand: `[String]::join` brings a generic joiner into the wasm build.
    let mut names = String::new();
    let listed = (0..ty.array_len().unwrap_or(0)).filter_map(|i| ty.index(i)?.as_string());
    for (i, name) in listed.enumerate() {
        if i > 0 {
            names.push_str(" or ");
        }
        names.push_str(&name);
    }
    names
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

/// Checks a string `format`: `Some(ok)` for date-time (RFC 3339), email, uri (absolute, RFC 3986) and uuid;
/// `None` for formats not checked (they pass, as JSON Schema's annotation-only formats do).
pub fn format_ok(format: &str, s: &str) -> Option<bool> {
    Some(match format {
        "date-time" => is_date_time(s),
        "email" => is_email(s),
        "uri" => is_uri(s),
        "uuid" => is_uuid(s),
        _ => return None,
    })
}

fn digits(s: &[u8], n: usize) -> Option<u32> {
    if s.len() < n || !s[..n].iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s[..n].iter().fold(0, |a, d| a * 10 + u32::from(d - b'0')))
}

fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let field = |at: usize, n: usize, lo: u32, hi: u32| {
        b.get(at..)
            .and_then(|rest| digits(rest, n))
            .is_some_and(|v| (lo..=hi).contains(&v))
    };
    let sep = |at: usize, c: &[u8]| b.get(at).is_some_and(|x| c.contains(x));
    if !(field(0, 4, 0, 9999)
        && sep(4, b"-")
        && field(5, 2, 1, 12)
        && sep(7, b"-")
        && field(8, 2, 1, 31)
        && sep(10, b"Tt ")
        && field(11, 2, 0, 23)
        && sep(13, b":")
        && field(14, 2, 0, 59)
        && sep(16, b":")
        && field(17, 2, 0, 60))
    {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            field(i + 1, 2, 0, 23) && sep(i + 3, b":") && field(i + 4, 2, 0, 59) && i + 6 == b.len()
        }
        _ => false,
    }
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c >= 0x80)
    };
    !local.is_empty()
        && local.len() <= 64
        && !local.contains('@')
        && !local.starts_with('.')
        && !local.ends_with('.')
        // Byte pairs rather than `contains("..")`, which brings the two-way substring searcher into the wasm.
        && !local.as_bytes().windows(2).any(|w| w == b"..")
        && local
            .bytes()
            .all(|c| c > b' ' && c != 0x7f && !b"()<>[]:;,\\\"".contains(&c))
        && domain.split('.').all(label_ok)
}

fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.bytes();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
        && !rest.is_empty()
        && s.bytes()
            .all(|c| c > b' ' && c != 0x7f && !b"<>\\\"{}|^`".contains(&c))
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}
