//! Who may open what on a running `abp-peer`, with raw HTTP requests over TCP on 127.0.0.1 (so every header is
//! exactly what a browser, an attacker's page or a rebinding DNS name would send): a forged `Host` → 403; an
//! `Origin` not in `--allow-origin` → 403 on every kind of endpoint, with or without the token; no token and a
//! wrong one → 401 on `/control`, `/relay/…/agent` and `/admin/exit`; the right one (header or query) → the
//! upgrade; app endpoints open without it; unknown paths → 404; the token file is the user's alone;
//! `ABP_PEER_TOKEN`; a non-loopback address needs `--allow-non-loopback`. tests/token.rs covers where the token
//! is kept across restarts.

use std::time::Duration;

mod common;
use common::{exchange, try_exchange, upgrade, upgrade_request, Peer, Started, TempDir};

const GOOD: &str = "http://good.test:8000";

fn host(p: &Peer) -> String {
    format!("127.0.0.1:{}", p.addr.port())
}

/// The status of an upgrade for `path` with a correct Host and `headers`.
fn status(p: &Peer, path: &str, headers: &[&str]) -> u16 {
    upgrade(p.addr, &host(p), path, headers).status
}

#[test]
fn a_forged_host_is_refused() {
    let p = Peer::start(&[]);
    let port = p.addr.port();
    let auth = format!("Authorization: Bearer {}", p.token);
    for forged in [
        format!("attacker.test:{port}"),
        format!("127.0.0.1.attacker.test:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        "127.0.0.1".to_owned(),
        String::new(),
    ] {
        for path in ["/agent/h", "/relay/h/app", "/control/h", "/relay/h/agent"] {
            let a = upgrade(p.addr, &forged, path, &[&auth]);
            assert_eq!(a.status, 403, "Host {forged:?} on {path}: {}", a.text);
        }
    }
    // The names of this server are accepted, in any case (a room each: the first app holds its room).
    for (i, ok) in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(
            upgrade(p.addr, ok, &format!("/agent/h{i}"), &[]).status,
            101,
            "Host {ok}"
        );
    }
    // No Host header at all.
    let a = exchange(
        p.addr,
        "GET /agent/h HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    assert_ne!(a.status, 101, "{}", a.text);
}

#[test]
fn an_unlisted_origin_is_refused_on_every_endpoint() {
    let mut p = Peer::start(&["--allow-origin", GOOD, "--allow-exit"]);
    let token = format!("?token={}", p.token);
    let paths = [
        "/agent".to_owned(),
        "/agent/o".to_owned(),
        "/relay/o/app".to_owned(),
        format!("/relay/o/agent{token}"),
        format!("/control/o{token}"),
        format!("/control{token}"),
        format!("/admin/exit{token}"),
    ];
    for origin in [
        "https://evil.example",
        "http://good.test:8001",
        "https://good.test:8000",
        "http://good.test",
        "http://sub.good.test:8000",
        "null",
        "http://good.test:8000/",
        "garbage",
    ] {
        for path in &paths {
            let a = status(&p, path, &[&format!("Origin: {origin}")]);
            assert_eq!(a, 403, "Origin {origin} on {path}");
        }
    }
    // Two Origin headers, one of them good.
    let two = [
        format!("Origin: {GOOD}"),
        "Origin: https://evil.example".to_owned(),
    ];
    assert_eq!(status(&p, "/agent/o", &[&two[0], &two[1]]), 403);
    // Still running (the refused /admin/exit did nothing), and the listed origin gets in, in any case.
    assert!(p.exited(Duration::from_millis(200)).is_none());
    assert_eq!(
        status(&p, "/agent/o", &["Origin: HTTP://GOOD.test:8000"]),
        101
    );
    assert_eq!(
        status(&p, "/relay/o/app", &[&format!("Origin: {GOOD}")]),
        101
    );
    assert_eq!(
        status(
            &p,
            &format!("/control/o{token}"),
            &[&format!("Origin: {GOOD}")]
        ),
        101
    );
    // A client that sends no Origin (a native one) is not refused for that.
    assert_eq!(status(&p, "/agent/n", &[]), 101);
    let log: Vec<String> = p.log.try_iter().collect();
    assert!(
        log.iter()
            .any(|l| l.contains("403") && l.contains("https://evil.example")),
        "refusals are logged: {log:?}"
    );
}

#[test]
fn no_origin_is_allowed_by_default() {
    let p = Peer::start(&[]);
    let origin = format!("Origin: http://127.0.0.1:{}", p.addr.port());
    assert_eq!(
        status(&p, "/agent/d", &[&origin]),
        403,
        "not even the peer's own address"
    );
    assert_eq!(status(&p, "/agent/d", &[]), 101);
}

#[test]
fn driver_endpoints_need_the_token() {
    let mut p = Peer::start(&["--allow-exit"]);
    for path in ["/control", "/control/t", "/relay/t/agent", "/admin/exit"] {
        let a = upgrade(p.addr, &host(&p), path, &[]);
        assert_eq!(a.status, 401, "{path} without a token: {}", a.text);
        assert!(a.text.contains("no token"), "says why: {}", a.text);
        assert!(
            a.text.to_lowercase().contains("www-authenticate: bearer"),
            "{}",
            a.text
        );
        let wrong = "0".repeat(p.token.len());
        let a = upgrade(p.addr, &host(&p), &format!("{path}?token={wrong}"), &[]);
        assert_eq!(a.status, 401, "{path}, wrong token in the query");
        assert!(a.text.contains("wrong token"), "says why: {}", a.text);
        assert_eq!(
            status(&p, &format!("{path}?token="), &[]),
            401,
            "{path}, empty token"
        );
        let short = &p.token[..p.token.len() - 1];
        assert_eq!(
            status(&p, &format!("{path}?token={short}"), &[]),
            401,
            "{path}, a prefix of the token"
        );
        let bearer = format!("Authorization: Bearer {wrong}");
        assert_eq!(
            status(&p, path, &[&bearer]),
            401,
            "{path}, wrong bearer token"
        );
        assert_eq!(
            status(&p, path, &["Authorization: Basic YTpi"]),
            401,
            "{path}, not a bearer token"
        );
    }
    // The right token, either way.
    let bearer = format!("Authorization: Bearer {}", p.token);
    assert_eq!(status(&p, "/control/t", &[&bearer]), 101);
    assert_eq!(
        status(&p, &format!("/relay/t/agent?token={}", p.token), &[]),
        101
    );
    assert_eq!(
        status(&p, &format!("/control/t?x=1&token={}", p.token), &[]),
        101
    );
    // The app side opens without it.
    assert_eq!(status(&p, "/agent/t", &[]), 101);
    assert_eq!(status(&p, "/relay/t/app", &[]), 101);
    // The token file holds the printed token, and only its user may read it.
    let in_file = std::fs::read_to_string(&p.token_file).expect("the token file");
    assert_eq!(in_file.trim(), p.token);
    assert!(
        p.token.len() >= 64 && p.token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        p.token
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p.token_file)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    }
    // /admin/exit with the token ends the process.
    let request = upgrade_request(&host(&p), "/admin/exit", &[&bearer]);
    assert!(
        try_exchange(p.addr, &request).is_err(),
        "no answer: the process is gone"
    );
    let status = p.exited(Duration::from_secs(5)).expect("exited");
    assert_eq!(status.code(), Some(3));
}

