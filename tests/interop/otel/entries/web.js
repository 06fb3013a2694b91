// OpenTelemetry for the browser, as an app would take it: the web SDK's tracer provider, a span processor, the
// OTLP/HTTP exporter, and the API (context, propagation, trace). tests/trace/app.html starts its handlers' spans
// with it, as children of `ctx.trace`.
export { context, propagation, trace } from '@opentelemetry/api';
export { SimpleSpanProcessor, WebTracerProvider } from '@opentelemetry/sdk-trace-web';
export { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
