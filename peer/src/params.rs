//! The `Mcp-Param-*` headers of MCP 2026-07-28 over HTTP: a tool's schema may mirror parameters into headers
//! (`x-mcp-header`), so that a proxy can route a `tools/call` without reading its body. The gateway keeps the
//! app's tools' mirrored parameters ([`ParamHeaders`]); the HTTP endpoint, or with `--nats` the process holding
//! the app, checks each call's headers against its arguments ([`params_match`]).

use std::collections::HashMap;
use std::sync::Mutex;

use axum::http::HeaderMap;
use serde_json::Value;

use crate::hub::lock;

/// A header value as it was meant: `=?base64?…?=` is how a client sends a value that is not plain ASCII (or
/// that looks like that form). A value in that form that is not base64 of UTF-8 is refused.
pub(crate) fn decode_header(name: &str, value: &str) -> Result<String, String> {
    use base64::Engine;
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| format!("Header mismatch: {name} is not valid base64 of UTF-8 text"))
}

/// One tool parameter that its schema mirrors into a header (`x-mcp-header`): `Mcp-Param-{name}` carries the
/// value found at `path` (a chain of `properties` keys) in the call's arguments.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ParamHeader {
    name: String,
    path: Vec<String>,
}

/// The `x-mcp-header` parameters of the app's tools, by tool name: set by the gateway whenever the app's tools
/// change, read by every `tools/call` to check its `Mcp-Param-*` headers against its arguments.
#[derive(Default)]
pub(crate) struct ParamHeaders(Mutex<HashMap<String, Vec<ParamHeader>>>);

impl ParamHeaders {
    /// The app's tools (capability descriptors) are now `tools`.
    pub(crate) fn set(&self, tools: &[Value]) {
        let all = tools
            .iter()
            .filter_map(|t| {
                let name = t.get("name")?.as_str()?;
                let mut found = Vec::new();
                if let Some(schema) = t.get("inputSchema") {
                    annotated(schema, &mut Vec::new(), &mut found);
                }
                (!found.is_empty()).then(|| (name.to_owned(), found))
            })
            .collect();
        *lock(&self.0) = all;
    }

    fn of(&self, tool: &str) -> Vec<ParamHeader> {
        lock(&self.0).get(tool).cloned().unwrap_or_default()
    }
}

/// The `x-mcp-header` annotations of `schema` reachable through `properties` keys only (the only place the
/// revision lets them be), on a string, integer or boolean parameter, named by an HTTP token.
fn annotated(schema: &Value, path: &mut Vec<String>, found: &mut Vec<ParamHeader>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        path.push(key.clone());
        let primitive = matches!(
            property.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        );
        if let Some(name) = property.get("x-mcp-header").and_then(Value::as_str) {
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            let unique = !found.iter().any(|f| f.name.eq_ignore_ascii_case(name));
            if token && primitive && unique {
                found.push(ParamHeader {
                    name: name.to_owned(),
                    path: path.clone(),
                });
            }
        }
        annotated(property, path, found);
        path.pop();
    }
}

/// A `tools/call`'s `Mcp-Param-*` headers against its arguments, for the parameters the tool's schema mirrors
/// into headers: a value in the body needs its header, with the same value (decoded if base64); a header needs
/// its value in the body.
pub(crate) fn params_match(
    headers: &HeaderMap,
    method: &str,
    message: &Value,
    known: &ParamHeaders,
) -> Result<(), String> {
    if method != "tools/call" {
        return Ok(());
    }
    let Some(tool) = message.pointer("/params/name").and_then(Value::as_str) else {
        return Ok(());
    };
    let arguments = message.pointer("/params/arguments");
    for param in known.of(tool) {
        let header = format!("Mcp-Param-{}", param.name);
        let mut values = headers.get_all(header.to_ascii_lowercase().as_str()).iter();
        let sent = match (values.next(), values.next()) {
            (None, _) => None,
            (Some(v), None) => Some(
                v.to_str()
                    .map_err(|_| format!("Header mismatch: {header} has invalid characters"))
                    .and_then(|t| decode_header(&header, t.trim()))?,
            ),
            (Some(_), Some(_)) => {
                return Err(format!("Header mismatch: more than one {header} header"))
            }
        };
        let value = param
            .path
            .iter()
            .try_fold(arguments, |v, key| v.map(|v| v.get(key)))
            .flatten()
            .filter(|v| !v.is_null());
        let body = value.map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        match (sent, body) {
            (None, None) => {}
            (Some(h), Some(b)) if h == b => {}
            (None, Some(_)) => {
                return Err(format!(
                    "Header mismatch: the {header} header is missing (the argument {} is in the body)",
                    param.path.join(".")
                ))
            }
            (Some(h), None) => {
                return Err(format!(
                    "Header mismatch: {header} header value '{h}' but the argument {} is not in the body",
                    param.path.join(".")
                ))
            }
            (Some(h), Some(b)) => {
                return Err(format!(
                    "Header mismatch: {header} header value '{h}' does not match body value '{b}'"
                ))
            }
        }
    }
    Ok(())
}
