//! Which receiver endpoint a datagram goes to: the receiver's session rules, for every scheme.
//!
//! A session is one sender address served by one fresh endpoint. The rules, none of which
//! looks inside a scheme's datagrams:
//!
//! - **No session, or a dead one** (nothing shown for `session_timeout`, from its start or its
//!   last frame): a datagram starts a session if a fresh endpoint of its scheme accepts it.
//!   Garbage is refused by that endpoint, so it never starts (or keeps alive) a session.
//! - **A live session**: datagrams from other addresses are ignored, so neither a second
//!   sender nor a flood of forgeries can take over a session that is showing frames.
//! - **Its own sender restarted** (a fresh sender endpoint on the same address, e.g. after
//!   the sender loop gave up on feedback): the session's endpoint refuses the new stream's
//!   datagrams; they go to a *successor* endpoint instead, which takes over as soon as it
//!   shows a keyframe — at once, rather than after the timeout.
//!
//! The scheme is fixed, or learned per session from its first datagram
//! ([`scheme_of_datagram`]). A fixed-scheme receiver that would start a
//! session from a well-formed datagram of another scheme stops with an error naming both:
//! that is a misconfigured pair, which waiting would not mend.

use std::net::SocketAddr;

use anyhow::{bail, Context, Result};
use salsify_endpoint::{ReceiverEndpoint, WireFamily};
use salsify_schemes::{SchemeConfig, SchemeParams, SourceInfo};
use salsify_time::{Duration, Instant};

/// One sender served by one endpoint.
pub struct Session {
    /// Session number at this receiver, from 1 (0 for a successor not yet promoted).
    pub number: u32,
    /// The sender's address.
    pub peer: SocketAddr,
    /// The scheme's name.
    pub scheme: &'static str,
    /// The endpoint.
    pub endpoint: Box<dyn ReceiverEndpoint>,
    /// When it last showed a frame, or started: a session is alive while it shows frames,
    /// so datagrams that parse but never decode cannot keep a stale or forged one alive.
    pub last_shown: Instant,
    /// The endpoint's next deadline.
    pub deadline: Instant,
}

/// Where a datagram went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// To the current session.
    Current,
    /// To the successor of the current session.
    Successor,
    /// It started a new current session.
    Started,
    /// Nowhere.
    Ignored,
}

/// The current session, its successor and the rules between them.
pub struct Sessions {
    fixed: Option<SchemeConfig>,
    params: SchemeParams,
    source: SourceInfo,
    timeout: Duration,
    /// The session being shown.
    pub current: Option<Session>,
    /// A fresh endpoint fed what the current one refused from its own sender.
    pub successor: Option<Session>,
    /// Sessions started (and successors promoted).
    pub started: u32,
    /// Datagrams that went nowhere.
    pub ignored: u64,
}

impl Sessions {
    /// Rules for `scheme` (`None`: learn each session's scheme from its first datagram),
    /// building endpoints with `params` for pictures described by `source`.
    pub fn new(
        scheme: Option<SchemeConfig>,
        params: SchemeParams,
        source: SourceInfo,
        timeout: Duration,
    ) -> Self {
        Sessions {
            fixed: scheme,
            params,
            source,
            timeout,
            current: None,
            successor: None,
            started: 0,
            ignored: 0,
        }
    }

