//! The ABP manifest: its typed shape, and the checks a fetched manifest must pass.
//!
//! Required (else the app is not supported, with a reason naming the field): `abp` (a `major.minor` version
//! whose major this SDK speaks, or a newer one, which proceeds with a warning), `app.id`, `app.name`,
//! `app.version` (non-empty strings), and `capabilities` (an array of at most 100 objects, each with a
//! non-empty string `name`). Optional fields of the wrong type are left out with a warning; unknown fields
//! are left out silently. Nothing in a manifest is followed, fetched or run.
//!
//! The JSON is parsed by the payload type's own parser ([`ParseJson`]: the browser's `JSON.parse`, serde_json
//! natively) and read through [`Payload`]; the checked manifest goes back out through [`Wire`]. So the wasm
//! carries no JSON parser or serialiser of its own (docs/DESIGN.md, section 8, says why the browser build does
//! not use serde-wasm-bindgen; BENCHMARKS.md has the size figures).

use super::url::{excerpt, excerpt_n};
use super::MAX_CAPABILITIES;
use crate::core::capability::PROTOCOL_VERSION;
use crate::core::payload::Wire;
use crate::core::payload::{Kind, Payload};
use crate::core::text::{push_u64, text};

/// A payload type that can read JSON text: the browser's `JSON.parse` for `JsValue`, serde_json for
/// `serde_json::Value`.
pub trait ParseJson: Wire {
    /// Parses JSON text given as bytes (meant to be UTF-8; a leading BOM is already removed, and arrays and
    /// objects nest at most [`MAX_DEPTH`] deep). `Err` says what is wrong, in words that follow
    /// "the manifest is not valid JSON: ". Must not panic on any input.
    fn parse_json(bytes: &[u8]) -> Result<Self, String>;
}

