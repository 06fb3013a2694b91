//! The gateway's span of each host request (with `--otlp`; nothing is kept without it): a server span named as
//! OpenTelemetry's semantic conventions for MCP name it (`{mcp.method.name} {tool}`), a child of the request's
//! `_meta.traceparent`, opened when the request arrives and ended when its answer is written, or when nothing
//! will be (a cancelled call, a host gone). A tool call's hop toward the app is the span's child: the context
//! the call carries on is this span's. Times are the gateway's, given by its caller.

use std::collections::HashMap;
use std::time::SystemTime;

use abp_wasm::core::dialect::jsonrpc::key_of;
use abp_wasm::core::trace::Trace;
use serde_json::Value;

use crate::telemetry::{self, cancel_attributes, KeyValue, Span, SpanKind};

use super::STDIO;

/// The open spans: (host, request id as the dialect keys it) → its span.
#[derive(Default)]
pub(crate) struct Spans {
    open: HashMap<(u64, String), Span>,
}

impl Spans {
    /// A message from `host`: a request opens its span.
    pub(crate) fn request(&mut self, host: u64, message: &Value, at: SystemTime) {
        if let Some((key, span)) = request_span(host == STDIO, message, Some(at)) {
            self.open.insert((host, key), span);
        }
    }

    /// Whether any request's span is open (none without `--otlp`).
    pub(crate) fn any_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// A message to `host`: an answer ends its request's span, failed for a JSON-RPC error or a tool's error.
    pub(crate) fn answered(&mut self, host: u64, message: &Value, at: SystemTime) {
        if message.get("method").is_some() {
            return;
        }
        let Some(key) = message.get("id").and_then(key_of) else {
            return;
        };
        if let Some(span) = self.open.remove(&(host, key)) {
            end_answered(span, message, Some(at));
        }
    }

    /// The context a call of `host`'s request `key` carries toward the app: the request's span, else the
    /// caller's as it came.
    pub(crate) fn onward(&self, host: u64, key: &str, caller: Option<&Trace>) -> Option<Trace> {
        let span = self.open.get(&(host, key.to_owned()));
        telemetry::onward(span, caller)
    }

    /// `host`'s request `key` was cancelled: nothing will answer it, so its span ends with the event.
    pub(crate) fn cancelled(
        &mut self,
        host: u64,
        key: &str,
        signal: &str,
        reason: Option<&str>,
        at: SystemTime,
    ) {
        if let Some(mut span) = self.open.remove(&(host, key.to_owned())) {
            span.event("cancel", cancel_attributes(signal, reason), Some(at));
            span.end(Some(at));
        }
    }

    /// `host` went: its requests' spans end, each with the event.
    pub(crate) fn host_gone(&mut self, host: u64, at: SystemTime) {
        let keys: Vec<(u64, String)> = self
            .open
            .keys()
            .filter(|(h, _)| *h == host)
            .cloned()
            .collect();
        for (h, key) in keys {
            self.cancelled(h, &key, crate::control::signal::HOST_GONE, None, at);
        }
    }
}

/// The server span of a host's request `message` (`None` without `--otlp`, or for what is not a request), with
/// the request's id as the dialect keys it: named `{method} {tool}`, a child of the request's `traceparent`.
/// `stdio`: it came on stdin (else over HTTP).
pub(crate) fn request_span(
    stdio: bool,
    message: &Value,
    at: Option<SystemTime>,
) -> Option<(String, Span)> {
    if !telemetry::enabled() {
        return None;
    }
    let method = message["method"].as_str()?;
    let key = message.get("id").and_then(key_of)?;
    let params = &message["params"];
    let meta = &params["_meta"];
    let caller = Trace::read(meta["traceparent"].as_str(), meta["tracestate"].as_str());
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", method.to_owned()),
        KeyValue::new("jsonrpc.request.id", key.clone()),
        KeyValue::new("network.transport", if stdio { "pipe" } else { "tcp" }),
    ];
    let tool = params["name"].as_str().filter(|_| method == "tools/call");
    let name = match tool {
        Some(tool) => {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            format!("{method} {tool}")
        }
        None => method.to_owned(),
    };
    if let Some(v) = meta["io.modelcontextprotocol/protocolVersion"].as_str() {
        attributes.push(KeyValue::new("mcp.protocol.version", v.to_owned()));
    }
    let span = telemetry::start(name, SpanKind::Server, caller.as_ref(), attributes, at)?;
    Some((key, span))
}

/// Ends `span` as `answer` (a JSON-RPC response) says: failed for an error or a tool's `isError` result.
pub(crate) fn end_answered(mut span: Span, answer: &Value, at: Option<SystemTime>) {
    if let Some(error) = answer.get("error") {
        let code = error["code"].as_i64().unwrap_or_default();
        span.fail(
            code.to_string(),
            error["message"].as_str().unwrap_or_default().to_owned(),
        );
    } else if answer["result"]["isError"] == true {
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        span.fail("tool_error".into(), text.to_owned());
    }
    span.end(at);
}
