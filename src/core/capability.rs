//! Capability descriptors as the ABP reference defines them, and what both sides derive from them:
//! defaults and type checks on registration, the gate a call passes before its handler runs, `SupportInfo`,
//! capability-change notifications (sent and applied), and the app manifest.
//!
//! Descriptors stay payload values (`JsValue` in the browser), so whatever else an app puts in one reaches the
//! agent unchanged; these functions read and write only the fields the reference names.

use super::error::{AbpError, ErrorCode};
use super::map::StrMap;
use super::payload::{Kind, Payload, Wire};
use super::schema::validate;
use super::text::text;

/// The ABP version this SDK speaks: in `initialize`, its answer, and manifests.
pub const PROTOCOL_VERSION: &str = "0.1";

/// The requirement types of the ABP reference.
pub const REQUIREMENT_TYPES: [&str; 6] = [
    "permission",
    "context",
    "gesture",
    "browser",
    "hardware",
    "state",
];

/// Descriptor fields the reference types, and the kind each must have.
const DESCRIPTOR_FIELDS: [(&str, Kind); 10] = [
    ("description", Kind::String),
    ("inputSchema", Kind::Object),
    ("outputSchema", Kind::Object),
    ("available", Kind::Bool),
    ("requirements", Kind::Array),
    ("features", Kind::Object),
    ("experimental", Kind::Bool),
    ("deprecated", Kind::Bool),
    ("deprecationMessage", Kind::String),
    ("alternatives", Kind::Array),
];

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::String => "a string",
        Kind::Object => "an object",
        Kind::Bool => "a boolean",
        Kind::Array => "an array",
        _ => "a value",
    }
}

/// Checks the fields of a descriptor (or of a patch to one) that are present. `Err` names the first bad
/// field, as `descriptor.<field> must be …`.
pub fn check_descriptor_fields<P: Payload>(d: &P) -> Result<(), String> {
    if d.kind() != Kind::Object {
        return Err("descriptor must be an object".to_owned());
    }
    for (field, kind) in DESCRIPTOR_FIELDS {
        if let Some(v) = d.get(field) {
            if v.kind() != kind {
                return Err(text(&["descriptor.", field, " must be ", kind_word(kind)]));
            }
        }
    }
    if let Some(reqs) = d.get("requirements") {
        for i in 0..reqs.array_len().unwrap_or(0) {
            let Some(r) = reqs.index(i) else { continue };
            check_requirement(&r, i)?;
        }
    }
    if let Some(t) = d.get("task") {
        // How an MCP host that serves tasks (`abp-peer mcp`) may run it: as a task when the client can take one
        // ('optional'), or only as one ('required').
        if !matches!(t.as_string().as_deref(), Some("optional" | "required")) {
            return Err("descriptor.task must be 'optional' or 'required'".to_owned());
        }
    }
    if let Some(alts) = d.get("alternatives") {
        for i in 0..alts.array_len().unwrap_or(0) {
            if alts.index(i).map(|a| a.kind()) != Some(Kind::String) {
                return Err(
                    "descriptor.alternatives must be an array of capability names".to_owned(),
                );
            }
        }
    }
    Ok(())
}

fn check_requirement<P: Payload>(r: &P, i: usize) -> Result<(), String> {
    let mut at = String::from("descriptor.requirements[");
    super::text::push_u64(&mut at, i as u64);
    at.push(']');
    if r.kind() != Kind::Object {
        return Err(text(&[
            &at,
            " must be an object { type, description, met }",
        ]));
    }
    let ty = r.get_string("type");
    if !ty
        .as_deref()
        .is_some_and(|t| REQUIREMENT_TYPES.contains(&t))
    {
        return Err(text(&[
            &at,
            ".type must be one of permission, context, gesture, browser, hardware, state",
        ]));
    }
    if r.get("description")
        .is_some_and(|v| v.kind() != Kind::String)
    {
        return Err(text(&[&at, ".description must be a string"]));
    }
    if r.get("met").map(|v| v.kind()) != Some(Kind::Bool) {
        return Err(text(&[&at, ".met must be a boolean"]));
    }
    Ok(())
}

/// The descriptor an app registers: the given one (checked; extra fields kept) with `name` set and the
/// reference's defaults filled in (`available: true`, `requirements: []`, `features: {}`).
pub fn descriptor<P: Wire>(name: &str, given: Option<&P>) -> Result<P, String> {
    let mut d = match given {
        Some(g) if !matches!(g.kind(), Kind::Undefined | Kind::Null) => {
            check_descriptor_fields(g)?;
            g.shallow_copy()
        }
        _ => P::object(),
    };
    d.set("name", P::string(name));
    fill_defaults(&mut d);
    Ok(d)
}

