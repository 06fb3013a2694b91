//! Spans for an operator, opt-in (`--otlp URL`): OpenTelemetry's SDK exports them over OTLP/HTTP from a thread
//! of its own. Without `--otlp` there is no tracer, and every function here returns at once: nothing is made,
//! kept or sent.
//!
//! The spans follow OpenTelemetry's semantic conventions for MCP where they apply: the gateway's span of each
//! host request is a server span named `{mcp.method.name} {tool}`, a child of the host's `traceparent`; each hop
//! of a call toward the app (across NATS to the process the app joined, and from that process to the app) is a
//! client span, a child of the one before, and the app's handler sees the last one as `ctx.trace`'s parent.
//! Cancellation and the app's answer to it are events of those spans. Times are given by the caller (the
//! gateway reads no clock), or taken now when it gives none.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use abp_wasm::core::trace::Trace;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::Context;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use serde_json::Value;

pub(crate) use opentelemetry::trace::SpanKind;
pub(crate) use opentelemetry::KeyValue;

/// The exporter and tracer, once `--otlp` set them up.
static TRACING: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

/// `--otlp`, shared by the server and `abp-peer mcp`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct OtlpArgs {
    /// Export spans of each MCP request and each hop of a call toward the app, over OTLP/HTTP, to the collector
    /// at URL (`http://127.0.0.1:4318`; `/v1/traces` is added unless the URL ends with it). Off by default:
    /// nothing is exported then. The variables `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (`http/json`),
    /// `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_SERVICE_NAME` apply.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp: Option<String>,
}

/// Sets up the exporter when `--otlp` was given; an error names what is wrong with the URL.
pub(crate) fn export(args: &OtlpArgs) -> Result<(), String> {
    let Some(url) = &args.otlp else {
        return Ok(());
    };
    let endpoint = traces_url(url)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()
        .map_err(|e| format!("--otlp {url}: {e}"))?;
    // `abp-peer`, unless OTEL_SERVICE_NAME names the process otherwise (the SDK reads it).
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("abp-peer");
    }
    let resource = resource.build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("abp-peer");
    let _ = TRACING.set((provider, tracer));
    eprintln!("abp-peer: exporting spans to {url}");
    Ok(())
}

/// Sends what is still waiting to be exported (at exit), waiting for the collector at most [`FLUSH_WAIT`]: a
/// process told to go must not linger for a collector that is away.
pub(crate) fn flush() {
    if let Some((provider, _)) = TRACING.get() {
        let _ = provider.shutdown_with_timeout(FLUSH_WAIT);
    }
}

/// How long the last spans may take to leave at exit.
const FLUSH_WAIT: Duration = Duration::from_millis(500);

/// The collector's traces URL: an `http://` URL, its path `/v1/traces` unless it names one.
fn traces_url(url: &str) -> Result<String, String> {
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(format!(
            "--otlp {url}: an http:// URL of an OTLP/HTTP collector (such as a local OpenTelemetry Collector) is needed"
        ));
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("--otlp {url}: the URL names no host"));
    }
    // The URL is logged: a secret in it would be too. A collector's key goes in OTEL_EXPORTER_OTLP_HEADERS.
    if rest
        .split('/')
        .next()
        .is_some_and(|authority| authority.contains('@'))
    {
        return Err(
            "--otlp: the URL may not hold credentials (user:password@); give a collector's key in OTEL_EXPORTER_OTLP_HEADERS"
                .into(),
        );
    }
    let base = url.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    })
}

/// Whether spans are exported.
pub(crate) fn enabled() -> bool {
    TRACING.get().is_some()
}

/// An open span; ended when [`Span::end`] is called or when it is dropped.
pub(crate) struct Span(opentelemetry_sdk::trace::Span);

/// Starts a span `name` of `kind`, a child of `parent` (a new trace without one), at `at` (now without one).
/// `None` when spans are not exported.
pub(crate) fn start(
    name: impl Into<Cow<'static, str>>,
    kind: SpanKind,
    parent: Option<&Trace>,
    attributes: Vec<KeyValue>,
    at: Option<SystemTime>,
) -> Option<Span> {
    let (_, tracer) = TRACING.get()?;
    let cx = parent
        .and_then(remote_context)
        .map_or_else(Context::new, |sc| {
            Context::new().with_remote_span_context(sc)
        });
    let mut builder = tracer
        .span_builder(name)
        .with_kind(kind)
        .with_attributes(attributes);
    if let Some(at) = at {
        builder = builder.with_start_time(at);
    }
    Some(Span(tracer.build_with_context(builder, &cx)))
}

