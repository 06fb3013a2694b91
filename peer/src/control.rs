//! The control protocol of the native agent: JSON commands in (from `/control/<room>` or `--stdin`), JSON events
//! out, one object per WebSocket message or line. The agent works on these types; [`parse`] and
//! [`Event::to_line`] are the only places that see the text.
//!
//! Commands (`ref` is optional on each and echoed in the answer):
//! - `{"op":"call", "capability", "params"?, "callId"?, "timeout"?, "progress"?, "abortAfter"?, "reason"?,
//!   "traceparent"?, "tracestate"?}`: calls a capability; `abortAfter` (ms) aborts it like an `AbortSignal` would;
//!   a valid W3C trace context goes with the call to the app's `ctx.trace`. Answered by
//!   `{"op":"settled", "ref", "callId", "response"}` where `response` is what `abp.call` resolves to in the browser.
//! - `{"op":"cancel", "callId", "reason"?}`: an explicit cancel → `{"op":"cancel-result", "ref", "answer"}`.
//! - `{"op":"abort", "callId", "reason"?}`: what aborting the call's signal does.
//! - `{"op":"elicitation", "answer"}`: how to answer elicitation requests from now on (`null`: leave them open).
//! - `{"op":"answer", "id", "answer"}`: answers the one elicitation request `id` (`null` cancels it).
//! - `{"op":"raw", "frame"}`: sends `frame` (a string as it is, anything else as JSON) to the app unchecked.
//! - `{"op":"status"}`, `{"op":"shutdown", "reason"?}`.
//!
//! Events: `connected`, `progress`, `notification`, `capabilities`, `elicitation`, `elicitation-aborted`,
//! `disconnected`, `status`, `settled`, `cancel-result`, and `error` (a command that could not be done).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What asked for a call's cancel, as its span's events name it (`abp.cancel.signal`).
pub(crate) mod signal {
    /// The host's `notifications/cancelled`.
    pub(crate) const CANCELLED: &str = "notifications/cancelled";
    /// A 2026-07-28 host closed the request's stream.
    pub(crate) const STREAM_CLOSED: &str = "stream closed";
    /// The host's `tasks/cancel`.
    pub(crate) const TASKS_CANCEL: &str = "tasks/cancel";
    /// A deadline passed (a task's `ttlMs`, a call's timeout).
    pub(crate) const TIMEOUT: &str = "timeout";
    /// The host went away (stdin closed, its session ended, the gateway stopped).
    pub(crate) const HOST_GONE: &str = "host gone";
    /// The process that made the call is gone, or the link to NATS.
    pub(crate) const PROCESS_GONE: &str = "process gone";
}

/// One command and the `ref` it came with (`Null` when it had none).
#[derive(Clone, Debug)]
pub(crate) struct Envelope {
    pub(crate) reference: Value,
    pub(crate) command: Command,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub(crate) enum Command {
    Call {
        capability: Option<String>,
        #[serde(default)]
        params: Value,
        call_id: Option<String>,
        timeout: Option<f64>,
        #[serde(default)]
        progress: bool,
        abort_after: Option<f64>,
        reason: Option<String>,
        /// W3C trace context for the app's `ctx.trace` (sent only when valid).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        traceparent: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tracestate: Option<String>,
    },
    Cancel {
        #[serde(default)]
        call_id: String,
        reason: Option<String>,
        /// What asked for it, for the call's span (`tasks/cancel`); absent from a controller.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    Abort {
        #[serde(default)]
        call_id: String,
        reason: Option<String>,
        /// What asked for it, for the call's span (`notifications/cancelled`, `stream closed`, `timeout`, `host
        /// gone`, `process gone`); absent from a controller.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    Elicitation {
        answer: Option<Value>,
    },
    /// Answers one elicitation request (its `id` from the `elicitation` event); `null` cancels it.
    Answer {
        #[serde(default)]
        id: String,
        answer: Option<Value>,
    },
    Raw {
        frame: Option<Value>,
    },
    Status {},
    Shutdown {
        reason: Option<String>,
    },
}

const OPS: [&str; 8] = [
    "call",
    "cancel",
    "abort",
    "elicitation",
    "answer",
    "raw",
    "status",
    "shutdown",
];

/// One command line → a command, or the `error` event that answers it.
pub(crate) fn parse(line: &str) -> Result<Envelope, Event> {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return Err(Event::error(None, "not a JSON command"));
    };
    let reference = v.get("ref").cloned().unwrap_or(Value::Null);
    let op = v.get("op").and_then(Value::as_str).unwrap_or("");
    if !OPS.contains(&op) {
        return Err(Event::error(Some(reference), format!("unknown op {op:?}")));
    }
    match Command::deserialize(&v) {
        Ok(command) => Ok(Envelope { reference, command }),
        Err(e) => Err(Event::error(
            Some(reference),
            format!("bad {op} command: {e}"),
        )),
    }
}

