//! The connections as their drivers use them: wire values in, wire values and events out, the policy made
//! once from the dialect and the carrier, and the drivers left with no codec of their own.

use serde_json::{json, Value};

use super::pair::{request, Pair};
use crate::core::agent::{AgentConfig, Settlement};
use crate::core::app::AppConfig;
use crate::core::capability::Registry;
use crate::core::connection::{AgentConnection, AppConnection, Sent, Transmit};
use crate::core::dialect::{Carrier, DialectKind, Policy};
use crate::core::error::{AbpError, ErrorCode};

fn agent(dialect: DialectKind, carrier: Carrier) -> AgentConnection<Value> {
    let info = json!({ "name": "test-agent", "version": "1" });
    AgentConnection::new(dialect, carrier, AgentConfig::default(), info, "a")
}

fn app(dialect: DialectKind, carrier: Carrier, config: AppConfig) -> AppConnection<Value> {
    let info = json!({ "id": "com.test", "name": "test", "version": "1" });
    AppConnection::new(dialect, carrier, config, info, "s")
}

/// Everything the agent has to send now.
fn agent_sent(a: &mut AgentConnection<Value>) -> Vec<Transmit<Value>> {
    std::iter::from_fn(|| a.poll(&|| 5.0))
        .filter_map(|o| o.event::<()>().err())
        .collect()
}

fn app_sent(a: &mut AppConnection<Value>, reg: &Registry<Value>) -> Vec<Transmit<Value>> {
    let caps = || reg.list();
    std::iter::from_fn(|| a.poll(&|| 5.0, &caps))
        .filter_map(|o| o.event::<()>().err())
        .collect()
}

#[test]
fn the_policy_is_the_dialects_with_what_the_carrier_changes() {
    for &d in DialectKind::ALL {
        assert_eq!(Policy::of(d, Carrier::Window), d.policy(), "{}", d.name());
        let stream = Policy::of(d, Carrier::Stream);
        assert!(
            !stream.resend_initialize,
            "{}: a stream gets one initialize",
            d.name()
        );
        assert_eq!(
            Policy {
                resend_initialize: d.policy().resend_initialize,
                ..stream
            },
            d.policy(),
            "{}: only the re-sending differs",
            d.name()
        );
        assert_eq!(agent(d, Carrier::Stream).policy(), stream);
        assert_eq!(agent(d, Carrier::Stream).dialect(), d);
    }
    assert!(DialectKind::Abp.policy().abp_envelope);
    assert!(DialectKind::ALL[1..]
        .iter()
        .all(|d| !d.policy().abp_envelope));
}

#[test]
fn an_agent_over_a_window_resends_its_initialize_and_over_a_stream_does_not() {
    for (carrier, sends) in [(Carrier::Window, 3), (Carrier::Stream, 1)] {
        let mut a = agent(DialectKind::Abp, carrier);
        a.connect(0.0);
        let mut sent = agent_sent(&mut a);
        for now in [50.0, 150.0] {
            a.handle_timeout(now);
            sent.extend(agent_sent(&mut a));
        }
        assert_eq!(sent.len(), sends, "{carrier:?}");
        assert!(sent.iter().all(|t| t.sent == Sent::Initialize));
        assert!(sent.iter().all(|t| t.message["type"] == "initialize"));
        assert_eq!(sent[0].message["payload"]["agent"]["name"], "test-agent");
        assert_eq!(sent[0].message["timestamp"], 5.0, "the clock given to poll");
    }
}

#[test]
fn only_an_abp_agent_re_sends_at_the_fast_pace() {
    // An MCP or ACP server answers each re-sent initialize as a request: one that answers within 50 ms (the SDK
    // servers do) sees one initialize; an ABP app is asked every 10 ms.
    for (dialect, by_40_ms) in [
        (DialectKind::Abp, 5),
        (DialectKind::Mcp, 1),
        (DialectKind::Acp, 1),
    ] {
        let mut a = agent(dialect, Carrier::Window);
        a.connect(0.0);
        let mut sent = agent_sent(&mut a).len();
        for now in (1..=40).map(f64::from) {
            a.handle_timeout(now);
            sent += agent_sent(&mut a).len();
        }
        assert_eq!(
            sent, by_40_ms,
            "{dialect:?}: initialize messages in the first 40 ms"
        );
    }
}

#[test]
fn the_dialects_least_progress_interval_holds_whatever_the_app_asks() {
    let config = AppConfig {
        progress_interval: 16.0,
        ..AppConfig::default()
    };
    let tesseron = app(DialectKind::Tesseron, Carrier::Stream, config.clone());
    assert_eq!(tesseron.config().progress_interval, 500.0);
    let abp = app(DialectKind::Abp, Carrier::Stream, config);
    assert_eq!(abp.config().progress_interval, 16.0);
}

