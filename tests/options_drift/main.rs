//! The call and connect options are declared once, in src/web/options.rs. This test writes from that
//! declaration what must match it, and compares:
//! - `readCallOptions` in src/web/client.js (between `// <generated:call-options>` and
//!   `// </generated:call-options>`): the same one-pass reader as written by hand, one test per option in the
//!   order of their bits, no loop over a table at run time;
//! - the `CallOptions` and `ClientOptions` interfaces in `TS_TYPES` (src/web/types.rs), which go into the
//!   `.d.ts` as they are.
//!
//! On a difference it fails with a diff. To rewrite those places from the declaration:
//!   ABP_REGENERATE=1 cargo test --test options_drift
//!
//! Native only (it reads the sources as text); a directory of its own (tests/options_drift/main.rs) so that
//! scripts/test.sh, which runs each `tests/*.rs` in the browsers, does not build it for them.
#![cfg(not(target_arch = "wasm32"))]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../../src/web/options.rs"]
mod options;

use options::{Given, OptionSpec, CALL_OPTIONS, CONNECT_OPTIONS};

const REGENERATE: &str = "ABP_REGENERATE=1 cargo test --test options_drift";
const START: &str = "// <generated:call-options>";
const END: &str = "// </generated:call-options>";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The generated part of client.js: the marker lines and everything between them.
fn read_call_options_js() -> String {
    let mut by_bit: Vec<&OptionSpec> = CALL_OPTIONS.iter().collect();
    by_bit.sort_by_key(|o| o.bit);
    let mut numbers: Vec<&OptionSpec> = CALL_OPTIONS.iter().filter(|o| o.slot.is_some()).collect();
    numbers.sort_by_key(|o| o.slot);
    let bits_slot = options::call::BITS;

    let mut s = String::new();
    writeln!(
        s,
        "{START} written by tests/options_drift from src/web/options.rs;"
    )
    .unwrap();
    writeln!(s, "// edit the options there, then: {REGENERATE}").unwrap();
    s.push_str("/** `client.call`'s options (`CallOptions`), read in one pass: one step into JS for the whole object, where\n");
    s.push_str(" *  reading it field by field took a step per field and per type test. Returns the signal if it is an\n");
    s.push_str(" *  AbortSignal. A throwing getter reads as absent. Into `out`, a view of wasm memory (`call` in\n");
    s.push_str(" *  src/web/options.rs):\n");
    for o in &numbers {
        writeln!(s, " *    out[{}]: `{}`", o.slot.unwrap(), o.name).unwrap();
    }
    writeln!(
        s,
        " *    out[{bits_slot}]: a bit for each option that is there with its type */"
    )
    .unwrap();
    s.push_str("export function readCallOptions(o, out) {\n  let bits = 0;\n  let signal;\n");
    s.push_str("  if (o !== null && typeof o === 'object') {\n");
    let mut signals = 0;
    for o in by_bit {
        let (name, bit) = (o.name, o.bit);
        match o.given {
            Given::AbortSignal { aborted } => {
                signals += 1;
                assert!(
                    signals == 1,
                    "readCallOptions returns one signal; {name:?} is a second"
                );
                writeln!(s, "    const s = field(o, '{name}');").unwrap();
                s.push_str(
                    "    if (typeof AbortSignal === 'function' && s instanceof AbortSignal) {\n",
                );
                s.push_str("      signal = s;\n");
                writeln!(s, "      bits |= s.aborted ? {} : {bit};", bit | aborted).unwrap();
                s.push_str("    }\n");
            }
            Given::String | Given::Function => {
                let ty = if o.given == Given::String {
                    "string"
                } else {
                    "function"
                };
                writeln!(
                    s,
                    "    if (typeof field(o, '{name}') === '{ty}') bits |= {bit};"
                )
                .unwrap();
            }
            Given::True => {
                writeln!(s, "    if (field(o, '{name}') === true) bits |= {bit};").unwrap()
            }
            Given::Array => writeln!(
                s,
                "    if (Array.isArray(field(o, '{name}'))) bits |= {bit};"
            )
            .unwrap(),
            Given::Number => {
                let slot = o.slot.unwrap();
                read_into_local(&mut s, name);
                writeln!(
                    s,
                    "    if (typeof {name} === 'number') {{ out[{slot}] = {name}; bits |= {bit}; }}"
                )
                .unwrap();
            }
            Given::Object => {
                read_into_local(&mut s, name);
                writeln!(
                    s,
                    "    if (typeof {name} === 'object' && {name} !== null) bits |= {bit};"
                )
                .unwrap();
            }
        }
    }
    s.push_str("  }\n");
    writeln!(s, "  out[{bits_slot}] = bits;").unwrap();
    s.push_str("  return signal;\n}\n");
    s.push_str(END);
    s.push('\n');
    s
}

/// `export interface <name> { … }` as the typings declare it.
fn interface_ts(name: &str, list: &[OptionSpec]) -> String {
    let mut s = format!("export interface {name} {{\n");
    for o in list {
        match o.doc {
            [] => {}
            [one] => writeln!(s, "  /** {one} */").unwrap(),
            [first, rest @ ..] => {
                writeln!(s, "  /** {first}").unwrap();
                for (i, line) in rest.iter().enumerate() {
                    let end = if i + 1 == rest.len() { " */" } else { "" };
                    writeln!(s, "   *  {line}{end}").unwrap();
                }
            }
        }
        writeln!(s, "  {}?: {};", o.name, o.ts).unwrap();
    }
    s.push_str("}\n");
    s
}

