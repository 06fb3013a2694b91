//! The ABP manifest: its typed shape, and the checks a fetched manifest must pass.
//!
//! Required (else the app is not supported, with a reason naming the field): `abp` (a `major.minor` version
//! whose major this SDK speaks, or a newer one, which proceeds with a warning), `app.id`, `app.name`,
//! `app.version` (non-empty strings), and `capabilities` (an array of at most 100 objects, each with a
//! non-empty string `name`). Optional fields of the wrong type are left out with a warning; unknown fields
//! are left out silently. Nothing in a manifest is followed, fetched or run.

use serde::Serialize;
use serde_json::{Map, Value};

use super::url::excerpt;
use super::MAX_CAPABILITIES;
use crate::core::message::{push_u64, text, PROTOCOL_VERSION};

/// `{ abp, app, capabilities }`, as served at the URL of a page's `<link rel="abp-manifest">`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbpManifest {
    pub abp: String,
    pub app: ManifestApp,
    pub capabilities: Vec<ManifestCapability>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ManifestApp {
    pub id: String,
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// A URL (the ABP docs suggest a 192×192 PNG). Not fetched by discovery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// A string (URL or address) or an object of strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestCapability {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<bool>,
}

/// How a manifest's `abp` version relates to the version this SDK speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionCheck {
    /// Same major version: proceed.
    Compatible,
    /// A newer major version: proceed with a warning.
    NewerMajor,
    /// An older major version: not supported.
    OlderMajor,
    /// Not a `major.minor` version.
    Invalid,
}

/// `major.minor` (a third `.patch` part is tolerated) with decimal parts of at most 9 digits.
fn parse_version(v: &str) -> Option<(u32, u32)> {
    let mut parts = v.trim().split('.');
    let mut num = || {
        parts
            .next()
            .filter(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok())
    };
    let (major, minor) = (num()?, num()?);
    let patch_ok = match parts.next() {
        None => true,
        Some(p) => !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()),
    };
    (patch_ok && parts.next().is_none()).then_some((major, minor))
}

/// Compares a manifest's version with ours (`ours` is normally [`PROTOCOL_VERSION`]).
pub fn compare_versions(ours: &str, theirs: &str) -> VersionCheck {
    match (parse_version(ours), parse_version(theirs)) {
        (Some((a, _)), Some((b, _))) if a == b => VersionCheck::Compatible,
        (Some((a, _)), Some((b, _))) if b > a => VersionCheck::NewerMajor,
        (Some(_), Some(_)) => VersionCheck::OlderMajor,
        _ => VersionCheck::Invalid,
    }
}

fn field_missing(path: &str) -> String {
    text(&["manifest field ", path, " is missing"])
}

fn field_wrong(path: &str, what: &str) -> String {
    text(&["manifest field ", path, " must be ", what])
}

/// A required non-empty string.
fn required_string(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(field_missing(path)),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(_) => Err(field_wrong(path, "a non-empty string")),
    }
}

/// An optional value that `keep` accepts; anything else is dropped with a warning.
fn optional<T>(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
    what: &str,
    warnings: &mut Vec<String>,
    keep: impl FnOnce(&Value) -> Option<T>,
) -> Option<T> {
    let v = obj.get(key)?;
    if v.is_null() {
        return None;
    }
    let kept = keep(v);
    if kept.is_none() {
        warnings.push(text(&[
            "manifest field ",
            path,
            " is not ",
            what,
            "; left out",
        ]));
    }
    kept
}

fn string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn schema(v: &Value) -> Option<Value> {
    (v.is_object() || v.is_boolean()).then(|| v.clone())
}

fn support(v: &Value) -> Option<Value> {
    let ok = match v {
        Value::String(_) => true,
        Value::Object(o) => o.values().all(Value::is_string),
        _ => false,
    };
    ok.then(|| v.clone())
}

fn index_path(i: usize, field: &str) -> String {
    let mut s = String::from("capabilities[");
    push_u64(&mut s, i as u64);
    s.push(']');
    s.push_str(field);
    s
}

/// The start of every reason the parser gives.
pub const NOT_JSON: &str = "the manifest is not valid JSON: ";

/// The most nested arrays and objects a manifest may have (serde_json's own recursion limit).
pub const MAX_DEPTH: usize = 128;

