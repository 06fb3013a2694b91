//! Dialects: the wire spellings of the protocols the same state machines speak, and the few rules in which
//! their cancellation contracts differ.
//!
//! A dialect is a codec (wire message → [`Incoming`], [`FromAgent`]/[`FromApp`] → wire message) plus a
//! [`Policy`] that the state machines consult (is a cancel answered? does a cancelled call still get a
//! response? …). There is one agent state machine and one app state machine; a rule fixed there is fixed for
//! every dialect. A connection (`core::connection`) pairs a machine with its dialect's codec.
//!
//! | | ABP | MCP |
//! |---|---|---|
//! | call | `capabilities/call` | request `tools/call` |
//! | cancel | `capabilities/cancel`, answered by `cancel-result` | notification `notifications/cancelled`, no answer |
//! | a cancelled call's response | `call-result` with `cancelled:true` | none: the caller settles at once |
//! | progress | `progress` | `notifications/progress` |
//! | capability list | in `initialize-result`, changes pushed | `tools/list`, refreshed on `notifications/tools/list_changed` |
//!
//! ACP (a request per capability, `$/cancel_request`, the cancelled request answered -32800, cascading to
//! the requests its handler made) is in `acp.rs`.
//!
//! Adding a dialect: a module with its `POLICY` and a codec implementing [`DialectCodec`], one entry in
//! `dialects!` below (its name, module, WebSocket subprotocol and cargo feature), the feature in Cargo.toml,
//! and its name in the TypeScript `Dialect` union and the `dialect` option's doc (`src/web/types.rs`,
//! `src/web/options.rs`; tests fail until they match the list). Beyond that, a dialect is named only where it
//! has something of its own: a framing (the MCP-B envelope in the web transport), or a role `abp-peer` plays in
//! it (`peer/src/server.rs`, `peer/src/mcp.rs`).

use super::message::{FromAgent, FromApp, Incoming};
use super::payload::{Payload, Timestamp, Wire};
use super::trace::Trace;

/// Why a received value was not a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// Not an object, or no string `type`.
    NotAMessage,
    /// A `type` this SDK does not speak.
    UnknownType,
}

/// What the encoder needs besides the message: who we are.
pub struct Hello<'a, P> {
    /// Agent side: `{ name, version }`. App side: `{ id, name, version, description? }`.
    pub info: &'a P,
    /// App side: the capability descriptors, for `initialize-result` and `list_changed`.
    pub capabilities: Option<&'a dyn Fn() -> P>,
}

/// One dialect's wire codec: wire message → [`Incoming`], each role's messages → wire message. Each dialect module implements it
/// once, next to its `POLICY`, and is listed once in [`dialects!`] below; that list makes everything else
/// (the names the API takes, which builds have it, the connection's codec, the policy fold of ABP-only builds).
pub trait DialectCodec<P: Wire> {
    /// `agent`: this side calls (a dialect whose requests differ by direction reads the ones that arrive).
    fn new(agent: bool) -> Self;
    /// Reads one received value. Never fails on bad input: what is not a message comes back as
    /// `Err(Ignored)`, and what the dialect answers with an error as [`Control::Invalid`].
    fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored>;
    /// Builds an agent's wire message, with its transfer list; `None` when this dialect has no such message.
    fn encode_agent(
        &mut self,
        msg: FromAgent<P>,
        clock: Timestamp<'_>,
        hello: &Hello<'_, P>,
    ) -> Option<(P, Option<P>)>;
    /// Builds an app's wire message, with its transfer list; `None` when this dialect has no such message.
    fn encode_app(
        &mut self,
        msg: FromApp<P>,
        clock: Timestamp<'_>,
        hello: &Hello<'_, P>,
    ) -> Option<(P, Option<P>)>;
    /// A message the codec sends on its own: one that answers a request the state machines never see (a
    /// retry that finds its call already answered), or the second and later messages one message makes (a
    /// change told to each listener). Sent before what the machine says next.
    fn queued(&mut self) -> Option<P> {
        None
    }
    /// An answer to the app's elicitation that the codec found in what the client already sent (MCP: a
    /// modern call's `inputResponses`), so nothing is put to the client: the elicitation id and the
    /// `ElicitationResponse` payload, for the app to read.
    fn given(&mut self) -> Option<(String, P)> {
        None
    }
    /// This side is going away: the codec queues what its dialect says then (MCP: each listen is torn down).
    fn close(&mut self) {}
    /// The driver serves the protocol extension `name`, which the dialect advertises (MCP: in
    /// `server/discover`). Nothing in dialects without extensions.
    fn offer_extension(&mut self, _name: &str) {}
    /// A task the driver keeps changed (MCP's tasks extension): the dialect tells whoever follows it.
    fn task_changed(&mut self, _task_id: &str, _detailed: &P) {}
    /// The client speaks this protocol version and no other (MCP: a dated version, which also picks the era).
    /// False for a version the dialect does not speak, and in dialects with one version.
    fn pin_version(&mut self, _version: &str) -> bool {
        false
    }
}

