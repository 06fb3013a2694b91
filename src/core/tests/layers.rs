//! The core is built in layers, each using only the ones below it, so that a room can be read (and changed)
//! knowing only what it stands on: no module of the core reaches up or sideways.
//!
//! The same holds for the peer's modules (`peer/src`), checked the other way round: none of them reaches back
//! to itself through the modules it names. Beside these, two checks of the sources of both crates: no function
//! runs over 100 lines, and the MCP gateway's endpoint does no IO.

use std::collections::{BTreeMap, BTreeSet};

/// Bottom to top; a module may use the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    &["trace"],
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

/// The core's modules and their sources, read from the whole of `src/core` (a directory counts as one module,
/// `mod.rs` files as the directory's), so that a new file is checked without being listed; tests are left out,
/// as they may use anything.
fn sources() -> Vec<(String, String, String)> {
    fn walk(
        dir: &std::path::Path,
        module: Option<&str>,
        found: &mut Vec<(String, String, String)>,
    ) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("src/core is readable")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            if name == "tests" {
                continue;
            }
            let own = module.map(str::to_owned).unwrap_or_else(|| name.clone());
            if path.is_dir() {
                walk(&path, Some(&own), found);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !(module.is_none() && name == "mod")
            {
                let source = std::fs::read_to_string(&path).expect("a readable source");
                found.push((own, path.display().to_string(), source));
            }
        }
    }
    let mut found = Vec::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    walk(&root, None, &mut found);
    found
}

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
    let sources = sources();
    for (module, file, source) in &sources {
        let module = module.as_str();
        let own = layer_of(module).unwrap_or_else(|| {
            panic!("{file}: module `{module}` has no layer: place it in LAYERS")
        });
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
    // Files deep in a directory are read too.
    for file in [
        "dialect/mcp/client.rs",
        "dialect/mcp/modern.rs",
        "discovery/url.rs",
    ] {
        assert!(
            sources.iter().any(|(_, f, _)| f.ends_with(file)),
            "{file} was not read"
        );
    }
}

#[test]
fn the_reader_of_uses_finds_what_a_source_names() {
    let source = "use super::payload::{Kind, Wire};\n// super::agent in a comment\nlet x = crate::core::error::encode_error(e);\nuse super::super::message;";
    assert_eq!(used(source), ["payload", "error", "message"]);
}

/// The longest a function may run, its signature and closing brace included: one that needs more is doing
/// several things, each of which wants a name.
const MAX_FUNCTION_LINES: usize = 100;

/// Every function of `src/` and `peer/src/` over [`MAX_FUNCTION_LINES`], as "file name" (its length beside).
/// The code is rustfmt'ed, so a function with a body ends at the first line that is its indent and `}`; a
/// declaration (ending in `;` before any `{`) has no body.
fn too_long() -> Vec<(String, usize)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = super::rust_files(&["src", "peer/src"]);
    let mut long = Vec::new();
    for path in files {
        let source = std::fs::read_to_string(&path).expect("a readable source");
        let lines: Vec<&str> = source.lines().collect();
        let file = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (at, line) in lines.iter().enumerate() {
            let Some(name) = function_name(line) else {
                continue;
            };
            let indent = &line[..line.len() - line.trim_start().len()];
            let opens = lines[at..]
                .iter()
                .map(|l| l.split("//").next().unwrap_or(""))
                .find(|l| l.contains('{') || l.trim_end().ends_with(';'));
            if !opens.is_some_and(|l| l.contains('{')) || line.trim_end().ends_with('}') {
                continue;
            }
            let close = format!("{indent}}}");
            if let Some(end) = lines[at..].iter().position(|l| *l == close) {
                if end + 1 > MAX_FUNCTION_LINES {
                    long.push((format!("{file} {name}"), end + 1));
                }
            }
        }
    }
    long.sort();
    long
}

/// The name of the function a line starts, if it does (`pub(crate) async fn name(` and the like).
fn function_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for word in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(word).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

#[test]
fn no_function_runs_over_100_lines() {
    let long = too_long();
    assert!(
        long.is_empty(),
        "over {MAX_FUNCTION_LINES} lines (split them): {long:?}"
    );
}

#[test]
fn the_function_reader_finds_names_and_skips_what_is_not_a_function() {
    assert_eq!(
        function_name("    pub(crate) async fn serve(x: u8) {"),
        Some("serve")
    );
    assert_eq!(function_name("fn main() {"), Some("main"));
    assert_eq!(function_name("    let f = |x| x; // fn not_one()"), None);
    assert_eq!(function_name("    fn_call(1);"), None);
}

/// The MCP gateway's endpoint (`peer/src/gateway/`) does no IO: no channel, socket, task or hub, and no clock
/// but the one its edges give it (`Clock::system`, which only they call). Its tests are left out.
#[test]
fn the_gateway_endpoint_touches_no_io() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peer/src/gateway");
    let mut read = 0;
    for entry in std::fs::read_dir(&dir).expect("peer/src/gateway").flatten() {
        let path = entry.path();
        let source = std::fs::read_to_string(&path).expect("a readable source");
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        let mut in_system = false;
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            if line.contains("fn system()") {
                in_system = true;
            } else if in_system && line == "    }" {
                in_system = false;
            }
            for word in [
                "tokio",
                "Sender",
                "Receiver",
                "crate::hub",
                "Hub",
                "axum",
                "std::net",
                "std::io",
                "::now()",
                "eprintln!",
            ] {
                let allowed = in_system && word == "::now()"
                    // A refused host is logged, as the process's log is where an operator looks.
                    || word == "eprintln!";
                assert!(
                    allowed || !line.contains(word),
                    "{}:{}: the gateway's endpoint names `{word}`: {line}",
                    path.display(),
                    n + 1
                );
            }
        }
        read += 1;
    }
    assert!(read >= 2, "read {read} files of peer/src/gateway");
}