/// How deeply arrays and objects nest in JSON text (brackets inside strings do not count).
pub fn nesting_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Parses and checks a manifest's bytes. `Ok` carries the typed manifest and the warnings (a newer major
/// version, optional fields left out); `Err` the reason it is not usable, naming the field.
pub fn check_manifest(bytes: &[u8]) -> Result<(AbpManifest, Vec<String>), String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if nesting_depth(bytes) > MAX_DEPTH {
        return Err(text(&[
            NOT_JSON,
            "arrays and objects nest deeper than 128 levels",
        ]));
    }
    // The error's position, not its `Display`: that would bring the formatting machinery into the wasm.
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        let mut s = String::from(NOT_JSON);
        s.push_str(match e.classify() {
            serde_json::error::Category::Eof => "it ends too early",
            serde_json::error::Category::Syntax => "syntax error",
            _ => "unreadable",
        });
        s.push_str(" at line ");
        push_u64(&mut s, e.line() as u64);
        s.push_str(", column ");
        push_u64(&mut s, e.column() as u64);
        s
    })?;
    let Value::Object(root) = value else {
        return Err("the manifest is not a JSON object".to_owned());
    };
    let mut warnings = Vec::new();

    let abp = match root.get("abp") {
        None | Some(Value::Null) => return Err(field_missing("abp")),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(field_wrong("abp", "a version string like \"0.1\"")),
    };
    match compare_versions(PROTOCOL_VERSION, &abp) {
        VersionCheck::Compatible => {}
        VersionCheck::NewerMajor => warnings.push(text(&[
            "the manifest speaks ABP ",
            &excerpt(&abp),
            ", a newer major version than this SDK's ",
            PROTOCOL_VERSION,
            "; proceeding, but initialize decides whether the app accepts this agent",
        ])),
        VersionCheck::OlderMajor => {
            return Err(text(&[
                "the manifest speaks ABP ",
                &excerpt(&abp),
                ", an older major version than this SDK's ",
                PROTOCOL_VERSION,
            ]))
        }
        VersionCheck::Invalid => {
            return Err(text(&[
                "manifest field abp must be a version like \"0.1\", not \"",
                &excerpt(&abp),
                "\"",
            ]))
        }
    }

    let app = match root.get("app") {
        None | Some(Value::Null) => return Err(field_missing("app")),
        Some(Value::Object(o)) => o,
        Some(_) => return Err(field_wrong("app", "an object")),
    };
    let app = ManifestApp {
        id: required_string(app, "id", "app.id")?,
        name: required_string(app, "name", "app.name")?,
        version: required_string(app, "version", "app.version")?,
        description: optional(
            app,
            "description",
            "app.description",
            "a string",
            &mut warnings,
            string,
        ),
        homepage: optional(
            app,
            "homepage",
            "app.homepage",
            "a string",
            &mut warnings,
            string,
        ),
        icon: optional(app, "icon", "app.icon", "a string", &mut warnings, string),
        support: optional(
            app,
            "support",
            "app.support",
            "a string or an object of strings",
            &mut warnings,
            support,
        ),
    };

    let list = match root.get("capabilities") {
        None | Some(Value::Null) => return Err(field_missing("capabilities")),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(field_wrong("capabilities", "an array")),
    };
    if list.len() > MAX_CAPABILITIES {
        let mut s = String::from("the manifest lists ");
        push_u64(&mut s, list.len() as u64);
        s.push_str(" capabilities; at most 100 are allowed");
        return Err(s);
    }
    let mut capabilities: Vec<ManifestCapability> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let Value::Object(c) = entry else {
            return Err(field_wrong(&index_path(i, ""), "an object"));
        };
        let name = required_string(c, "name", &index_path(i, ".name"))?;
        if capabilities.iter().any(|k| k.name == name) {
            warnings.push(text(&[
                "the manifest lists capability ",
                &excerpt(&name),
                " more than once",
            ]));
        }
        let mut opt = |key: &str, what: &str, keep: fn(&Value) -> Option<Value>| {
            optional(
                c,
                key,
                &index_path(i, &text(&[".", key])),
                what,
                &mut warnings,
                keep,
            )
        };
        let description = opt("description", "a string", |v| {
            v.is_string().then(|| v.clone())
        });
        let input_schema = opt("inputSchema", "a JSON Schema object", schema);
        let output_schema = opt("outputSchema", "a JSON Schema object", schema);
        let experimental = opt("experimental", "a boolean", |v| {
            v.is_boolean().then(|| v.clone())
        });
        let deprecated = opt("deprecated", "a boolean", |v| {
            v.is_boolean().then(|| v.clone())
        });
        capabilities.push(ManifestCapability {
            name,
            description: description.as_ref().and_then(string),
            input_schema,
            output_schema,
            experimental: experimental.and_then(|v| v.as_bool()),
            deprecated: deprecated.and_then(|v| v.as_bool()),
        });
    }
    Ok((
        AbpManifest {
            abp,
            app,
            capabilities,
        },
        warnings,
    ))
}
