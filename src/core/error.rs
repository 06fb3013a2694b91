//! ABP error codes and the error value that travels in responses.

use std::fmt;

/// The error codes of the ABP error table, with their `retryable` defaults.
///
/// Codes this SDK does not know (an app may throw `{ code: 'MY_CODE' }`) are kept as [`ErrorCode::Other`]
/// and are not retryable unless the thrower says so.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    NotInitialized,
    AlreadyInitialized,
    UnknownCapability,
    InvalidParams,
    OperationFailed,
    Timeout,
    Cancelled,
    Disconnected,
    TransportError,
    RateLimited,
    NotSupported,
    PermissionDenied,
    CapabilityUnavailable,
    Other(String),
}

impl ErrorCode {
    const KNOWN: [(ErrorCode, &'static str); 13] = [
        (ErrorCode::NotInitialized, "NOT_INITIALIZED"),
        (ErrorCode::AlreadyInitialized, "ALREADY_INITIALIZED"),
        (ErrorCode::UnknownCapability, "UNKNOWN_CAPABILITY"),
        (ErrorCode::InvalidParams, "INVALID_PARAMS"),
        (ErrorCode::OperationFailed, "OPERATION_FAILED"),
        (ErrorCode::Timeout, "TIMEOUT"),
        (ErrorCode::Cancelled, "CANCELLED"),
        (ErrorCode::Disconnected, "DISCONNECTED"),
        (ErrorCode::TransportError, "TRANSPORT_ERROR"),
        (ErrorCode::RateLimited, "RATE_LIMITED"),
        (ErrorCode::NotSupported, "NOT_SUPPORTED"),
        (ErrorCode::PermissionDenied, "PERMISSION_DENIED"),
        (ErrorCode::CapabilityUnavailable, "CAPABILITY_UNAVAILABLE"),
    ];

    /// Reads a wire code; unknown codes are kept verbatim.
    pub fn parse(code: &str) -> ErrorCode {
        Self::KNOWN
            .iter()
            .find(|(_, s)| *s == code)
            .map(|(c, _)| c.clone())
            .unwrap_or_else(|| ErrorCode::Other(code.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::Other(s) => s,
            known => Self::KNOWN
                .iter()
                .find(|(c, _)| c == known)
                .map(|(_, s)| *s)
                .unwrap_or("OPERATION_FAILED"),
        }
    }

    /// The `retryable` default of the ABP error table.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            ErrorCode::Timeout
                | ErrorCode::Disconnected
                | ErrorCode::TransportError
                | ErrorCode::RateLimited
                | ErrorCode::CapabilityUnavailable
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An ABP error: `{ code, message, retryable, details? }`. `P` is the payload type (a `JsValue` in the browser).
#[derive(Clone, Debug, PartialEq)]
pub struct AbpError<P> {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    pub details: Option<P>,
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
        }
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