    /// Routes a datagram from `from` that arrived at `now`. Errors: a scheme mismatch (see
    /// the module docs), or an endpoint that cannot be built.
    pub fn route(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<Route> {
        let alive = self
            .current
            .as_ref()
            .is_some_and(|s| now.saturating_duration_since(s.last_shown) < self.timeout);
        if let Some(s) = self.current.as_mut().filter(|s| s.peer == from) {
            if s.endpoint.handle_datagram(now, bytes).is_ok() {
                return Ok(Route::Current);
            }
            if alive {
                return self.route_to_successor(now, from, bytes);
            }
        } else if alive {
            self.ignored += 1;
            return Ok(Route::Ignored);
        }
        self.start(now, from, bytes)
    }

    /// The successor showed a keyframe: it becomes the current session.
    pub fn promote(&mut self, now: Instant) {
        if let Some(mut s) = self.successor.take() {
            self.started += 1;
            s.number = self.started;
            s.last_shown = now;
            self.current = Some(s);
        }
    }

    /// Gives up on a successor that has shown nothing for the session timeout.
    pub fn expire(&mut self, now: Instant) {
        let timeout = self.timeout;
        self.successor
            .take_if(|s| now.saturating_duration_since(s.last_shown) >= timeout);
    }

    fn route_to_successor(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
    ) -> Result<Route> {
        if let Some(s) = &mut self.successor {
            if s.endpoint.handle_datagram(now, bytes).is_ok() {
                return Ok(Route::Successor);
            }
        }
        match self.accepting_endpoint(now, from, bytes, false)? {
            Some(s) => {
                self.successor = Some(s);
                Ok(Route::Successor)
            }
            None => {
                self.ignored += 1;
                Ok(Route::Ignored)
            }
        }
    }

    fn start(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<Route> {
        match self.accepting_endpoint(now, from, bytes, true)? {
            Some(mut s) => {
                self.started += 1;
                s.number = self.started;
                self.current = Some(s);
                self.successor = None;
                Ok(Route::Started)
            }
            None => {
                self.ignored += 1;
                Ok(Route::Ignored)
            }
        }
    }

    /// A fresh endpoint for the datagram's scheme that accepted it, if any.
    /// `mismatch_is_fatal`: a foreign scheme's datagram is an error rather than ignored.
    fn accepting_endpoint(
        &self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
        mismatch_is_fatal: bool,
    ) -> Result<Option<Session>> {
        let learned = scheme_of_datagram(bytes);
        let scheme = match (&self.fixed, learned) {
            (None, None) => return Ok(None),
            (None, Some(name)) => receiver_scheme(name, &self.params)?,
            (Some(fixed), Some(name)) if !serves(fixed, name) => {
                let other = receiver_scheme(name, &self.params)?;
                if mismatch_is_fatal && self.accepts(&other, now, bytes)?.is_some() {
                    bail!(
                        "{from} sends {name} but this receiver runs {} (--scheme {}): start \
                         both sides with the same --scheme, or leave --scheme out of salsify \
                         recv to learn it from the sender",
                        fixed.name(),
                        fixed.name()
                    );
                }
                return Ok(None);
            }
            (Some(fixed), _) => fixed.clone(),
        };
        Ok(self.accepts(&scheme, now, bytes)?.map(|endpoint| Session {
            number: 0,
            peer: from,
            scheme: scheme.name(),
            endpoint,
            last_shown: now,
            deadline: now,
        }))
    }

    /// A fresh `scheme` endpoint, if it accepts the datagram.
    fn accepts(
        &self,
        scheme: &SchemeConfig,
        now: Instant,
        bytes: &[u8],
    ) -> Result<Option<Box<dyn ReceiverEndpoint>>> {
        let mut endpoint = scheme
            .build_receiver(&self.source)
            .with_context(|| format!("cannot start a {} receiver", scheme.name()))?;
        Ok(endpoint
            .handle_datagram(now, bytes)
            .is_ok()
            .then_some(endpoint))
    }
}

/// The scheme a datagram belongs to: `salsify` for any Salsify variant, a baseline's name
/// where its datagram says (media datagrams do), else `None`. (Interim: to be replaced by
/// `salsify_schemes::scheme_of_datagram`, which answers the same question for the schemes
/// crate, once it lands.)
fn scheme_of_datagram(datagram: &[u8]) -> Option<&'static str> {
    match WireFamily::of(datagram)? {
        WireFamily::Salsify => Some("salsify"),
        WireFamily::Baseline => salsify_baselines::scheme_of(datagram).map(|s| s.name()),
    }
}

/// The scheme whose receiver serves a sender of scheme `name`: every Salsify variant has the
/// same receiver.
fn receiver_scheme(name: &str, params: &SchemeParams) -> Result<SchemeConfig> {
    let name = if name.starts_with("salsify") {
        "salsify-2c"
    } else {
        name
    };
    SchemeConfig::named(name, params).with_context(|| format!("a receiver for {name}"))
}

/// Whether a receiver of `scheme` serves a sender of scheme `name`.
fn serves(scheme: &SchemeConfig, name: &str) -> bool {
    match scheme.wire_family() {
        WireFamily::Salsify => name.starts_with("salsify"),
        WireFamily::Baseline => scheme.name() == name,
    }
}
