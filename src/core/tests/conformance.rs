//! The rules of ABP beyond cancellation (docs/DESIGN.md, sections 2 and 7) that live in the core, driven through the real codec with simulated time:
//! the error table and what a thrown error keeps, handler results shaped as ABPResponses, descriptor
//! defaults and checks, availability and requirements gating calls, SupportInfo, capability changes (sent
//! and applied in both shapes), negotiated features, the protocol version check, re-initialize, elicitation
//! timeouts on both sides, the schema's const/pattern/format, and the manifest.

use serde_json::{json, Value};

use super::pair::{remote, Pair};
use crate::core::agent::AgentOutput;
use crate::core::app::{AppConfig, AppConn, AppOutput, ElicitEnd};
use crate::core::capability::Registry;
use crate::core::capability::{apply_changes, descriptor, manifest, support_info, Changes};
use crate::core::dialect::abp::{decode, encode_app};
use crate::core::dialect::Hello;
use crate::core::error::encode_error;
use crate::core::error::{AbpError, ErrorCode};
use crate::core::message::Outcome;
use crate::core::message::{outcome_of_return, outcome_of_throw};
use crate::core::schema::{format_ok, validate};

#[test]
fn the_error_table_sets_retryable_defaults() {
    let retryable = [
        "NOT_INITIALIZED",
        "SESSION_EXPIRED",
        "SESSION_INVALID",
        "PERMISSION_DENIED",
        "PERMISSION_REQUIRED",
        "TIMEOUT",
        "RATE_LIMITED",
        "DISCONNECTED",
    ];
    let not = [
        "ALREADY_INITIALIZED",
        "UNKNOWN_CAPABILITY",
        "INVALID_PARAMS",
        "MISSING_PARAM",
        "INVALID_TYPE",
        "CANCELLED",
        "NOT_IMPLEMENTED",
        "NOT_SUPPORTED",
        // "depends": false unless the thrower says otherwise
        "CAPABILITY_UNAVAILABLE",
        "REQUIREMENT_NOT_MET",
        "PRECONDITION_FAILED",
        "OPERATION_FAILED",
        "BROWSER_ERROR",
        "INTERNAL_ERROR",
        "TRANSPORT_ERROR",
        "MY_OWN_CODE",
    ];
    for code in retryable {
        let c = ErrorCode::parse(code);
        assert_eq!(c.as_str(), code);
        assert!(c.retryable(), "{code} is retryable");
    }
    for code in not {
        let c = ErrorCode::parse(code);
        assert_eq!(c.as_str(), code);
        assert!(!c.retryable(), "{code} is not retryable by default");
    }
}

#[test]
fn a_thrown_error_keeps_retry_after_alternatives_and_details_on_the_wire() {
    let thrown = json!({ "code": "RATE_LIMITED", "message": "slow down", "retryAfter": 5000,
        "alternatives": ["search.cached"], "details": { "limit": 10 } });
    let Outcome::Failure(e) = outcome_of_throw(&thrown, false, || "?".into()) else {
        panic!("a failure");
    };
    let wire = encode_error(e);
    assert_eq!(
        wire,
        json!({ "code": "RATE_LIMITED", "message": "slow down", "retryable": true,
            "details": { "limit": 10 }, "retryAfter": 5000, "alternatives": ["search.cached"] })
    );
    // The thrower's retryable wins over the table.
    let Outcome::Failure(e) = outcome_of_throw(
        &json!({ "code": "OPERATION_FAILED", "message": "x", "retryable": true }),
        false,
        || "?".into(),
    ) else {
        panic!("a failure");
    };
    assert!(e.retryable);
    // No code: OPERATION_FAILED with the message; an AbortError, or anything after abort, is cancelled.
    let plain = outcome_of_throw(&json!({ "message": "boom" }), false, || "?".into());
    assert!(
        matches!(plain, Outcome::Failure(e) if e.code == ErrorCode::OperationFailed && e.message == "boom")
    );
    let abort = outcome_of_throw(&json!({ "name": "AbortError" }), false, || "?".into());
    assert!(matches!(abort, Outcome::Cancelled { .. }));
    let late = outcome_of_throw(&json!({ "code": "X" }), true, || "?".into());
    assert!(matches!(late, Outcome::Cancelled { .. }));
}

