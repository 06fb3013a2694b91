//! Two copies of `abp-peer mcp` with one `--listen` port. Started back to back, as an MCP host's version probe
//! does (a short-lived copy that answers `server/discover` and is stopped, then the real one), the second waits
//! for the port instead of dying with "Address already in use". Started by two hosts, the second joins the first
//! (with the token the first wrote) and its host is served by the first's gateway; when the first goes, so does
//! the second. A port held by something it cannot join is still an error that names it.

mod common;

use std::time::{Duration, Instant};

use common::{Peer, Started};

#[test]
fn the_real_copy_waits_for_the_port_the_probe_copy_is_giving_up() {
    let mut probe = Peer::start(&["mcp"]);
    let listen = probe.addr.to_string();
    let stop_probe = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        drop(probe.stdin.take()); // the host closes the probe's stdin: it exits
        assert!(
            probe.exited(Duration::from_secs(3)).is_some(),
            "the probe copy exits"
        );
    });
    let t0 = Instant::now();
    match Peer::try_start(&["mcp", "--listen", &listen], &[]) {
        Started::Up(real) => assert_eq!(real.addr.to_string(), listen),
        Started::Exited(status, stderr) => panic!("the real copy died ({status}): {stderr}"),
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "it did wait for the port"
    );
    stop_probe.join().expect("the probe copy stopped");
}

#[test]
fn a_port_taken_by_a_copy_it_has_no_token_for_is_an_error_that_names_it() {
    // The second copy's own token file (a fresh directory) is not the first's: it cannot join.
    let first = Peer::start(&["mcp"]);
    let listen = first.addr.to_string();
    match Peer::try_start(&["mcp", "--listen", &listen], &[]) {
        Started::Up(_) => panic!("two copies listening on one port"),
        Started::Exited(status, stderr) => {
            assert!(!status.success());
            assert!(stderr.contains(&listen), "{stderr}");
        }
    }
    drop(first);
}

/// A second host's copy, started by hand (it prints no listening line: it listens nowhere).
struct Joined {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Joined {
    fn start(first: &Peer) -> Joined {
        use std::process::{Command, Stdio};
        let mut child = Command::new(env!("CARGO_BIN_EXE_abp-peer"))
            .args(["mcp", "--listen", &first.addr.to_string(), "--token-file"])
            .arg(&first.token_file)
            .env_remove("ABP_PEER_TOKEN")
            .env("XDG_STATE_HOME", &first.state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the second copy");
        let stdin = child.stdin.take();
        let stdout = std::io::BufRead::lines(std::io::BufReader::new(
            child.stdout.take().expect("stdout"),
        ));
        Joined {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends one request and reads lines until its response.
    fn ask(&mut self, request: serde_json::Value) -> serde_json::Value {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{request}").expect("write");
        stdin.flush().expect("flush");
        loop {
            let line = self
                .stdout
                .next()
                .expect("a response before the end")
                .expect("a line");
            let m: serde_json::Value = serde_json::from_str(&line).expect("JSON");
            if m.get("id") == request.get("id") {
                return m;
            }
        }
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn modern(id: u64, method: &str, params: serde_json::Value) -> serde_json::Value {
    let mut params = params;
    params["_meta"] = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "second-host", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

#[test]
fn a_second_hosts_copy_joins_the_first_and_is_served_by_it() {
    let mut first = Peer::start(&["mcp"]);
    let t0 = Instant::now();
    let mut second = Joined::start(&first);
    let found = second.ask(modern(1, "server/discover", serde_json::json!({})));
    assert_eq!(
        found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "abp-peer"
    );
    // Served by the first copy's gateway: the same answer it gives its own host with no app joined.
    let call = second.ask(modern(
        2,
        "tools/call",
        serde_json::json!({ "name": "echo", "arguments": {} }),
    ));
    assert_eq!(call["result"]["isError"], true);
    assert!(call["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("No app is connected"));
    // A legacy host works the same way through the joined copy.
    let init = second.ask(
        serde_json::json!({ "jsonrpc": "2.0", "id": 3, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "legacy-second", "version": "1" } } }),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert!(
        t0.elapsed() >= Duration::from_secs(2),
        "it waited for the port first (a probe copy gives it up)"
    );
    // The first copy goes (its host closed stdin): the second's host sees its copy end, not a hang.
    drop(first.stdin.take());
    assert!(first.exited(Duration::from_secs(3)).is_some());
    let t1 = Instant::now();
    loop {
        if let Ok(Some(_)) = second.child.try_wait() {
            break;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(3),
            "the joined copy ends with the gateway it joined"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
