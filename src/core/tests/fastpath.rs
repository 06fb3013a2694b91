//! The browser build writes and reads the two messages of every call in JavaScript (`callMessage`,
//! `successMessage` and `abpPortListener` in src/web/client.js, app.js and link/port.js), not through the codec here. These run those
//! functions in Node and check them against the codec, so the two cannot drift apart: the same messages, and
//! the same reading of what arrives, including what each refuses.

use std::process::Command;

use serde_json::{json, Value};

use crate::core::dialect::abp::{call_message, decode, encode_app};
use crate::core::dialect::Hello;
use crate::core::message::{FromApp, Incoming, Outcome, ToAgent, ToApp};
use crate::core::payload::{CallFields, Wire};

/// Runs `cases` through the JS snippets in Node: each case is `{ kind, ... }`, each answer what the function gave.
fn in_node(cases: &Value) -> Vec<Value> {
    let web = concat!(env!("CARGO_MANIFEST_DIR"), "/src/web");
    let script = r#"
const web = process.argv[1];
const m = { ...(await import(`${web}/client.js`)), ...(await import(`${web}/app.js`)),
  ...(await import(`${web}/link/port.js`)) };
const none = (v) => (v === null ? undefined : v);
const answers = JSON.parse(process.argv[2]).map((c) => {
  switch (c.kind) {
    case 'call': return m.callMessage(c.id, c.callId, c.capability, c.params, none(c.timeout), none(c.progressToken));
    case 'success': return m.successMessage(c.id, c.callId, c.data, c.duration);
    case 'listen': {
      let got;
      const listener = m.abpPortListener(
        (...args) => { got = { on: 'call', args }; },
        (...args) => { got = { on: 'result', args }; },
        () => { got = { on: 'other' }; });
      listener({ data: c.message });
      return got;
    }
  }
});
console.log(JSON.stringify(answers, (k, v) => (k === 'timestamp' ? 0
  : typeof v === 'number' && Number.isNaN(v) ? 'NaN' : v === undefined ? null : v)));
"#;
    let out = Command::new("node")
        .args(["--input-type=module", "-e", script, web, &cases.to_string()])
        .output()
        .expect("node runs (the package's tests need Node anyway)");
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("node printed JSON")
}

fn no_hello() -> Hello<'static, Value> {
    static NULL: Value = Value::Null;
    Hello {
        info: &NULL,
        capabilities: None,
    }
}

fn encoded(msg: FromApp<Value>) -> Value {
    encode_app(msg, &|| 0.0, &no_hello())
        .expect("an ABP message")
        .0
}

fn call(timeout: Option<f64>, token: Option<&str>) -> Value {
    let fields = CallFields {
        id: "m1",
        call_id: "c1",
        capability: "doc.search",
        timeout,
        progress_token: token,
        trace: None,
    };
    call_message(&fields, &|| 0.0, json!({ "q": "x", "n": [1, 2] }))
}

#[test]
fn the_js_builders_write_the_codecs_messages() {
    let options = [
        (None, None),
        (Some(250.0), None),
        (None, Some("t1")),
        (Some(0.0), Some("t1")),
    ];
    let cases: Vec<Value> = options
        .iter()
        .map(|(timeout, token)| {
            json!({ "kind": "call", "id": "m1", "callId": "c1", "capability": "doc.search",
                "params": { "q": "x", "n": [1, 2] }, "timeout": timeout, "progressToken": token })
        })
        .chain([json!({ "kind": "success", "id": "m1", "callId": "c1",
            "data": { "hits": [] }, "duration": 1.5 })])
        .collect();
    let js = in_node(&Value::Array(cases));
    for (i, (timeout, token)) in options.iter().enumerate() {
        assert_eq!(
            js[i],
            call(*timeout, *token),
            "callMessage, timeout {timeout:?}, token {token:?}"
        );
    }
    let success = encoded(FromApp::CallResult {
        id: "m1".into(),
        call_id: "c1".into(),
        outcome: Outcome::Success {
            data: json!({ "hits": [] }),
        },
        duration: 1.5,
        transfer: None,
    });
    assert_eq!(js[4], success, "successMessage");
}

#[test]
fn the_js_port_reader_reads_what_the_codec_reads() {
    let messages = [
        call(None, None),
        call(Some(250.0), Some("t1")),
        // A timeout that is not a number is no timeout, and a token that is not a string no token, to both.
        json!({ "type": "capabilities/call", "id": "m2", "timestamp": 0,
            "payload": { "callId": "c2", "capability": "a", "options": { "timeout": "5", "progressToken": 5 } } }),
        // Not a call the state machine can start: the JS hands it to wasm whole, which refuses it.
        json!({ "type": "capabilities/call", "id": "m3", "timestamp": 0,
            "payload": { "callId": "c3", "capability": 7 } }),
        json!({ "type": "capabilities/call", "id": "m4", "timestamp": 0, "payload": "no" }),
        json!({ "type": "capabilities/call-result", "id": "m1", "timestamp": 0,
            "payload": { "success": true, "data": 1, "callId": "c1" } }),
        json!({ "type": "capabilities/call-result", "id": "m1", "timestamp": 0,
            "payload": { "success": false, "cancelled": true, "callId": "c1" } }),
        json!({ "type": "capabilities/call-result", "timestamp": 0,
            "payload": { "success": false, "cancelled": "yes" } }),
        json!({ "type": "capabilities/cancel", "id": "x", "timestamp": 0, "payload": { "callId": "c1" } }),
        json!(null),
    ];
    let cases: Vec<Value> = messages
        .iter()
        .map(|m| json!({ "kind": "listen", "message": m }))
        .collect();
    let js = in_node(&Value::Array(cases));
    for (m, got) in messages.iter().zip(&js) {
        let expected = match decode(m) {
            Ok(Incoming::ToApp(ToApp::Call {
                id,
                call_id,
                capability,
                params,
                timeout,
                progress_token,
                ..
            })) => json!({ "on": "call", "args": [id, call_id, id, call_id, capability, params,
                timeout.map_or(json!("NaN"), Value::number), progress_token] }),
            Ok(Incoming::ToAgent(ToAgent::CallResult {
                id,
                call_id,
                cancelled,
                payload,
            })) => json!({ "on": "result", "args": [id, call_id, payload, cancelled] }),
            _ => json!({ "on": "other" }),
        };
        assert_eq!(got, &expected, "abpPortListener on {m}");
    }
}
