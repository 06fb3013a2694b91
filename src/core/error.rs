//! ABP error codes and the error value that travels in responses.

use std::fmt;

use super::payload::{Kind, Payload, Wire};

/// The error codes of the ABP error table, with their `retryable` defaults.
///
/// Codes this SDK does not know (an app may throw `{ code: 'MY_CODE' }`) are kept as [`ErrorCode::Other`]
/// and are not retryable unless the thrower says so.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    NotInitialized,
    AlreadyInitialized,
    SessionExpired,
    SessionInvalid,
    UnknownCapability,
    CapabilityUnavailable,
    RequirementNotMet,
    PermissionDenied,
    PermissionRequired,
    InvalidParams,
    MissingParam,
    InvalidType,
    OperationFailed,
    PreconditionFailed,
    Timeout,
    Cancelled,
    RateLimited,
    NotImplemented,
    NotSupported,
    BrowserError,
    InternalError,
    Disconnected,
    TransportError,
    Other(String),
}

impl ErrorCode {
    /// Every code of the ABP error table, its wire name, and its `retryable` default. The table's "depends"
    /// codes default to false: the thrower decides.
    const KNOWN: [(ErrorCode, &'static str, bool); 23] = [
        (ErrorCode::NotInitialized, "NOT_INITIALIZED", true),
        (ErrorCode::AlreadyInitialized, "ALREADY_INITIALIZED", false),
        (ErrorCode::SessionExpired, "SESSION_EXPIRED", true),
        (ErrorCode::SessionInvalid, "SESSION_INVALID", true),
        (ErrorCode::UnknownCapability, "UNKNOWN_CAPABILITY", false),
        (
            ErrorCode::CapabilityUnavailable,
            "CAPABILITY_UNAVAILABLE",
            false,
        ),
        (ErrorCode::RequirementNotMet, "REQUIREMENT_NOT_MET", false),
        (ErrorCode::PermissionDenied, "PERMISSION_DENIED", true),
        (ErrorCode::PermissionRequired, "PERMISSION_REQUIRED", true),
        (ErrorCode::InvalidParams, "INVALID_PARAMS", false),
        (ErrorCode::MissingParam, "MISSING_PARAM", false),
        (ErrorCode::InvalidType, "INVALID_TYPE", false),
        (ErrorCode::OperationFailed, "OPERATION_FAILED", false),
        (ErrorCode::PreconditionFailed, "PRECONDITION_FAILED", false),
        (ErrorCode::Timeout, "TIMEOUT", true),
        (ErrorCode::Cancelled, "CANCELLED", false),
        (ErrorCode::RateLimited, "RATE_LIMITED", true),
        (ErrorCode::NotImplemented, "NOT_IMPLEMENTED", false),
        (ErrorCode::NotSupported, "NOT_SUPPORTED", false),
        (ErrorCode::BrowserError, "BROWSER_ERROR", false),
        (ErrorCode::InternalError, "INTERNAL_ERROR", false),
        (ErrorCode::Disconnected, "DISCONNECTED", true),
        (ErrorCode::TransportError, "TRANSPORT_ERROR", false),
    ];

    /// Reads a wire code; unknown codes are kept verbatim.
    pub fn parse(code: &str) -> ErrorCode {
        Self::KNOWN
            .iter()
            .find(|(_, s, _)| *s == code)
            .map(|(c, _, _)| c.clone())
            .unwrap_or_else(|| ErrorCode::Other(code.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::Other(s) => s,
            known => Self::KNOWN
                .iter()
                .find(|(c, _, _)| c == known)
                .map(|(_, s, _)| *s)
                .unwrap_or("OPERATION_FAILED"),
        }
    }

    /// The `retryable` default of the ABP error table (false for codes it does not list).
    pub fn retryable(&self) -> bool {
        Self::KNOWN
            .iter()
            .find(|(c, _, _)| c == self)
            .is_some_and(|(_, _, r)| *r)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An ABP error: `{ code, message, retryable, details?, retryAfter?, alternatives? }`. `P` is the payload
/// type (a `JsValue` in the browser).
#[derive(Clone, Debug, PartialEq)]
pub struct AbpError<P> {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    pub details: Option<P>,
    /// Milliseconds (as the thrower gave it) before a retry makes sense.
    pub retry_after: Option<f64>,
    /// Capability names to try instead, as the thrower gave them.
    pub alternatives: Option<P>,
}

impl<P> AbpError<P> {
    /// An error with the table's retryable default.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let retryable = code.retryable();
        AbpError {
            code,
            message: message.into(),
            retryable,
            details: None,
            retry_after: None,
            alternatives: None,
        }
    }

    pub fn with_details(mut self, details: P) -> Self {
        self.details = Some(details);
        self
    }

    pub fn cancelled(reason: Option<&str>) -> Self {
        AbpError::new(
            ErrorCode::Cancelled,
            reason.unwrap_or("Operation cancelled"),
        )
    }

    pub fn timeout() -> Self {
        AbpError::new(ErrorCode::Timeout, "Operation timed out")
    }

    pub fn disconnected() -> Self {
        AbpError::new(
            ErrorCode::Disconnected,
            "The connection to the other side was lost",
        )
    }

    pub fn not_initialized() -> Self {
        AbpError::new(ErrorCode::NotInitialized, "No active ABP session")
    }
}

/// Reads an ABP error object.
pub fn decode_error<P: Wire>(e: &P) -> AbpError<P> {
    let code = opt_string(e, "code")
        .map(|c| ErrorCode::parse(&c))
        .unwrap_or(ErrorCode::OperationFailed);
    let retryable = e
        .get("retryable")
        .and_then(|r| r.as_bool())
        .unwrap_or_else(|| code.retryable());
    AbpError {
        message: opt_string(e, "message").unwrap_or_default(),
        retryable,
        details: e.get("details"),
        retry_after: opt_number(e, "retryAfter"),
        alternatives: e.get("alternatives").filter(|a| a.kind() == Kind::Array),
        code,
    }
}

pub fn encode_error<P: Wire>(e: AbpError<P>) -> P {
    let mut o = P::object_of(&mut [
        ("code", Some(P::string(e.code.as_str()))),
        ("message", Some(P::string(&e.message))),
        ("retryable", Some(P::boolean(e.retryable))),
        ("details", e.details),
    ]);
    if let Some(r) = e.retry_after {
        o.set("retryAfter", P::number(r));
    }
    if let Some(a) = e.alternatives {
        o.set("alternatives", a);
    }
    o
}

fn opt_string<P: Payload>(v: &P, key: &str) -> Option<String> {
    v.get_string(key)
}

fn opt_number<P: Payload>(v: &P, key: &str) -> Option<f64> {
    v.get_f64(key).filter(|n| n.is_finite())
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn the_typescript_error_code_union_lists_exactly_the_error_table() {
        let types = include_str!("../web/types.rs");
        let start = types
            .find("export type ABPErrorCode =")
            .expect("src/web/types.rs declares ABPErrorCode");
        let union = &types[start..start + types[start..].find(';').unwrap_or(0)];
        let in_ts: Vec<&str> = union.split('\'').skip(1).step_by(2).collect();
        let in_table: Vec<&str> = ErrorCode::KNOWN.iter().map(|(_, name, _)| *name).collect();
        assert_eq!(
            in_ts, in_table,
            "src/web/types.rs: ABPErrorCode must list the codes of ErrorCode::KNOWN, in order"
        );
        for (code, name, _) in ErrorCode::KNOWN {
            assert_eq!(ErrorCode::parse(name), code);
            assert_eq!(code.as_str(), name);
        }
    }
}