#[test]
fn each_state_folder_has_its_own_token() {
    let a = Peer::start(&[]);
    let b = Peer::start(&[]);
    assert_ne!(a.token, b.token);
    assert_eq!(
        status(&b, &format!("/control/x?token={}", a.token), &[]),
        401
    );
}

#[test]
fn unknown_paths_are_404() {
    let p = Peer::start(&[]);
    let bearer = format!("Authorization: Bearer {}", p.token);
    for path in [
        "/",
        "/nope",
        "/agent/a/b",
        "/relay/x",
        "/relay/x/other",
        "/control/a/b",
        "/admin/exit",
        "/admin",
    ] {
        assert_eq!(status(&p, path, &[]), 404, "{path}");
        assert_eq!(status(&p, path, &[&bearer]), 404, "{path} with the token");
    }
    // Not an upgrade at all: still an HTTP answer, never a socket.
    let h = host(&p);
    let a = exchange(
        p.addr,
        &format!("GET /nope HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(a.status, 404);
    let a = exchange(
        p.addr,
        &format!("GET /agent/x HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n"),
    );
    assert!((400..500).contains(&a.status), "{}", a.text);
    // The checks come first: a forged Host learns nothing about which paths exist.
    assert_eq!(
        upgrade(p.addr, "attacker.test:80", "/nope", &[]).status,
        403
    );
}

#[test]
fn an_origin_that_is_not_readable_text_is_refused_not_taken_for_none() {
    let p = Peer::start(&["--allow-origin", GOOD]);
    assert_eq!(
        status(&p, "/agent", &["Origin: http://\u{e9}vil.test"]),
        403
    );
    assert_eq!(
        status(&p, "/agent", &[]),
        101,
        "no Origin at all: a native client"
    );
}

#[test]
fn the_token_can_come_from_the_environment() {
    let given = "a-token-from-the-supervisor-0123456789";
    let Started::Up(p) = Peer::try_start(&[], &[("ABP_PEER_TOKEN", given)]) else {
        panic!("did not start");
    };
    assert!(
        !p.banner.contains(given) && p.token != given,
        "the supervisor's token is never echoed: {}",
        p.banner
    );
    assert_eq!(
        std::fs::read_to_string(&p.token_file).unwrap().trim(),
        given
    );
    assert_eq!(status(&p, &format!("/control/e?token={given}"), &[]), 101);
    let zeros = "0".repeat(32);
    let abc = "abcabcabcabcabcabcabcabcabcabcabcabc";
    let run = "0123456789abcdefghij000000000000";
    for weak in ["short", zeros.as_str(), abc, run] {
        match Peer::try_start(&[], &[("ABP_PEER_TOKEN", weak)]) {
            Started::Exited(status, stderr) => {
                assert!(!status.success());
                assert!(stderr.contains("ABP_PEER_TOKEN"), "{stderr}");
                assert!(!stderr.contains(weak), "not echoed either: {stderr}");
            }
            Started::Up(_) => panic!("a guessable ABP_PEER_TOKEN was accepted: {weak}"),
        }
    }
}

#[test]
fn the_default_token_file_is_per_user_and_per_port() {
    let runtime = TempDir::new();
    let dir = runtime.0.to_string_lossy().into_owned();
    let Started::Up(mut p) = Peer::launch(&[], &[("XDG_RUNTIME_DIR", &dir)], false) else {
        panic!("did not start");
    };
    let file = runtime
        .0
        .join("abp-peer")
        .join(format!("{}.token", p.addr.port()));
    let token = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", file.display(), p.banner));
    assert_eq!(token.trim(), p.token, "the token is printed");
    assert!(
        p.banner.contains(&file.display().to_string()),
        "with where it is: {}",
        p.banner
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(runtime.0.join("abp-peer"))
            .expect("dir")
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o700,
            "the directory is private too: {mode:o}"
        );
        // SIGTERM removes the file.
        let _ = std::process::Command::new("kill")
            .arg(p.child.id().to_string())
            .status();
        assert!(
            p.exited(Duration::from_secs(5)).is_some(),
            "SIGTERM ends it"
        );
        assert!(!file.exists(), "the token file is removed on SIGTERM");
    }
}

#[test]
fn a_non_loopback_address_needs_the_flag() {
    match Peer::try_start(&["--listen", "0.0.0.0:0"], &[]) {
        Started::Exited(status, stderr) => {
            assert!(!status.success());
            assert!(
                stderr.contains("--allow-non-loopback"),
                "says how: {stderr}"
            );
        }
        Started::Up(_) => panic!("listened on 0.0.0.0 without --allow-non-loopback"),
    }
    // With it: it starts, says so, and still checks Host (127.0.0.1 is one of its names; another is not).
    let Started::Up(p) = Peer::try_start(&["--listen", "0.0.0.0:0", "--allow-non-loopback"], &[])
    else {
        panic!("did not start with --allow-non-loopback");
    };
    let port = p.addr.port();
    let local: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    assert_eq!(
        upgrade(local, &format!("127.0.0.1:{port}"), "/agent/w", &[]).status,
        101
    );
    assert_eq!(
        upgrade(local, &format!("attacker.test:{port}"), "/agent/w", &[]).status,
        403
    );
    // --allow-host names another.
    let Started::Up(q) = Peer::try_start(
        &[
            "--listen",
            "0.0.0.0:0",
            "--allow-non-loopback",
            "--allow-host",
            "lan.test:80",
        ],
        &[],
    ) else {
        panic!("did not start");
    };
    let local: std::net::SocketAddr = format!("127.0.0.1:{}", q.addr.port())
        .parse()
        .expect("addr");
    assert_eq!(upgrade(local, "lan.test", "/agent/w", &[]).status, 101);
}

#[test]
fn bad_origins_are_usage_errors_and_the_wide_listener_warns() {
    let dir = TempDir::new();
    for bad in ["bad origin", "*", "null", "http://a.test/path"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_abp-peer"))
            .args(["--listen", "127.0.0.1:0", "--allow-origin", bad])
            .arg("--token-file")
            .arg(dir.0.join("t"))
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "--allow-origin {bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(bad),
            "names the value"
        );
    }
    let Started::Up(p) = Peer::try_start(&["--listen", "0.0.0.0:0", "--allow-non-loopback"], &[])
    else {
        panic!("did not start");
    };
    assert!(
        p.banner.contains("warning") && p.banner.contains("--allow-non-loopback"),
        "{}",
        p.banner
    );
}

