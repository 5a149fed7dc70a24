//! Which receiver endpoint a datagram goes to: the receiver's session rules, for every scheme.
//!
//! A session is one sender address served by one fresh endpoint. The rules, none of which
//! looks inside a scheme's datagrams:
//!
//! - **No session, or a dead one** (nothing shown for `session_timeout`, from its start or its
//!   last frame): a datagram starts a session if a fresh endpoint of its scheme accepts it.
//!   Garbage is refused by that endpoint, so it never starts (or keeps alive) a session. This
//!   holds for the dead session's own sender too: a scheme may quietly drop a restarted
//!   sender's stream as old (the baselines' frame numbers start again), and a session that
//!   showed nothing for the timeout has nothing to lose.
//! - **A live session**: datagrams from other addresses are ignored while its sender keeps
//!   talking, so neither a second sender nor a flood of forgeries can take over a session
//!   that is showing frames. Once its sender has been silent for `takeover_after` (nothing
//!   from it accepted by its endpoint), another address may start a session as above: one
//!   datagram from a stranger that then falls silent costs the real sender at most that
//!   long, not the whole session timeout.
//! - **Its own sender restarted** (a fresh sender endpoint on the same address, e.g. after
//!   the sender loop gave up on feedback): where the session's endpoint refuses the new
//!   stream's datagrams (Salsify's, under a new connection id), they go to a *successor*
//!   endpoint, which takes over as soon as it shows a keyframe — at once, rather than after
//!   the timeout.
//!
//! The scheme is fixed, or learned per session from its first datagram
//! (`scheme_of_datagram`). A fixed-scheme receiver ignores a well-formed datagram of
//! another scheme (counted in [`Sessions::foreign`]), whether a session runs or not: anyone
//! can send one, so it must not end the receiver. The first one (and one per
//! [`FOREIGN_NOTE_EVERY`] after it) leaves a note naming both schemes
//! ([`Sessions::take_note`]), since it may be a misconfigured sender.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use salsify_endpoint::ReceiverEndpoint;
use salsify_schemes::{registry, SchemeConfig, SchemeParams, SourceInfo};
use salsify_time::{Duration, Instant};

/// Foreign-scheme datagrams between two notes about them.
pub const FOREIGN_NOTE_EVERY: u64 = 1000;

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
    /// When its endpoint last accepted a datagram from its sender: silent for
    /// `takeover_after`, another address may take over.
    pub last_heard: Instant,
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
    timeout: Option<Duration>,
    takeover_after: Duration,
    /// The session being shown.
    pub current: Option<Session>,
    /// A fresh endpoint fed what the current one refused from its own sender.
    pub successor: Option<Session>,
    /// Sessions started (and successors promoted).
    pub started: u32,
    /// Datagrams that went nowhere.
    pub ignored: u64,
    /// Well-formed datagrams of another scheme than the fixed one (counted in `ignored` too).
    pub foreign: u64,
    /// A note for the user not yet taken (see [`Sessions::take_note`]).
    note: Option<String>,
}

impl Sessions {
    /// Rules for `scheme` (`None`: learn each session's scheme from its first datagram),
    /// building endpoints with `params` for pictures described by `source`; a session dies
    /// after `timeout` without a frame shown, and another address may take over once its
    /// sender has been silent for `takeover_after`.
    pub fn new(
        scheme: Option<SchemeConfig>,
        params: SchemeParams,
        source: SourceInfo,
        timeout: Option<Duration>,
        takeover_after: Duration,
    ) -> Self {
        Sessions {
            fixed: scheme,
            params,
            source,
            timeout,
            takeover_after,
            current: None,
            successor: None,
            started: 0,
            ignored: 0,
            foreign: 0,
            note: None,
        }
    }

    /// A note about datagrams of another scheme, once in a while (see the module docs).
    pub fn take_note(&mut self) -> Option<String> {
        self.note.take()
    }