fn fill_defaults<P: Wire>(d: &mut P) {
    if d.get("available").is_none() {
        d.set("available", P::boolean(true));
    }
    if d.get("requirements").is_none() {
        d.set("requirements", P::array(Vec::new()));
    }
    if d.get("features").is_none() {
        d.set("features", P::object());
    }
}

/// `descriptor` with the fields of `patch` laid over it (the name stays).
pub fn patched<P: Wire>(descriptor: &P, patch: &P) -> Result<P, String> {
    check_descriptor_fields(patch)?;
    let mut d = descriptor.shallow_copy();
    for key in patch.keys() {
        if key == "name" {
            continue;
        }
        if let Some(v) = patch.get(&key) {
            d.set(&key, v);
        }
    }
    Ok(d)
}

fn unmet_requirements<P: Wire>(d: &P) -> Vec<P> {
    let Some(reqs) = d.get("requirements") else {
        return Vec::new();
    };
    (0..reqs.array_len().unwrap_or(0))
        .filter_map(|i| reqs.index(i))
        .filter(|r| r.get("met").and_then(|m| m.as_bool()) == Some(false))
        .collect()
}

fn is_available<P: Payload>(d: &P) -> bool {
    d.get("available").and_then(|a| a.as_bool()) != Some(false)
}

/// Whether a call to a registered capability may run now: CAPABILITY_UNAVAILABLE when its descriptor says
/// `available: false`, REQUIREMENT_NOT_MET (the unmet requirements in `details.requirements`) when a
/// requirement is not met.
pub fn gate<P: Wire>(name: &str, d: &P) -> Result<(), AbpError<P>> {
    if !is_available(d) {
        let mut e = AbpError::new(
            ErrorCode::CapabilityUnavailable,
            text(&["Capability '", name, "' is not available now"]),
        );
        e.alternatives = d.get("alternatives");
        return Err(e);
    }
    let unmet = unmet_requirements(d);
    if !unmet.is_empty() {
        let mut details = P::object();
        details.set("requirements", P::array(unmet));
        return Err(AbpError::new(
            ErrorCode::RequirementNotMet,
            text(&["Capability '", name, "' has unmet requirements"]),
        )
        .with_details(details));
    }
    Ok(())
}

/// `supports(name)`: `{ supported, available, reason?, requirements?, features?, alternatives? }` from the
/// descriptor (`None`: the app does not offer it).
pub fn support_info<P: Wire>(d: Option<&P>) -> P {
    let mut s = P::object();
    let Some(d) = d else {
        s.set("supported", P::boolean(false));
        s.set("available", P::boolean(false));
        s.set(
            "reason",
            P::string("The app does not offer this capability"),
        );
        return s;
    };
    let unmet = unmet_requirements(d);
    let available = is_available(d) && unmet.is_empty();
    s.set("supported", P::boolean(true));
    s.set("available", P::boolean(available));
    if !is_available(d) {
        s.set("reason", P::string("The capability is not available now"));
    } else if !unmet.is_empty() {
        s.set("reason", P::string("The capability has unmet requirements"));
    }
    for key in ["requirements", "features", "alternatives"] {
        if let Some(v) = d.get(key) {
            s.set(key, v);
        }
    }
    s
}

/// What changed in an app's capabilities, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

fn names_of<P: Wire>(names: &[String]) -> P {
    P::array(names.iter().map(|n| P::string(n)).collect())
}

/// The `data` of `notifications/capabilities/list_changed`: `{ added, removed, changed, capabilities }`.
pub fn changes_data<P: Wire>(changes: &Changes, capabilities: P) -> P {
    let mut d = P::object();
    d.set("added", names_of(&changes.added));
    d.set("removed", names_of(&changes.removed));
    d.set("changed", names_of(&changes.changed));
    d.set("capabilities", capabilities);
    d
}

/// Names in a change list: strings, or descriptors' `name`s. Anything else is skipped.
fn read_names<P: Payload>(v: Option<P>) -> Vec<String> {
    let Some(v) = v else { return Vec::new() };
    (0..v.array_len().unwrap_or(0))
        .filter_map(|i| v.index(i))
        .filter_map(|n| n.as_string().or_else(|| n.get_string("name")))
        .collect()
}

fn name_of<P: Payload>(d: &P) -> Option<String> {
    d.get_string("name")
}

