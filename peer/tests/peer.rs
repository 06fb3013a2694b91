//! `abp-peer` as a process, over real sockets on 127.0.0.1: the relay pairs and forwards, one side leaving
//! closes the other, the native agent completes a call with a hand-written app after a flood of garbage, a
//! command's trace context reaches the app in the call's `_meta`, and a frame over the size limit ends only its
//! own connection.

use serde_json::{json, Value};
use tungstenite::Message;

mod common;
use common::{answer_initialize, next, send, until, Peer};

#[test]
fn the_relay_forwards_both_ways_and_one_side_leaving_closes_the_other() {
    let peer = Peer::start(&[]);
    let mut agent = peer.connect("/relay/r1/agent");
    // Sent before the app is there: kept for it.
    send(&mut agent, &json!({ "type": "initialize", "id": "i1" }));
    let mut app = peer.connect("/relay/r1/app");
    assert_eq!(next(&mut app).expect("forwarded")["id"], "i1");
    send(
        &mut app,
        &json!({ "type": "initialize-result", "id": "i1" }),
    );
    assert_eq!(
        next(&mut agent).expect("forwarded")["type"],
        "initialize-result"
    );
    // Another room is another pair.
    let mut other = peer.connect("/relay/r2/app");
    send(&mut agent, &json!({ "type": "notification", "n": 1 }));
    assert_eq!(next(&mut app).expect("forwarded")["n"], 1);
    drop(agent);
    assert!(
        next(&mut app).is_none(),
        "the app's connection is closed when the agent goes"
    );
    // The other room is untouched.
    let mut agent2 = peer.connect("/relay/r2/agent");
    send(&mut agent2, &json!({ "hello": "r2" }));
    assert_eq!(next(&mut other).expect("forwarded")["hello"], "r2");
}

#[test]
fn the_native_agent_survives_garbage_and_completes_a_call() {
    let peer = Peer::start(&[]);
    let mut control = peer.connect("/control/n1");
    let mut app = peer.connect("/agent/n1");
    // Garbage first: not JSON, wrong shapes, unknown types, deep nesting, binary, then a flood.
    for junk in [
        "not json",
        "{\"type\":",
        "42",
        "[]",
        "{\"type\":7}",
        "{\"type\":\"made/up\"}",
    ] {
        app.send(Message::text(junk)).expect("send");
    }
    app.send(Message::text("[".repeat(100_000))).expect("send");
    app.send(Message::binary(vec![1u8, 2, 3])).expect("send");
    // Half not JSON at all, half results for calls nobody made (read, and dropped by the core).
    for i in 0..10_000 {
        let frame = if i % 2 == 0 {
            "zzz".to_owned()
        } else {
            format!("{{\"type\":\"capabilities/call-result\",\"payload\":{{\"callId\":\"x{i}\"}}}}")
        };
        app.send(Message::text(frame)).expect("send");
    }
    answer_initialize(&mut app);
    until(&mut control, |e| e["op"] == "connected");
    send(
        &mut control,
        &json!({ "op": "call", "ref": 7, "capability": "echo", "params": { "x": 1 } }),
    );
    let call = until(&mut app, |m| m["type"] == "capabilities/call");
    assert_eq!(call["payload"]["params"], json!({ "x": 1 }));
    send(
        &mut app,
        &json!({ "type": "capabilities/call-result", "id": call["id"], "timestamp": 0,
            "payload": { "callId": call["payload"]["callId"], "success": true, "data": "ok" } }),
    );
    let settled = until(&mut control, |e| e["op"] == "settled");
    assert_eq!(settled["ref"], 7);
    assert_eq!(settled["response"]["data"], "ok");
    send(&mut control, &json!({ "op": "status", "ref": 8 }));
    let status = until(&mut control, |e| e["op"] == "status");
    assert_eq!(status["pending"], 0);
    // The 7 garbage frames above and the 5,000 "zzz" (binary frames are not messages and not counted).
    assert_eq!(status["ignored"], 5_007, "garbage counted: {status}");
}