    /// Routes a datagram from `from` that arrived at `now`. Errors: an endpoint that cannot
    /// be built.
    pub fn route(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<Route> {
        let Some(s) = &self.current else {
            return self.start(now, from, bytes);
        };
        let alive = self.within_timeout(now, s.last_shown);
        if s.peer != from {
            let silent = now.saturating_duration_since(s.last_heard) >= self.takeover_after;
            if alive && !silent {
                self.ignored += 1;
                return Ok(Route::Ignored);
            }
            return self.start(now, from, bytes);
        }
        if !alive {
            return self.start(now, from, bytes);
        }
        let s = self.current.as_mut().expect("checked above");
        if s.endpoint.handle_datagram(now, bytes).is_ok() {
            s.last_heard = s.last_heard.max(now);
            return Ok(Route::Current);
        }
        self.route_to_successor(now, from, bytes)
    }

    /// The peer of an encrypted session moved to `to` (roaming): its session and successor
    /// follow it (every datagram that reaches the rules is the one peer's).
    pub fn repoint(&mut self, to: SocketAddr) {
        for s in [&mut self.current, &mut self.successor]
            .into_iter()
            .flatten()
        {
            s.peer = to;
        }
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
        if let Some(s) = &self.successor {
            if !self.within_timeout(now, s.last_shown) {
                self.successor = None;
            }
        }
    }

    /// The current session's sender was heard (by its successor).
    fn heard(&mut self, now: Instant) {
        if let Some(s) = &mut self.current {
            s.last_heard = s.last_heard.max(now);
        }
    }

    /// Whether a session that last showed a frame (or started) at `last_shown` is alive.
    fn within_timeout(&self, now: Instant, last_shown: Instant) -> bool {
        self.timeout
            .is_none_or(|t| now.saturating_duration_since(last_shown) < t)
    }

    fn route_to_successor(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
    ) -> Result<Route> {
        if let Some(s) = &mut self.successor {
            if s.endpoint.handle_datagram(now, bytes).is_ok() {
                self.heard(now);
                return Ok(Route::Successor);
            }
        }
        match self.accepting_endpoint(now, from, bytes)? {
            Some(s) => {
                self.successor = Some(s);
                self.heard(now);
                Ok(Route::Successor)
            }
            None => {
                self.ignored += 1;
                Ok(Route::Ignored)
            }
        }
    }

    fn start(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> Result<Route> {
        match self.accepting_endpoint(now, from, bytes)? {
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

    /// A fresh endpoint for the datagram's scheme that accepted it, if any. A well-formed
    /// datagram of another scheme than the fixed one is counted and noted.
    fn accepting_endpoint(
        &mut self,
        now: Instant,
        from: SocketAddr,
        bytes: &[u8],
    ) -> Result<Option<Session>> {
        let learned = scheme_of_datagram(bytes);
        let scheme = match (&self.fixed, learned) {
            (None, None) => return Ok(None),
            (None, Some(name)) => receiver_scheme(name, &self.params)?,
            (Some(fixed), Some(name)) if !serves(fixed, name) => {
                let other = receiver_scheme(name, &self.params)?;
                if self.accepts(&other, now, bytes)?.is_some() {
                    if self.foreign.is_multiple_of(FOREIGN_NOTE_EVERY) {
                        self.note = Some(format!(
                            "{from} sends {name} but this receiver runs {} (--scheme {}): \
                             ignored ({} such datagrams so far); if it is your sender, start \
                             both sides with the same --scheme, or leave --scheme out of \
                             salsify recv to learn it from the sender",
                            fixed.name(),
                            fixed.name(),
                            self.foreign + 1
                        ));
                    }
                    self.foreign += 1;
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
            last_heard: now,
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

/// The scheme a datagram belongs to, as its family reads its wire (`None` where the wire does
/// not say, such as feedback).
fn scheme_of_datagram(datagram: &[u8]) -> Option<&'static str> {
    registry::scheme_of_datagram(datagram)
}

/// The scheme whose receiver serves a sender of scheme `name` (one receiver may serve every
/// variant of a family).
fn receiver_scheme(name: &str, params: &SchemeParams) -> Result<SchemeConfig> {
    let name = registry::receiver_scheme(name).unwrap_or(name);
    SchemeConfig::named(name, params).with_context(|| format!("a receiver for {name}"))
}

/// Whether a receiver of `scheme` serves a sender of scheme `name`.
fn serves(scheme: &SchemeConfig, name: &str) -> bool {
    scheme.serves(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use salsify_codec::StateHash;

    const TIMEOUT: Duration = Duration::from_secs(2);
    const TAKEOVER: Duration = Duration::from_millis(500);

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn source() -> SourceInfo {
        SourceInfo {
            width: 64,
            height: 48,
            fps: 30.0,
        }
    }

    fn sessions(fixed: Option<&str>) -> Sessions {
        let params = SchemeParams::default();
        let scheme = fixed.map(|n| SchemeConfig::named(n, &params).unwrap());
        Sessions::new(scheme, params, source(), Some(TIMEOUT), TAKEOVER)
    }

    /// First fragment of a two-fragment Salsify keyframe of session `connection_id`.
    fn salsify_fragment(connection_id: u16, frame: u32) -> Vec<u8> {
        let mut out = Vec::new();
        salsify_transport::DataFragment {
            connection_id,
            frame,
            index: 0,
            count: 2,
            source: StateHash::INITIAL,
            target: StateHash(42),
            grace: Duration::ZERO,
            sent_at: Instant::ZERO,
            payload: &[1, 2, 3],
        }
        .emit(&mut out)
        .unwrap();
        out
    }

    /// First fragment of a two-fragment conventional keyframe.
    fn conventional_media() -> Vec<u8> {
        use salsify_baselines::wire::{MediaHeader, Packet};
        Packet::Media {
            header: MediaHeader {
                transport_seq: 0,
                media_seq: 0,
                frame: 0,
                fragment: 0,
                count: 2,
                keyframe: true,
                retransmission: false,
                scheme: salsify_baselines::WireId::Conventional,
            },
            payload: vec![1, 2, 3],
        }
        .emit()
        .unwrap()
    }

    #[test]
    fn garbage_starts_nothing_and_a_datagram_of_a_scheme_starts_a_session() {
        let mut s = sessions(None);
        for garbage in [&[][..], &[1, 2, 3], &[0xB1, 9], &[7; 40]] {
            assert_eq!(s.route(at(0), addr(1), garbage).unwrap(), Route::Ignored);
        }
        assert!(s.current.is_none());
        let fragment = salsify_fragment(5, 0);
        assert_eq!(s.route(at(1), addr(1), &fragment).unwrap(), Route::Started);
        let current = s.current.as_ref().unwrap();
        assert_eq!((current.number, current.scheme), (1, "salsify-2c"));
        assert_eq!(s.ignored, 4);
    }

    #[test]
    fn the_scheme_is_learned_per_session() {
        let mut s = sessions(None);
        assert_eq!(
            s.route(at(0), addr(1), &conventional_media()).unwrap(),
            Route::Started
        );
        assert_eq!(s.current.as_ref().unwrap().scheme, "conventional");
        // Silent for the timeout: a Salsify sender elsewhere takes over.
        let fragment = salsify_fragment(5, 0);
        assert_eq!(
            s.route(at(2500), addr(2), &fragment).unwrap(),
            Route::Started
        );
        let current = s.current.as_ref().unwrap();
        assert_eq!((current.number, current.scheme), (2, "salsify-2c"));
    }

    #[test]
    fn a_live_session_ignores_other_senders_while_its_sender_talks() {
        let mut s = sessions(Some("salsify-2c"));
        s.route(at(0), addr(1), &salsify_fragment(5, 0)).unwrap();
        let other = salsify_fragment(6, 0);
        for t in (100..1900).step_by(100) {
            // The sender keeps talking (the second fragment, then duplicates: refused, but
            // its successor takes them), and the other address is ignored throughout.
            let own = salsify_fragment(5, t as u32 / 100);
            assert_ne!(s.route(at(t), addr(1), &own).unwrap(), Route::Ignored);
            assert_eq!(
                s.route(at(t + 50), addr(2), &other).unwrap(),
                Route::Ignored
            );
        }
        assert_eq!(s.current.as_ref().unwrap().peer, addr(1));
        // Dead (nothing shown for the timeout): another sender may start.
        s.current.as_mut().unwrap().last_shown = at(1500); // it showed a frame
        s.route(at(3400), addr(1), &salsify_fragment(5, 40))
            .unwrap();
        assert_eq!(s.route(at(3450), addr(2), &other).unwrap(), Route::Ignored);
        assert_eq!(s.route(at(3500), addr(2), &other).unwrap(), Route::Started);
        assert_eq!(s.current.as_ref().unwrap().peer, addr(2));
        // Garbage from the new sender's address goes to its session (which counts it).
        assert_eq!(s.route(at(3501), addr(2), &[1, 0]).unwrap(), Route::Ignored);
        // Dead, it is replaced even by its own sender (whose restarted stream it may drop).
        let again = salsify_fragment(6, 1);
        assert_eq!(s.route(at(5600), addr(2), &again).unwrap(), Route::Started);
        assert_eq!(s.current.as_ref().unwrap().number, 3);
    }

    /// The probe's lock-out: one datagram from a stranger before the real sender starts
    /// holds the receiver only until the stranger has been silent for `takeover_after`,
    /// not for the whole session timeout.
    #[test]
    fn a_stranger_that_falls_silent_is_replaced_after_the_takeover_time() {
        let mut s = sessions(None);
        let sprout = salsify_baselines::sprout::wire::emit_data(
            &salsify_baselines::sprout::wire::DataHeader {
                session: 1,
                payload: salsify_baselines::sprout::wire::Payload::Heartbeat,
                forecaster: salsify_sprout_model::ForecasterKind::Sprout,
                seq: 0,
                throwaway: 0,
                time_to_next_ms: 0,
                sent_at_us: 0,
                frame: 0,
                fragment: 0,
                fragments: 1,
            },
            &[],
        );
        assert_eq!(s.route(at(0), addr(9), &sprout).unwrap(), Route::Started);
        let real = conventional_media();
        assert_eq!(s.route(at(100), addr(1), &real).unwrap(), Route::Ignored);
        assert_eq!(s.route(at(499), addr(1), &real).unwrap(), Route::Ignored);
        assert_eq!(s.route(at(500), addr(1), &real).unwrap(), Route::Started);
        let current = s.current.as_ref().unwrap();
        assert_eq!((current.peer, current.scheme), (addr(1), "conventional"));
        // Now the stranger is the one ignored while the sender talks.
        assert_eq!(s.route(at(600), addr(9), &sprout).unwrap(), Route::Ignored);
    }

    /// Without a timeout (the demo's receiver), a session that shows nothing for long, as
    /// while its frames wait in a deep queue after an outage, keeps its sender's stream.
    #[test]
    fn without_a_timeout_a_silent_session_lives_on() {
        let params = SchemeParams::default();
        let scheme = SchemeConfig::named("salsify-2c", &params).unwrap();
        let mut s = Sessions::new(Some(scheme), params, source(), None, TAKEOVER);
        s.route(at(0), addr(1), &salsify_fragment(5, 0)).unwrap();
        let later = salsify_fragment(5, 1);
        assert_eq!(
            s.route(at(60_000), addr(1), &later).unwrap(),
            Route::Current
        );
        let other = salsify_fragment(6, 0);
        assert_eq!(
            s.route(at(60_001), addr(2), &other).unwrap(),
            Route::Ignored
        );
        assert_eq!(s.current.as_ref().unwrap().number, 1);
    }

    /// A stranger's datagram of another scheme must not end a waiting receiver: it is
    /// counted, noted once, and the receiver still starts a session for its own scheme.
    #[test]
    fn a_receiver_told_one_scheme_ignores_and_notes_a_sender_of_another() {
        let mut s = sessions(Some("conventional"));
        let foreign = salsify_fragment(5, 0);
        assert_eq!(s.route(at(0), addr(1), &foreign).unwrap(), Route::Ignored);
        let note = s.take_note().unwrap();
        assert!(
            note.contains("sends salsify") && note.contains("runs conventional"),
            "{note}"
        );
        assert_eq!(s.route(at(1), addr(1), &foreign).unwrap(), Route::Ignored);
        assert!(s.take_note().is_none(), "one note, not one per datagram");
        assert_eq!((s.foreign, s.ignored), (2, 2));
        // Salsify-looking garbage is only ignored, not counted as a foreign scheme.
        assert_eq!(s.route(at(2), addr(1), &[1, 1]).unwrap(), Route::Ignored);
        assert_eq!(s.foreign, 2);
        // The receiver's own scheme still starts a session afterwards.
        assert_eq!(
            s.route(at(3), addr(2), &conventional_media()).unwrap(),
            Route::Started
        );
        // With a live session (and after it dies), a foreign sender is ignored too.
        let mut s = sessions(Some("vidaptive"));
        let mut vidaptive = conventional_media();
        vidaptive[19] = salsify_baselines::WireId::Vidaptive.wire_id();
        assert_eq!(s.route(at(0), addr(1), &vidaptive).unwrap(), Route::Started);
        let foreign = conventional_media();
        assert_eq!(s.route(at(10), addr(2), &foreign).unwrap(), Route::Ignored);
        assert_eq!(
            s.route(at(5000), addr(2), &foreign).unwrap(),
            Route::Ignored
        );
    }

    #[test]
    fn a_successor_not_shown_in_time_is_dropped_and_promotion_numbers_it() {
        let mut s = sessions(Some("salsify-2c"));
        s.route(at(0), addr(1), &salsify_fragment(5, 0)).unwrap();
        let fresh = || Session {
            number: 0,
            peer: addr(1),
            scheme: "salsify-2c",
            endpoint: SchemeConfig::named("salsify-2c", &SchemeParams::default())
                .unwrap()
                .build_receiver(&source())
                .unwrap(),
            last_shown: at(100),
            last_heard: at(100),
            deadline: at(100),
        };
        s.successor = Some(fresh());
        s.expire(at(2099));
        assert!(s.successor.is_some());
        s.expire(at(2100));
        assert!(s.successor.is_none());
        s.successor = Some(fresh());
        s.promote(at(200));
        let current = s.current.as_ref().unwrap();
        assert_eq!((current.number, current.last_shown), (2, at(200)));
    }
}