/// `const <name> = field(o, '<name>');`: the option read once into a local named after it (which the name must
/// allow).
fn read_into_local(s: &mut String, name: &str) {
    assert!(
        is_identifier(name) && !["o", "out", "bits", "signal", "s", "field"].contains(&name),
        "option {name:?}: the reader names a local after it, and cannot with this name"
    );
    writeln!(s, "    const {name} = field(o, '{name}');").unwrap();
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The byte range of the region of `text` from the line starting with `first` to the first line after it
/// starting with `last` (inclusive, with its newline).
fn region(text: &str, first: &str, last: &str, file: &Path) -> std::ops::Range<usize> {
    let starts: Vec<usize> = line_starts(text)
        .filter(|&i| text[i..].starts_with(first))
        .collect();
    assert!(
        starts.len() == 1,
        "{}: expected exactly one line starting with {first:?}, found {}",
        file.display(),
        starts.len()
    );
    let start = starts[0];
    let end = line_starts(text)
        .filter(|&i| i > start && text[i..].starts_with(last))
        .map(|i| text[i..].find('\n').map_or(text.len(), |n| i + n + 1))
        .next()
        .unwrap_or_else(|| {
            panic!(
                "{}: no line starting with {last:?} after {first:?}",
                file.display()
            )
        });
    start..end
}

fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(move |&i| i < text.len())
}

/// A line diff of `found` against `expected` (`-` only in the file, `+` what the declaration says), with three
/// lines of context around each change.
fn diff(found: &str, expected: &str) -> String {
    let a: Vec<&str> = found.lines().collect();
    let b: Vec<&str> = expected.lines().collect();
    // Longest common subsequence, from the end.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut lines: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            lines.push(('+', b[j]));
            j += 1;
        } else {
            lines.push(('-', a[i]));
            i += 1;
        }
    }
    let near_change = |k: usize| {
        lines[k.saturating_sub(3)..(k + 4).min(lines.len())]
            .iter()
            .any(|(c, _)| *c != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, line)) in lines.iter().enumerate() {
        if near_change(k) {
            writeln!(out, "{c} {line}").unwrap();
            skipped = false;
        } else if !skipped {
            out.push_str("  …\n");
            skipped = true;
        }
    }
    out
}

/// Compares each region of `file` with what the declaration makes of it; with ABP_REGENERATE=1, rewrites
/// the file instead. Returns the differences.
fn check(file: &str, regions: &[(&str, &str, String)]) -> Vec<String> {
    let path = root().join(file);
    let mut text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let regenerate = std::env::var_os("ABP_REGENERATE").is_some_and(|v| v == "1");
    let mut problems = Vec::new();
    for (first, last, expected) in regions {
        let range = region(&text, first, last, &path);
        let found = &text[range.clone()];
        if found == expected {
            continue;
        }
        if regenerate {
            text.replace_range(range, expected);
            println!("options_drift: rewrote `{first}` in {file}");
        } else {
            problems.push(format!(
                "{file}: `{first}` differs from src/web/options.rs (- in the file, + from the declaration):\n{}",
                diff(found, expected)
            ));
        }
    }
    if regenerate {
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    problems
}

#[test]
fn generated_code_matches_the_declaration() {
    let mut problems = check("src/web/client.js", &[(START, END, read_call_options_js())]);
    problems.extend(check(
        "src/web/types.rs",
        &[
            (
                "export interface CallOptions {",
                "}",
                interface_ts("CallOptions", CALL_OPTIONS),
            ),
            (
                "export interface ClientOptions {",
                "}",
                interface_ts("ClientOptions", CONNECT_OPTIONS),
            ),
        ],
    ));
    assert!(
        problems.is_empty(),
        "\n{}\nThe options are declared in src/web/options.rs. If the declaration is right, rewrite these from it:\n  {REGENERATE}\n",
        problems.join("\n")
    );
}

#[test]
fn declaration_is_consistent() {
    for (what, list) in [
        ("CallOptions", CALL_OPTIONS),
        ("ClientOptions", CONNECT_OPTIONS),
    ] {
        for (i, o) in list.iter().enumerate() {
            assert!(
                list[..i].iter().all(|p| p.name != o.name),
                "{what}: {:?} is declared twice",
                o.name
            );
            let ts_fits = match o.given {
                Given::Number => o.ts == "number",
                Given::True => o.ts == "boolean",
                Given::String => {
                    o.ts == "string" || o.ts.chars().next().is_some_and(char::is_uppercase)
                }
                Given::Array => o.ts.ends_with("[]"),
                Given::AbortSignal { .. } => o.ts == "AbortSignal",
                Given::Function | Given::Object => !o.ts.is_empty(),
            };
            assert!(
                ts_fits,
                "{what}.{}: TypeScript type {:?} does not fit {:?}",
                o.name, o.ts, o.given
            );
            assert!(
                o.doc.iter().all(|l| !l.contains("*/") && !l.contains('\n')),
                "{what}.{}: a doc line may not hold a newline or `*/`",
                o.name
            );
        }
    }
    // Connect options are read by name in `connect`: no fast path, so no bits or slots.
    assert!(CONNECT_OPTIONS
        .iter()
        .all(|o| o.bit == 0 && o.slot.is_none()));
    assert_eq!(options::call::VIEW_LEN, options::call::NUMBERS + 1);
}