fn descriptors_of<P: Payload>(list: &P) -> Vec<P> {
    (0..list.array_len().unwrap_or(0))
        .filter_map(|i| list.index(i))
        .filter(|d| d.kind() == Kind::Object && name_of(d).is_some())
        .collect()
}

/// The agent's side of a capability change: applies `data` (any shape an app may send) to `current` (the
/// list it knows) and returns the new list with the change as `{ added, removed, changed, capabilities }`.
///
/// A full `capabilities` list (ours, or an array sent as the data itself) replaces the known one. The ABP
/// docs' shape (`{ added, removed, changed }` without a list) is applied: `removed` go, `changed` keep what
/// is known, `added` become name-only entries until the agent asks again. A missing field never empties
/// the list.
pub fn apply_changes<P: Wire>(current: &P, data: &P) -> (P, P) {
    let old = descriptors_of(current);
    let full = match data.kind() {
        Kind::Array => Some(data.clone()),
        Kind::Object => data.get("capabilities").filter(|c| c.kind() == Kind::Array),
        _ => None,
    };
    let given = |key: &str| {
        if data.kind() == Kind::Object {
            data.get(key).filter(|v| v.kind() == Kind::Array)
        } else {
            None
        }
    };
    let (mut added, mut removed) = (read_names(given("added")), read_names(given("removed")));
    let changed = read_names(given("changed"));
    let list: Vec<P> = match full {
        Some(full) => {
            let new = descriptors_of(&full);
            let had = |n: &str, l: &[P]| l.iter().any(|d| name_of(d).as_deref() == Some(n));
            if given("added").is_none() {
                added = new
                    .iter()
                    .filter_map(name_of)
                    .filter(|n| !had(n, &old))
                    .collect();
            }
            if given("removed").is_none() {
                removed = old
                    .iter()
                    .filter_map(name_of)
                    .filter(|n| !had(n, &new))
                    .collect();
            }
            new
        }
        None => {
            let mut list: Vec<P> = old
                .into_iter()
                .filter(|d| !name_of(d).is_some_and(|n| removed.contains(&n)))
                .collect();
            for name in &added {
                if !list.iter().any(|d| name_of(d).as_deref() == Some(name)) {
                    let mut d = P::object();
                    d.set("name", P::string(name));
                    list.push(d);
                }
            }
            list
        }
    };
    let list = P::array(list);
    let changes = Changes {
        added,
        removed,
        changed,
    };
    let data = changes_data(&changes, list.clone());
    (list, data)
}

/// Manifest fields of `app` besides id, name and version, and the kinds they may have.
const MANIFEST_APP_EXTRA: [(&str, Kind); 4] = [
    ("description", Kind::String),
    ("homepage", Kind::String),
    ("icon", Kind::String),
    ("support", Kind::Other),
];

/// Descriptor fields a manifest lists.
const MANIFEST_CAPABILITY_FIELDS: [&str; 5] = [
    "description",
    "inputSchema",
    "outputSchema",
    "experimental",
    "deprecated",
];

/// The ABP manifest (`/abp.json`): `{ abp, app:{ id, name, version, description?, homepage?, icon?,
/// support? }, capabilities:[{ name, description?, inputSchema?, outputSchema?, experimental?,
/// deprecated? }] }`. `extra` adds `app` fields (`description`, `homepage`, `icon`, `support`: a string or
/// an object); a field of the wrong type is an `Err` naming it.
pub fn manifest<'a, P: Wire + 'a>(
    info: &P,
    capabilities: impl Iterator<Item = &'a P>,
    extra: Option<&P>,
) -> Result<P, String> {
    let mut app = P::object();
    for key in ["id", "name", "version", "description"] {
        if let Some(v) = info.get(key) {
            app.set(key, v);
        }
    }
    if let Some(extra) = extra.filter(|e| !matches!(e.kind(), Kind::Undefined | Kind::Null)) {
        if extra.kind() != Kind::Object {
            return Err("manifest(extra): extra must be an object".to_owned());
        }
        for (key, kind) in MANIFEST_APP_EXTRA {
            let Some(v) = extra.get(key) else { continue };
            let ok = match kind {
                Kind::Other => matches!(v.kind(), Kind::String | Kind::Object),
                k => v.kind() == k,
            };
            if !ok {
                let want = if kind == Kind::Other {
                    "a string or an object"
                } else {
                    kind_word(kind)
                };
                return Err(text(&["manifest(extra): ", key, " must be ", want]));
            }
            app.set(key, v);
        }
    }
    let caps = capabilities
        .map(|d| {
            let mut c = P::object();
            if let Some(n) = d.get("name") {
                c.set("name", n);
            }
            for key in MANIFEST_CAPABILITY_FIELDS {
                if let Some(v) = d.get(key) {
                    c.set(key, v);
                }
            }
            c
        })
        .collect();
    let mut m = P::object();
    m.set("abp", P::string(PROTOCOL_VERSION));
    m.set("app", app);
    m.set("capabilities", P::array(caps));
    Ok(m)
}