/// [`DialectCodec`] for a JSON-RPC dialect's codec, whose own `decode(msg)`, `encode_agent(msg, hello)` and
/// `encode_app(msg, hello)` need no clock and carry no transfer list; `|agent| expr` makes one, and `own messages`
/// forwards its `queued()` and `close()`.
#[cfg(any(feature = "mcp", feature = "acp", feature = "tesseron"))]
macro_rules! jsonrpc_dialect_codec {
    ($codec:ident, |$agent:ident| $new:expr) => {
        jsonrpc_dialect_codec!($codec, |$agent| $new, {});
    };
    // `own messages`: the codec has its own `queued()`, `close()` and `pin_version()`.
    ($codec:ident, |$agent:ident| $new:expr, own messages) => {
        jsonrpc_dialect_codec!($codec, |$agent| $new, {
            fn queued(&mut self) -> Option<P> {
                $codec::queued(self)
            }

            fn given(&mut self) -> Option<(String, P)> {
                $codec::given(self)
            }

            fn offer_extension(&mut self, name: &str) {
                $codec::offer_extension(self, name)
            }

            fn task_changed(&mut self, task_id: &str, detailed: &P) {
                $codec::task_changed(self, task_id, detailed)
            }

            fn close(&mut self) {
                $codec::close(self)
            }

            fn pin_version(&mut self, version: &str) -> bool {
                $codec::pin_version(self, version)
            }
        });
    };
    ($codec:ident, |$agent:ident| $new:expr, { $($own:item)* }) => {
        impl<P: Wire> super::DialectCodec<P> for $codec<P> {
            fn new($agent: bool) -> Self {
                $new
            }

            fn decode(
                &mut self,
                msg: &P,
            ) -> Result<super::super::message::Incoming<P>, super::Ignored> {
                $codec::decode(self, msg)
            }

            fn encode_agent(
                &mut self,
                msg: super::super::message::FromAgent<P>,
                _clock: super::super::payload::Timestamp<'_>,
                hello: &super::Hello<'_, P>,
            ) -> Option<(P, Option<P>)> {
                $codec::encode_agent(self, msg, hello).map(|m| (m, None))
            }

            fn encode_app(
                &mut self,
                msg: super::super::message::FromApp<P>,
                _clock: super::super::payload::Timestamp<'_>,
                hello: &super::Hello<'_, P>,
            ) -> Option<(P, Option<P>)> {
                $codec::encode_app(self, msg, hello).map(|m| (m, None))
            }

            $($own)*
        }
    };
}

