//! `abp-peer mcp --http`: the gateway over MCP's Streamable HTTP (revision 2026-07-28), with raw HTTP/1.1 on
//! 127.0.0.1 (so every header is exactly what a client, a page or an attacker would send) and a native ABP app
//! joined to `/agent`. Covers the refusals (token 401, foreign `Origin` and rebinding `Host` 403, GET 405, a
//! notification 202, header mismatches -32020, a legacy request without a session 400); a call answered as JSON
//! and as an SSE stream whose progress comes first with the client's own token; ids given back as the client
//! wrote them; the client closing a call's stream aborting the app's handler within 500 ms; and a 2025-11-25
//! session (`initialize` → `Mcp-Session-Id`, 404 for an unknown one, a closed stream that is no cancel,
//! `notifications/cancelled` that is, DELETE that ends it and its calls).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
mod native_app;
use common::http::*;
use native_app::{App, AppEvent};

#[test]
fn refusals_as_the_transport_and_section_8_say() {
    let (g, log) = Gateway::start(&[]);
    assert!(log.contains("needs Authorization: Bearer TOKEN"), "{log}");
    assert!(!log.contains(TOKEN), "the token is never printed: {log}");
    let list =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta() } });
    let ok = modern_headers(&list, "application/json, text/event-stream");
    let without = |name: &str| -> Vec<String> {
        ok.iter()
            .filter(|h| !h.to_lowercase().starts_with(&name.to_lowercase()))
            .cloned()
            .collect()
    };
    let with = |extra: &str| -> Vec<String> {
        let mut h = ok.clone();
        h.push(extra.to_owned());
        h
    };
    assert_eq!(post(&g, &list, ok.clone()).0, 200, "a good request");
    let (status, head, _) = post(&g, &list, without("Authorization"));
    assert_eq!(status, 401, "no token");
    assert!(
        head.to_lowercase().contains("www-authenticate: bearer"),
        "{head}"
    );
    let mut wrong = without("Authorization");
    wrong.push("Authorization: Bearer not-the-token-at-all-0123456789".to_owned());
    assert_eq!(post(&g, &list, wrong).0, 401, "a wrong token");
    // The right token in the URL alone is refused (it would reach logs and history), and says where it goes.
    let (status, _, body) = answer(request(
        &g,
        "POST",
        &format!("/mcp?token={TOKEN}"),
        &without("Authorization"),
        &list.to_string(),
    ));
    assert_eq!(status, 401, "a token in the URL: {body}");
    assert!(body.contains("Authorization header"), "{body}");
    // The scheme's name in any case (RFC 9110).
    let mut capitals = without("Authorization");
    capitals.push(format!("Authorization: BEARER {TOKEN}"));
    assert_eq!(post(&g, &list, capitals).0, 200, "BEARER");
    assert_eq!(
        post(&g, &list, with("Origin: https://evil.example")).0,
        403,
        "a foreign Origin"
    );
    let own = format!("Origin: http://127.0.0.1:{}", g.http.port());
    assert_eq!(
        post(&g, &list, with(&own)).0,
        200,
        "the gateway's own origin"
    );
    let forged = answer({
        let mut s = TcpStream::connect(g.http).expect("connect");
        let body = list.to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: attacker.test:{}\r\n{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            g.http.port(),
            ok.join("\r\n"),
            body.len()
        );
        s.write_all(head.as_bytes()).expect("write");
        s
    });
    assert_eq!(forged.0, 403, "a rebinding Host");
    let get = answer(request(&g, "GET", "/mcp", &ok, ""));
    assert_eq!(get.0, 405, "GET");
    assert!(get.1.to_lowercase().contains("allow: post"), "{}", get.1);
    assert_eq!(
        answer(request(&g, "DELETE", "/mcp", &ok, "")).0,
        405,
        "DELETE"
    );
    assert_eq!(
        answer(request(&g, "POST", "/other", &ok, "{}")).0,
        404,
        "another path"
    );
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": {} });
    assert_eq!(post(&g, &note, ok.clone()).0, 202, "a notification");

    // The metadata headers against the body: -32020.
    let mismatch = |headers: Vec<String>, what: &str| {
        let (status, _, body) = post(&g, &list, headers);
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        assert_eq!(
            (status, v["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{what}: {body}"
        );
        assert_eq!(v["id"], 1, "{what}: the request's id");
    };
    mismatch(without("MCP-Protocol-Version"), "no version header");
    let mut other = without("MCP-Protocol-Version");
    other.push("MCP-Protocol-Version: 2025-11-25".to_owned());
    mismatch(other, "another version");
    let mut method = without("Mcp-Method");
    method.push("Mcp-Method: tools/call".to_owned());
    mismatch(method, "another method");
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "echo", "arguments": {}, "_meta": meta() } });
    let mut named = modern_headers(&call, "application/json");
    named.retain(|h| !h.starts_with("Mcp-Name"));
    named.push("Mcp-Name: fail".to_owned());
    let (status, _, body) = post(&g, &call, named);
    assert!(
        status == 400 && body.contains("-32020") && body.contains("Mcp-Name"),
        "{body}"
    );
    // Base64 form of the name (what a client sends for a name that is not plain ASCII) is decoded first.
    let mut encoded = modern_headers(&call, "application/json");
    encoded.retain(|h| !h.starts_with("Mcp-Name"));
    encoded.push("Mcp-Name: =?base64?ZWNobw==?=".to_owned());
    assert_eq!(post(&g, &call, encoded).0, 200, "Mcp-Name in base64");

    // A request whose header says 2026-07-28 without what its _meta must carry: 400, -32602.
    for meta in [
        json!({}),
        json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" }),
    ] {
        let bare = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": { "_meta": meta } });
        let (status, _, body) = post(&g, &bare, modern_headers(&bare, "application/json"));
        assert!(status == 400 && body.contains("-32602"), "{body}");
    }
    // This revision's errors about the request are HTTP errors: an unknown method 404, an unsupported version 400.
    let ping =
        json!({ "jsonrpc": "2.0", "id": 5, "method": "made/up", "params": { "_meta": meta() } });
    let (status, _, body) = post(&g, &ping, modern_headers(&ping, "application/json"));
    assert!(status == 404 && body.contains("-32601"), "{body}");
    let mut future = meta();
    future["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let later =
        json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": { "_meta": future } });
    let mut h = modern_headers(&later, "application/json");
    h.retain(|h| !h.starts_with("MCP-Protocol-Version"));
    h.push("MCP-Protocol-Version: v999.0.0".to_owned());
    let (status, _, body) = post(&g, &later, h);
    assert!(
        status == 400 && body.contains("-32022") && body.contains("v999.0.0"),
        "{body}"
    );

    // A legacy request (no version in _meta) other than initialize, without a session: refused, and says why.
    let legacy = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {} });
    let (status, _, body) = post(&g, &legacy, legacy_headers(None, "application/json"));
    assert!(status == 400 && body.contains("initialize"), "{body}");

    // --http-no-auth: no token asked, and a warning.
    let (open, log) = Gateway::start(&["--http-no-auth"]);
    assert!(log.contains("warning: --http-no-auth"), "{log}");
    let mut h = modern_headers(&list, "application/json");
    h.retain(|h| !h.starts_with("Authorization"));
    assert_eq!(post(&open, &list, h).0, 200, "no token needed");
}