#[test]
fn the_mcp_gateway_checks_the_same_and_serves_only_its_app_endpoint() {
    let p = Peer::start(&["mcp", "--allow-origin", GOOD, "--room", "r"]);
    assert!(
        p.token.is_empty() && p.token_file.exists(),
        "the token is written for another host's copy to join with, and not printed where hosts log stderr: {}",
        p.banner
    );
    let token = std::fs::read_to_string(&p.token_file).expect("the token file");
    let auth = format!("Authorization: Bearer {}", token.trim());
    assert_eq!(
        status(&p, "/mcp-host/r", &[]),
        401,
        "a host joins with the token only"
    );
    assert_eq!(
        status(
            &p,
            "/mcp-host/r",
            &["Authorization: Bearer wrong-token-wrong-token-wrong-token"]
        ),
        401
    );
    assert_eq!(
        status(&p, "/mcp-host/r", &[&auth, &format!("Origin: {GOOD}")]),
        403,
        "no web page joins as a host, even the app's own origin with the token"
    );
    assert_eq!(
        status(&p, "/mcp-host/r", &[&auth]),
        101,
        "another host's copy joins"
    );
    assert_eq!(status(&p, "/mcp-host/other", &[&auth]), 404);
    let good = format!("Origin: {GOOD}");
    assert_eq!(status(&p, "/agent/r", &[&good]), 101, "the app's endpoint");
    assert_eq!(
        status(&p, "/agent/r", &["Origin: https://evil.example"]),
        403
    );
    assert_eq!(
        upgrade(p.addr, "attacker.test:80", "/agent/r", &[&good]).status,
        403,
        "DNS rebinding"
    );
    for path in [
        "/agent",
        "/agent/other",
        "/control/r",
        "/relay/r/agent",
        "/relay/r/app",
        "/admin/exit",
    ] {
        assert_eq!(
            status(&p, path, &[&good]),
            404,
            "{path} is not served by the gateway"
        );
    }
}