/// What the agent tells its controller.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub(crate) enum Event {
    Connected {
        session_id: String,
        app: Value,
        capabilities: Value,
    },
    Settled {
        #[serde(rename = "ref")]
        reference: Value,
        call_id: String,
        response: Value,
    },
    CancelResult {
        #[serde(rename = "ref")]
        reference: Value,
        answer: Value,
    },
    Progress {
        call_id: String,
        payload: Value,
    },
    Notification {
        event: String,
        payload: Value,
    },
    Capabilities {
        payload: Value,
    },
    Elicitation {
        id: String,
        call_id: Option<String>,
        request: Value,
    },
    ElicitationAborted {
        id: String,
    },
    Disconnected,
    Status {
        #[serde(rename = "ref")]
        reference: Value,
        connected: bool,
        session_id: Option<String>,
        pending: usize,
        ignored: u64,
    },
    Error {
        #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
        reference: Option<Value>,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<Value>,
    },
}

impl Event {
    pub(crate) fn error(reference: Option<Value>, message: impl Into<String>) -> Event {
        Event::Error {
            reference,
            message: message.into(),
            error: None,
        }
    }

    /// The event as one line of JSON.
    pub(crate) fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!("{{\"op\":\"error\",\"message\":\"an event could not be written: {e}\"}}")
        })
    }
}

/// The `error` event for a command sent to `room` while no app is connected there.
pub(crate) fn no_app(room: &str, reference: Value) -> Event {
    let path = if room.is_empty() {
        "/agent".to_owned()
    } else {
        format!("/agent/{room}")
    };
    Event::error(Some(reference), format!("no app is connected to {path}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_parse_and_bad_ones_say_why() {
        let e = parse(r#"{"op":"call","ref":7,"capability":"echo","params":{"x":1},"progress":true,"abortAfter":5}"#)
            .expect("a call");
        assert_eq!(e.reference, json!(7));
        assert!(
            matches!(e.command, Command::Call { progress: true, abort_after: Some(a), .. } if a == 5.0)
        );
        let line = |r: Result<Envelope, Event>| r.err().map(|e| e.to_line()).unwrap_or_default();
        assert_eq!(
            line(parse("nope")),
            r#"{"op":"error","message":"not a JSON command"}"#
        );
        assert_eq!(
            line(parse(r#"{"op":"dance","ref":1}"#)),
            r#"{"op":"error","ref":1,"message":"unknown op \"dance\""}"#
        );
        assert!(line(parse(r#"{"op":"call","timeout":"soon"}"#)).contains("bad call command"));
        assert!(matches!(
            parse(r#"{"op":"status"}"#),
            Ok(Envelope {
                command: Command::Status {},
                ..
            })
        ));
    }

    #[test]
    fn events_keep_their_wire_names() {
        let settled = Event::Settled {
            reference: json!("a"),
            call_id: "c".into(),
            response: json!({}),
        };
        assert_eq!(
            settled.to_line(),
            r#"{"op":"settled","ref":"a","callId":"c","response":{}}"#
        );
        let cr = Event::CancelResult {
            reference: Value::Null,
            answer: json!(1),
        };
        assert_eq!(
            cr.to_line(),
            r#"{"op":"cancel-result","ref":null,"answer":1}"#
        );
        assert_eq!(
            Event::ElicitationAborted { id: "e".into() }.to_line(),
            r#"{"op":"elicitation-aborted","id":"e"}"#
        );
        assert_eq!(Event::Disconnected.to_line(), r#"{"op":"disconnected"}"#);
    }
}
