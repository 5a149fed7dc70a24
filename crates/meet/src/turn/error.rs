//! Why an allocation or a binding did not work, as events report it.

use std::fmt;

/// An ERROR-CODE a server sent (e.g. 401 Unauthorized, 437 Allocation Mismatch, 486 Allocation
/// Quota Reached, 508 Insufficient Capacity). Read from an unauthenticated response, so it is
/// for the log, not for decisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// The code: 300..=699, or 0 for an error response that had none.
    pub code: u16,
    /// The server's reason phrase (at most [`ServerError::MAX_REASON`] bytes kept).
    pub reason: String,
}

impl ServerError {
    /// Longest reason phrase kept: it is the server's text, printed in logs.
    pub const MAX_REASON: usize = 128;

    pub(crate) fn new(code: u16, reason: &str) -> Self {
        let mut end = reason.len().min(Self::MAX_REASON);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        let reason = reason[..end].chars().filter(|c| !c.is_control()).collect();
        ServerError { code, reason }
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.reason)
    }
}

/// Why a TURN client has no relay (any more). Either way the client is done: build a new one to
/// try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnError {
    /// The allocation was never made: the server refused it (wrong credentials, quota, ...) or
    /// never answered. Carries the last error the server sent, if any.
    AllocateFailed(Option<ServerError>),
    /// The allocation was made and is gone: a refresh failed or it expired. Carries the last
    /// error the server sent, if any.
    Ended(Option<ServerError>),
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, error) = match self {
            TurnError::AllocateFailed(e) => ("the TURN allocation failed", e),
            TurnError::Ended(e) => ("the TURN allocation ended", e),
        };
        match error {
            Some(e) => write!(f, "{what} (the server said {e})"),
            None => write!(f, "{what} (no answer from the server)"),
        }
    }
}

impl std::error::Error for TurnError {}

/// Why a STUN binding found no address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingError {
    /// No answer came before the retransmits ran out.
    NoAnswer,
    /// The server answered with an error.
    Refused(ServerError),
    /// The server's success answer had no XOR-MAPPED-ADDRESS.
    NoAddress,
}

impl fmt::Display for BindingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindingError::NoAnswer => write!(f, "no answer from the STUN server"),
            BindingError::Refused(e) => write!(f, "the STUN server refused the binding: {e}"),
            BindingError::NoAddress => write!(f, "the STUN server's answer had no address"),
        }
    }
}

impl std::error::Error for BindingError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_cut_and_cleaned() {
        let long = "é".repeat(200);
        let e = ServerError::new(401, &long);
        assert!(e.reason.len() <= ServerError::MAX_REASON);
        assert_eq!(
            ServerError::new(438, "Stale\nNonce\u{7}").reason,
            "StaleNonce"
        );
        assert_eq!(
            TurnError::AllocateFailed(Some(ServerError::new(401, "Unauthorized"))).to_string(),
            "the TURN allocation failed (the server said 401 Unauthorized)"
        );
    }
}