/// The peer's modules (`peer/src`) and the modules each names in code (`crate::x`): a file `x.rs` or a folder
/// `x/` is the module `x`, every file in the folder counting as `x`, so that a new one is read without being
/// listed. A module naming itself is left out.
fn peer_uses() -> BTreeMap<String, BTreeSet<String>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peer/src");
    let mut uses = BTreeMap::new();
    for path in super::rust_files(&["peer/src"]) {
        let module = path
            .strip_prefix(&root)
            .ok()
            .and_then(|p| p.components().next())
            .and_then(|c| c.as_os_str().to_str())
            .map(|name| name.trim_end_matches(".rs").to_owned())
            .expect("a file under peer/src");
        let source = std::fs::read_to_string(&path).expect("a readable source");
        let named: &mut BTreeSet<String> = uses.entry(module.clone()).or_default();
        named.extend(
            crate_uses(&source)
                .into_iter()
                .filter(|name| *name != module),
        );
    }
    uses
}

/// The modules a source names as `crate::x`, comments and `#[cfg(test)]` modules left out (the code is
/// rustfmt'ed, so such a module ends at the first line that is `}`).
fn crate_uses(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        if line == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.starts_with("mod ") && next.ends_with('{'))
        {
            lines.by_ref().find(|l| *l == "}");
            continue;
        }
        let code = line.split("//").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::") {
            // `crate::` as a path's first word, not the end of another (`my_crate::`).
            if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

/// The circles of `uses`: each set of more than one module in which every module reaches every other by the
/// modules they name (a strongly connected component of the graph).
fn circles(uses: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut next = vec![from.to_owned()];
        while let Some(module) = next.pop() {
            for named in uses.get(&module).into_iter().flatten() {
                if seen.insert(named.clone()) {
                    next.push(named.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&str, _> = uses.keys().map(|m| (m.as_str(), reach(m))).collect();
    let mut circles: Vec<BTreeSet<String>> = Vec::new();
    for (module, reaches) in &reached {
        if circles.iter().any(|c| c.contains(*module)) {
            continue;
        }
        let circle: BTreeSet<String> = reaches
            .iter()
            .filter(|other| {
                reached
                    .get(other.as_str())
                    .is_some_and(|r| r.contains(*module))
            })
            .cloned()
            .collect();
        if circle.len() > 1 {
            circles.push(circle);
        }
    }
    circles
}

/// The peer is built in floors too (STYLE.md: a lower file never names a higher one), whatever their order:
/// no module of `peer/src` reaches back to itself through the modules it names. A failure names each circle with
/// the uses inside it, one of which has to go.
#[test]
fn no_module_of_the_peer_is_in_a_circle() {
    let uses = peer_uses();
    // The check read the sources: the server stands on the hub, the cluster on the link to NATS.
    for (module, named) in [("server", "hub"), ("cluster", "nats"), ("relay", "hub")] {
        assert!(
            uses.get(module).is_some_and(|u| u.contains(named)),
            "`{module}` does not use `{named}`?"
        );
    }
    let found: Vec<String> = circles(&uses)
        .iter()
        .map(|circle| {
            let inside: Vec<String> = circle
                .iter()
                .flat_map(|m| {
                    uses[m]
                        .iter()
                        .filter(|n| circle.contains(*n))
                        .map(move |n| format!("{m} → {n}"))
                })
                .collect();
            format!("{circle:?}: {}", inside.join(", "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules of peer/src name each other in a circle (cut one use of each):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_of_the_peer_s_uses_skips_comments_and_tests() {
    let source = "use crate::hub::{lock, Rooms};\n\
        /// See [`crate::relay`].\n\
        let x = crate::nats::GONE_AFTER; // crate::mcp\n\
        let y = abp_crate::x;\n\
        #[cfg(test)]\n\
        mod tests {\n    use crate::server;\n}\n\
        use crate::ws::Conn;";
    assert_eq!(crate_uses(source), ["hub", "nats", "ws"]);
    let uses = |edges: &[(&str, &str)]| {
        let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            uses.entry((*from).to_owned())
                .or_default()
                .insert((*to).to_owned());
            uses.entry((*to).to_owned()).or_default();
        }
        uses
    };
    let found = circles(&uses(&[
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
        ("d", "a"),
        ("d", "e"),
        ("e", "d"),
        ("f", "a"),
    ]));
    let names = |c: &BTreeSet<String>| c.iter().cloned().collect::<Vec<_>>().join(" ");
    assert_eq!(
        found.iter().map(names).collect::<Vec<_>>(),
        ["a b c", "d e"]
    );
    assert!(circles(&uses(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
}