#[test]
fn a_body_trickled_in_is_refused_after_10_s() {
    let (g, _) = Gateway::start(&[]);
    let list =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": meta() } });
    let mut s = TcpStream::connect(g.http).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", g.host());
    for h in modern_headers(&list, "application/json") {
        head += &h;
        head += "\r\n";
    }
    head += "Content-Length: 1000\r\n\r\n{";
    s.write_all(head.as_bytes()).expect("write");
    let t0 = Instant::now();
    // One byte every 2 s, as a slow client (or one that means harm) would send it.
    let mut trickle = s.try_clone().expect("clone");
    std::thread::spawn(move || {
        while trickle.write_all(b" ").is_ok() {
            std::thread::sleep(Duration::from_secs(2));
        }
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(13),
        "answered after {took:?}"
    );
}

#[test]
fn an_unused_2025_11_25_session_expires_and_frees_its_place() {
    let (g, _) = Gateway::start(&["--http-session-idle", "1"]);
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} });
    let in_use = |sid: &str| post(&g, &list, legacy_headers(Some(sid), "application/json")).0;
    // Sessions whose hosts went without a DELETE: every place taken, and the next initialize refused.
    let crashed: Vec<String> = (0..32).map(|_| legacy_session(&g)).collect();
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } });
    let (status, head, body) = post(&g, &init, legacy_headers(None, "application/json"));
    assert_eq!(status, 503, "{body}");
    assert!(head.to_lowercase().contains("retry-after: 1"), "{head}");
    assert!(body.contains("32 are open"), "{body}");
    // One of them keeps a GET stream open: in use, so it stays.
    let mut listening = request(
        &g,
        "GET",
        "/mcp",
        &legacy_headers(Some(&crashed[0]), "text/event-stream"),
        "",
    );
    let mut head = [0u8; 12];
    listening
        .read_exact(&mut head)
        .expect("the GET stream's head");
    assert_eq!(&head, b"HTTP/1.1 200");
    // A session used within the limit stays too.
    let busy = &crashed[1];
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(in_use(busy), 200);
    }
    // The others have expired: their id is unknown (404), and their places are free again.
    assert_eq!(in_use(&crashed[2]), 404, "an expired session");
    assert_eq!(
        in_use(&crashed[0]),
        200,
        "the session with its GET stream open"
    );
    legacy_session(&g);
}