#[test]
fn a_handler_may_return_a_ready_made_abp_response() {
    let failed = outcome_of_return(
        json!({ "success": false, "error": { "code": "PERMISSION_DENIED", "message": "no" } }),
        false,
    );
    assert!(
        matches!(&failed, Outcome::Failure(e) if e.code == ErrorCode::PermissionDenied && e.retryable),
        "{failed:?}"
    );
    let ok = outcome_of_return(
        json!({ "success": true, "data": { "n": 1 }, "metadata": {} }),
        false,
    );
    assert!(matches!(&ok, Outcome::Success { data } if *data == json!({ "n": 1 })));
    let no_error = outcome_of_return(json!({ "success": false }), false);
    assert!(matches!(no_error, Outcome::Failure(e) if e.code == ErrorCode::OperationFailed));
    let cancelled = outcome_of_return(json!({ "success": false, "cancelled": true }), false);
    assert!(matches!(cancelled, Outcome::Cancelled { .. }));
    // Other keys, or a non-boolean success: plain data.
    for data in [
        json!({ "success": true, "count": 3 }),
        json!({ "success": "yes" }),
        json!([true]),
        json!("success"),
    ] {
        let out = outcome_of_return(data.clone(), false);
        assert!(
            matches!(&out, Outcome::Success { data: d } if *d == data),
            "{data}"
        );
    }
    // Whatever it returned after its signal aborted is a cancellation.
    assert!(matches!(
        outcome_of_return(json!(1), true),
        Outcome::Cancelled { .. }
    ));
}

#[test]
fn a_returned_failure_response_reaches_the_agent_as_a_failure() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    let out = outcome_of_return(
        json!({ "success": false, "error": { "code": "NOT_FOUND_HERE", "message": "gone" } }),
        false,
    );
    p.app.complete("c1", out, None, p.now);
    p.run();
    let r = remote(p.settled("c1")[0]);
    assert_eq!(r["success"], false);
    assert_eq!(r["error"]["code"], "NOT_FOUND_HERE");
    assert_eq!(r["error"]["message"], "gone");
    assert!(r["metadata"]["duration"].is_number());
}

#[test]
fn descriptors_get_defaults_and_bad_fields_are_named() {
    let d: Value = descriptor(
        "pdf.export",
        Some(&json!({ "description": "x", "extra": 1 })),
    )
    .unwrap();
    assert_eq!(
        d,
        json!({ "name": "pdf.export", "description": "x", "extra": 1, "available": true,
            "requirements": [], "features": {} })
    );
    let none: Value = descriptor("a.b", None).unwrap();
    assert_eq!(none["available"], true);
    let bad = [
        (
            json!({ "description": 3 }),
            "descriptor.description must be a string",
        ),
        (
            json!({ "available": "yes" }),
            "descriptor.available must be a boolean",
        ),
        (
            json!({ "inputSchema": "object" }),
            "descriptor.inputSchema must be an object",
        ),
        (
            json!({ "requirements": {} }),
            "descriptor.requirements must be an array",
        ),
        (
            json!({ "requirements": [{ "type": "magic", "description": "", "met": true }] }),
            "descriptor.requirements[0].type must be one of",
        ),
        (
            json!({ "requirements": [{ "type": "permission", "description": "cam" }] }),
            "descriptor.requirements[0].met must be a boolean",
        ),
        (
            json!({ "alternatives": [1] }),
            "descriptor.alternatives must be an array",
        ),
        (
            json!({ "task": "sometimes" }),
            "descriptor.task must be 'optional' or 'required'",
        ),
        (json!({ "task": true }), "descriptor.task must be"),
        (json!([]), "descriptor must be an object"),
    ];
    for (given, message) in bad {
        let err = descriptor::<Value>("a.b", Some(&given)).unwrap_err();
        assert!(err.starts_with(message), "{given}: {err}");
    }
}

fn pair_with(name: &str, d: Value) -> Pair {
    let mut p = Pair::connected();
    p.reg.register(name, Some(d)).unwrap();
    p
}