#[test]
fn a_commands_trace_context_reaches_the_app_in_the_calls_meta() {
    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    let peer = Peer::start(&[]);
    let mut control = peer.connect("/control/t1");
    let mut app = peer.connect("/agent/t1");
    answer_initialize(&mut app);
    until(&mut control, |e| e["op"] == "connected");
    let cases = [
        (
            json!({ "traceparent": PARENT, "tracestate": "rojo=1" }),
            json!({ "traceparent": PARENT, "tracestate": "rojo=1" }),
        ),
        (
            json!({ "traceparent": PARENT, "tracestate": "Not Valid" }),
            json!({ "traceparent": PARENT }),
        ),
        (
            json!({ "traceparent": "00-junk", "tracestate": "rojo=1" }),
            Value::Null,
        ),
        (json!({}), Value::Null),
    ];
    for (i, (given, expected)) in cases.into_iter().enumerate() {
        let mut command = json!({ "op": "call", "ref": i, "capability": "echo", "params": {} });
        command
            .as_object_mut()
            .unwrap()
            .extend(given.as_object().unwrap().clone());
        send(&mut control, &command);
        let call = until(&mut app, |m| m["type"] == "capabilities/call");
        assert_eq!(call["payload"]["_meta"], expected, "case {i}: {call}");
        send(
            &mut app,
            &json!({ "type": "capabilities/call-result", "id": call["id"], "timestamp": 0,
                "payload": { "callId": call["payload"]["callId"], "success": true, "data": i } }),
        );
        until(&mut control, |e| e["op"] == "settled");
    }
}

#[test]
fn a_frame_over_the_limit_ends_only_its_own_connection() {
    let peer = Peer::start(&["--max-message-bytes", "1024"]);
    let mut big = peer.connect("/relay/m/app");
    big.send(Message::text("x".repeat(4096))).expect("send");
    assert!(next(&mut big).is_none(), "closed after the oversize frame");
    let mut agent = peer.connect("/relay/m2/agent");
    let mut app = peer.connect("/relay/m2/app");
    send(&mut agent, &json!({ "still": "serving" }));
    assert_eq!(next(&mut app).expect("forwarded")["still"], "serving");
}

#[test]
fn stdin_drives_the_agent_and_stdout_carries_only_events() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let dir = common::TempDir::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_abp-peer"))
        .args(["--listen", "127.0.0.1:0", "--stdin", "--token-file"])
        .arg(dir.0.join("token"))
        .env_remove("ABP_PEER_TOKEN")
        .env("XDG_STATE_HOME", dir.0.join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start abp-peer --stdin");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = loop {
        let line = stderr.next().expect("a line").expect("text");
        if let Some(url) = line.strip_prefix("abp-peer listening on ") {
            break url.to_owned();
        }
    };
    std::thread::spawn(move || for _ in stderr {});
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut event = || -> Value {
        let line = stdout.next().expect("an event").expect("text");
        serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("stdout has only JSON events: {line:?}"))
    };
    writeln!(stdin, "{}", json!({ "op": "status", "ref": 1 })).expect("write");
    let e = event();
    assert_eq!(
        (e["op"].as_str(), e["ref"].as_i64()),
        (Some("error"), Some(1)),
        "{e}"
    );
    assert_eq!(e["message"], "no app is connected to /agent");
    writeln!(stdin, "not json").expect("write");
    assert_eq!(event()["message"], "not a JSON command");
    // A hand-written app on /agent (the room "").
    let (mut app, _) = tungstenite::connect(format!("{url}/agent")).expect("connect");
    answer_initialize(&mut app);
    assert_eq!(event()["op"], "connected");
    writeln!(
        stdin,
        "{}",
        json!({ "op": "call", "ref": 2, "capability": "echo", "timeout": 100 })
    )
    .expect("write");
    let settled = event();
    assert_eq!(
        (settled["op"].as_str(), settled["ref"].as_i64()),
        (Some("settled"), Some(2)),
        "{settled}"
    );
    assert_eq!(
        settled["response"]["error"]["code"], "TIMEOUT",
        "the core's timer fired: {settled}"
    );
    let _ = child.kill();
    let _ = child.wait();
}