#[test]
fn the_first_app_wins_its_room_and_a_silent_one_is_let_go() {
    let p = Peer::start(&["--app-ping", "100"]);
    // The user's app holds /agent/r and /relay/r/app.
    let mut app = p.connect("/agent/r");
    let mut relay_app = p.connect("/relay/r/app");
    // Anyone else is refused, before the upgrade, with 409.
    assert_eq!(
        status(&p, "/agent/r", &[]),
        409,
        "a second app for /agent/r"
    );
    assert_eq!(
        status(&p, "/relay/r/app", &[]),
        409,
        "a second app for /relay/r/app"
    );
    assert_eq!(status(&p, "/agent/other", &[]), 101, "another room is free");
    // The holders keep their connections: they read (and answer the server's pings) for a while.
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_millis(600) {
        let _ = app.read();
        let _ = relay_app.read();
    }
    assert!(
        app.can_write() && relay_app.can_write(),
        "the holders are still connected"
    );
    assert_eq!(
        status(&p, "/agent/r", &[]),
        409,
        "still held while it answers"
    );
    // A holder that stops answering (it never reads, so it never answers a ping) is let go within three pings.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        status(&p, "/agent/r", &[]),
        101,
        "the silent app's room is free again"
    );
}

#[test]
fn apps_cannot_take_the_places_kept_for_the_token_s_holders() {
    // 16 places: apps may hold 14, the other 2 are kept for controllers, agents and MCP hosts.
    let p = Peer::start(&["--max-connections", "16"]);
    let apps: Vec<_> = (0..14)
        .map(|i| p.connect(&format!("/relay/app{i}/app")))
        .collect();
    let refused = upgrade(p.addr, &host(&p), "/agent/one-more", &[]);
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert!(
        refused.text.to_lowercase().contains("retry-after: 1"),
        "{}",
        refused.text
    );
    assert!(
        refused.text.contains("the most apps may hold"),
        "{}",
        refused.text
    );
    // A controller with the token still gets in.
    let _control = p.connect("/control/r");
    drop(apps);
}

