//! The options of `client.call(capability, params, options)` (`CallOptions`) and of
//! `AbpClient.connect(transport, options)` (`ClientOptions`), each declared once, here: its JavaScript name,
//! what counts as given, its bit and number slot in `readCallOptions`' answer, its TypeScript type and doc.
//!
//! `client.rs` reads the options through these constants. Generated from the tables, and checked against them
//! by `cargo test --test options_drift` (tests/options_drift/main.rs, which compiles this file natively; it must
//! stay plain data, with no `wasm_bindgen` or `web_sys`):
//! - `readCallOptions` in src/web/client.js, between its `<generated:call-options>` markers;
//! - the `CallOptions` and `ClientOptions` interfaces in the typings (`TS_TYPES` in types.rs).
//!
//! Adding a call option: add a constant to `call` below (a name, `given`, the next free bit, and for a number
//! the next free slot) and list it in `CALL_OPTIONS` where it belongs in the typings; then run
//! `ABP_REGENERATE=1 cargo test --test options_drift`, which rewrites client.js and types.rs, and use it in
//! `AbpClient::call` (client.rs) through its constant. A connect option is the same in `connect` and
//! `CONNECT_OPTIONS` (no bit, no slot: `connect` reads those options by name, once per connection). The golden
//! typings (tests/golden, `node scripts/check-dts.mjs --update` after a build) then show the API change.

/// What counts as an option given, tested in JavaScript; anything else is absent, and so is an option whose
/// getter throws.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Given {
    /// `typeof v === 'string'`.
    String,
    /// `typeof v === 'number'` (NaN and infinities included: the reader checks the range). A call option's
    /// value goes into its `slot`.
    Number,
    /// `typeof v === 'function'`.
    Function,
    /// `v === true`.
    True,
    /// `Array.isArray(v)`.
    Array,
    /// `v instanceof AbortSignal`; when it has already aborted, bit `aborted` is set as well.
    AbortSignal { aborted: u32 },
    /// An object, checked field by field where it is read.
    Object,
}

/// One option.
// `ts` and `doc` are only read by the drift test, which writes the typings from them.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct OptionSpec {
    /// The property name in JavaScript.
    pub name: &'static str,
    pub given: Given,
    /// The bit `readCallOptions` sets when the option is given (a power of two; 0 for connect options).
    pub bit: u32,
    /// For a number call option: where `readCallOptions` writes its value.
    pub slot: Option<usize>,
    /// Its type in the `.d.ts` (the property is optional there).
    pub ts: &'static str,
    /// Its doc comment in the `.d.ts`, one entry per line (none: no comment).
    pub doc: &'static [&'static str],
}

impl OptionSpec {
    const fn new(name: &'static str, given: Given, ts: &'static str) -> Self {
        OptionSpec {
            name,
            given,
            bit: 0,
            slot: None,
            ts,
            doc: &[],
        }
    }

    const fn bit(self, bit: u32) -> Self {
        OptionSpec { bit, ..self }
    }

    const fn slot(self, slot: usize) -> Self {
        OptionSpec {
            slot: Some(slot),
            ..self
        }
    }

    const fn doc(self, doc: &'static [&'static str]) -> Self {
        OptionSpec { doc, ..self }
    }

    /// What `client.call` reads of the option: a reference to the whole spec would keep its `ts` and `doc`
    /// text in the wasm, which only the drift test reads.
    pub(crate) const fn read(self) -> OptionRead {
        OptionRead {
            name: self.name,
            bit: self.bit,
            slot: self.slot,
        }
    }
}

/// A call option's name, bit and slot (`OptionSpec::read`).
#[allow(dead_code)]
#[derive(Clone, Copy)]
pub(crate) struct OptionRead {
    pub name: &'static str,
    pub bit: u32,
    pub slot: Option<usize>,
}

/// `client.call`'s options. `readCallOptions` tests them in the order of their bits (their getters run in that
/// order); the bits and numbers it found come back through one view of wasm memory (`VIEW_LEN` numbers).
pub(crate) mod call {
    use super::{Given, OptionSpec};

    /// With `SIGNAL`: the signal has already aborted (nothing is sent).
    pub(crate) const ABORTED: u32 = 1 << 1;