#[test]
fn unavailable_and_unmet_capabilities_are_refused_without_running_the_handler() {
    let mut p = pair_with(
        "cam.snap",
        json!({ "available": false, "alternatives": ["cam.upload"] }),
    );
    p.reg
        .register(
            "geo.locate",
            Some(json!({ "requirements": [
                { "type": "permission", "description": "geolocation", "met": false },
                { "type": "context", "description": "secure context", "met": true } ] })),
        )
        .unwrap();
    p.call("c1", "cam.snap", json!({}));
    p.call("c2", "geo.locate", json!({}));
    p.run();
    assert!(p.started().is_empty(), "no handler ran");
    let r1 = remote(p.settled("c1")[0]);
    assert_eq!(
        [&r1["error"]["code"], &r1["error"]["retryable"]],
        [&json!("CAPABILITY_UNAVAILABLE"), &json!(false)]
    );
    assert_eq!(r1["error"]["alternatives"], json!(["cam.upload"]));
    let r2 = remote(p.settled("c2")[0]);
    assert_eq!(r2["error"]["code"], "REQUIREMENT_NOT_MET");
    assert_eq!(
        r2["error"]["details"]["requirements"],
        json!([{ "type": "permission", "description": "geolocation", "met": false }])
    );
    // Requirements change while calls run: the next call sees the new state; a running one is untouched.
    p.reg
        .update(
            "geo.locate",
            &json!({ "requirements": [{ "type": "permission", "description": "geolocation", "met": true }] }),
        )
        .unwrap();
    p.call("c3", "geo.locate", json!({}));
    p.run();
    assert_eq!(p.started(), ["c3"]);
    p.reg
        .update("geo.locate", &json!({ "available": false }))
        .unwrap();
    p.complete("c3", json!("here"));
    p.run();
    assert_eq!(remote(p.settled("c3")[0])["data"], "here");
    assert!(p.reg.update("nope", &json!({})).is_err());
    assert!(p
        .reg
        .update("geo.locate", &json!({ "available": 1 }))
        .unwrap_err()
        .contains("available"));
}

#[test]
fn support_info_reflects_the_descriptor() {
    let d = descriptor::<Value>(
        "geo.locate",
        Some(
            &json!({ "requirements": [{ "type": "permission", "description": "geo", "met": false }],
            "features": { "streaming": true }, "alternatives": ["geo.ip"] }),
        ),
    )
    .unwrap();
    let s = support_info(Some(&d));
    assert_eq!(s["supported"], true);
    assert_eq!(s["available"], false);
    assert!(s["reason"].is_string());
    assert_eq!(s["features"], json!({ "streaming": true }));
    assert_eq!(s["alternatives"], json!(["geo.ip"]));
    assert_eq!(s["requirements"][0]["met"], false);
    let ok = support_info(Some(&descriptor::<Value>("a.b", None).unwrap()));
    assert_eq!(
        [&ok["supported"], &ok["available"]],
        [&json!(true), &json!(true)]
    );
    assert!(ok.get("reason").is_none());
    let missing = support_info::<Value>(None);
    assert_eq!(
        [&missing["supported"], &missing["available"]],
        [&json!(false), &json!(false)]
    );
}

#[test]
fn capability_changes_carry_added_removed_changed_and_the_list() {
    let mut p = Pair::connected();
    p.reg.register("late.one", None).unwrap();
    p.app.capabilities_changed(&Changes {
        added: vec!["late.one".into()],
        ..Changes::default()
    });
    p.app.capabilities_changed(&Changes::default()); // nothing changed: nothing sent
    p.run();
    let sent = p.app_sent_of("notification");
    assert_eq!(sent.len(), 1);
    let data = &sent[0]["payload"]["data"];
    assert_eq!(
        sent[0]["payload"]["event"],
        "notifications/capabilities/list_changed"
    );
    assert_eq!(data["added"], json!(["late.one"]));
    assert_eq!(
        [&data["removed"], &data["changed"]],
        [&json!([]), &json!([])]
    );
    assert_eq!(data["capabilities"].as_array().unwrap().len(), 3);
    let change = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::CapabilitiesChanged { payload } => Some(payload.clone()),
        _ => None,
    });
    assert_eq!(change.unwrap()["added"], json!(["late.one"]));
}

#[test]
fn the_agent_applies_both_change_shapes_and_never_empties_its_list() {
    let known = json!([{ "name": "a", "description": "A" }, { "name": "b" }, { "name": "c" }]);
    // The ABP docs' shape, without a list.
    let (list, data) = apply_changes(
        &known,
        &json!({ "added": ["d"], "removed": ["b"], "changed": ["a"] }),
    );
    assert_eq!(
        list,
        json!([{ "name": "a", "description": "A" }, { "name": "c" }, { "name": "d" }])
    );
    assert_eq!(data["capabilities"], list);
    assert_eq!(data["changed"], json!(["a"]));
    // Only `changed`: the list stays as it is.
    let (list, _) = apply_changes(&known, &json!({ "changed": ["x"] }));
    assert_eq!(list, known);
    // Nothing usable: unchanged.
    for junk in [
        json!({}),
        json!(null),
        json!("x"),
        json!({ "capabilities": 3 }),
    ] {
        assert_eq!(apply_changes(&known, &junk).0, known, "{junk}");
    }
    // A full list (ours, or an array as the data) replaces it; added/removed are worked out when absent.
    let (list, data) = apply_changes(&known, &json!([{ "name": "a" }, { "name": "z" }, 7]));
    assert_eq!(list, json!([{ "name": "a" }, { "name": "z" }]));
    assert_eq!(data["added"], json!(["z"]));
    assert_eq!(data["removed"], json!(["b", "c"]));
}