/// Registered capabilities: name → descriptor, with the reference's defaults filled in.
pub struct Registry<P> {
    order: Vec<String>,
    caps: StrMap<Entry<P>>,
}

/// A registered capability: its descriptor, and what a call reads of it, taken when it is registered or
/// updated (so a call reads nothing from the descriptor object: in the browser each read is a step into JS,
/// and there were ten per call).
struct Entry<P> {
    descriptor: P,
    /// Calls are refused (not available, or a requirement not met); `capability::gate` says why when one is.
    refused: bool,
    input_schema: Option<P>,
    timeout_ms: Option<f64>,
}

impl<P: Wire> Entry<P> {
    fn new(name: &str, descriptor: P) -> Entry<P> {
        Entry {
            refused: gate(name, &descriptor).is_err(),
            input_schema: descriptor.get("inputSchema"),
            timeout_ms: descriptor
                .get_f64("timeoutMs")
                .filter(|t| t.is_finite() && *t >= 0.0),
            descriptor,
        }
    }
}

impl<P: Wire> Default for Registry<P> {
    fn default() -> Self {
        Registry {
            order: Vec::new(),
            caps: StrMap::new(),
        }
    }
}

impl<P: Wire> Registry<P> {
    /// Adds or replaces a capability. `Err` names a descriptor field of the wrong type. `Ok(true)` if the name
    /// is new, `Ok(false)` if it replaced one.
    pub fn register(&mut self, name: &str, descriptor: Option<P>) -> Result<bool, String> {
        let d = self::descriptor(name, descriptor.as_ref())?;
        let added = self
            .caps
            .insert(name.to_owned(), Entry::new(name, d))
            .is_none();
        if added {
            self.order.push(name.to_owned());
        }
        Ok(added)
    }

    pub fn unregister(&mut self, name: &str) -> bool {
        if self.caps.remove(name).is_some() {
            self.order.retain(|n| n != name);
            true
        } else {
            false
        }
    }

    /// Lays `patch` over a registered descriptor (`available`, `requirements`, …). `Err` for an unknown name
    /// or a field of the wrong type.
    pub fn update(&mut self, name: &str, patch: &P) -> Result<(), String> {
        let Some(entry) = self.caps.get(name) else {
            return Err(text(&["No capability named '", name, "' is registered"]));
        };
        let d = patched(&entry.descriptor, patch)?;
        self.caps.insert(name.to_owned(), Entry::new(name, d));
        Ok(())
    }

    pub fn contains(&self, name: &str) -> bool {
        self.caps.contains_key(name)
    }

    pub fn descriptor(&self, name: &str) -> Option<&P> {
        self.caps.get(name).map(|e| &e.descriptor)
    }

    /// The descriptor's `timeoutMs`, if it is a number of milliseconds.
    pub fn timeout_ms(&self, name: &str) -> Option<f64> {
        self.caps.get(name).and_then(|e| e.timeout_ms)
    }

    /// Names and descriptors in registration order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &P)> {
        self.order
            .iter()
            .filter_map(|n| self.caps.get(n).map(|e| (n.as_str(), &e.descriptor)))
    }

    /// The descriptors, in registration order.
    pub fn list(&self) -> P {
        P::array(self.iter().map(|(_, d)| d.clone()).collect())
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// What a call must pass before its handler runs: the capability exists, is available, has its
    /// requirements met, and its params fit the `inputSchema`.
    pub fn check_call(&self, name: &str, params: &P) -> Result<(), AbpError<P>> {
        let Some(entry) = self.caps.get(name) else {
            return Err(AbpError::new(
                ErrorCode::UnknownCapability,
                text(&["Unknown capability '", name, "'"]),
            ));
        };
        if entry.refused {
            gate(name, &entry.descriptor)?;
        }
        match &entry.input_schema {
            Some(schema) => validate(schema, params)
                .map_err(|problem| AbpError::new(ErrorCode::InvalidParams, problem)),
            None => Ok(()),
        }
    }
}
