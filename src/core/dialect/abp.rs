//! ABP itself: the envelope codec of `core::codec`, and the rules the other dialects differ from.

use super::super::codec::{self, Hello, Ignored, Timestamp, Wire};
use super::super::message::{FromAgent, FromApp, Incoming};
use super::{DialectCodec, Policy};

pub const POLICY: Policy = Policy {
    cancel_answered: true,
    cancelled_call_answered: true,
    resend_initialize: true,
    list_capabilities: false,
    abp_version_check: true,
    cancel_nested: false,
    app_speaks_first: false,
    app_timeouts: false,
    abp_envelope: true,
    min_progress_interval: 0,
};

/// ABP keeps no state per connection: every message is read and written on its own.
pub struct AbpCodec;

impl<P: Wire> DialectCodec<P> for AbpCodec {
    fn new(_agent: bool) -> Self {
        AbpCodec
    }

    fn decode(&mut self, msg: &P) -> Result<Incoming<P>, Ignored> {
        codec::decode(msg)
    }

    fn encode_agent(
        &mut self,
        msg: FromAgent<P>,
        clock: Timestamp<'_>,
        hello: &Hello<'_, P>,
    ) -> Option<(P, Option<P>)> {
        codec::encode_agent(msg, clock, hello)
    }

    fn encode_app(
        &mut self,
        msg: FromApp<P>,
        clock: Timestamp<'_>,
        hello: &Hello<'_, P>,
    ) -> Option<(P, Option<P>)> {
        codec::encode_app(msg, clock, hello)
    }
}
