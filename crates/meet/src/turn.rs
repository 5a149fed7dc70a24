//! A TURN client (RFC 8656), sans-IO.
