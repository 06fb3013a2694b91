//! Dialects: the wire spellings of the protocols the same state machines speak, and the few rules in which
//! their cancellation contracts differ.
//!
//! A dialect is a codec (wire message ⇄ [`Incoming`]/[`Outgoing`]) plus a [`Policy`] that `AgentCore` and
//! `AppConn` consult (is a cancel answered? does a cancelled call still get a response? …). There is one
//! agent state machine and one app state machine; a rule fixed there is fixed for every dialect.
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

#[cfg(feature = "acp")]
pub mod acp;
#[cfg(any(feature = "mcp", feature = "acp", feature = "tesseron"))]
pub mod jsonrpc;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "tesseron")]
pub mod tesseron;

use super::codec::{self, Hello, Ignored, Wire};
use super::message::{Incoming, Outgoing};

/// Which protocol a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialectKind {
    Abp,
    Mcp,
    Acp,
    Tesseron,
}

impl DialectKind {
    /// The names the JS API takes (`dialect: 'abp' | 'mcp'`).
    pub fn parse(name: &str) -> Option<DialectKind> {
        match name {
            "abp" => Some(DialectKind::Abp),
            "mcp" => Some(DialectKind::Mcp),
            "acp" => Some(DialectKind::Acp),
            "tesseron" => Some(DialectKind::Tesseron),
            _ => None,
        }
    }

    /// Whether this build speaks the dialect (each but ABP is a cargo feature; the role builds have ABP only).
    pub fn built(self) -> bool {
        match self {
            DialectKind::Abp => true,
            DialectKind::Mcp => cfg!(feature = "mcp"),
            DialectKind::Acp => cfg!(feature = "acp"),
            DialectKind::Tesseron => cfg!(feature = "tesseron"),
        }
    }

    pub fn policy(self) -> Policy {
        match self {
            DialectKind::Abp => Policy::ABP,
            DialectKind::Mcp => Policy::MCP,
            DialectKind::Acp => Policy::ACP,
            DialectKind::Tesseron => Policy::TESSERON,
        }
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
}

impl Policy {
    pub const ABP: Policy = Policy {
        cancel_answered: true,
        cancelled_call_answered: true,
        resend_initialize: true,
        list_capabilities: false,
        abp_version_check: true,
        cancel_nested: false,
        app_speaks_first: false,
        app_timeouts: false,
    };
    pub const MCP: Policy = Policy {
        cancel_answered: false,
        cancelled_call_answered: false,
        resend_initialize: true,
        list_capabilities: true,
        abp_version_check: false,
        cancel_nested: true,
        app_speaks_first: false,
        app_timeouts: false,
    };
}

impl Policy {
    /// ACP answers a cancelled request itself (-32800, or its result if it had finished), but not the cancel.
    pub const ACP: Policy = Policy {
        cancel_answered: false,
        cancelled_call_answered: true,
        resend_initialize: true,
        list_capabilities: false,
        abp_version_check: false,
        cancel_nested: true,
        app_speaks_first: false,
        app_timeouts: false,
    };
}

impl Policy {
    /// Tesseron: the app says hello first; a cancelled invocation is answered -32001; the app owns the action
    /// timeout (-32002).
    pub const TESSERON: Policy = Policy {
        cancel_answered: false,
        cancelled_call_answered: true,
        resend_initialize: false,
        list_capabilities: false,
        abp_version_check: false,
        cancel_nested: false,
        app_speaks_first: true,
        app_timeouts: true,
    };
}

/// This build speaks ABP only (the role builds): then every connection has ABP's policy.
const ABP_ONLY: bool = !cfg!(any(feature = "mcp", feature = "acp", feature = "tesseron"));

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
    cancel_answered,
    cancelled_call_answered,
    list_capabilities,
    abp_version_check,
    cancel_nested,
    app_speaks_first,
    app_timeouts,
);

impl Default for Policy {
    fn default() -> Self {
        Policy::ABP
    }
}

/// One connection's codec.
pub enum Codec<P> {
    Abp,
    #[cfg(feature = "mcp")]
    Mcp(mcp::McpCodec<P>),
    #[cfg(feature = "acp")]
    Acp(acp::AcpCodec<P>),
    #[cfg(feature = "tesseron")]
    Tesseron(tesseron::TesseronCodec<P>),
    /// Keeps `P` used when no JSON-RPC dialect is built.
    #[doc(hidden)]
    _Never(std::convert::Infallible, std::marker::PhantomData<P>),
}

impl<P: Wire> Codec<P> {
    /// `agent`: this side calls (ACP reads the requests that arrive by it). A dialect this build lacks
    /// ([`DialectKind::built`], checked where the option is read) falls back to ABP.
    #[allow(unused_variables)]
    pub fn new(kind: DialectKind, agent: bool) -> Codec<P> {
        match kind {
            #[cfg(feature = "mcp")]
            DialectKind::Mcp => Codec::Mcp(mcp::McpCodec::new()),
            #[cfg(feature = "acp")]
            DialectKind::Acp => Codec::Acp(acp::AcpCodec::new(agent)),
            #[cfg(feature = "tesseron")]
            DialectKind::Tesseron => Codec::Tesseron(tesseron::TesseronCodec::new(agent)),
            _ => Codec::Abp,
        }
    }

    pub fn kind(&self) -> DialectKind {
        match self {
            Codec::Abp => DialectKind::Abp,
            #[cfg(feature = "mcp")]
            Codec::Mcp(_) => DialectKind::Mcp,
            #[cfg(feature = "acp")]
            Codec::Acp(_) => DialectKind::Acp,
            #[cfg(feature = "tesseron")]
            Codec::Tesseron(_) => DialectKind::Tesseron,
            Codec::_Never(never, _) => match *never {},
        }
    }

    pub fn policy(&self) -> Policy {
        self.kind().policy()
    }

    /// Reads one received value. Never fails on bad input: what is not a message comes back as
    /// `Err(Ignored)`, and what the dialect answers with an error as [`Incoming::Invalid`].
    pub fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
        match self {
            Codec::Abp => codec::decode(msg),
            #[cfg(feature = "mcp")]
            Codec::Mcp(c) => c.decode(msg),
            #[cfg(feature = "acp")]
            Codec::Acp(c) => c.decode(msg),
            #[cfg(feature = "tesseron")]
            Codec::Tesseron(c) => c.decode(msg),
            Codec::_Never(never, _) => match *never {},
        }
    }

    /// Builds the wire message, with its transfer list; `None` when this dialect has no such message.
    pub fn encode(
        &mut self,
        msg: Outgoing<P>,
        clock: codec::Timestamp<'_>,
        hello: &Hello<'_, P>,
    ) -> Option<(P, Option<P>)> {
        match self {
            Codec::Abp => codec::encode(msg, clock, hello),
            #[cfg(feature = "mcp")]
            Codec::Mcp(c) => c.encode(msg, hello).map(|m| (m, None)),
            #[cfg(feature = "acp")]
            Codec::Acp(c) => c.encode(msg, hello).map(|m| (m, None)),
            #[cfg(feature = "tesseron")]
            Codec::Tesseron(c) => c.encode(msg, hello).map(|m| (m, None)),
            Codec::_Never(never, _) => match *never {},
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod acp_tests;

#[cfg(test)]
mod tesseron_tests;
