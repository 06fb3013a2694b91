//! Comments say why, in the present tense, about the code as it is: they cite no commit, date or issue (those
//! rot, and the history is in git). Figures belong in BENCHMARKS.md, which comments may point to by section.
//! This reads every comment of the repository's own sources and scripts and fails on what looks like one.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What is not the repository's own source: generated, installed or built.
const SKIP: &[&str] = &[
    "target",
    "node_modules",
    "pkg",
    "dist",
    ".git",
    "golden",
    "fixtures",
    "ab",
    "scratch",
];

/// Source files, and how their comments start.
fn markers(path: &Path) -> Option<&'static [&'static str]> {
    let name = path.file_name()?.to_str()?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "rs" | "js" | "mjs" | "ts" => Some(&["//", "/*", "*"]),
        "sh" | "toml" | "py" => Some(&["#"]),
        "" if name == "run" => Some(&["#"]),
        _ => None,
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !SKIP.contains(&name.as_str()) {
                walk(&path, out);
            }
        } else if markers(&path).is_some() {
            out.push(path);
        }
    }
}

/// The comment text of a line, if it has one: after a comment marker at its start, or after ` // ` in code.
/// (A `//` inside a string is read as a comment too; the checks below are narrow enough for that.)
fn comment<'a>(line: &'a str, markers: &[&str]) -> Option<&'a str> {
    let t = line.trim_start();
    if let Some(m) = markers.iter().find(|m| t.starts_with(**m)) {
        if *m == "#" && t.starts_with("#!") || t.starts_with("#[") {
            return None;
        }
        return Some(&t[m.len()..]);
    }
    if markers.contains(&"//") {
        return line.find(" // ").map(|at| &line[at + 4..]);
    }
    line.find(" # ").map(|at| &line[at + 3..])
}

/// A word that reads as an abbreviated commit id: 7 to 40 lowercase hex digits, with letters and digits.
fn is_commit(word: &str) -> bool {
    (7..=40).contains(&word.len())
        && word
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_alphabetic())
}

/// A calendar date, `YYYY-MM-DD`, that is not a protocol's revision name (MCP's versions are dates).
fn is_date(word: &str) -> bool {
    const REVISIONS: &[&str] = &[
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ];
    let b = word.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && !REVISIONS.contains(&word)
}

/// The word issue (or PR) followed by a number, or a hash sign and a number: a pointer into an issue tracker.
fn cites_issue(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let issue_number = words.windows(2).any(|w| {
        matches!(w[0], "issue" | "issues" | "pr")
            && w[1]
                .trim_start_matches('#')
                .starts_with(|c: char| c.is_ascii_digit())
    });
    let hash_number = lower
        .match_indices('#')
        .any(|(at, _)| lower[at + 1..].starts_with(|c: char| c.is_ascii_digit()));
    issue_number || hash_number
}

fn problems_in(text: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
    for word in words {
        let word = word.trim_matches('-');
        if is_commit(word) {
            found.push("a commit id");
        }
        if is_date(word) {
            found.push("a date");
        }
    }
    if cites_issue(text) {
        found.push("an issue number");
    }
    found
}

#[test]
fn comments_cite_no_commit_date_or_issue() {
    let mut files = Vec::new();
    for dir in [
        "src", "peer", "tests", "scripts", "bench", "www", ".ci", "examples",
    ] {
        walk(&root().join(dir), &mut files);
    }
    for file in ["Cargo.toml", "build.rs"] {
        let path = root().join(file);
        if path.exists() {
            files.push(path);
        }
    }
    files.sort();
    assert!(
        files.len() > 50,
        "the walk found the sources ({} files)",
        files.len()
    );
    let mut problems = Vec::new();
    for path in &files {
        let Some(markers) = markers(path) else {
            continue;
        };
        let Ok(source) = std::fs::read_to_string(path) else {
            continue;
        };
        for (n, line) in source.lines().enumerate() {
            let Some(text) = comment(line, markers) else {
                continue;
            };
            for what in problems_in(text) {
                let shown = path.strip_prefix(root()).unwrap_or(path);
                problems.push(format!(
                    "{}:{}: {what}: {}",
                    shown.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "comments say why in the present tense and cite no commit, date or issue (history is in git, \
         figures in BENCHMARKS.md):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    assert_eq!(
        problems_in(" the entry of `56f4aab` in BENCHMARKS.md"),
        ["a commit id"]
    );
    assert_eq!(problems_in(" measured on 2026-11-22"), ["a date"]);
    assert_eq!(problems_in(" see issue 12"), ["an issue number"]);
    assert_eq!(problems_in(" fixed in #34"), ["an issue number"]);
    assert!(problems_in(" MCP 2025-11-25 and 2026-07-28 are revisions").is_empty());
    assert!(problems_in(" a 16-byte buffer, deadbeef, and 1234567").is_empty());
    assert_eq!(
        comment("let x = 1; // why", &["//", "/*", "*"]),
        Some("why")
    );
    assert_eq!(comment("#[derive(Clone)]", &["#"]), None);
}
