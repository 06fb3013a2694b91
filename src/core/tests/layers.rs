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