#[test]
fn what_is_not_a_message_or_not_this_roles_is_told_apart() {
    let mut a = agent(DialectKind::Abp, Carrier::Stream);
    assert!(a.receive(&json!("hello"), 0.0).is_err());
    assert!(a.receive(&json!({ "type": "nonsense" }), 0.0).is_err());
    // An agent's own call, seen on a shared window: a message, but not the agent's to read.
    let call = json!({ "type": "capabilities/call", "id": "c", "payload": { "callId": "c",
        "capability": "echo", "params": {} } });
    assert_eq!(a.receive(&call, 0.0), Ok(false));
    let reg = Registry::default();
    let mut s = app(DialectKind::Abp, Carrier::Stream, AppConfig::default());
    assert_eq!(s.receive(&call, 0.0, &reg), Ok(true));
    let result = json!({ "type": "capabilities/call-result", "id": "c", "payload": { "callId": "c",
        "success": true } });
    assert_eq!(s.receive(&result, 0.0, &reg), Ok(false));
}

#[test]
fn a_call_that_cannot_be_sent_settles_with_the_reason() {
    let mut p = Pair::connected();
    p.agent.start_call(request("c1", "echo"), p.now).unwrap();
    let sent = agent_sent(&mut p.agent);
    assert_eq!(
        sent[0].sent,
        Sent::Call {
            call_id: "c1".into()
        }
    );
    let error = AbpError::new(ErrorCode::TransportError, "too big");
    p.agent.unsent(&sent[0].sent, error);
    p.drain();
    match p.settled("c1")[..] {
        [Settlement::Local { error, cancelled }] => {
            assert_eq!(
                (&error.code, *cancelled),
                (&ErrorCode::TransportError, false)
            );
            assert_eq!(error.message, "too big");
        }
        ref other => panic!("expected one local settlement, got {other:?}"),
    }
    assert_eq!(p.agent.pending_calls(), 0);
}

#[test]
fn a_result_that_cannot_be_sent_becomes_a_failure_sent_first() {
    for dialect in [DialectKind::Abp, DialectKind::Mcp] {
        let mut p = Pair::speaking(dialect, AppConfig::default());
        p.agent.connect(p.now);
        p.run();
        p.call("c1", "echo", json!({}));
        p.deliver_to_app();
        p.to_agent.clear();
        let started = p.started()[0].to_owned();
        p.app.complete(
            &started,
            crate::core::message::Outcome::Success { data: json!(1) },
            None,
            p.now,
        );
        let reg = Registry::default();
        let sent = app_sent(&mut p.app, &reg);
        let [result] = &sent[..] else {
            panic!("{}: one result, got {sent:?}", dialect.name());
        };
        assert!(matches!(result.sent, Sent::Result { .. }));
        p.app.unsent(
            &result.sent,
            AbpError::new(ErrorCode::OperationFailed, "not cloneable"),
        );
        let again = app_sent(&mut p.app, &reg);
        assert_eq!(again.len(), 1, "{}", dialect.name());
        p.to_agent.push_back(again[0].message.clone());
        p.run();
        match p.settled("c1")[..] {
            [Settlement::Remote(r)] if dialect == DialectKind::Abp => {
                assert_eq!(r["error"]["message"], "not cloneable");
            }
            [Settlement::Remote(r)] => assert_eq!(r["success"], false, "{r}"),
            ref other => panic!("{}: got {other:?}", dialect.name()),
        }
    }
}

#[test]
fn a_failure_that_cannot_be_sent_either_is_dropped_not_retried() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.deliver_to_app();
    p.to_agent.clear();
    let started = p.started()[0].to_owned();
    let outcome = crate::core::message::Outcome::Success { data: json!(1) };
    p.app.complete(&started, outcome, None, p.now);
    let reg = Registry::default();
    // A link that is gone: every send fails, and the driver reports each failure as it goes.
    let mut sends = 0;
    let caps = || reg.list();
    while let Some(out) = p.app.poll(&|| 5.0, &caps) {
        if let Err(t) = out.event::<()>() {
            sends += 1;
            assert!(sends < 10, "the driver would loop: {t:?}");
            p.app
                .unsent(&t.sent, AbpError::new(ErrorCode::OperationFailed, "gone"));
        }
    }
    assert_eq!(sends, 2, "the result, then its failure once");
}