/// The status line and head of what `s` answers first.
fn head_of(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn one_client_s_streams_leave_room_for_another() {
    let (g, _) = Gateway::start(&[]);
    let listen = json!({ "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": { "notifications": { "toolsListChanged": true }, "_meta": meta() } });
    let open_listen = || {
        let mut s = request(
            &g,
            "POST",
            "/mcp",
            &modern_headers(&listen, "application/json, text/event-stream"),
            &listen.to_string(),
        );
        let head = head_of(&mut s);
        (s, head)
    };
    // The 2026-07-28 endpoint (every holder of the token) opens 256 listens, and keeps them open.
    let mut listens: Vec<TcpStream> = (0..256)
        .map(|n| {
            let (s, head) = open_listen();
            assert!(head.starts_with("HTTP/1.1 200"), "listen {n}: {head}");
            s
        })
        .collect();
    // Another host still gets in: a 2025-11-25 session, and its requests.
    let sid = legacy_session(&g);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {} });
    assert_eq!(
        post(&g, &list, legacy_headers(Some(&sid), "application/json")).0,
        200
    );
    // Up to its share (half of the 1,024 requests /mcp holds open at once); past it, 429 with Retry-After.
    for n in 256..512 {
        let (s, head) = open_listen();
        assert!(head.starts_with("HTTP/1.1 200"), "listen {n}: {head}");
        listens.push(s);
    }
    let (_, head) = open_listen();
    assert!(head.starts_with("HTTP/1.1 429"), "{head}");
    assert!(head.to_lowercase().contains("retry-after: 1"), "{head}");
    // The session is another client: it still gets in.
    assert_eq!(
        post(&g, &list, legacy_headers(Some(&sid), "application/json")).0,
        200
    );
    // A listen closed gives its place back.
    drop(listens.pop());
    let t0 = Instant::now();
    loop {
        let (_, head) = open_listen();
        if head.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "{head}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_answered_as_json_and_as_streams_and_a_closed_stream_cancels() {
    let (g, mut app) = with_app().await;

    // tools/list, then a call answered as JSON with the client's own id (a string here).
    let v = listed(&g).await;
    assert_eq!(v["id"], json!("L"));
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo", "fail", "steps", "slow", "job"]);
    let echo = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "hi" }, "_meta": meta() } });
    let (status, head, body) =
        blocking(|| post(&g, &echo, modern_headers(&echo, "application/json"))).await;
    assert!(
        head.to_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        (status, &v["id"], &v["result"]["structuredContent"]["text"]),
        (200, &json!(1), &json!("hi"))
    );

    // A client that accepts a stream still gets JSON when the response is all there is to say.
    let (status, head, body) = blocking(|| {
        post(
            &g,
            &echo,
            modern_headers(&echo, "application/json, text/event-stream"),
        )
    })
    .await;
    assert!(
        status == 200
            && head
                .to_lowercase()
                .contains("content-type: application/json"),
        "{head}\n{body}"
    );

    // A call with a progress token, as an SSE stream: its progress (the client's token), then its result.
    let mut meta_p = meta();
    meta_p["progressToken"] = json!("my-token");
    let steps = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "steps", "arguments": {}, "_meta": meta_p } });
    let (status, head, body) = blocking(|| {
        post(
            &g,
            &steps,
            modern_headers(&steps, "application/json, text/event-stream"),
        )
    })
    .await;
    assert_eq!(status, 200);
    let head = head.to_lowercase();
    assert!(
        head.contains("content-type: text/event-stream") && head.contains("x-accel-buffering: no"),
        "{head}"
    );
    let messages = events(&body);
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{body}");
    assert!(
        progress
            .iter()
            .all(|p| p["params"]["progressToken"] == "my-token"),
        "{body}"
    );
    let last = messages.last().expect("a response");
    assert_eq!(
        (&last["id"], &last["result"]["structuredContent"]["steps"]),
        (&json!(1), &json!(3)),
        "{body}"
    );
    // Drain the app's events of those three calls.
    for _ in 0..3 {
        app.started().await;
    }

    // A running call whose client goes away: the app's handler is aborted within 500 ms. First before anything
    // was written for it (its answer would have been JSON), then once its SSE stream has opened with progress.
    for (arguments, opened) in [(json!({}), false), (json!({ "progress": true }), true)] {
        let mut meta_p = meta();
        meta_p["progressToken"] = json!("p");
        let slow = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "slow", "arguments": arguments, "_meta": meta_p } });
        let mut stream = request(
            &g,
            "POST",
            "/mcp",
            &modern_headers(&slow, "application/json, text/event-stream"),
            &slow.to_string(),
        );
        let (call_id, capability) = app.started().await;
        assert_eq!(capability, "slow");
        if opened {
            let seen = read_through(&mut stream, "notifications/progress").await;
            assert!(seen.contains("text/event-stream"), "{seen}");
        }
        let closed_at = Instant::now();
        drop(stream);
        let took = app.aborted_after(&call_id, closed_at).await;
        assert!(
            took < Duration::from_millis(500),
            "aborted {took:?} after the client went (stream opened: {opened})"
        );
    }
    app.leave();
}

