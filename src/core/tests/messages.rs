//! How messages are read and written: each role's state machine is given only what the other role sends
//! (ABP, and a JSON-RPC cancel that means something to both), and numbers are written as JavaScript writes
//! them.

use serde_json::{json, Value};

use crate::core::dialect::abp::decode;
use crate::core::dialect::{Codec, DialectKind};
use crate::core::message::{Control, ToAgent, ToApp};

#[test]
fn numbers_in_messages_are_written_like_javascript_writes_them() {
    use crate::core::text::number;
    let cases = [
        (0.0, "0"),
        (500.0, "500"),
        (-3.0, "-3"),
        (1.5, "1.5"),
        (0.125, "0.125"),
        (2.0 / 3.0, "0.666667"),
    ];
    for (n, s) in cases {
        assert_eq!(number(n), s);
    }
    assert_eq!(number(f64::NAN), "NaN");
}

/// Each role's state machine is given only what the other role sends: an agent never reads a call (its own,
/// echoed on a shared window), an app never reads a result; both read a shutdown.
#[test]
fn each_role_reads_only_what_the_other_sends() {
    let call = json!({ "type": "capabilities/call", "id": "m1",
        "payload": { "callId": "c1", "capability": "echo" } });
    let result = json!({ "type": "capabilities/call-result", "id": "m1",
        "payload": { "success": true, "callId": "c1" } });
    let bye = json!({ "type": "shutdown", "id": "m2", "payload": {} });
    assert!(decode(&call).unwrap().for_agent().is_none());
    assert!(matches!(
        decode(&call).unwrap().for_app(),
        Some(ToApp::Call { .. })
    ));
    assert!(decode(&result).unwrap().for_app().is_none());
    assert!(matches!(
        decode(&result).unwrap().for_agent(),
        Some(ToAgent::CallResult { .. })
    ));
    assert!(matches!(
        decode(&bye).unwrap().for_agent(),
        Some(ToAgent::Control(Control::Shutdown { .. }))
    ));
    assert!(matches!(
        decode(&bye).unwrap().for_app(),
        Some(ToApp::Control(Control::Shutdown { .. }))
    ));

    // A JSON-RPC cancel goes both ways: to an app it cancels a call, to an agent it withdraws the app's own
    // question.
    let cancelled = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 7, "reason": "gone" } });
    let mut app_side = Codec::<Value>::new(DialectKind::Mcp, false);
    assert!(matches!(
        app_side.decode(&cancelled).unwrap().for_app(),
        Some(ToApp::Cancel { call_id, .. }) if call_id == "7"
    ));
    let mut agent_side = Codec::<Value>::new(DialectKind::Mcp, true);
    assert!(matches!(
        agent_side.decode(&cancelled).unwrap().for_agent(),
        Some(ToAgent::ElicitationWithdrawn { id }) if id == "7"
    ));
}
