//! How `abp-peer --nats` logs in to a real `nats-server`, and what it refuses: credentials in the URL (a user and
//! password, a token), an nkey seed, a `.creds` file, TLS with a private CA and mutual TLS, each proven by a call
//! from a controller on one process to the app on another; an open server and a plaintext one on another machine
//! refused unless `--nats-insecure`; a refused login, an unreachable server and bad options said at once, SIGTERM
//! and SIGINT obeyed while waiting, the link's loss and return said, and no secret ever printed.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

mod common;
use common::nats::{Nats, PASSWORD, TOKEN, USER};
use common::{answer_initialize, send, until, Peer, TempDir};

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Two processes started with `args` share a room: a controller on B calls the app on A and gets its result.
#[track_caller]
fn drives_across(args: &[String]) -> (Peer, Peer) {
    let (a, b) = (Peer::start(&strs(args)), Peer::start(&strs(args)));
    let mut app = a.connect("/agent/login");
    answer_initialize(&mut app);
    let mut control = b.connect("/control/login");
    // Until the room's agent on A has its app's session (a `connected` event may come before B's controller).
    let t0 = Instant::now();
    for n in 0.. {
        let asked = format!("s{n}");
        send(&mut control, &json!({ "op": "status", "ref": asked }));
        if until(&mut control, |e| e["ref"] == asked.as_str())["connected"] == true {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "B never saw the app on A"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    send(
        &mut control,
        &json!({ "op": "call", "ref": 1, "capability": "echo", "params": { "x": 1 } }),
    );
    let call = until(&mut app, |m| m["type"] == "capabilities/call");
    send(
        &mut app,
        &json!({ "type": "capabilities/call-result", "id": call["id"], "timestamp": 0,
            "payload": { "callId": call["payload"]["callId"], "success": true, "data": call["payload"]["params"] } }),
    );
    let settled = until(&mut control, |e| e["op"] == "settled");
    assert_eq!(settled["response"]["data"], json!({ "x": 1 }), "{settled}");
    (a, b)
}

/// An abp-peer process whatever becomes of it: its stderr lines as they come, with when.
struct Process {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
    seen: Vec<String>,
    _dir: TempDir,
}

impl Process {
    fn start(args: &[&str]) -> Process {
        let dir = TempDir::new();
        let mut child = Command::new(env!("CARGO_BIN_EXE_abp-peer"))
            .args(["--listen", "127.0.0.1:0", "--token-file"])
            .arg(dir.0.join("token"))
            .args(args)
            .env_remove("ABP_PEER_TOKEN")
            .env("XDG_STATE_HOME", dir.0.join("state"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start abp-peer");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), line));
            }
        });
        Process {
            child,
            lines,
            seen: Vec::new(),
            _dir: dir,
        }
    }

    /// The first stderr line that contains `text`, waiting at most `within`.
    fn said(&mut self, text: &str, within: Duration) -> Option<String> {
        let t0 = Instant::now();
        if let Some(line) = self.seen.iter().find(|l| l.contains(text)) {
            return Some(line.clone());
        }
        while let Some(left) = within.checked_sub(t0.elapsed()) {
            match self.lines.recv_timeout(left) {
                Ok((_, line)) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return Some(line);
                    }
                }
                Err(_) => return None,
            }
        }
        None
    }

    /// Its exit code, if it exits within `within`.
    fn exits(&mut self, within: Duration) -> Option<i32> {
        let t0 = Instant::now();
        while t0.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status.code().unwrap_or(-1));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Everything it printed (after it exited).
    fn output(&mut self) -> String {
        while let Ok((_, line)) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts abp-peer with `args`, which must fail: non-zero within 10 s, with stderr containing each of `said`.
#[track_caller]
fn refused(args: &[&str], said: &[&str]) -> String {
    let t0 = Instant::now();
    let mut p = Process::start(args);
    let code = p.exits(Duration::from_secs(10));
    let output = p.output();
    assert!(
        code.is_some_and(|c| c != 0),
        "{args:?} did not exit non-zero within 10 s ({code:?}): {output}"
    );
    for s in said {
        assert!(output.contains(s), "{args:?}: {s:?} not in {output}");
    }
    assert!(!output.contains("panicked"), "{output}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    output
}

#[test]
fn a_user_and_password_in_the_url_log_in_and_are_never_printed() {
    let nats = Nats::plain();
    let (a, _b) = drives_across(&nats.args());
    assert!(
        a.banner
            .contains(&format!("nats://{USER}:***@127.0.0.1:{}", nats.port)),
        "{}",
        a.banner
    );
    assert!(!a.banner.contains(PASSWORD), "{}", a.banner);
    // A wrong password: the server refuses it, and abp-peer says so and stops.
    let wrong = format!("nats://{USER}:not-it@127.0.0.1:{}", nats.port);
    let output = refused(&["--nats", &wrong], &["refused abp-peer's login"]);
    assert!(!output.contains("not-it"), "{output}");
}

#[test]
fn a_token_in_the_url_logs_in() {
    let nats = Nats::token();
    let (a, _b) = drives_across(&nats.args());
    assert!(!a.banner.contains(TOKEN), "{}", a.banner);
    assert!(a.banner.contains("nats://***@127.0.0.1"), "{}", a.banner);
}

#[test]
fn an_nkey_seed_logs_in() {
    let user = nkeys::KeyPair::new_user();
    let nats = Nats::nkey(&user.public_key());
    let seed_file = nats.dir.0.join("user.nk");
    let seed = user.seed().expect("a seed");
    std::fs::write(&seed_file, format!("{seed}\n")).expect("write");
    let mut args = nats.args();
    args.extend(["--nats-nkey".into(), seed_file.display().to_string()]);
    let (a, _b) = drives_across(&args);
    assert!(!a.banner.contains(&seed), "{}", a.banner);
    // Without it, the server refuses the login.
    refused(&strs(&nats.args()), &["refused abp-peer's login"]);
}

/// A JWT as NATS signs them (`ed25519-nkey`), with `claims` about `subject`, signed by `issuer`.
fn jwt(issuer: &nkeys::KeyPair, subject: &str, nats: Value) -> String {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = b64(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let iat = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({ "jti": format!("T{iat}{}", &subject[..8]), "iat": iat, "iss": issuer.public_key(),
        "name": "abp test", "sub": subject, "nats": nats });
    let body = format!("{header}.{}", b64(claims.to_string().as_bytes()));
    let signature = issuer.sign(body.as_bytes()).expect("sign");
    format!("{body}.{}", b64(&signature))
}

#[test]
fn a_creds_file_logs_in() {
    // Operator mode, as `nsc` sets it up: an operator signs an account, the account signs a user allowed abp.>.
    let (operator, account, user) = (
        nkeys::KeyPair::new_operator(),
        nkeys::KeyPair::new_account(),
        nkeys::KeyPair::new_user(),
    );
    let unlimited = json!({ "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
        "wildcards": true, "conn": -1, "leaf": -1 });
    let operator_jwt = jwt(
        &operator,
        &operator.public_key(),
        json!({ "type": "operator", "version": 2 }),
    );
    let account_jwt = jwt(
        &operator,
        &account.public_key(),
        json!({ "type": "account", "version": 2, "limits": unlimited }),
    );
    let user_jwt = jwt(
        &account,
        &user.public_key(),
        json!({ "type": "user", "version": 2, "pub": { "allow": ["abp.>"] }, "sub": { "allow": ["abp.>"] },
            "subs": -1, "data": -1, "payload": -1 }),
    );
    let nats = Nats::operator(&operator_jwt, (&account.public_key(), &account_jwt));
    let seed = user.seed().expect("a seed");
    let creds = nats.dir.0.join("user.creds");
    std::fs::write(
        &creds,
        format!(
            "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n\
             -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
        ),
    )
    .expect("write");
    let mut args = nats.args();
    args.extend(["--nats-creds".into(), creds.display().to_string()]);
    let (a, _b) = drives_across(&args);
    assert!(!a.banner.contains(&seed), "{}", a.banner);
}

#[test]
fn tls_with_a_private_ca() {
    // The deployment the docs show: TLS, the server's certificate signed by the CA given.
    let nats = Nats::start();
    drives_across(&nats.args());
    // Without the CA, the server's certificate is not trusted: said, and no connection.
    refused(&["--nats", nats.url()], &["TLS with the NATS server"]);
}

#[test]
fn mutual_tls() {
    let (nats, certs) = Nats::mutual();
    let mut args = nats.args();
    args.extend([
        "--nats-tlscert".into(),
        certs.client.0.display().to_string(),
        "--nats-tlskey".into(),
        certs.client.1.display().to_string(),
    ]);
    drives_across(&args);
    // Without a client certificate, the server ends the handshake.
    let mut p = Process::start(&strs(&nats.args()));
    let code = p.exits(Duration::from_secs(10));
    assert!(code.is_some_and(|c| c != 0), "{code:?}: {}", p.output());
}

#[test]
fn another_prefix_needs_permissions_on_it_only() {
    // The user may use team.abp.> and nothing else, inboxes included.
    let nats = Nats::prefixed("team.abp");
    let mut args = nats.args();
    args.extend(["--nats-prefix".into(), "team.abp".into()]);
    let (a, _b) = drives_across(&args);
    assert!(a.banner.contains("under team.abp.>"), "{}", a.banner);
}

#[test]
fn an_open_server_is_refused_unless_insecure_and_then_warned_about() {
    let nats = Nats::open();
    refused(
        &["--nats", nats.url()],
        &["--nats-insecure", "requires no login"],
    );
    let (a, _b) = drives_across(&[
        "--nats".into(),
        nats.url().to_owned(),
        "--nats-insecure".into(),
    ]);
    assert!(a.banner.contains("WARNING"), "{}", a.banner);
}

#[test]
fn another_machine_without_tls_is_refused_before_connecting() {
    // Not connected to at all (nothing listens there): refused at once, the password never sent in clear.
    let t0 = Instant::now();
    refused(
        &["--nats", "nats://abp:secret@192.0.2.1:4222"],
        &["--nats-insecure", "without TLS"],
    );
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}

#[test]
fn bad_options_are_clear_errors_at_start() {
    let dir = TempDir::new();
    let junk = dir.0.join("junk");
    std::fs::write(&junk, "not a key\n").expect("write");
    let junk = junk.display().to_string();
    let missing = dir.0.join("missing").display().to_string();
    let url = "nats://abp:pw@127.0.0.1:4222";
    for (args, said) in [
        (vec!["--nats", "nats://abp:pw@[::1"], "--nats"),
        (vec!["--nats", "http://127.0.0.1:4222"], "nats://HOST:PORT"),
        (vec!["--nats", url, "--nats-nkey", &missing], "--nats-nkey"),
        (
            vec!["--nats", url, "--nats-nkey", &junk],
            "not an nkey user seed",
        ),
        (
            vec!["--nats", url, "--nats-creds", &missing],
            "--nats-creds",
        ),
        (
            vec!["--nats", url, "--nats-creds", &junk],
            "not a NATS credentials file",
        ),
        (vec!["--nats", url, "--nats-tlsca", &junk], "not a PEM file"),
        (
            vec![
                "--nats",
                url,
                "--nats-tlscert",
                &junk,
                "--nats-tlskey",
                &missing,
            ],
            "--nats-tlscert",
        ),
        (
            vec!["--nats", url, "--nats-tlscert", &junk],
            "--nats-tlskey",
        ),
        (vec!["--nats", url, "--nats-prefix", "a b"], "--nats-prefix"),
        (
            vec!["--nats", url, "--nats-prefix", "abp.*"],
            "--nats-prefix",
        ),
        (vec!["--nats-nkey", &junk], "--nats"),
    ] {
        let output = refused(&args, &[said]);
        assert!(!output.contains(":pw@"), "{output}");
    }
}

/// A port on 127.0.0.1 where nothing listens.
fn nowhere() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[test]
fn an_unreachable_server_is_said_within_5_s_and_signals_stop_the_wait() {
    for signal in ["TERM", "INT"] {
        let url = format!("nats://{USER}:{PASSWORD}@127.0.0.1:{}", nowhere());
        let mut p = Process::start(&["--nats", &url]);
        let line = p.said("cannot reach the NATS server", Duration::from_secs(5));
        assert!(line.is_some(), "nothing said within 5 s: {}", p.output());
        let t0 = Instant::now();
        p.signal(signal);
        assert!(
            p.exits(Duration::from_secs(2)).is_some(),
            "SIG{signal} while waiting for NATS: still running after 2 s"
        );
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(!p.output().contains(PASSWORD));
    }
}

#[test]
fn the_link_lost_and_back_is_said_and_signals_stop_it_meanwhile() {
    let mut nats = Nats::plain();
    let mut p = Process::start(&strs(&nats.args()));
    assert!(
        p.said("listening on", Duration::from_secs(10)).is_some(),
        "{}",
        p.output()
    );
    nats.kill();
    assert!(
        p.said("lost the NATS server", Duration::from_secs(5))
            .is_some(),
        "{}",
        p.output()
    );
    nats.restart();
    assert!(
        p.said("is back", Duration::from_secs(15)).is_some(),
        "{}",
        p.output()
    );
    nats.kill();
    assert!(p
        .said("lost the NATS server", Duration::from_secs(5))
        .is_some());
    let t0 = Instant::now();
    p.signal("TERM");
    assert!(
        p.exits(Duration::from_secs(2)).is_some(),
        "SIGTERM while NATS is gone"
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
    let output = p.output();
    assert!(!output.contains(PASSWORD), "{output}");
}