#[test]
fn connections_are_capped_and_a_room_holds_no_more_than_a_mebibyte_for_nobody() {
    let p = Peer::start(&["--max-connections", "3"]);
    let mut held: Vec<_> = (0..3)
        .map(|i| p.connect(&format!("/relay/cap{i}/app")))
        .collect();
    assert_eq!(
        status(&p, "/agent/r", &[]),
        503,
        "a fourth connection waits for one to end"
    );
    let last = held.pop().expect("three");
    drop(last);
    let t0 = std::time::Instant::now();
    loop {
        match status(&p, "/relay/again/app", &[]) {
            101 => break,
            503 if t0.elapsed() < Duration::from_secs(3) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            other => panic!("the freed place is not given again: {other}"),
        }
    }
    drop(held);
    // An app refused because another holds its room gives its place back: refusals do not use up the cap.
    let p = Peer::start(&["--max-connections", "2"]);
    let first = p.connect("/agent/taken");
    for _ in 0..5 {
        assert_eq!(status(&p, "/agent/taken", &[]), 409, "the room is held");
    }
    let second = p.connect("/relay/after-refusals/app");
    drop((first, second));

    // An app alone in a relay room: what it sends waits for the agent, up to a bound; a side that sends more is
    // closed, not held.
    let p = Peer::start(&[]);
    let mut app = p.connect("/relay/flood/app");
    let chunk = "x".repeat(64 * 1024);
    let mut closed = false;
    for _ in 0..64 {
        if app.send(tungstenite::Message::text(chunk.clone())).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if !closed {
        // The close may only show on the next read.
        closed = loop {
            match app.read() {
                Ok(tungstenite::Message::Close(_)) => break true,
                // The read timeout (5 s): still open.
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break false
                }
                Err(_) => break true,
                Ok(_) => {}
            }
        };
    }
    assert!(closed, "4 MiB for nobody closed the sender");
}

#[test]
fn sockets_that_never_finish_their_request_are_closed_and_cannot_lock_the_app_out() {
    use std::io::{Read, Write};
    let p = Peer::start(&[]);
    let head = format!("GET /agent/slow HTTP/1.1\r\nHost: {}\r\n", host(&p));
    // 300 sockets: half send part of a request head and stop, half send nothing.
    let socks: Vec<_> = (0..300)
        .map(|i| {
            let mut s = std::net::TcpStream::connect(p.addr).expect("connect");
            if i % 2 == 0 {
                s.write_all(head.as_bytes()).expect("write");
            }
            s
        })
        .collect();
    let closed = |mut s: &std::net::TcpStream, wait: Duration| {
        s.set_read_timeout(Some(wait)).expect("timeout");
        let mut b = [0u8; 64];
        // EOF, a reset or a refusal's answer (nothing is ever answered to a request that did not end).
        !matches!(s.read(&mut b), Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
    };
    // None is closed at once: past the 256 the server reads at a time, the rest wait to be accepted.
    let early = socks
        .iter()
        .filter(|s| closed(s, Duration::from_millis(20)))
        .count();
    assert_eq!(early, 0, "{early} of 300 closed at once");
    // The app, behind them, gets in once the first ones time out (10 s), without being closed meanwhile.
    let t0 = std::time::Instant::now();
    let mut app = std::net::TcpStream::connect(p.addr).expect("connect");
    app.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let upgrade = common::upgrade_request(&host(&p), "/agent/slow", &[]);
    app.write_all(upgrade.as_bytes()).expect("send");
    let mut answer = [0u8; 12];
    app.read_exact(&mut answer).expect("the app's answer");
    assert_eq!(&answer, b"HTTP/1.1 101", "the app's connection");
    assert!(
        t0.elapsed() < Duration::from_secs(13),
        "the app waited {:?}",
        t0.elapsed()
    );
    // Every silent socket is closed after the header-read timeout, counted from when it was accepted.
    for s in &socks {
        let left = Duration::from_secs(25).saturating_sub(t0.elapsed());
        assert!(
            closed(s, left.max(Duration::from_millis(1))),
            "a silent socket is still open after {:?}",
            t0.elapsed()
        );
    }
}