/// `{ abp, app, capabilities }`, as served at the URL of a page's `<link rel="abp-manifest">`. `P` is the
/// payload type the manifest was parsed into; schemas and `support` stay payload values.
#[derive(Clone, Debug, PartialEq)]
pub struct AbpManifest<P> {
    pub abp: String,
    pub app: ManifestApp<P>,
    pub capabilities: Vec<ManifestCapability<P>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ManifestApp<P> {
    pub id: String,
    pub name: String,
    pub version: String,
    pub description: Option<String>,
    pub homepage: Option<String>,
    /// A URL (the ABP docs suggest a 192×192 PNG). Not fetched by discovery.
    pub icon: Option<String>,
    /// A string (URL or address) or an object of strings.
    pub support: Option<P>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ManifestCapability<P> {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Option<P>,
    pub output_schema: Option<P>,
    pub experimental: Option<bool>,
    pub deprecated: Option<bool>,
}

impl<P: Wire> AbpManifest<P> {
    /// The manifest as a payload object: the known fields only, camelCase, absent ones left out (what
    /// `discover()` resolves to and `abp-peer discover` prints).
    pub fn into_wire(self) -> P {
        let app = self.app;
        let app = P::object_of(&mut [
            ("id", Some(P::string(&app.id))),
            ("name", Some(P::string(&app.name))),
            ("version", Some(P::string(&app.version))),
            ("description", app.description.as_deref().map(P::string)),
            ("homepage", app.homepage.as_deref().map(P::string)),
            ("icon", app.icon.as_deref().map(P::string)),
            ("support", app.support),
        ]);
        let capabilities = self
            .capabilities
            .into_iter()
            .map(|c| {
                P::object_of(&mut [
                    ("name", Some(P::string(&c.name))),
                    ("description", c.description.as_deref().map(P::string)),
                    ("inputSchema", c.input_schema),
                    ("outputSchema", c.output_schema),
                    ("experimental", c.experimental.map(P::boolean)),
                    ("deprecated", c.deprecated.map(P::boolean)),
                ])
            })
            .collect();
        P::object_of(&mut [
            ("abp", Some(P::string(&self.abp))),
            ("app", Some(app)),
            ("capabilities", Some(P::array(capabilities))),
        ])
    }
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

/// A field that is present and not `null`.
fn present<P: Payload>(obj: &P, key: &str) -> Option<P> {
    obj.get(key).filter(|v| v.kind() != Kind::Null)
}

/// A required non-empty string.
fn required_string<P: Payload>(obj: &P, key: &str, path: &str) -> Result<String, String> {
    let v = present(obj, key).ok_or_else(|| field_missing(path))?;
    v.as_string()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| field_wrong(path, "a non-empty string"))
}

/// An optional value that `keep` accepts; anything else is dropped with a warning.
fn optional<P: Payload, T>(
    obj: &P,
    key: &str,
    path: &str,
    what: &str,
    warnings: &mut Vec<String>,
    keep: impl FnOnce(P) -> Option<T>,
) -> Option<T> {
    let kept = keep(present(obj, key)?);
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

fn string<P: Payload>(v: P) -> Option<String> {
    v.as_string()
}

fn boolean<P: Payload>(v: P) -> Option<bool> {
    v.as_bool()
}

fn schema<P: Payload>(v: P) -> Option<P> {
    matches!(v.kind(), Kind::Object | Kind::Bool).then_some(v)
}

fn support<P: Payload>(v: P) -> Option<P> {
    let ok = match v.kind() {
        Kind::String => true,
        Kind::Object => v
            .keys()
            .iter()
            .all(|k| v.get(k).is_some_and(|x| x.kind() == Kind::String)),
        _ => false,
    };
    ok.then_some(v)
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

/// The most nested arrays and objects a manifest may have (serde_json's own recursion limit; checked before
/// any parser runs, so the browser's `JSON.parse` gets the same limit and the same reason).
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
pub fn check_manifest<P: ParseJson>(bytes: &[u8]) -> Result<(AbpManifest<P>, Vec<String>), String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // Before parsing: neither serde_json nor a browser's JSON.parse may recurse 100,000 levels deep.
    if nesting_depth(bytes) > MAX_DEPTH {
        return Err(text(&[
            NOT_JSON,
            "arrays and objects nest deeper than 128 levels",
        ]));
    }
    let value = P::parse_json(bytes).map_err(|e| text(&[NOT_JSON, &excerpt_n(&e, 200)]))?;
    check_manifest_value(&value)
}

/// The checks of [`check_manifest`] on a parsed manifest.
pub fn check_manifest_value<P: Payload>(root: &P) -> Result<(AbpManifest<P>, Vec<String>), String> {
    if root.kind() != Kind::Object {
        return Err("the manifest is not a JSON object".to_owned());
    }
    let mut warnings = Vec::new();
    let abp = match present(root, "abp") {
        None => return Err(field_missing("abp")),
        Some(v) => v
            .as_string()
            .ok_or_else(|| field_wrong("abp", "a version string like \"0.1\""))?,
    };
    check_version(&abp, &mut warnings)?;
    let app = match present(root, "app") {
        None => return Err(field_missing("app")),
        Some(o) if o.kind() == Kind::Object => o,
        Some(_) => return Err(field_wrong("app", "an object")),
    };
    let app = ManifestApp {
        id: required_string(&app, "id", "app.id")?,
        name: required_string(&app, "name", "app.name")?,
        version: required_string(&app, "version", "app.version")?,
        description: optional(
            &app,
            "description",
            "app.description",
            "a string",
            &mut warnings,
            string,
        ),
        homepage: optional(
            &app,
            "homepage",
            "app.homepage",
            "a string",
            &mut warnings,
            string,
        ),
        icon: optional(&app, "icon", "app.icon", "a string", &mut warnings, string),
        support: optional(
            &app,
            "support",
            "app.support",
            "a string or an object of strings",
            &mut warnings,
            support,
        ),
    };
    let list = match present(root, "capabilities") {
        None => return Err(field_missing("capabilities")),
        Some(a) if a.kind() == Kind::Array => a,
        Some(_) => return Err(field_wrong("capabilities", "an array")),
    };
    let count = list.array_len().unwrap_or(0);
    if count > MAX_CAPABILITIES {
        let mut s = String::from("the manifest lists ");
        push_u64(&mut s, count as u64);
        s.push_str(" capabilities; at most 100 are allowed");
        return Err(s);
    }
    let mut capabilities: Vec<ManifestCapability<P>> = Vec::with_capacity(count);
    for i in 0..count {
        let Some(c) = list.index(i).filter(|c| c.kind() == Kind::Object) else {
            return Err(field_wrong(&index_path(i, ""), "an object"));
        };
        check_capability(&c, i, &mut capabilities, &mut warnings)?;
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

/// `abp`'s version: the major this SDK speaks, or a newer one (with a warning).
fn check_version(abp: &str, warnings: &mut Vec<String>) -> Result<(), String> {
    match compare_versions(PROTOCOL_VERSION, abp) {
        VersionCheck::Compatible => {}
        VersionCheck::NewerMajor => warnings.push(text(&[
            "the manifest speaks ABP ",
            &excerpt(abp),
            ", a newer major version than this SDK's ",
            PROTOCOL_VERSION,
            "; proceeding, but initialize decides whether the app accepts this agent",
        ])),
        VersionCheck::OlderMajor => {
            return Err(text(&[
                "the manifest speaks ABP ",
                &excerpt(abp),
                ", an older major version than this SDK's ",
                PROTOCOL_VERSION,
            ]))
        }
        VersionCheck::Invalid => {
            return Err(text(&[
                "manifest field abp must be a version like \"0.1\", not \"",
                &excerpt(abp),
                "\"",
            ]))
        }
    }
    Ok(())
}

/// The capability at index `i`, added to `capabilities`: a required `name` (one listed before is a warning)
/// and the optional fields, each left out with a warning when of the wrong type.
fn check_capability<P: Payload>(
    c: &P,
    i: usize,
    capabilities: &mut Vec<ManifestCapability<P>>,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let name = required_string(c, "name", &index_path(i, ".name"))?;
    if capabilities.iter().any(|k| k.name == name) {
        warnings.push(text(&[
            "the manifest lists capability ",
            &excerpt(&name),
            " more than once",
        ]));
    }
    let path = |key: &str| index_path(i, &text(&[".", key]));
    let w = warnings;
    let description = optional(
        c,
        "description",
        &path("description"),
        "a string",
        w,
        string,
    );
    let input_schema = optional(
        c,
        "inputSchema",
        &path("inputSchema"),
        "a JSON Schema object",
        w,
        schema,
    );
    let output_schema = optional(
        c,
        "outputSchema",
        &path("outputSchema"),
        "a JSON Schema object",
        w,
        schema,
    );
    let experimental = optional(
        c,
        "experimental",
        &path("experimental"),
        "a boolean",
        w,
        boolean,
    );
    let deprecated = optional(
        c,
        "deprecated",
        &path("deprecated"),
        "a boolean",
        w,
        boolean,
    );
    capabilities.push(ManifestCapability {
        name,
        description,
        input_schema,
        output_schema,
        experimental,
        deprecated,
    });
    Ok(())
}
