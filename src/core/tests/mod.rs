//! The core's native tests, one file per area. [`pair`] is the harness most of them use: an agent and an app
//! connection driven against each other in memory, through the real codecs, with simulated time.
//!
//! ABP, on the shared state machines: `handshake`, `calls`, `cancel`, `progress`, `elicitation`,
//! `disconnect`, `robustness`, `messages`, and `conformance` (the rest of the reference rules). The other
//! dialects: `mcp` and `mcp_modern` (its stateless era), `acp`, `tesseron`, and `dialects` (the list of dialects and what is derived from it).
//! Around them: `connection` (the connections as their drivers use them), `fastpath` (the JavaScript
//! builders and reader in the JS snippets against the codec) and `layers` (no module of the core reaches up,
//! and none of the peer's names another in a circle).

mod pair;

mod calls;
mod cancel;
mod conformance;
mod disconnect;
mod elicitation;
mod handshake;
mod messages;
mod progress;
mod robustness;

mod acp;
mod dialects;
mod mcp;
mod mcp_modern;
mod tesseron;
mod trace;

mod connection;
mod fastpath;
mod layers;

/// Every Rust file under `dirs` (paths from the repository's root), for the tests that read the sources: a file
/// added later is read without being listed.
fn rust_files(dirs: &[&str]) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a readable folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in dirs {
        walk(&root.join(dir), &mut found);
    }
    found.sort();
    found
}