    pub(crate) const SIGNAL: OptionSpec =
        OptionSpec::new("signal", Given::AbortSignal { aborted: ABORTED }, "AbortSignal")
            .bit(1 << 0)
            .doc(&["Aborting it cancels the call: the app's handler signal aborts, and the call resolves `cancelled: true`."]);
    pub(crate) const CALL_ID: OptionSpec = OptionSpec::new("callId", Given::String, "string")
        .bit(1 << 2)
        .doc(&["Your own id for the call (default: a UUID). Must not be in flight already."]);
    pub(crate) const ON_PROGRESS: OptionSpec = OptionSpec::new(
        "onProgress",
        Given::Function,
        "(progress: ProgressInfo) => void",
    )
    .bit(1 << 3);
    pub(crate) const PROGRESS_TOKEN: OptionSpec =
        OptionSpec::new("progressToken", Given::String, "string")
            .bit(1 << 4)
            .doc(&[
                "Progress token sent to the app (default: the callId when progress is wanted).",
            ]);
    pub(crate) const TIMEOUT: OptionSpec = OptionSpec::new("timeout", Given::Number, "number")
        .bit(1 << 5)
        .slot(0)
        .doc(&["Milliseconds. On expiry the call is cancelled and resolves with error code TIMEOUT (retryable)."]);
    pub(crate) const RESET_TIMEOUT_ON_PROGRESS: OptionSpec =
        OptionSpec::new("resetTimeoutOnProgress", Given::True, "boolean")
            .bit(1 << 6)
            .doc(&["Restart `timeout` whenever progress arrives."]);
    pub(crate) const MAX_TOTAL_TIMEOUT: OptionSpec =
        OptionSpec::new("maxTotalTimeout", Given::Number, "number")
            .bit(1 << 7)
            .slot(1)
            .doc(&["Upper bound for the whole call, progress or not."]);
    pub(crate) const TRANSFER: OptionSpec =
        OptionSpec::new("transfer", Given::Array, "Transferable[]")
            .bit(1 << 8)
            .doc(&[
                "ArrayBuffers (or other transferables) inside `params` to move instead of copy.",
            ]);
    pub(crate) const CANCEL_GRACE: OptionSpec =
        OptionSpec::new("cancelGrace", Given::Number, "number")
            .bit(1 << 9)
            .slot(2)
            .doc(&["Milliseconds to wait for the app's answer after sending a cancel (default: the client's cancelGrace)."]);
    pub(crate) const TRACE: OptionSpec =
        OptionSpec::new("trace", Given::Object, "TraceContext")
            .bit(1 << 10)
            .doc(&[
                "W3C trace context sent with the call (in its `_meta`), for the app's `ctx.trace`: a `traceparent` that is",
                "not valid W3C Trace Context is not sent, nor is a `tracestate` that is not.",
            ]);

    /// How many numbers `readCallOptions` writes (slots 0 to `NUMBERS - 1`); checked when this compiles.
    pub(crate) const NUMBERS: usize = super::check_call_options(super::CALL_OPTIONS);
    /// Where `readCallOptions` writes the bits: the slot after the numbers.
    pub(crate) const BITS: usize = NUMBERS;
    /// The length of the view `readCallOptions` writes into.
    pub(crate) const VIEW_LEN: usize = NUMBERS + 1;
}

/// `CallOptions`, in the order the typings list them.
pub(crate) const CALL_OPTIONS: &[OptionSpec] = &[
    call::SIGNAL,
    call::TIMEOUT,
    call::RESET_TIMEOUT_ON_PROGRESS,
    call::MAX_TOTAL_TIMEOUT,
    call::CALL_ID,
    call::PROGRESS_TOKEN,
    call::ON_PROGRESS,
    call::TRANSFER,
    call::CANCEL_GRACE,
    call::TRACE,
];

/// `AbpClient.connect`'s options. `dialect` is read by `dialect_option` (value.rs), the same key as in
/// `app.listen`'s options.
pub(crate) mod connect {
    use super::{Given, OptionSpec};

