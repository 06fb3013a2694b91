//! Rooms shared across `abp-peer` processes over NATS (`--nats`), with a real `nats-server` on a free 127.0.0.1
//! port, locked as the docs deploy it (a user allowed `abp.>` only, TLS): a controller on one process drives the app connected to another (calls, progress, cancellation), no app
//! anywhere is answered at once, the first app wins across processes, and calls pending elsewhere settle when the
//! app leaves, when its process is killed, and when the NATS server restarts.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::nats::Nats;
use common::{answer_initialize, next, send, until, Peer, Socket};

/// `--nats URL --nats-tlsca CA` of `nats`, as `&str`s for [`Peer::start`] and [`Gateway::start`].
fn joined(nats: &Nats) -> Vec<String> {
    nats.args()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

fn peer(nats: &Nats) -> Peer {
    Peer::start(&strs(&joined(nats)))
}

/// A hand-written ABP app at `path` of `peer`: connected and initialized.
#[track_caller]
fn app(peer: &Peer, path: &str) -> Socket {
    let mut app = peer.connect(path);
    answer_initialize(&mut app);
    app
}

fn settle(app: &mut Socket, call: &Value, data: Value) {
    send(
        app,
        &json!({ "type": "capabilities/call-result", "id": call["id"], "timestamp": 0,
            "payload": { "callId": call["payload"]["callId"], "success": true, "data": data } }),
    );
}

#[test]
fn a_controller_on_one_process_drives_the_app_on_another() {
    let nats = Nats::start();
    let (a, b) = (peer(&nats), peer(&nats));
    let mut control = b.connect("/control/r");
    // No app on any process: answered at once, as on one process.
    let t0 = Instant::now();
    send(
        &mut control,
        &json!({ "op": "call", "ref": 1, "capability": "echo" }),
    );
    let error = until(&mut control, |e| e["op"] == "error");
    assert_eq!(error["ref"], 1);
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("no app is connected to /agent/r"),
        "{error}"
    );
    assert!(
        t0.elapsed() < Duration::from_millis(500),
        "no app took {:?}",
        t0.elapsed()
    );

    let mut app = app(&a, "/agent/r");
    until(&mut control, |e| e["op"] == "connected");
    // A call with progress, from B to the app on A, and its result back.
    send(
        &mut control,
        &json!({ "op": "call", "ref": 2, "capability": "echo", "params": { "x": 1 }, "progress": true }),
    );
    let call = until(&mut app, |m| m["type"] == "capabilities/call");
    assert_eq!(call["payload"]["params"], json!({ "x": 1 }));
    let call_id = call["payload"]["callId"].clone();
    let token = call["payload"]["options"]["progressToken"].clone();
    assert!(token.is_string(), "a progress token: {call}");
    send(
        &mut app,
        &json!({ "type": "progress", "timestamp": 0,
            "payload": { "callId": call_id, "operationId": token, "progress": 1, "total": 2 } }),
    );
    let progress = until(&mut control, |e| e["op"] == "progress");
    assert_eq!(progress["payload"]["progress"], 1);
    settle(&mut app, &call, json!("done"));
    let settled = until(&mut control, |e| e["op"] == "settled");
    assert_eq!(
        (&settled["ref"], &settled["response"]["data"]),
        (&json!(2), &json!("done"))
    );

    // Many commands in flight at once reach the app in the order they were sent, and each is settled by its own
    // answer, whatever order the app answers in.
    for i in 0..50 {
        send(
            &mut control,
            &json!({ "op": "call", "ref": 100 + i, "capability": "echo", "params": { "i": i } }),
        );
    }
    let calls: Vec<Value> = (0..50)
        .map(|_| until(&mut app, |m| m["type"] == "capabilities/call"))
        .collect();
    let order: Vec<Value> = calls
        .iter()
        .map(|c| c["payload"]["params"]["i"].clone())
        .collect();
    assert_eq!(order, (0..50).map(|i| json!(i)).collect::<Vec<_>>());
    for call in calls.iter().rev() {
        let i = call["payload"]["params"]["i"].clone();
        settle(&mut app, call, i);
    }
    for _ in 0..50 {
        let settled = until(&mut control, |e| e["op"] == "settled");
        let i = settled["ref"].as_i64().expect("a ref") - 100;
        assert_eq!(settled["response"]["data"], json!(i), "{settled}");
    }

    // An abort from B reaches the app on A as a cancel of that call.
    send(
        &mut control,
        &json!({ "op": "call", "ref": 3, "capability": "slow", "callId": "c-3" }),
    );
    let call = until(&mut app, |m| m["type"] == "capabilities/call");
    let t0 = Instant::now();
    send(
        &mut control,
        &json!({ "op": "abort", "callId": "c-3", "reason": "the user stopped it" }),
    );
    let cancel = until(&mut app, |m| m["type"] == "capabilities/cancel");
    assert!(
        t0.elapsed() < Duration::from_millis(500),
        "the cancel took {:?}",
        t0.elapsed()
    );
    assert_eq!(cancel["payload"]["callId"], call["payload"]["callId"]);
    assert_eq!(cancel["payload"]["reason"], "the user stopped it");
    let settled = until(&mut control, |e| e["op"] == "settled");
    assert_eq!(settled["ref"], 3);
    assert_eq!(settled["response"]["success"], false);

    // A newer controller of the room, on the app's process, replaces the one on B as on one process: B's
    // connection ends, and the events are the newer one's alone.
    let mut newer = a.connect("/control/r");
    while next(&mut control).is_some() {}
    send(
        &mut newer,
        &json!({ "op": "call", "ref": 4, "capability": "echo" }),
    );
    let call = until(&mut app, |m| m["type"] == "capabilities/call");
    settle(&mut app, &call, json!("newer"));
    let settled = until(&mut newer, |e| e["op"] == "settled");
    assert_eq!(settled["response"]["data"], "newer");
}

