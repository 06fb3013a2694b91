//! The browser build writes and reads the two messages of every call in JavaScript (`callMessage`,
//! `successMessage` and `abpPortListener` in src/web/client.js, app.js and link/port.js; the JSON-RPC dialects'
//! `rpcHead`, `toolResult` and `toolSuccess` in src/web/jsonrpc.js), not through the codec here. These run those
//! functions in Node and check them against the codec, so the two cannot drift apart: the same messages, and
//! the same reading of what arrives, including what each refuses.

use std::process::Command;

use serde_json::{json, Value};

use crate::core::dialect::abp::{call_message, decode, encode_app};
use crate::core::dialect::jsonrpc::head_of;
use crate::core::dialect::mcp::{response_of_tool_result, tool_result_of};
use crate::core::dialect::Hello;
use crate::core::message::{FromApp, Incoming, Outcome, ToAgent, ToApp};
use crate::core::payload::Kind;
use crate::core::payload::{CallFields, Wire};

/// Runs `cases` through the JS snippets in Node: each case is `{ kind, ... }`, each answer what the function gave.
fn in_node(cases: &Value) -> Vec<Value> {
    let web = concat!(env!("CARGO_MANIFEST_DIR"), "/src/web");
    let script = r#"
const web = process.argv[1];
const m = { ...(await import(`${web}/client.js`)), ...(await import(`${web}/app.js`)),
  ...(await import(`${web}/link/port.js`)), ...(await import(`${web}/jsonrpc.js`)) };
const none = (v) => (v === null ? undefined : v);
const answers = JSON.parse(process.argv[2]).map((c) => {
  switch (c.kind) {
    case 'call': return m.callMessage(c.id, c.callId, c.capability, c.params, none(c.timeout), none(c.progressToken));
    case 'success': return m.successMessage(c.id, c.callId, c.data, c.duration);
    case 'rpcHead': { let got; m.rpcHead(c.message, (...args) => { got = args; }); return got; }
    case 'toolResult': return m.toolResult(none(c.data));
    case 'toolSuccess': return m.toolSuccess(c.result, c.callId);
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

#[test]
fn the_js_mcp_builders_build_what_the_codec_builds() {
    // Objects with one key or keys in order: JSON.stringify keeps insertion order, serde_json sorts.
    let values = [
        json!({ "a": 1, "b": [true, null] }),
        json!({ "content": [{ "type": "text", "text": "mine" }], "isError": false }),
        json!({ "content": "not an array" }),
        json!([1, 2]),
        json!("text"),
        json!(7),
        json!(null),
    ];
    let results = [
        json!({ "content": [], "structuredContent": { "a": 1 } }),
        json!({ "content": [{ "type": "text", "text": "x" }] }),
        json!({ "structuredContent": null }),
        json!({ "isError": "true", "structuredContent": 2 }),
        json!({ "isError": false, "structuredContent": [3] }),
        json!({ "content": [{ "type": "text", "text": "bad" }], "isError": true }),
        json!(5),
    ];
    let cases: Vec<Value> = values
        .iter()
        .map(|d| json!({ "kind": "toolResult", "data": d }))
        .chain(
            results
                .iter()
                .map(|r| json!({ "kind": "toolSuccess", "result": r, "callId": "c1" })),
        )
        .collect();
    let js = in_node(&Value::Array(cases));
    for (d, got) in values.iter().zip(&js) {
        assert_eq!(got, &tool_result_of(d.clone()), "toolResult of {d}");
    }
    for (r, got) in results.iter().zip(&js[values.len()..]) {
        let read = response_of_tool_result(r, "c1");
        // An error result is left to the codec: the JS reads it as nothing.
        let expected = if read["success"] == json!(false) {
            Value::Null
        } else {
            read
        };
        assert_eq!(got, &expected, "toolSuccess of {r}");
    }
}

#[test]
fn the_js_json_rpc_reader_reads_what_the_codec_reads() {
    let messages = [
        json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": "echo" } }),
        json!({ "jsonrpc": "2.0", "id": "a-1", "result": { "content": [] } }),
        json!({ "jsonrpc": "2.0", "id": -3, "error": { "code": -32601, "message": "no" } }),
        // What the reader leaves to the codec or the codec refuses: a fractional id (its key is worked out in
        // wasm), null ids and results, params and errors that are not objects, another version, no method.
        json!({ "jsonrpc": "2.0", "id": 1.5, "result": null }),
        json!({ "jsonrpc": "2.0", "id": null, "method": "x", "params": [1], "error": "e" }),
        json!({ "jsonrpc": "1.0", "id": true, "method": 5 }),
        json!({ "id": { "n": 1 } }),
        json!([{ "jsonrpc": "2.0" }]),
        json!("text"),
        json!(null),
    ];
    let cases: Vec<Value> = messages
        .iter()
        .map(|m| json!({ "kind": "rpcHead", "message": m }))
        .collect();
    let js = in_node(&Value::Array(cases));
    let kind_of = |k: Kind| match k {
        Kind::Undefined => 0,
        Kind::Null => 1,
        Kind::Bool => 2,
        Kind::Number => 3,
        Kind::String => 4,
        Kind::Array => 5,
        Kind::Object => 6,
        Kind::Other => 7,
    };
    for (m, got) in messages.iter().zip(&js) {
        let h = head_of(m);
        let bit = |on: bool, b: u32| if on { b } else { 0 };
        let read = (kind_of(h.kind) << 4)
            | bit(h.id.is_some(), 1)
            | bit(h.params.is_some(), 2)
            | bit(h.result.is_some(), 4)
            | bit(h.error.is_some(), 8);
        // The JS gives keys of strings and integers only.
        let key = h
            .key
            .filter(|_| h.id.as_ref().is_some_and(|i| i.is_string() || i.is_i64()));
        let or_null = |v: Option<Value>| v.unwrap_or(Value::Null);
        // Absent values the JS passes as they are (a params that is not an object, say); the bits say whether
        // the reader takes them, so only what the bits mark is compared.
        let expected = json!([
            read,
            or_null(h.id),
            key,
            h.version,
            h.method,
            or_null(h.params),
            or_null(h.result),
            or_null(h.error)
        ]);
        let mut got = got.clone();
        for (i, b) in [(5, 2), (6, 4), (7, 8)] {
            if read & b == 0 {
                got[i] = Value::Null;
            }
        }
        assert_eq!(got, expected, "rpcHead of {m}");
    }
}