    pub(crate) const AGENT: OptionSpec = OptionSpec::new("agent", Given::Object, "AgentInfo")
        .doc(&["Who is calling, as the app sees it (default `{ name: 'abp-wasm', version: <this package's> }`)."]);
    pub(crate) const DIALECT: OptionSpec = OptionSpec::new("dialect", Given::String, "Dialect")
        .doc(&[
            "The protocol the app speaks: `'abp'` (the default), `'mcp'` (the tools of an MCP server), `'acp'` (an",
            "ACP agent's methods) or `'tesseron'` (a Tesseron app, dialled as its gateway).",
        ]);
    pub(crate) const PROTOCOL_VERSION: OptionSpec =
        OptionSpec::new("protocolVersion", Given::String, "string").doc(&[
            "`dialect: 'mcp'` only: the one MCP version to speak. `'2026-07-28'` never sends `initialize`;",
            "`'2025-11-25'` (or an older one) starts with it. By default the client asks `server/discover` first",
            "and falls back to `initialize` when the server does not answer it.",
        ]);
    pub(crate) const CONNECT_TIMEOUT: OptionSpec =
        OptionSpec::new("connectTimeout", Given::Number, "number").doc(&[
            "How long to keep (re)sending `initialize` before giving up, ms (default 10000).",
        ]);
    pub(crate) const CANCEL_GRACE: OptionSpec =
        OptionSpec::new("cancelGrace", Given::Number, "number").doc(&[
            "Default wait for a cancel to be answered before settling locally, ms (default 1000).",
        ]);
    pub(crate) const HEARTBEAT: OptionSpec = OptionSpec::new("heartbeat", Given::Number, "number").doc(&[
        "While calls are pending, ask an app that has been silent this long whether it is still there (ms; off by",
        "default). No answer within the same time resolves every pending call DISCONNECTED. For MessagePorts to",
        "workers and half-open sockets, which give no other sign. Keep it above the longest time the app's page",
        "may be blocked by synchronous work.",
    ]);
    pub(crate) const MESSAGES: OptionSpec =
        OptionSpec::new("messages", Given::String, "MessagePath").doc(&[
            "To a frame or window, in ABP: `'channel'` (the default) offers the app a private `MessageChannel` with",
            "`initialize`, and the session moves onto it once the app takes it; `'window'` stays on window messages,",
            "which in Firefox make a single call's round trip quicker and in Chromium slower (BENCHMARKS.md, \"Window",
            "messages or the private channel\").",
        ]);
    pub(crate) const ON_PROGRESS: OptionSpec = OptionSpec::new(
        "onProgress",
        Given::Function,
        "(progress: ProgressInfo) => void",
    );
    pub(crate) const ON_NOTIFICATION: OptionSpec = OptionSpec::new(
        "onNotification",
        Given::Function,
        "(notification: NotificationInfo) => void",
    );
    pub(crate) const ON_ELICITATION: OptionSpec =
        OptionSpec::new("onElicitation", Given::Function, "ElicitationHandler");
    pub(crate) const ON_CAPABILITIES_CHANGED: OptionSpec = OptionSpec::new(
        "onCapabilitiesChanged",
        Given::Function,
        "(changes: CapabilityChanges) => void",
    );
}

/// `ClientOptions`, in the order the typings list them.
// The wasm reads each through its constant; the list is for the drift test, which writes the typings from it.
#[allow(dead_code)]
pub(crate) const CONNECT_OPTIONS: &[OptionSpec] = &[
    connect::AGENT,
    connect::DIALECT,
    connect::PROTOCOL_VERSION,
    connect::CONNECT_TIMEOUT,
    connect::CANCEL_GRACE,
    connect::HEARTBEAT,
    connect::MESSAGES,
    connect::ON_PROGRESS,
    connect::ON_NOTIFICATION,
    connect::ON_ELICITATION,
    connect::ON_CAPABILITIES_CHANGED,
];

/// Checks, when the crate compiles, what `readCallOptions` and `AbpClient::call` rely on: every call option
/// has a bit of its own (the already-aborted bit included), below bit 31 (the bits travel as an f64 and come
/// back as a u32); exactly the number options have a slot, and the slots are 0, 1, … with none shared. Returns
/// how many slots there are.
const fn check_call_options(list: &[OptionSpec]) -> usize {
    let mut seen: u32 = 0;
    let mut numbers = 0;
    let mut i = 0;
    while i < list.len() {
        let o = &list[i];
        assert!(
            o.bit.is_power_of_two() && o.bit < 1 << 31,
            "each call option needs one bit"
        );
        assert!(seen & o.bit == 0, "two call options share a bit");
        seen |= o.bit;
        if let Given::AbortSignal { aborted } = o.given {
            assert!(
                aborted.is_power_of_two() && aborted < 1 << 31 && seen & aborted == 0,
                "the already-aborted bit must be a bit of its own"
            );
            seen |= aborted;
        }
        match (o.given, o.slot) {
            (Given::Number, Some(_)) => numbers += 1,
            (Given::Number, None) => panic!("a number call option needs a slot"),
            (_, Some(_)) => panic!("only number call options have a slot"),
            _ => {}
        }
        i += 1;
    }
    let mut used: u64 = 0;
    i = 0;
    while i < list.len() {
        if let Some(s) = list[i].slot {
            assert!(
                s < numbers,
                "the slots must be 0, 1, … up to the number of number options"
            );
            assert!(used & (1 << s) == 0, "two call options share a slot");
            used |= 1 << s;
        }
        i += 1;
    }
    numbers
}