#[test]
fn a_docs_shaped_list_changed_message_does_not_empty_the_agents_list() {
    // As a raw wire message, both as a notification event and as its own message type.
    for raw in [
        json!({ "type": "notification", "payload": { "event": "notifications/capabilities/list_changed",
            "data": { "changed": ["x"] } } }),
        json!({ "type": "notifications/capabilities/list_changed", "payload": { "changed": ["x"] } }),
    ] {
        let mut p = Pair::connected();
        assert_eq!(p.agent.receive(&raw, p.now), Ok(true));
        let payload = std::iter::from_fn(|| p.agent.poll(&|| 0.0))
            .find_map(|e| match e {
                AgentOutput::CapabilitiesChanged { payload } => Some(payload),
                _ => None,
            })
            .unwrap();
        let known = json!([{ "name": "x" }, { "name": "y" }]);
        assert_eq!(apply_changes(&known, &payload).0, known, "{raw}");
    }
}

fn lone_app(config: AppConfig) -> (AppConn<Value>, Registry<Value>) {
    let mut reg = Registry::default();
    reg.register("echo", None).unwrap();
    (AppConn::new(config, "s"), reg)
}

/// Feeds one raw message and returns what the app sent, encoded.
fn feed(app: &mut AppConn<Value>, reg: &Registry<Value>, raw: Value, now: f64) -> Vec<Value> {
    app.handle(decode(&raw).unwrap().for_app().unwrap(), now, reg);
    drain(app)
}

fn drain(app: &mut AppConn<Value>) -> Vec<Value> {
    let info = json!({ "id": "com.t", "name": "t", "version": "1" });
    let mut sent = Vec::new();
    while let Some(o) = app.poll() {
        if let AppOutput::Transmit(m) = o {
            let hello = Hello {
                info: &info,
                capabilities: None,
            };
            sent.extend(encode_app(m, &now_of, &hello).map(|(v, _)| v));
        }
    }
    sent
}

fn now_of() -> f64 {
    0.0
}

fn init(id: &str, payload: Value) -> Value {
    json!({ "type": "initialize", "id": id, "payload": payload })
}

#[test]
fn features_the_agent_turned_off_are_not_used_and_the_result_says_what_was_agreed() {
    let (mut app, reg) = lone_app(AppConfig::default());
    let sent = feed(
        &mut app,
        &reg,
        init(
            "i1",
            json!({ "protocolVersion": "0.1", "features": { "progress": false, "notifications": false,
                "elicitation": true }, "agentCapabilities": { "allowedRequests": ["elicitation/confirm"] } }),
        ),
        0.0,
    );
    assert_eq!(
        sent[0]["payload"]["features"],
        json!({ "notifications": false, "progress": false, "elicitation": true, "dynamicCapabilities": true })
    );
    let call = json!({ "type": "capabilities/call", "id": "m1", "payload": { "callId": "c1",
        "capability": "echo", "params": {}, "options": { "progressToken": "t1" } } });
    feed(&mut app, &reg, call, 0.0);
    app.progress("c1", json!({ "progress": 1 }), 100.0);
    assert!(!app.notify("hello", json!(1)));
    app.capabilities_changed(&Changes {
        added: vec!["x".into()],
        ..Changes::default()
    });
    assert!(
        drain(&mut app).is_empty(),
        "no progress, notification or list change"
    );
    // Elicitation: only allowed methods are sent.
    let refused = app.elicit(Some("c1"), json!({ "method": "elicitation/input" }), 0.0);
    assert_eq!(refused.unwrap_err().code, ErrorCode::NotSupported);
    assert!(drain(&mut app).is_empty());
    assert!(app
        .elicit(Some("c1"), json!({ "method": "elicitation/confirm" }), 0.0)
        .is_ok());
    assert_eq!(drain(&mut app)[0]["type"], "elicitation/request");

    let (mut app, reg) = lone_app(AppConfig::default());
    feed(
        &mut app,
        &reg,
        init("i1", json!({ "features": { "elicitation": false } })),
        0.0,
    );
    let refused = app.elicit(None, json!({ "method": "elicitation/confirm" }), 0.0);
    assert_eq!(refused.unwrap_err().code, ErrorCode::NotSupported);
}