#[test]
fn the_first_app_wins_across_processes_and_its_key_takes_it_back() {
    let nats = Nats::start();
    let (a, b) = (peer(&nats), peer(&nats));
    let key = "k".repeat(20);
    let mut first = app(&a, &format!("/agent/w?key={key}"));
    // Another app on another process: refused, as on one process.
    let refused = tungstenite::connect(format!("{}/agent/w", b.url)).expect_err("refused");
    assert!(
        matches!(&refused, tungstenite::Error::Http(r) if r.status() == 403),
        "{refused}"
    );
    let other_key = format!("{}/agent/w?key={}", b.url, "x".repeat(20));
    let refused = tungstenite::connect(other_key).expect_err("refused");
    assert!(
        matches!(&refused, tungstenite::Error::Http(r) if r.status() == 403),
        "{refused}"
    );
    // The key the room was joined with takes it back from the other process, whose app is let go.
    let mut second = app(&b, &format!("/agent/w?key={key}"));
    assert!(
        next(&mut first).is_none(),
        "the first app's connection ends"
    );
    let mut control = a.connect("/control/w");
    connected(&mut control);
    send(
        &mut control,
        &json!({ "op": "call", "ref": 1, "capability": "echo" }),
    );
    let call = until(&mut second, |m| m["type"] == "capabilities/call");
    settle(&mut second, &call, json!("from the second"));
    assert_eq!(
        until(&mut control, |e| e["op"] == "settled")["response"]["data"],
        "from the second"
    );

    // Without a key: the first app wins, wherever the second one connects.
    let _third = app(&a, "/agent/nokey");
    let refused = tungstenite::connect(format!("{}/agent/nokey", b.url)).expect_err("refused");
    assert!(
        matches!(&refused, tungstenite::Error::Http(r) if r.status() == 409),
        "{refused}"
    );
}

