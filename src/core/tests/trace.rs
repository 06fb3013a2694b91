//! Trace context with a call: what an agent gives reaches the app's handler (`AppOutput::Start`'s `trace`) over
//! ABP's `payload._meta`, MCP's `params._meta` (both eras) and ACP's `params._meta`; an invalid `traceparent`
//! drops the context and an invalid `tracestate` drops only itself; Tesseron's invocation has no place for it.

use serde_json::{json, Value};

use super::pair::{request, Pair};
use crate::core::agent::CallRequest;
use crate::core::app::AppConfig;
use crate::core::dialect::DialectKind;
use crate::core::trace::Trace;

const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

fn connected(dialect: DialectKind, version: Option<&str>) -> Pair {
    let mut p = Pair::speaking(dialect, AppConfig::default());
    if let Some(v) = version {
        p.agent.pin_version(v);
    }
    p.agent.connect(p.now);
    if dialect == DialectKind::Tesseron {
        p.app.connect(); // the app speaks first
    }
    p.run();
    assert!(p.agent.is_ready(), "connected in {}", dialect.name());
    p.agent_sent.clear();
    p.app_events.clear();
    p
}

/// The trace each started handler got, in order.
fn started_traces(p: &Pair) -> Vec<Option<Trace>> {
    p.starts().map(|(_, trace)| trace.cloned()).collect()
}

fn traced(call_id: &str, trace: Option<Trace>) -> CallRequest<Value> {
    CallRequest {
        params: json!({ "q": 1 }),
        trace,
        ..request(call_id, "echo")
    }
}

#[test]
fn an_agents_trace_reaches_the_handler_in_each_dialect_with_meta() {
    let trace = Trace::read(Some(PARENT), Some("rojo=00f067aa0ba902b7")).expect("valid");
    let cases = [
        (DialectKind::Abp, None),
        (DialectKind::Mcp, Some("2025-11-25")),
        (DialectKind::Mcp, Some("2026-07-28")),
        (DialectKind::Acp, None),
    ];
    for (dialect, version) in cases {
        let mut p = connected(dialect, version);
        p.call_with(traced("c1", Some(trace.clone())));
        p.call_with(traced("c2", None));
        let sent: Vec<Value> = p.to_app.iter().cloned().collect();
        p.run();
        let name = format!("{} {version:?}", dialect.name());
        assert_eq!(started_traces(&p), [Some(trace.clone()), None], "{name}");
        // On the wire: the first call's `_meta` has the context, the second has none.
        let meta = |m: &Value| {
            m.get("payload")
                .or(m.get("params"))
                .and_then(|p| p.get("_meta"))
                .cloned()
        };
        let first = meta(&sent[0]).unwrap_or_else(|| panic!("{name}: no _meta in {}", sent[0]));
        assert_eq!(first["traceparent"], PARENT, "{name}");
        assert_eq!(first["tracestate"], "rojo=00f067aa0ba902b7", "{name}");
        assert!(
            meta(&sent[1]).is_none_or(|m| m.get("traceparent").is_none()),
            "{name}"
        );
        // The caller's params are not where the context goes.
        assert!(
            sent[0].to_string().matches("traceparent").count() == 1,
            "{name}: {}",
            sent[0]
        );
    }
}

#[test]
fn an_invalid_context_from_the_wire_is_dropped_never_refused() {
    let mut p = connected(DialectKind::Abp, None);
    let call = |id: &str, meta: Value| {
        json!({ "type": "capabilities/call", "id": id, "timestamp": 1,
            "payload": { "callId": id, "capability": "echo", "params": {}, "_meta": meta } })
    };
    p.to_app.push_back(call(
        "c1",
        json!({ "traceparent": PARENT.to_uppercase(), "tracestate": "a=b" }),
    ));
    p.to_app.push_back(call(
        "c2",
        json!({ "traceparent": PARENT, "tracestate": "Not Valid" }),
    ));
    p.to_app.push_back(call("c3", json!({ "traceparent": 7 })));
    p.to_app.push_back(call("c4", json!("not an object")));
    p.run();
    let only_parent = Trace::read(Some(PARENT), None);
    assert_eq!(started_traces(&p), [None, only_parent, None, None]);
    assert!(
        p.app_sent_of("capabilities/call-result").is_empty(),
        "every call runs; none is refused"
    );
}

#[test]
fn an_mcp_hosts_trace_in_meta_reaches_the_handler() {
    let mut p = connected(DialectKind::Mcp, Some("2025-11-25"));
    p.to_app
        .push_back(json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": { "name": "echo", "arguments": {},
            "_meta": { "progressToken": 1, "traceparent": PARENT, "baggage": "k=v" } } }));
    p.run();
    assert_eq!(started_traces(&p), [Trace::read(Some(PARENT), None)]);
}

#[test]
fn a_tesseron_invocation_carries_no_trace() {
    let mut p = connected(DialectKind::Tesseron, None);
    let trace = Trace::read(Some(PARENT), None);
    p.call_with(traced("c1", trace));
    let sent: Vec<Value> = p.to_app.iter().cloned().collect();
    p.run();
    assert_eq!(started_traces(&p), [None]);
    assert!(!sent[0].to_string().contains("traceparent"), "{}", sent[0]);
}
