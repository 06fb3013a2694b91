//! The core is built in layers, each using only the ones below it, so that a room can be read (and changed)
//! knowing only what it stands on: no module of the core reaches up or sideways.

/// Bottom to top; a module may use the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["payload", "text", "map", "timers"],
    &["error"],
    &["schema"],
    &["capability"],
    &["message"],
    &["dialect", "discovery"],
    &["agent", "app"],
    &["connection"],
    &["json"],
];

/// The core's modules and their sources (a directory counts as one module); tests are left out, as they
/// may use anything.
const SOURCES: &[(&str, &str)] = &[
    ("payload", include_str!("../payload.rs")),
    ("text", include_str!("../text.rs")),
    ("map", include_str!("../map.rs")),
    ("timers", include_str!("../timers.rs")),
    ("error", include_str!("../error.rs")),
    ("schema", include_str!("../schema.rs")),
    ("capability", include_str!("../capability.rs")),
    ("message", include_str!("../message.rs")),
    ("dialect", include_str!("../dialect/mod.rs")),
    ("dialect", include_str!("../dialect/abp.rs")),
    ("dialect", include_str!("../dialect/jsonrpc.rs")),
    ("dialect", include_str!("../dialect/mcp.rs")),
    ("dialect", include_str!("../dialect/acp.rs")),
    ("dialect", include_str!("../dialect/tesseron.rs")),
    ("discovery", include_str!("../discovery/mod.rs")),
    ("discovery", include_str!("../discovery/html.rs")),
    ("discovery", include_str!("../discovery/manifest.rs")),
    ("discovery", include_str!("../discovery/url.rs")),
    ("agent", include_str!("../agent.rs")),
    ("app", include_str!("../app.rs")),
    ("connection", include_str!("../connection.rs")),
    ("json", include_str!("../json.rs")),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The core modules a source names in code (`super::x`, `super::super::x`, `crate::core::x`), comments aside.
fn used(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in source.lines() {
        let mut rest = line.split("//").next().unwrap_or("");
        loop {
            let at = match (rest.find("super::"), rest.find("crate::core::")) {
                (Some(a), Some(b)) if b < a => b + "crate::core::".len(),
                (Some(a), _) => a + "super::".len(),
                (None, Some(b)) => b + "crate::core::".len(),
                (None, None) => break,
            };
            rest = &rest[at..];
            while let Some(r) = rest.strip_prefix("super::") {
                rest = r;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let mut seen = Vec::new();
    for (module, source) in SOURCES {
        let own = layer_of(module).expect("every module has a layer");
        for name in used(source) {
            // `super::x` inside a directory is the directory's own module (`dialect::jsonrpc`).
            let Some(layer) = layer_of(&name) else {
                continue;
            };
            assert!(
                name == *module || layer < own,
                "`{module}` uses `{name}`, which is not below it (layers, bottom up: {LAYERS:?})"
            );
            seen.push(name);
        }
    }
    // The check read the sources: the connection stands on both machines, the machines on the dialects.
    for name in ["agent", "app", "dialect", "message", "payload"] {
        assert!(seen.iter().any(|s| s == name), "nothing uses `{name}`?");
    }
}

#[test]
fn the_reader_of_uses_finds_what_a_source_names() {
    let source = "use super::payload::{Kind, Wire};\n// super::agent in a comment\nlet x = crate::core::error::encode_error(e);\nuse super::super::message;";
    assert_eq!(used(source), ["payload", "error", "message"]);
}