/// A call from B pending in the app on A: (the app's socket, B's controller).
#[track_caller]
fn pending_call(a: &Peer, b: &Peer, room: &str) -> (Socket, Socket) {
    let mut app = app(a, &format!("/agent/{room}"));
    let mut control = b.connect(&format!("/control/{room}"));
    connected(&mut control);
    send(
        &mut control,
        &json!({ "op": "call", "ref": 9, "capability": "slow" }),
    );
    until(&mut app, |m| m["type"] == "capabilities/call");
    (app, control)
}

/// Waits until the room's agent (wherever it is) has its app's session.
#[track_caller]
fn connected(control: &mut Socket) {
    let t0 = Instant::now();
    for n in 0.. {
        let asked = format!("s{n}");
        send(control, &json!({ "op": "status", "ref": asked }));
        if until(control, |e| e["ref"] == asked.as_str())["connected"] == true {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the app never connected"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[track_caller]
fn settles_disconnected(control: &mut Socket, within: Duration) {
    let t0 = Instant::now();
    let settled = until(control, |e| e["op"] == "settled");
    assert!(t0.elapsed() < within, "settled after {:?}", t0.elapsed());
    assert_eq!(settled["ref"], 9);
    assert_eq!(
        settled["response"]["error"]["code"], "DISCONNECTED",
        "{settled}"
    );
}

#[test]
fn calls_pending_elsewhere_settle_when_the_app_leaves_or_its_process_dies() {
    let nats = Nats::start();
    let (a, b) = (peer(&nats), peer(&nats));
    let (app, mut control) = pending_call(&a, &b, "l");
    drop(app);
    settles_disconnected(&mut control, Duration::from_secs(1));

    let mut doomed = peer(&nats);
    let (_app, mut control) = pending_call(&doomed, &b, "k");
    doomed.child.kill().expect("SIGKILL");
    // The holder's heartbeat stops; the bound the README states is 1.25 s.
    settles_disconnected(&mut control, Duration::from_millis(1600));
}

/// Waits for the app to be told to cancel a call (`capabilities/cancel`): how long after `since`.
#[track_caller]
fn cancelled_in_the_app(app: &mut Socket, since: Instant) -> Duration {
    until(app, |m| m["type"] == "capabilities/cancel");
    since.elapsed()
}

#[test]
fn a_call_whose_controller_s_process_dies_is_cancelled_in_the_app() {
    let nats = Nats::start();
    let a = peer(&nats);
    let mut b = peer(&nats);
    let (mut app, _control) = pending_call(&a, &b, "orphan");
    let t0 = Instant::now();
    b.child.kill().expect("SIGKILL");
    // Its process no longer says it waits (every 250 ms): a second of silence, and one more look.
    let took = cancelled_in_the_app(&mut app, t0);
    assert!(
        took < Duration::from_secs(2),
        "cancelled {took:?} after B died"
    );
}

#[test]
fn after_the_nats_server_restarts_new_calls_work_and_nothing_pending_hangs() {
    let mut nats = Nats::start();
    let (a, b) = (peer(&nats), peer(&nats));
    let (mut app, mut control) = pending_call(&a, &b, "n");
    let t0 = Instant::now();
    nats.kill();
    settles_disconnected(&mut control, Duration::from_millis(1600));
    // A, holding the app, no longer hears from B: nobody can take the call's result, so the app stops it.
    let took = cancelled_in_the_app(&mut app, t0);
    assert!(
        took < Duration::from_secs(2),
        "cancelled {took:?} after NATS died"
    );
    nats.restart();
    // Both processes reconnect by themselves, and the app on A never left: B's `status` reaches its agent.
    let t0 = Instant::now();
    for n in 100.. {
        send(&mut control, &json!({ "op": "status", "ref": n }));
        let answer = until(&mut control, |e| e["ref"] == n);
        if answer["op"] == "status" {
            assert_eq!(answer["connected"], true, "{answer}");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the processes never came back: {answer}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    send(
        &mut control,
        &json!({ "op": "call", "ref": 10, "capability": "echo" }),
    );
    let call = until(&mut app, |m| {
        m["type"] == "capabilities/call" && m["payload"]["capability"] == "echo"
    });
    settle(&mut app, &call, json!("again"));
    let settled = until(&mut control, |e| e["op"] == "settled" && e["ref"] == 10);
    assert_eq!(settled["response"]["data"], "again");
}

// ---------------------------------------------------------------------------------------------------------
// `abp-peer mcp --http --nats`: a host's requests reach whichever gateway process, the app is on one of them.

mod native_app;
use common::http::*;
use native_app::{App, AppEvent};

/// Three gateway processes on one NATS server, the native app joined to the first.
async fn three_gateways(nats: &Nats) -> ([Gateway; 3], App) {
    let args = joined(nats);
    let start = || Gateway::start(&strs(&args)).0;
    let gateways = [start(), start(), start()];
    let mut app = App::join(&gateways[0].ws).await;
    assert!(matches!(
        app.next("the app's session").await,
        AppEvent::Joined
    ));
    (gateways, app)
}

fn call(id: u64, name: &str, arguments: Value, meta: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": name, "arguments": arguments, "_meta": meta } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_host_uses_the_app_through_any_gateway_process() {
    let nats = Nats::start();
    // No app anywhere: the same answer as one process.
    let lone = Gateway::start(&strs(&joined(&nats))).0;
    let echo = call(1, "echo", json!({ "text": "hi" }), meta());
    let (status, _, body) =
        blocking(|| post(&lone, &echo, modern_headers(&echo, "application/json"))).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("No app is connected"), "{body}");
    drop(lone);

    let ([a, b, c], mut app) = three_gateways(&nats).await;
    // The app is on A; B lists its tools and calls them.
    let tools = listed(&b).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo", "fail", "steps", "slow", "job"]);
    let (status, _, body) =
        blocking(|| post(&b, &echo, modern_headers(&echo, "application/json"))).await;
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        (status, &v["id"], &v["result"]["structuredContent"]["text"]),
        (200, &json!(1), &json!("hi"))
    );

    // The `Mcp-Param-*` headers are checked against the app's tools, where the app is.
    let marked = call(2, "echo", json!({ "region": "eu" }), meta());
    let (status, _, body) =
        blocking(|| post(&c, &marked, modern_headers(&marked, "application/json"))).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("-32020") && body.contains("Mcp-Param-Region"),
        "{body}"
    );
    let mut headers = modern_headers(&marked, "application/json");
    headers.push("Mcp-Param-Region: eu".into());
    let (status, _, body) = blocking(|| post(&c, &marked, headers)).await;
    assert_eq!(status, 200, "{body}");

    // Progress on the request's own stream at C, before its result.
    let mut m = meta();
    m["progressToken"] = json!("my-token");
    let steps = call(3, "steps", json!({}), m);
    let (_, _, body) = blocking(|| {
        post(
            &c,
            &steps,
            modern_headers(&steps, "application/json, text/event-stream"),
        )
    })
    .await;
    let seen = events(&body);
    assert!(seen.len() >= 2, "{body}");
    assert_eq!(seen[0]["params"]["progressToken"], "my-token", "{body}");
    assert_eq!(
        seen.last().map(|r| r["id"].clone()),
        Some(json!(3)),
        "{body}"
    );

    // Closing the stream at B aborts the handler on A.
    let mut m = meta();
    m["progressToken"] = 7.into();
    let slow = call(4, "slow", json!({ "progress": true }), m);
    let mut stream = request(
        &b,
        "POST",
        "/mcp",
        &modern_headers(&slow, "application/json, text/event-stream"),
        &slow.to_string(),
    );
    let call_id = app.started_of("slow").await;
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("notifications/progress") {
        let n = blocking(|| stream.read(&mut buf)).await.expect("read");
        assert!(n > 0, "the stream ended early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let closed_at = Instant::now();
    drop(stream);
    let took = app.aborted_after(&call_id, closed_at).await;
    assert!(
        took < Duration::from_millis(500),
        "aborted {took:?} after the client at B went"
    );
    eprintln!("closing the stream at B aborted the handler on A {took:?} later");

    // A task started through B is followed through C, and its result is there.
    let job = call(5, "job", json!({ "ms": 50 }), meta_with_tasks());
    let (status, _, body) =
        blocking(|| post(&b, &job, modern_headers(&job, "application/json"))).await;
    let v: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        (status, &v["result"]["resultType"]),
        (200, &json!("task")),
        "{body}"
    );
    let task = v["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let done = blocking(|| until_terminal(&c, &task)).await;
    assert_eq!(done["status"], "completed", "{done}");
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_through_another_process_ends_when_the_app_leaves_or_its_process_dies() {
    let nats = Nats::start();
    let slow = call(1, "slow", json!({}), meta());
    for kill in [false, true] {
        let ([mut a, b, _c], mut app) = three_gateways(&nats).await;
        listed(&b).await;
        // When the call has started in the app on A: the app leaves, or A is killed.
        let ending = tokio::spawn(async move {
            app.started().await;
            let t0 = Instant::now();
            if kill {
                a.child.kill().expect("SIGKILL");
            } else {
                app.leave();
            }
            (t0, a, app)
        });
        let (status, _, body) =
            blocking(|| post(&b, &slow, modern_headers(&slow, "application/json"))).await;
        let (t0, _a, _app) = ending.await.expect("the ending");
        let took = t0.elapsed();
        assert_eq!(status, 200, "{body}");
        if kill {
            // The bound the README states: a second without A's heartbeat, and one more look.
            assert!(
                took < Duration::from_millis(1600),
                "answered {took:?} after A was killed"
            );
            assert!(body.contains("stopped answering"), "{body}");
        } else {
            assert!(
                took < Duration::from_secs(1),
                "answered {took:?} after the app left"
            );
            assert!(
                body.contains("isError") && body.contains("DISCONNECTED"),
                "{body}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_host_s_gateway_dies_or_loses_nats_is_cancelled_in_the_app() {
    let mut nats = Nats::start();
    let ([_a, b, c], mut app) = three_gateways(&nats).await;
    let slow = call(1, "slow", json!({}), meta());
    for (g, lose_nats) in [(b, false), (c, true)] {
        listed(&g).await;
        let pid = g.child.id();
        let g = std::sync::Arc::new(g);
        let (at, request) = (g.clone(), slow.clone());
        // The host's request, passed to A's gateway (the host sees an error or a closed connection: not checked).
        let pending = tokio::task::spawn_blocking(move || answer(request_to(&at, &request)));
        let call_id = app.started_of("slow").await;
        let t0 = Instant::now();
        if lose_nats {
            nats.kill();
        } else {
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .expect("kill");
            assert!(killed.success());
        }
        let took = app.aborted_after(&call_id, t0).await;
        assert!(
            took < Duration::from_secs(2),
            "the handler aborted {took:?} after {}",
            if lose_nats {
                "NATS died"
            } else {
                "the host's gateway died"
            }
        );
        if lose_nats {
            nats.restart();
        }
        drop(pending);
    }
}

/// Sends `message` to `g` as a 2026-07-28 request, and returns the connection to read its answer from.
fn request_to(g: &Gateway, message: &Value) -> std::net::TcpStream {
    let headers = modern_headers(message, "application/json");
    request(g, "POST", "/mcp", &headers, &message.to_string())
}

/// A 2025-11-25 request of session `sid` to `g`: its status and JSON body.
fn in_session(g: &Gateway, sid: &str, message: &Value) -> (u16, Value) {
    let (status, _, body) = post(g, message, legacy_headers(Some(sid), "application/json"));
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_session_on_a_process_without_the_app_follows_the_app() {
    let nats = Nats::start();
    let args = joined(&nats);
    let (mut a, b) = (
        Gateway::start(&strs(&args)).0,
        Gateway::start(&strs(&args)).0,
    );
    // The host opens its session at B before any app exists (as a host started before its app does); the app
    // then joins A, and the session reaches it.
    let sid = blocking(|| legacy_session(&b)).await;
    let mut app = App::join(&a.ws).await;
    assert!(matches!(app.next("joined").await, AppEvent::Joined));
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} });
    let t0 = Instant::now();
    loop {
        let (_, v) = blocking(|| in_session(&b, &sid, &list)).await;
        if v["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            assert_eq!(v["id"], 1, "{v}");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "never listed: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let echo = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "legacy" } } });
    let (status, v) = blocking(|| in_session(&b, &sid, &echo)).await;
    assert_eq!(
        (status, &v["id"], &v["result"]["structuredContent"]["text"]),
        (200, &json!(2), &json!("legacy")),
        "{v}"
    );
    // Progress on the call's own stream, before its result.
    let steps = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "steps", "arguments": {}, "_meta": { "progressToken": "t3" } } });
    let (_, _, body) = blocking(|| {
        post(
            &b,
            &steps,
            legacy_headers(Some(&sid), "application/json, text/event-stream"),
        )
    })
    .await;
    let seen = events(&body);
    assert_eq!(
        seen.first().map(|m| m["params"]["progressToken"].clone()),
        Some(json!("t3")),
        "{body}"
    );
    assert_eq!(
        seen.last().map(|m| m["id"].clone()),
        Some(json!(3)),
        "{body}"
    );
    // This era's cancel, POSTed at B, aborts the handler on A.
    let slow = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": { "name": "slow", "arguments": {} } });
    let _stream = request(
        &b,
        "POST",
        "/mcp",
        &legacy_headers(Some(&sid), "application/json, text/event-stream"),
        &slow.to_string(),
    );
    let call_id = app.started_of("slow").await;
    let t0 = Instant::now();
    legacy_cancel(&b, &sid, 4).await;
    let took = app.aborted_after(&call_id, t0).await;
    assert!(
        took < Duration::from_millis(500),
        "the cancel took {took:?}"
    );
    // A, the app's process, killed during a call: the call is answered with an error within the bound.
    let slow = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "slow", "arguments": {} } });
    let ending = tokio::spawn(async move {
        app.started_of("slow").await;
        a.child.kill().expect("SIGKILL");
        (Instant::now(), a, app)
    });
    let (status, v) = blocking(|| in_session(&b, &sid, &slow)).await;
    let (t0, _a, _app) = ending.await.expect("the kill");
    assert!(
        t0.elapsed() < Duration::from_millis(1600),
        "answered {:?} after A was killed",
        t0.elapsed()
    );
    assert_eq!((status, &v["id"]), (200, &json!(5)), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("stopped answering"),
        "{v}"
    );
    // The session stays: the app joining B now is reached through it.
    let mut app = App::join(&b.ws).await;
    assert!(matches!(app.next("joined").await, AppEvent::Joined));
    let t0 = Instant::now();
    loop {
        let (_, v) = blocking(|| in_session(&b, &sid, &echo)).await;
        if v["result"]["structuredContent"]["text"] == "legacy" {
            break;
        }
        // Until the gateway on B has finished meeting the app, it says no app is ready.
        assert!(t0.elapsed() < Duration::from_secs(5), "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `abp-peer mcp --nats` serving a host on its stdio (no HTTP): lines to its stdin, and its stdout's lines.
struct StdioGateway {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: std::sync::mpsc::Receiver<Value>,
    _dir: common::TempDir,
}

impl StdioGateway {
    fn start(nats: &Nats) -> StdioGateway {
        use std::io::BufRead;
        let dir = common::TempDir::new();
        let mut child = Command::new(env!("CARGO_BIN_EXE_abp-peer"))
            .args(["mcp", "--listen", "127.0.0.1:0"])
            .args(joined(nats))
            .arg("--token-file")
            .arg(dir.0.join("token"))
            .env("ABP_PEER_TOKEN", TOKEN)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start abp-peer mcp --nats");
        let mut log = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        while !log
            .next()
            .expect("a line")
            .expect("text")
            .starts_with("abp-peer listening on ")
        {}
        std::thread::spawn(move || for _ in log {});
        let (tx, stdout) = std::sync::mpsc::channel();
        let out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        let stdin = child.stdin.take().expect("stdin");
        StdioGateway {
            child,
            stdin,
            stdout,
            _dir: dir,
        }
    }

    fn say(&mut self, message: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").expect("write to stdin");
    }

    /// The next line on stdout answering request `id` (5 s at most).
    #[track_caller]
    fn answer(&mut self, id: u64) -> Value {
        let t0 = Instant::now();
        loop {
            let left = Duration::from_secs(5).saturating_sub(t0.elapsed());
            let line = self
                .stdout
                .recv_timeout(left)
                .expect("an answer within 5 s");
            if line["id"] == id && line.get("method").is_none() {
                return line;
            }
        }
    }
}

impl Drop for StdioGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_host_of_a_process_without_the_app_follows_the_app() {
    let nats = Nats::start();
    let mut a = Gateway::start(&strs(&joined(&nats))).0;
    let mut b = StdioGateway::start(&nats);
    // The host starts its gateway, B, before the app exists; the app then joins A, and the host reaches it.
    b.say(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
    assert_eq!(b.answer(0)["result"]["protocolVersion"], "2025-11-25");
    b.say(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let mut app = App::join(&a.ws).await;
    assert!(matches!(app.next("joined").await, AppEvent::Joined));
    let t0 = Instant::now();
    for id in 1.. {
        b.say(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {} }));
        let listed = b.answer(id);
        if listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "never listed: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.say(
        &json!({ "jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": "stdio" } } }),
    );
    let echoed = b.answer(100);
    assert_eq!(
        echoed["result"]["structuredContent"]["text"], "stdio",
        "{echoed}"
    );
    // Its cancel reaches the handler on A.
    b.say(&json!({ "jsonrpc": "2.0", "id": 101, "method": "tools/call", "params": { "name": "slow", "arguments": {} } }));
    let call_id = app.started_of("slow").await;
    let t0 = Instant::now();
    b.say(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 101, "reason": "stop" } }));
    let took = app.aborted_after(&call_id, t0).await;
    assert!(
        took < Duration::from_millis(500),
        "the cancel took {took:?}"
    );
    // A killed during a call: the host gets an error for it within the bound.
    b.say(&json!({ "jsonrpc": "2.0", "id": 102, "method": "tools/call", "params": { "name": "slow", "arguments": {} } }));
    app.started_of("slow").await;
    a.child.kill().expect("SIGKILL");
    let t0 = Instant::now();
    let ended = blocking(move || (b.answer(102), b)).await;
    let (ended, _b) = ended;
    assert!(
        t0.elapsed() < Duration::from_millis(1600),
        "answered {:?} after A was killed",
        t0.elapsed()
    );
    assert!(
        ended["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("stopped answering"),
        "{ended}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_a_stdio_host_whose_process_dies_is_cancelled_in_the_app() {
    let nats = Nats::start();
    let a = Gateway::start(&strs(&joined(&nats))).0;
    let mut b = StdioGateway::start(&nats);
    let mut app = App::join(&a.ws).await;
    assert!(matches!(app.next("joined").await, AppEvent::Joined));
    b.say(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
    b.answer(0);
    b.say(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let t0 = Instant::now();
    for id in 1.. {
        b.say(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {} }));
        if b.answer(id)["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.say(&json!({ "jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": { "name": "slow", "arguments": {} } }));
    let call_id = app.started_of("slow").await;
    let t0 = Instant::now();
    b.child.kill().expect("SIGKILL");
    // The host's process no longer says its session is there: A's gateway lets the session go, with its call.
    let took = app.aborted_after(&call_id, t0).await;
    assert!(
        took < Duration::from_secs(2),
        "the handler aborted {took:?} after B died"
    );
}

mod relay {
    //! The relay's two sides on two processes.

    use super::*;
    use common::{next_frame, upgrade};
    use tungstenite::Message;

    fn say(ws: &mut Socket, t: &str) {
        ws.send(Message::text(t)).expect("send");
    }

    #[track_caller]
    fn heard(ws: &mut Socket) -> String {
        match next_frame(ws) {
            Some(Message::Text(t)) => t.as_str().to_owned(),
            Some(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    /// How long until `ws` is closed (a close, an error or EOF; frames before it are dropped), if within `wait`.
    fn closed_within(ws: &mut Socket, wait: Duration) -> Option<Duration> {
        let t0 = Instant::now();
        while t0.elapsed() < wait {
            match ws.read() {
                Ok(Message::Close(_)) | Err(_) => return Some(t0.elapsed()),
                Ok(_) => {}
            }
        }
        None
    }

    fn status(p: &Peer, path: &str) -> u16 {
        upgrade(p.addr, &format!("127.0.0.1:{}", p.addr.port()), path, &[]).status
    }

    #[test]
    fn the_relay_s_two_sides_meet_across_processes_with_the_rules_of_one() {
        let nats = Nats::start();
        let (a, b) = (peer(&nats), peer(&nats));
        let mut agent = a.connect("/relay/x/agent");
        // Said before any app joined: it waits, and reaches the app that joins another process.
        say(&mut agent, "early");
        let mut app = b.connect("/relay/x/app");
        assert_eq!(heard(&mut app), "early");
        say(&mut app, "hi");
        assert_eq!(heard(&mut agent), "hi");
        for i in 0..20 {
            say(&mut agent, &format!("m{i}"));
        }
        for i in 0..20 {
            assert_eq!(heard(&mut app), format!("m{i}"), "in order");
        }
        // The first app wins, on either process.
        assert_eq!(status(&a, "/relay/x/app"), 409);
        assert_eq!(status(&b, "/relay/x/app"), 409);
        // The app leaving is told to the agent, and so is the next app joining.
        drop(app);
        assert_eq!(heard(&mut agent), "abp-relay: app left");
        let mut next_app = b.connect("/relay/x/app");
        assert_eq!(heard(&mut agent), "abp-relay: app joined");
        say(&mut agent, "again");
        assert_eq!(heard(&mut next_app), "again");
        // The agent leaving closes the app, on the other process.
        drop(agent);
        assert!(closed_within(&mut next_app, Duration::from_secs(3)).is_some());

        // The app first, on A; the agent on B.
        let mut app = a.connect("/relay/y/app");
        let mut agent = b.connect("/relay/y/agent");
        say(&mut agent, "to the app");
        assert_eq!(heard(&mut app), "to the app");
        say(&mut app, "to the agent");
        assert_eq!(heard(&mut agent), "to the agent");
    }

    #[test]
    fn a_side_on_another_process_is_closed_when_the_room_s_process_dies() {
        let nats = Nats::start();
        let (mut a, b) = (peer(&nats), peer(&nats));
        let mut agent = a.connect("/relay/z/agent");
        let mut app = b.connect("/relay/z/app");
        say(&mut agent, "ready");
        assert_eq!(heard(&mut app), "ready");
        a.child.kill().expect("SIGKILL");
        // The home's heartbeat stops; the bound is GONE_AFTER and a heartbeat, 1.25 s.
        let took = closed_within(&mut app, Duration::from_millis(1600));
        assert!(took.is_some(), "the app's side stayed open");
        eprintln!("the side on B closed {took:?} after A was killed");
        drop(agent);
        // The room is free again: the next sides meet on B alone.
        let mut agent = b.connect("/relay/z/agent");
        let mut app = b.connect("/relay/z/app");
        say(&mut agent, "back");
        assert_eq!(heard(&mut app), "back");
    }
}