/// The list of dialects. Each entry: the variant, the name the JS API and the peer take, the module (with its
/// `POLICY` and its codec type), and the cargo feature that builds it (ABP has none: every build speaks it).
macro_rules! dialects {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident = $name:literal, mod $module:ident, $codec:ty, subprotocol = $sub:expr
        $(, feature = $feature:literal)?;
    )*) => {
        $( $(#[cfg(feature = $feature)])? pub mod $module; )*
        /// The JSON-RPC framing the dialects besides ABP share.
        #[cfg(any($($(feature = $feature,)?)*))]
        pub mod jsonrpc;

        /// Which protocol a connection speaks.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum DialectKind {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl DialectKind {
            /// Every dialect, built or not, in the order of the list.
            pub const ALL: &'static [DialectKind] = &[$(DialectKind::$variant),*];

            /// The name the JS API takes (`dialect: 'mcp'`).
            pub fn name(self) -> &'static str {
                match self {
                    $( DialectKind::$variant => $name, )*
                }
            }

            /// The WebSocket subprotocol that names the dialect, if it has one.
            pub fn subprotocol(self) -> Option<&'static str> {
                match self {
                    $( DialectKind::$variant => $sub, )*
                }
            }

            /// Whether this build speaks the dialect.
            pub fn built(self) -> bool {
                match self {
                    $( DialectKind::$variant => true $(&& cfg!(feature = $feature))?, )*
                }
            }

            /// The dialect's rules; ABP's for a dialect this build lacks.
            #[allow(unreachable_patterns)]
            pub fn policy(self) -> Policy {
                match self {
                    $( $(#[cfg(feature = $feature)])? DialectKind::$variant => $module::POLICY, )*
                    _ => abp::POLICY,
                }
            }
        }

        /// This build speaks ABP only (the role builds): then every connection has ABP's policy.
        const ABP_ONLY: bool = true $($(&& !cfg!(feature = $feature))?)*;

        /// One connection's codec.
        pub enum Codec<P> {
            $( $(#[cfg(feature = $feature)])? $variant($codec), )*
            /// Keeps `P` used when no dialect but ABP is built.
            #[doc(hidden)]
            _Never(std::convert::Infallible, std::marker::PhantomData<P>),
        }

        impl<P: Wire> Codec<P> {
            /// `agent`: this side calls. A dialect this build lacks ([`DialectKind::built`], checked where
            /// the option is read) falls back to ABP.
            #[allow(unreachable_patterns)]
            pub fn new(kind: DialectKind, agent: bool) -> Codec<P> {
                match kind {
                    $( $(#[cfg(feature = $feature)])?
                    DialectKind::$variant => Codec::$variant(<$codec as DialectCodec<P>>::new(agent)), )*
                    _ => Codec::Abp(<abp::AbpCodec as DialectCodec<P>>::new(agent)),
                }
            }

            pub fn kind(&self) -> DialectKind {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(_) => DialectKind::$variant, )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// Reads one received value. Never fails on bad input: what is not a message comes back as
            /// `Err(Ignored)`, and what the dialect answers with an error as [`Control::Invalid`].
            pub fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => <$codec as DialectCodec<P>>::decode(c, msg), )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// Builds an agent's wire message, with its transfer list; `None` when this dialect has no such
            /// message.
            pub fn encode_agent(
                &mut self,
                msg: FromAgent<P>,
                clock: Timestamp<'_>,
                hello: &Hello<'_, P>,
            ) -> Option<(P, Option<P>)> {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => {
                        <$codec as DialectCodec<P>>::encode_agent(c, msg, clock, hello)
                    } )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// Builds an app's wire message, with its transfer list; `None` when this dialect has no such
            /// message.
            pub fn encode_app(
                &mut self,
                msg: FromApp<P>,
                clock: Timestamp<'_>,
                hello: &Hello<'_, P>,
            ) -> Option<(P, Option<P>)> {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => {
                        <$codec as DialectCodec<P>>::encode_app(c, msg, clock, hello)
                    } )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// A message the codec sends on its own, before what the machine says next.
            pub fn queued(&mut self) -> Option<P> {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => <$codec as DialectCodec<P>>::queued(c), )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// An answer to the app's elicitation found in what the client already sent.
            pub fn given(&mut self) -> Option<(String, P)> {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => <$codec as DialectCodec<P>>::given(c), )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// The driver serves the protocol extension `name`, which the dialect advertises.
            pub fn offer_extension(&mut self, name: &str) {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => <$codec as DialectCodec<P>>::offer_extension(c, name), )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// A task the driver keeps changed: the dialect tells whoever follows it.
            pub fn task_changed(&mut self, task_id: &str, detailed: &P) {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => <$codec as DialectCodec<P>>::task_changed(c, task_id, detailed), )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// This side is going away: the codec queues what its dialect says then.
            pub fn close(&mut self) {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => <$codec as DialectCodec<P>>::close(c), )*
                    Codec::_Never(never, _) => match *never {},
                }
            }

            /// The client speaks this protocol version and no other; false if the dialect cannot.
            pub fn pin_version(&mut self, version: &str) -> bool {
                match self {
                    $( $(#[cfg(feature = $feature)])? Codec::$variant(c) => <$codec as DialectCodec<P>>::pin_version(c, version), )*
                    Codec::_Never(never, _) => match *never {},
                }
            }
        }
    };
}

dialects! {
    /// The Agentic Browser Protocol.
    Abp = "abp", mod abp, abp::AbpCodec, subprotocol = Some("abp");
    /// The Model Context Protocol: capabilities as tools.
    Mcp = "mcp", mod mcp, mcp::McpCodec<P>, subprotocol = Some("mcp"), feature = "mcp";
    /// The Agent Client Protocol: a request per capability (over stdio in its own world: no subprotocol).
    Acp = "acp", mod acp, acp::AcpCodec<P>, subprotocol = None, feature = "acp";
    /// Tesseron: the app says hello first, capabilities as actions.
    Tesseron = "tesseron", mod tesseron, tesseron::TesseronCodec<P>, subprotocol = Some("tesseron-gateway"),
        feature = "tesseron";
}

impl DialectKind {
    /// The dialect a name (`dialect: 'mcp'`) stands for, built or not.
    pub fn parse(name: &str) -> Option<DialectKind> {
        DialectKind::ALL.iter().copied().find(|d| d.name() == name)
    }

    /// The dialect a WebSocket subprotocol names, built or not.
    pub fn of_subprotocol(protocol: &str) -> Option<DialectKind> {
        DialectKind::ALL
            .iter()
            .copied()
            .find(|d| d.subprotocol() == Some(protocol))
    }
}

/// The rules in which the dialects' cancellation contracts differ, consulted by the state machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// A cancel is answered by a message of its own (ABP `capabilities/cancel-result`). Without that, the
    /// agent settles an aborted call at once and the app sends nothing for a cancel.
    pub cancel_answered: bool,
    /// A cancelled call still gets its response (ABP: `call-result` with `cancelled:true`; MCP: none).
    pub cancelled_call_answered: bool,
    /// The agent re-sends `initialize` (same id) until answered, for an iframe that has not loaded yet. (MCP
    /// servers answer a repeated id again; the codec drops the second answer.)
    pub resend_initialize: bool,
    /// After `initialize` the agent asks for the capability list itself (MCP `tools/list`) before it says it
    /// is connected, and asks again when told the list changed.
    pub list_capabilities: bool,
    /// The app checks `initialize.protocolVersion` against ABP's major version (MCP negotiates dated
    /// versions in its codec instead).
    pub abp_version_check: bool,
    /// Requests the app made for a call (elicitations) are cancelled on the wire when the call ends. (ABP's
    /// agent knows which call asked and ends them itself.)
    pub cancel_nested: bool,
    /// The app speaks first (Tesseron's `tesseron/hello`): the app sends the initialize and the agent answers
    /// it, the other way round from ABP.
    pub app_speaks_first: bool,
    /// The app ends a call that outlives its capability's `timeoutMs` (default one minute) with TIMEOUT
    /// (Tesseron's per-action timeout, -32002).
    pub app_timeouts: bool,
    /// Messages are ABP envelopes: the agent offers a private `MessageChannel` with its `initialize`, and a
    /// port reads calls and results in one pass. (A JSON-RPC peer would not know what to do with the port.)
    pub abp_envelope: bool,
    /// The app sends progress for one call at most once per this many milliseconds, whatever the app's own
    /// setting (Tesseron: about two updates a second).
    pub min_progress_interval: u32,
    /// Requests may carry their own version and features and run without a session (MCP 2026-07-28): a
    /// change to the capabilities is told even when no session is open (the codec tells whoever listens).
    pub stateless_requests: bool,
    /// A call that names no maximum total timeout gets this one, in milliseconds (0: none). MCP's cancellation
    /// text asks every client to enforce one, whatever progress keeps resetting.
    pub max_total_timeout: u32,
}

impl Policy {
    pub const ABP: Policy = abp::POLICY;

    /// The rules of one connection: the dialect's, with what its carrier changes.
    pub fn of(dialect: DialectKind, carrier: Carrier) -> Policy {
        let mut policy = dialect.policy();
        if carrier == Carrier::Stream {
            // What is sent before the other end listens waits for it: one initialize is enough (and a
            // JSON-RPC peer would take a re-sent one as a second request).
            policy.resend_initialize = false;
        }
        policy
    }
}

/// What a connection's policy needs to know of its transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// A frame or window, whose page may not be listening yet (an iframe still loading).
    Window,
    /// A `MessagePort`, a WebSocket, stdio: open, and what is sent before the other end listens waits for it.
    Stream,
}