/// A gateway (with the token) and the native app, joined.
async fn with_app() -> (Gateway, App) {
    let (g, _) = Gateway::start(&[]);
    let mut app = App::join(&g.ws).await;
    assert!(matches!(
        app.next("the app's session").await,
        AppEvent::Joined
    ));
    (g, app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_param_headers_must_mirror_the_arguments_the_tools_schema_marks() {
    let (g, mut app) = with_app().await;
    let v = listed(&g).await;
    let echo = v["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "echo"))
        .expect("echo listed");
    assert_eq!(
        echo["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region",
        "the annotation reaches the client: {echo}"
    );
    // `extra` headers besides the standard ones; the status and the JSON-RPC error code, if any.
    let call = |arguments: Value, extra: &[&str]| {
        let message = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": { "name": "echo", "arguments": arguments, "_meta": meta() } });
        let mut headers = modern_headers(&message, "application/json");
        headers.extend(extra.iter().map(|h| h.to_string()));
        let (status, _, body) = post(&g, &message, headers);
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        (status, v["error"]["code"].as_i64(), body)
    };
    let ok = |arguments: Value, extra: &[&str], what: &str| {
        let (status, code, body) = call(arguments, extra);
        assert_eq!((status, code), (200, None), "{what}: {body}");
    };
    let refused = |arguments: Value, extra: &[&str], what: &str| {
        let (status, code, body) = call(arguments, extra);
        assert_eq!((status, code), (400, Some(-32020)), "{what}: {body}");
    };
    blocking(|| {
        let all =
            json!({ "region": "us-west1", "count": 42, "where": { "flag": true }, "text": "x" });
        ok(
            all.clone(),
            &[
                "Mcp-Param-Region: us-west1",
                "Mcp-Param-Count: 42",
                "mcp-param-flag: true",
            ],
            "every marked argument mirrored (a header name in any case)",
        );
        ok(json!({ "text": "x" }), &[], "no marked argument, no header");
        ok(
            json!({ "region": null, "list": ["a"] }),
            &[],
            "a null value needs no header, nor does a mark under items (not statically reachable)",
        );
        ok(
            json!({ "region": "Hello, 世界" }),
            &["Mcp-Param-Region: =?base64?SGVsbG8sIOS4lueVjA==?="],
            "a value sent in base64",
        );
        ok(
            json!({ "region": "=?base64?SGVsbG8=" }),
            &["Mcp-Param-Region: =?base64?SGVsbG8="],
            "without the closing ?= a value is literal",
        );
        refused(
            json!({ "region": "us-west1" }),
            &[],
            "the header missing while the body has the value",
        );
        refused(
            json!({ "region": "us-west1" }),
            &["Mcp-Param-Region: eu-west1"],
            "another value",
        );
        refused(
            json!({ "count": 42 }),
            &["Mcp-Param-Count: 43"],
            "another integer",
        );
        refused(
            json!({ "where": { "flag": true } }),
            &["Mcp-Param-Flag: false"],
            "a nested boolean that differs",
        );
        refused(
            json!({ "region": "Hello" }),
            &["Mcp-Param-Region: =?base64?SGVsbG8?="],
            "base64 without its padding",
        );
        refused(
            json!({ "region": "Hello" }),
            &["Mcp-Param-Region: =?base64?SGVs!!!bG8=?="],
            "base64 with characters outside its alphabet",
        );
        refused(
            json!({}),
            &["Mcp-Param-Region: us-west1"],
            "a header for an argument the body does not have",
        );
        refused(
            json!({ "region": "a" }),
            &["Mcp-Param-Region: a", "Mcp-Param-Region: a"],
            "the header twice",
        );
    })
    .await;
    app.leave();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_says_whether_the_work_happened() {
    let (g, mut app) = with_app().await;
    listed(&g).await;

    // Advertised, and a `task` capability runs as a task only for a request that declares the extension.
    let (_, discover) = blocking(|| rpc(&g, "server/discover", json!({ "_meta": meta() }))).await;
    assert!(
        discover["result"]["capabilities"]["extensions"][TASKS].is_object(),
        "{discover}"
    );
    let job =
        |ms: u64, meta: Value| json!({ "name": "job", "arguments": { "ms": ms }, "_meta": meta });
    let (_, plain) = blocking(|| rpc(&g, "tools/call", job(1, meta()))).await;
    assert_eq!(
        plain["result"]["structuredContent"]["done"], true,
        "{plain}"
    );
    assert!(matches!(
        app.next("the plain call").await,
        AppEvent::Started { .. }
    ));
    assert!(matches!(
        app.next("its end").await,
        AppEvent::Finished { .. }
    ));

    let (status, created) = blocking(|| rpc(&g, "tools/call", job(50, meta_with_tasks()))).await;
    let created = &created["result"];
    assert_eq!(
        (status, created["resultType"].as_str()),
        (200, Some("task")),
        "{created}"
    );
    assert_eq!(created["status"], "working");
    assert!(created["ttlMs"].as_u64().is_some_and(|t| t > 0) && created["pollIntervalMs"].is_u64());
    assert!(
        created["createdAt"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{created}"
    );
    for absent in ["result", "error", "inputRequests", "requestState"] {
        assert!(created.get(absent).is_none(), "{absent}: {created}");
    }
    let task = created["taskId"].as_str().expect("an id").to_owned();
    let done = blocking(|| until_terminal(&g, &task)).await;
    assert_eq!(
        (
            done["status"].as_str(),
            &done["result"]["structuredContent"]["done"]
        ),
        (Some("completed"), &json!(true)),
        "{done}"
    );
    assert!(matches!(
        app.next("the task's call").await,
        AppEvent::Started { .. }
    ));
    assert!(matches!(
        app.next("its end").await,
        AppEvent::Finished { .. }
    ));
    // Cancelled after it finished: acknowledged, and it stays completed with its result.
    let (_, ack) = blocking(|| {
        rpc(
            &g,
            "tasks/cancel",
            json!({ "taskId": task, "_meta": meta_with_tasks() }),
        )
    })
    .await;
    assert_eq!(ack["result"], json!({ "resultType": "complete" }), "{ack}");
    assert_eq!(
        blocking(|| until_terminal(&g, &task)).await["status"],
        "completed"
    );

    // A running task cancelled: the handler's signal aborts within 500 ms, and the task ends cancelled.
    let (_, created) = blocking(|| rpc(&g, "tools/call", job(60_000, meta_with_tasks()))).await;
    let task = created["result"]["taskId"]
        .as_str()
        .expect("an id")
        .to_owned();
    let (call_id, _) = app.started().await;
    // A listen follows it: acknowledged with the task's id, then told of each change.
    let listen = json!({ "jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "notifications": { "taskIds": [task] }, "_meta": meta_with_tasks() } });
    let mut follower = request(
        &g,
        "POST",
        "/mcp",
        &modern_headers(&listen, "application/json, text/event-stream"),
        &listen.to_string(),
    );
    let mut heard = String::new();
    let ack = blocking(|| read_until(&mut follower, &mut heard, "acknowledged")).await;
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([task]),
        "{ack}"
    );
    let asked = Instant::now();
    blocking(|| {
        rpc(
            &g,
            "tasks/cancel",
            json!({ "taskId": task, "_meta": meta_with_tasks() }),
        )
    })
    .await;
    match app.next("the handler's abort").await {
        AppEvent::Aborted { call_id: c, at, .. } => {
            assert_eq!(c, call_id);
            assert!(at.duration_since(asked) < Duration::from_millis(500));
        }
        other => panic!("expected the abort, got {other:?}"),
    }
    assert_eq!(
        blocking(|| until_terminal(&g, &task)).await["status"],
        "cancelled"
    );
    let told = blocking(|| read_until(&mut follower, &mut heard, "\"cancelled\"")).await;
    assert_eq!(
        (
            told["method"].as_str(),
            told["params"]["taskId"].as_str(),
            told["params"]["status"].as_str()
        ),
        (
            Some("notifications/tasks"),
            Some(task.as_str()),
            Some("cancelled")
        ),
        "{told}"
    );
    assert_eq!(
        told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    drop(follower);
    let listen = json!({ "notifications": { "taskIds": [task] }, "_meta": meta() });
    let (status, v) = blocking(|| rpc(&g, "subscriptions/listen", listen)).await;
    assert_eq!(
        (status, v["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "following tasks needs the extension: {v}"
    );

    // Refusals: an unknown task; the task methods without the extension; a routing header that names another.
    let (status, v) = blocking(|| {
        rpc(
            &g,
            "tasks/get",
            json!({ "taskId": "nope", "_meta": meta_with_tasks() }),
        )
    })
    .await;
    assert_eq!(
        (status, v["error"]["code"].as_i64()),
        (400, Some(-32602)),
        "{v}"
    );
    let (status, v) =
        blocking(|| rpc(&g, "tasks/get", json!({ "taskId": task, "_meta": meta() }))).await;
    assert_eq!(
        (status, v["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "{v}"
    );
    assert!(
        v["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(),
        "{v}"
    );
    let get = json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/get",
        "params": { "taskId": task, "_meta": meta_with_tasks() } });
    let mut headers = modern_headers(&get, "application/json");
    headers.retain(|h| !h.starts_with("Mcp-Name"));
    headers.push("Mcp-Name: another".to_owned());
    let (status, _, body) = blocking(|| post(&g, &get, headers)).await;
    assert!(status == 400 && body.contains("-32020"), "{body}");

    // The race: a task finishing while its cancel is on its way. Whatever wins, the final state says what the
    // handler did: `completed` exactly when it finished, `cancelled` exactly when it was stopped.
    let (mut completed, mut cancelled) = (0, 0);
    for round in 0..50u64 {
        let (_, created) = blocking(|| rpc(&g, "tools/call", job(15, meta_with_tasks()))).await;
        let task = created["result"]["taskId"]
            .as_str()
            .expect("an id")
            .to_owned();
        let (call_id, _) = app.started().await;
        let wait = Duration::from_millis(round % 30);
        tokio::time::sleep(wait).await;
        blocking(|| {
            rpc(
                &g,
                "tasks/cancel",
                json!({ "taskId": task, "_meta": meta_with_tasks() }),
            )
        })
        .await;
        let end = blocking(|| until_terminal(&g, &task)).await;
        let handler = match app.next("the handler's end").await {
            AppEvent::Finished { call_id: c } if c == call_id => "finished",
            AppEvent::Aborted { call_id: c, .. } if c == call_id => "aborted",
            other => panic!("round {round}: expected the handler's end, got {other:?}"),
        };
        match (end["status"].as_str(), handler) {
            (Some("completed"), "finished") => completed += 1,
            (Some("cancelled"), "aborted") => cancelled += 1,
            (status, handler) => {
                panic!("round {round}: the task ended {status:?} but its handler {handler}: {end}")
            }
        }
    }
    eprintln!("tasks race: {completed} completed, {cancelled} cancelled, of 50");
    assert!(
        completed > 0 && cancelled > 0,
        "both ways were taken: {completed} / {cancelled}"
    );
    app.leave();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_session_where_a_closed_stream_is_not_a_cancel() {
    let (g, mut app) = with_app().await;

    // Without a session, only initialize is taken.
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} });
    let (status, _, body) =
        blocking(|| post(&g, &list, legacy_headers(None, "application/json"))).await;
    assert!(status == 400 && body.contains("initialize"), "{body}");
    let sid = blocking(|| legacy_session(&g)).await;
    let t0 = Instant::now();
    let tools = loop {
        let (_, _, body) =
            blocking(|| post(&g, &list, legacy_headers(Some(&sid), "application/json"))).await;
        let v: Value = serde_json::from_str(&body).expect("JSON");
        let n = v["result"]["tools"].as_array().map_or(0, Vec::len);
        if n > 0 || t0.elapsed() > Duration::from_secs(5) {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        tools,
        native_app::TOOLS.len(),
        "the session sees the app's tools"
    );
    assert_eq!(
        blocking(|| post(
            &g,
            &list,
            legacy_headers(Some("no-such-session"), "application/json")
        ))
        .await
        .0,
        404,
        "an unknown session"
    );

    // The stream of a running call closes: in this era that is no cancel.
    let stream = slow_in_session(&g, &sid, 5);
    let (call_id, _) = app.started().await;
    drop(stream);
    let quiet = tokio::time::timeout(Duration::from_millis(700), app.next("nothing")).await;
    assert!(
        quiet.is_err(),
        "a closed stream cancelled a 2025-11-25 call: {quiet:?}"
    );
    // notifications/cancelled is.
    let t0 = Instant::now();
    legacy_cancel(&g, &sid, 5).await;
    app.aborted_after(&call_id, t0).await;
    // And the cancelled call's stream, still open, ends with no response rather than wait for one.
    let stream = slow_in_session(&g, &sid, 8);
    let (call_id, _) = app.started().await;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a read timeout");
    let t0 = Instant::now();
    legacy_cancel(&g, &sid, 8).await;
    app.aborted_after(&call_id, t0).await;
    let (status, head, body) = blocking(move || answer(stream)).await;
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "the cancelled call's stream stayed open: {head}\n{body}"
    );
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(
        events(&body).iter().all(|m| m.get("id").is_none()),
        "a response was written after the cancel: {body}"
    );

    // DELETE ends the session: its calls are cancelled in the app, and its id is unknown after.
    let _stream = slow_in_session(&g, &sid, 6);
    let (call_id, _) = app.started().await;
    let t0 = Instant::now();
    let deleted = blocking(|| {
        answer(request(
            &g,
            "DELETE",
            "/mcp",
            &legacy_headers(Some(&sid), "application/json"),
            "",
        ))
    })
    .await;
    assert_eq!(deleted.0, 200);
    app.aborted_after(&call_id, t0).await;
    assert_eq!(
        blocking(|| post(&g, &list, legacy_headers(Some(&sid), "application/json")))
            .await
            .0,
        404
    );
    app.leave();
}

/// Session `sid`'s `tools/call` of the app's `slow` capability as request `id`, POSTed: its connection.
fn slow_in_session(g: &Gateway, sid: &str, id: u64) -> TcpStream {
    let slow = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "slow", "arguments": {} } });
    request(
        g,
        "POST",
        "/mcp",
        &legacy_headers(Some(sid), "application/json, text/event-stream"),
        &slow.to_string(),
    )
}