#[test]
fn an_initialize_with_another_major_version_is_not_supported() {
    let (mut app, reg) = lone_app(AppConfig::default());
    let sent = feed(
        &mut app,
        &reg,
        init("i1", json!({ "protocolVersion": "1.0" })),
        0.0,
    );
    assert_eq!(sent[0]["payload"]["error"]["code"], "NOT_SUPPORTED");
    assert!(app.session_id().is_none());
    let sent = feed(
        &mut app,
        &reg,
        init("i2", json!({ "protocolVersion": "0.7" })),
        0.0,
    );
    assert!(
        sent[0]["payload"]["sessionId"].is_string(),
        "same major: accepted"
    );
}

#[test]
fn reinitialize_ends_the_old_session_where_configured_and_is_refused_elsewhere() {
    let call = json!({ "type": "capabilities/call", "id": "m1", "payload": { "callId": "c1",
        "capability": "echo", "params": {} } });
    let (mut app, reg) = lone_app(AppConfig::default());
    feed(&mut app, &reg, init("i1", json!({})), 0.0);
    let sent = feed(&mut app, &reg, init("i2", json!({})), 0.0);
    assert_eq!(sent[0]["payload"]["error"]["code"], "ALREADY_INITIALIZED");

    let (mut app, reg) = lone_app(AppConfig {
        reinitialize: true,
        ..AppConfig::default()
    });
    feed(&mut app, &reg, init("i1", json!({})), 0.0);
    let first = app.session_id().unwrap().to_owned();
    app.handle(decode(&call).unwrap().for_app().unwrap(), 0.0, &reg);
    assert_eq!(app.active_calls(), 1);
    // The same id again: the same answer, the call keeps running.
    let again = feed(&mut app, &reg, init("i1", json!({})), 0.0);
    assert_eq!(again[0]["payload"]["sessionId"], first.as_str());
    assert_eq!(app.active_calls(), 1);
    app.handle(
        decode(&init("i2", json!({}))).unwrap().for_app().unwrap(),
        0.0,
        &reg,
    );
    let outs: Vec<AppOutput<Value>> = std::iter::from_fn(|| app.poll()).collect();
    assert!(outs
        .iter()
        .any(|o| matches!(o, AppOutput::Abort { call_id, .. } if call_id == "c1")));
    assert!(outs.iter().any(|o| matches!(o, AppOutput::SessionClosed)));
    let second = app.session_id().unwrap();
    assert_ne!(second, first);
    assert_eq!(app.active_calls(), 0);
}

#[test]
fn an_elicitation_times_out_on_both_sides() {
    let mut p = Pair::connected();
    p.call("c1", "echo", json!({}));
    p.run();
    let eid = p
        .app
        .elicit(
            Some("c1"),
            json!({ "method": "elicitation/confirm", "params": { "message": "ok?" }, "timeout": 500 }),
            p.now,
        )
        .unwrap();
    p.run();
    let asked = p.agent_events.iter().find_map(|e| match e {
        AgentOutput::Elicitation { id, .. } => Some(id.clone()),
        _ => None,
    });
    let asked = asked.expect("the agent was asked");
    p.advance(499.0);
    assert!(!p
        .app_events
        .iter()
        .any(|e| matches!(e, AppOutput::ElicitDone { .. })));
    p.advance(1.0);
    assert!(p.app_events.iter().any(
        |e| matches!(e, AppOutput::ElicitDone { id, end: ElicitEnd::TimedOut } if *id == eid)
    ));
    assert!(p
        .agent_events
        .iter()
        .any(|e| matches!(e, AgentOutput::ElicitationAborted { id } if *id == asked)));
    // The call itself goes on.
    assert_eq!(p.app.active_calls(), 1);
}