/// What the cores read: the field, or ABP's value in a build that speaks ABP only. There it is a constant, so
/// the paths only other dialects take compile away. (`resend_initialize` is read as a field: a transport
/// turns it off for ABP too.)
macro_rules! folded {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        impl Policy {
            $(
                $(#[$doc])*
                #[inline(always)]
                pub fn $name(&self) -> bool {
                    if ABP_ONLY { Policy::ABP.$name } else { self.$name }
                }
            )*
        }
    };
}

folded!(
    abp_envelope,
    cancel_answered,
    cancelled_call_answered,
    list_capabilities,
    abp_version_check,
    cancel_nested,
    app_speaks_first,
    app_timeouts,
    stateless_requests,
);

impl Default for Policy {
    fn default() -> Self {
        Policy::ABP
    }
}

impl<P: Wire> Codec<P> {
    pub fn policy(&self) -> Policy {
        self.kind().policy()
    }
}

/// The trace context in a request's `_meta` object (MCP's `params._meta`, ABP's `payload._meta`), if valid.
pub(crate) fn trace_from_meta<P: Payload>(meta: Option<&P>) -> Option<Trace> {
    let meta = meta?;
    Trace::read(
        meta.get_string("traceparent").as_deref(),
        meta.get_string("tracestate").as_deref(),
    )
}

/// Writes `trace` into `meta` (an object) as `traceparent` and, when there is one, `tracestate`.
pub(crate) fn set_trace_meta<P: Wire>(meta: &mut P, trace: &Trace) {
    meta.set("traceparent", P::string(&trace.traceparent));
    if let Some(state) = &trace.tracestate {
        meta.set("tracestate", P::string(state));
    }
}