/// A caller's context as OpenTelemetry holds it: its ids, flags and `tracestate`, as from another process.
fn remote_context(trace: &Trace) -> Option<SpanContext> {
    let trace_id = TraceId::from_hex(trace.trace_id()).ok()?;
    let span_id = SpanId::from_hex(trace.parent_id()).ok()?;
    let flags = if trace.sampled() {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let state = trace
        .tracestate
        .as_deref()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(trace_id, span_id, flags, true, state))
}

impl Span {
    /// What the next hop is given: this span as its parent, `tracestate` passed on as it came.
    pub(crate) fn context(&self, tracestate: Option<&str>) -> Option<Trace> {
        let sc = self.0.span_context();
        let parent = format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        );
        Trace::read(Some(&parent), tracestate)
    }

    /// An event, at `at` (now without one).
    pub(crate) fn event(
        &mut self,
        name: &'static str,
        attributes: Vec<KeyValue>,
        at: Option<SystemTime>,
    ) {
        match at {
            Some(at) => self.0.add_event_with_timestamp(name, at, attributes),
            None => self.0.add_event(name, attributes),
        }
    }

    /// A call settled with `response` (what `abp.call` resolves to): when it did not succeed, the span fails
    /// with its error's code and message, and the code is returned.
    pub(crate) fn settled(&mut self, response: &Value) -> Option<String> {
        if response["success"] == true {
            return None;
        }
        let error = &response["error"];
        let code = error["code"].as_str().unwrap_or("UNKNOWN").to_owned();
        let message = error["message"].as_str().unwrap_or_default().to_owned();
        self.fail(code.clone(), message);
        Some(code)
    }

    /// The operation failed: its `error.type`, and the span's status says why.
    pub(crate) fn fail(&mut self, error_type: String, message: String) {
        self.0
            .set_attribute(KeyValue::new("error.type", error_type));
        self.0.set_status(Status::error(message));
    }

    /// Ends it at `at` (now without one).
    pub(crate) fn end(mut self, at: Option<SystemTime>) {
        match at {
            Some(at) => self.0.end_with_timestamp(at),
            None => self.0.end(),
        }
    }
}

/// The span of a call's hop toward the app (`None` without `--otlp`): a client span, a child of the caller's
/// context. `hop`: `nats` across NATS to the process holding the app, `app` from that process to the app.
pub(crate) fn call_hop(
    capability: &str,
    call_id: &str,
    room: &str,
    hop: &'static str,
    caller: Option<&Trace>,
) -> Option<Span> {
    let carried = if hop == "nats" {
        KeyValue::new("messaging.system", "nats")
    } else {
        KeyValue::new("network.transport", "tcp")
    };
    start(
        format!("capabilities/call {capability}"),
        SpanKind::Client,
        caller,
        vec![
            KeyValue::new("gen_ai.tool.name", capability.to_owned()),
            KeyValue::new("abp.call.id", call_id.to_owned()),
            KeyValue::new("abp.room", room.to_owned()),
            KeyValue::new("abp.hop", hop),
            carried,
        ],
        None,
    )
}

/// The context a hop passes on: `span`'s when there is one, else the caller's as it came (spans not exported).
pub(crate) fn onward(span: Option<&Span>, caller: Option<&Trace>) -> Option<Trace> {
    match span {
        Some(s) => s.context(caller.and_then(|t| t.tracestate.as_deref())),
        None => caller.cloned(),
    }
}

/// A cancel event's attributes: what asked for it, and the reason given.
pub(crate) fn cancel_attributes(signal: &str, reason: Option<&str>) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new("abp.cancel.signal", signal.to_owned())];
    if let Some(r) = reason {
        attributes.push(KeyValue::new("abp.cancel.reason", r.to_owned()));
    }
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_is_the_collectors_base_or_its_traces_path() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").as_deref(),
            Ok("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            traces_url("http://collector:4318/v1/traces/").as_deref(),
            Ok("http://collector:4318/v1/traces")
        );
        for bad in [
            "https://collector:4318",
            "127.0.0.1:4318",
            "http://",
            "http:///v1/traces",
        ] {
            assert!(traces_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn without_otlp_nothing_is_made() {
        assert!(!enabled());
        assert!(start("x", SpanKind::Server, None, Vec::new(), None).is_none());
        let trace = Trace::read(
            Some("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"),
            None,
        );
        assert_eq!(onward(None, trace.as_ref()), trace);
    }
}