#[test]
fn schema_const_pattern_and_formats() {
    let schema = json!({ "type": "object", "properties": {
        "kind": { "const": "pdf" },
        "opts": { "const": { "a": [1, 2] } },
        "code": { "type": "string", "pattern": "^[A-Z]{3}$" },
        "at": { "type": "string", "format": "date-time" },
        "mail": { "type": "string", "format": "email" },
        "link": { "type": "string", "format": "uri" },
        "id": { "type": "string", "format": "uuid" },
        "other": { "type": "string", "format": "hostname" } } });
    let good = json!({ "kind": "pdf", "opts": { "a": [1, 2] }, "code": "ABC", "at": "2026-11-23T10:00:00.5+01:00",
        "mail": "a.b@example.com", "link": "https://x.example/a?b#c", "id": "123e4567-e89b-12d3-a456-426614174000",
        "other": "not checked" });
    assert_eq!(validate(&schema, &good), Ok(()));
    let cases = [
        ("kind", json!("png"), "params.kind: not the required value"),
        (
            "opts",
            json!({ "a": [2, 1] }),
            "params.opts: not the required value",
        ),
        (
            "code",
            json!("ABCD"),
            "params.code: does not match the pattern ^[A-Z]{3}$",
        ),
        (
            "at",
            json!("2026-13-01T00:00:00Z"),
            "params.at: not a valid date-time",
        ),
        ("mail", json!("nobody"), "params.mail: not a valid email"),
        (
            "link",
            json!("/relative/path"),
            "params.link: not a valid uri",
        ),
        (
            "id",
            json!("123e4567e89b12d3a456426614174000"),
            "params.id: not a valid uuid",
        ),
    ];
    for (key, bad, message) in cases {
        let mut v = good.clone();
        v[key] = bad;
        assert_eq!(validate(&schema, &v), Err(message.to_owned()), "{key}");
    }
    for ok in ["2026-01-01T00:00:00Z", "1999-12-31t23:59:60.123-05:30"] {
        assert_eq!(format_ok("date-time", ok), Some(true), "{ok}");
    }
    for bad in [
        "2026-01-01",
        "2026-01-01T00:00:00",
        "2026-01-01T24:00:00Z",
        "x",
    ] {
        assert_eq!(format_ok("date-time", bad), Some(false), "{bad}");
    }
    for bad in ["a@", "@b.c", "a b@c.d", "a@b..c", "a@-b.c", "a..b@c.d"] {
        assert_eq!(format_ok("email", bad), Some(false), "{bad}");
    }
    assert_eq!(format_ok("email", "a.b.c@d.e"), Some(true));
    assert_eq!(
        validate(&json!({ "type": ["string", "number"] }), &json!(true)),
        Err("params: expected string or number, got boolean".to_owned())
    );
    assert_eq!(format_ok("uri", "urn:isbn:0451450523"), Some(true));
    assert_eq!(format_ok("uri", "http://a b"), Some(false));
    // A pattern that is not a regular expression here is skipped, not an error.
    assert_eq!(
        validate(&json!({ "pattern": "([" }), &json!("anything")),
        Ok(())
    );
}

#[test]
fn the_manifest_is_built_from_the_registry() {
    let mut reg: Registry<Value> = Registry::default();
    reg.register(
        "pdf.export",
        Some(json!({ "description": "Export", "inputSchema": { "type": "object" }, "experimental": true,
            "requirements": [], "handlerDetail": 1 })),
    )
    .unwrap();
    reg.register("pdf.old", Some(json!({ "deprecated": true })))
        .unwrap();
    let info = json!({ "id": "com.example.pdf", "name": "PDF", "version": "1.2.0" });
    let m = manifest(
        &info,
        reg.iter().map(|(_, d)| d),
        Some(&json!({ "homepage": "https://pdf.example", "support": { "email": "a@b.c" } })),
    )
    .unwrap();
    assert_eq!(
        m,
        json!({ "abp": "0.1",
            "app": { "id": "com.example.pdf", "name": "PDF", "version": "1.2.0",
                "homepage": "https://pdf.example", "support": { "email": "a@b.c" } },
            "capabilities": [
                { "name": "pdf.export", "description": "Export", "inputSchema": { "type": "object" },
                  "experimental": true },
                { "name": "pdf.old", "deprecated": true } ] })
    );
    let bad = manifest(
        &info,
        reg.iter().map(|(_, d)| d),
        Some(&json!({ "icon": 5 })),
    );
    assert_eq!(bad.unwrap_err(), "manifest(extra): icon must be a string");
}

#[test]
fn error_codes_round_trip_through_the_codec() {
    let e: AbpError<Value> = AbpError::new(ErrorCode::PermissionDenied, "no");
    let wire = encode_error(e);
    assert_eq!(wire["retryable"], true);
    let back = crate::core::error::decode_error(&wire);
    assert_eq!(back.code, ErrorCode::PermissionDenied);
    assert!(back.retry_after.is_none() && back.alternatives.is_none());
}