#[test]
fn only_the_apps_shutdown_of_this_session_counts_from_an_unknown_window() {
    let mut p = Pair::connected();
    let session = p.agent.session_id().unwrap().to_owned();
    let bye = |s: &str| json!({ "type": "shutdown", "payload": { "sessionId": s } });
    assert!(!p.agent.names_session(&bye("someone-else")));
    assert!(!p
        .agent
        .names_session(&json!({ "type": "shutdown", "payload": {} })));
    assert!(!p.agent.names_session(&json!(42)));
    assert!(p.agent.names_session(&bye(&session)));
}

#[test]
fn a_hidden_page_tells_the_agent_of_its_session_and_ends_it() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.deliver_to_app();
    p.app.page_hidden();
    p.drain();
    let bye = p.app_sent_of("shutdown");
    assert_eq!(bye.len(), 1);
    assert_eq!(bye[0]["payload"]["reason"], "pagehide");
    assert_eq!(
        bye[0]["payload"]["sessionId"],
        p.agent.session_id().unwrap()
    );
    assert_eq!(p.aborted(), ["c1"], "the running handler is aborted");
    p.run();
    assert_eq!(
        super::pair::local(p.settled("c1")[0]).0,
        ErrorCode::Disconnected
    );
    // No session: nothing to tell.
    let before = p.app_sent.len();
    p.app.page_hidden();
    p.drain();
    assert_eq!(p.app_sent.len(), before);
}

#[test]
fn an_initialize_opens_the_session_once_and_its_resend_still_does() {
    let init = |id: &str| json!({ "type": "initialize", "id": id, "payload": { "protocolVersion": "0.1" } });
    let reg = Registry::default();
    let mut s = app(DialectKind::Abp, Carrier::Window, AppConfig::default());
    assert!(s.opens_session(&init("i1")));
    assert_eq!(s.receive(&init("i1"), 0.0, &reg), Ok(true));
    assert!(s.session_id().is_some());
    assert!(s.opens_session(&init("i1")), "the same initialize, re-sent");
    assert!(!s.opens_session(&init("i2")), "another agent's");
    assert!(!s.opens_session(&json!({ "type": "capabilities/call", "id": "x" })));
    // A dialect without ABP's envelope has no channel to offer.
    let mut m = app(DialectKind::Mcp, Carrier::Window, AppConfig::default());
    let mcp_init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {} });
    assert!(!m.opens_session(&mcp_init));
}

#[test]
fn every_dialect_has_a_subprotocol_that_names_it_or_none() {
    for &d in DialectKind::ALL {
        if let Some(p) = d.subprotocol() {
            assert_eq!(DialectKind::of_subprotocol(p), Some(d));
        }
    }
    assert_eq!(DialectKind::of_subprotocol("mcp"), Some(DialectKind::Mcp));
    assert_eq!(
        DialectKind::of_subprotocol("tesseron-gateway"),
        Some(DialectKind::Tesseron)
    );
    assert_eq!(DialectKind::of_subprotocol("acp"), None);
}

/// The drivers move values between their transports and their connections: none of them names a codec, the
/// encode context or the role filter, derives a policy from the dialect itself, or writes JSON-RPC or an ABP
/// envelope by hand (the dialect's `jsonrpc` and `abp` modules write them). Every Rust file of `src/web` and `peer/src` is read (their unit tests
/// left out), so that a new one is checked without being listed.
#[test]
fn no_driver_writes_the_wire() {
    let drivers = super::rust_files(&["src/web", "peer/src"]);
    let forbidden = [
        "Codec",
        "encode_agent",
        "encode_app",
        "Hello {",
        "for_agent",
        "for_app",
        "dialect.policy()",
        "policy: ",
        "resend_initialize",
        "AgentCore",
        "AppConn<",
        "AppConn::",
        "== DialectKind::",
        // A JSON-RPC message built by hand (`json!({ "jsonrpc": "2.0", … })`).
        "\"jsonrpc\": ",
        // An ABP envelope (`{ type, id, timestamp, payload }`) built by hand: the dialect's `abp` module writes it.
        "set(\"type\"",
        "set(\"payload\"",
        "(\"payload\", ",
        "\"payload\": ",
    ];
    for file in &drivers {
        let source = std::fs::read_to_string(file).expect("a readable source");
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        for word in forbidden {
            assert!(
                !code.contains(word),
                "{} names `{word}`: drivers go through AgentConnection/AppConnection, and the dialect writes the wire",
                file.display()
            );
        }
    }
    for needed in [
        "src/web/global.rs",
        "peer/src/gateway/mod.rs",
        "peer/src/mcp_http.rs",
    ] {
        assert!(
            drivers.iter().any(|f| f.ends_with(needed)),
            "{needed} was not read"
        );
    }
}
