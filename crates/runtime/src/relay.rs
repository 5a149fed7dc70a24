//! The link relay: a user-space UDP hop that applies the sans-IO netem [`Link`] in real time,
//! one link per direction.
//!
//! The relay listens on one socket. Datagrams from the receiver's address are ACKs, sent
//! back through the ACK link to the sender and nobody else; the sender's datagrams are video,
//! sent through the video link to the receiver. The sender is learned from its first valid
//! datagram and kept until it falls silent, or given ([`crate::relay_sender`]); anyone
//! else's datagrams are counted and dropped. A direction without a link
//! forwards at once (an unconstrained path). Each link can log every packet in Mahimahi's
//! `mm-link` format.
//!
//! The relay's thread asks for real-time scheduling and counts how late it forwarded each
//! datagram after the link said it arrives ([`DirectionTotals::lateness`]): lateness is
//! queueing the trace does not have, and a live run that has much of it is not the link
//! its simulation ran on.

use std::fs::File;
use std::io::BufWriter;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use anyhow::{Context, Result};
use salsify_netem::{Link, LinkConfig, LinkStats, LogHeader, MahimahiLog};
use salsify_time::{Duration, Instant};

use crate::call_start::CallStart;
use crate::clock;
use crate::lateness::{Lateness, LatenessSummary};
use crate::observe::{Observation, Observer, STATE_EVERY};
use crate::relay_sender::{SenderLock, SenderRule};
use crate::udp::{self, Received};

/// Longest the loop sleeps before looking at its stop flag.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// One direction: its link (`None`: forward at once) and log file.
#[derive(Debug, Clone, Default)]
pub struct DirectionConfig {
    /// The emulated link.
    pub link: Option<LinkConfig>,
    /// Where to write its `mm-link` log.
    pub log: Option<PathBuf>,
    /// A name for the trace, for the log header.
    pub trace_name: String,
}

/// Everything the relay needs.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Where the receiver listens.
    pub to: SocketAddr,
    /// Sender to receiver.
    pub video: DirectionConfig,
    /// Receiver to sender.
    pub ack: DirectionConfig,
    /// Drop every datagram from an address outside loopback (127.0.0.0/8, ::1), counted in
    /// [`RelayTotals::refused`]: a relay meant to stay on the machine (the Chromium peer's)
    /// then never answers, or forwards for, another host.
    pub loopback_only: bool,
    /// Ask for real-time scheduling for the relay's thread ([`crate::realtime`]); refused
    /// without the right, and then said in [`RelayTotals::realtime`].
    pub realtime: bool,
    /// Where to write [`RelayTotals`] as CSV when the relay stops (`relay.csv`).
    pub report: Option<PathBuf>,
    /// When the links' traces start.
    pub start: LinkStart,
    /// Which address is the sender ([`SenderRule::default`]: learned, kept until silent).
    pub sender: SenderRule,
}

/// When a relay's links start playing their traces (time 0 of a trace and of a preset's
/// schedule, such as the dropout's outage).
#[derive(Debug, Clone, Default)]
pub enum LinkStart {
    /// When the first datagram arrives, from either side: the part of the trace a call meets
    /// does not depend on how long its endpoints took to start.
    #[default]
    FirstDatagram,
    /// When the relay starts, as Mahimahi's `mm-link` does.
    Launch,
    /// When the sender marks the call's start (its first picture), as the simulator starts
    /// a trace with the camera; at the first datagram if that comes before the mark.
    Call(CallStart),
}

/// Counters of a finished run.
#[derive(Debug, Clone, Copy, Default)]
pub struct RelayTotals {
    /// Video direction.
    pub video: DirectionTotals,
    /// ACK direction.
    pub ack: DirectionTotals,
    /// Datagrams dropped because they came from outside loopback (`loopback_only`).
    pub refused: u64,
    /// Whether the relay's thread ran under real-time scheduling.
    pub realtime: bool,
    /// Datagrams dropped as from neither the sender nor the receiver.
    pub strangers: u64,
    /// Addresses taken as the sender, one after another's silence (the first included).
    pub senders: u64,
}

/// Counters of one direction.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectionTotals {
    /// Datagrams in.
    pub packets_in: u64,
    /// Datagrams forwarded.
    pub packets_out: u64,
    /// The link's own stats, if it has one.
    pub link: Option<LinkStats>,
    /// How long after the link delivered a datagram the relay sent it on (a direction
    /// without a link: none counted).
    pub lateness: LatenessSummary,
}

struct Direction {
    link: Option<Link<Vec<u8>>>,
    log: Option<MahimahiLog<BufWriter<File>>>,
    totals: DirectionTotals,
    lateness: Lateness,
    /// Bytes one delivery opportunity carries.
    opportunity_bytes: u64,
}

impl Direction {
    fn new(config: &DirectionConfig, name: &str, now: Instant) -> Result<Direction> {
        let Some(mut link_config) = config.link.clone() else {
            return Ok(Direction {
                link: None,
                log: None,
                totals: DirectionTotals::default(),
                lateness: Lateness::default(),
                opportunity_bytes: 0,
            });
        };
        link_config.record_events = config.log.is_some();
        let opportunity_bytes = u64::from(link_config.opportunity_bytes);
        let link = Link::new(link_config, now).with_context(|| format!("{name} link"))?;
        let log = match &config.log {
            Some(path) => {
                let file = salsify_codec::output::create(path)
                    .with_context(|| format!("cannot create '{}'", path.display()))?;
                let header = LogHeader::for_link(&link, name, &config.trace_name);
                Some(MahimahiLog::new(BufWriter::new(file), &header)?)
            }
            None => None,
        };
        Ok(Direction {
            link: Some(link),
            log,
            totals: DirectionTotals::default(),
            lateness: Lateness::default(),
            opportunity_bytes,
        })
    }

    /// Takes a datagram in; returns it back if it is to be forwarded at once.
    fn offer(&mut self, now: Instant, bytes: Vec<u8>) -> Option<Vec<u8>> {
        self.totals.packets_in += 1;
        match &mut self.link {
            None => Some(bytes),
            Some(link) => {
                let len = bytes.len();
                let _ = link.handle_packet(now, bytes, len); // drops are the link's business
                None
            }
        }
    }

    /// Sends the datagrams due by `now` to `to` (dropped when there is nobody to send to
    /// yet), counting how late each leaves.
    fn forward_due(&mut self, now: Instant, socket: &UdpSocket, to: Option<SocketAddr>) {
        let Some(link) = &mut self.link else { return };
        while let Some(d) = link.poll_delivery(now) {
            if let Some(to) = to {
                self.lateness
                    .record(clock::now().saturating_duration_since(d.delivered_at));
                self.totals.packets_out += u64::from(udp::send(socket, &d.payload, to));
            }
        }
    }

    /// The direction's counters for an observer.
    fn state(&self, at: Instant, refused: u64) -> Observation {
        let stats = self.link.as_ref().map(|l| l.stats());
        Observation::LinkState {
            at,
            capacity_bytes: stats.map(|s| s.opportunities * self.opportunity_bytes),
            delivered_bytes: stats.map(|s| s.bytes_delivered),
            queued_bytes: self.link.as_ref().map_or(0, |l| l.queued_bytes()),
            dropped: stats.map_or(0, |s| s.dropped_queue_full + s.dropped_lost),
            refused,
        }
    }

    fn next(&self) -> Instant {
        self.link
            .as_ref()
            .and_then(|l| l.poll_timeout())
            .unwrap_or(Instant::FAR_FUTURE)
    }

    fn write_log(&mut self) -> Result<()> {
        if let (Some(log), Some(link)) = (&mut self.log, &mut self.link) {
            log.drain(link).context("writing the link log")?;
        }
        Ok(())
    }

    fn finish(mut self, now: Instant) -> Result<DirectionTotals> {
        if let Some(link) = &mut self.link {
            link.handle_timeout(now);
        }
        self.write_log()?;
        if let Some(log) = self.log.take() {
            log.finish().context("writing the link log")?;
        }
        self.totals.link = self.link.as_ref().map(|l| l.stats());
        self.totals.lateness = self.lateness.summary();
        Ok(self.totals)
    }
}

/// Whether the relay takes a datagram from `from`: anything, or with `loopback_only` only
/// datagrams from 127.0.0.0/8 or ::1 (an IPv4 loopback address mapped into IPv6 included).
fn admits(loopback_only: bool, from: SocketAddr) -> bool {
    let loopback = match from.ip() {
        std::net::IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
        ip => ip.is_loopback(),
    };
    !loopback_only || loopback
}

impl LinkStart {
    /// The call's start, once the sender marked it ([`LinkStart::Call`]).
    fn marked(&self) -> Option<Instant> {
        match self {
            LinkStart::Call(start) => start.get(),
            _ => None,
        }
    }
}

/// Both directions' links, started together.
struct Links {
    video: Direction,
    ack: Direction,
}

impl Links {
    /// Starts both links' traces at `at` and says so to `observer`.
    fn start(config: &RelayConfig, at: Instant, observer: &Observer) -> Result<Links> {
        let links = Links {
            video: Direction::new(&config.video, "Uplink", at)?,
            ack: Direction::new(&config.ack, "Downlink", at)?,
        };
        observer.report(Observation::LinkStarted { at });
        Ok(links)
    }
}

/// Relays on `socket` until `stop` is set.
pub fn run(
    config: RelayConfig,
    socket: UdpSocket,
    stop: Arc<AtomicBool>,
    observer: Observer,
) -> Result<RelayTotals> {
    let (tx, rx) = mpsc::sync_channel::<Received>(udp::READER_BACKLOG);
    let _reader = udp::spawn_reader(&socket, stop.clone(), tx, |d| d)?;
    let realtime = config.realtime && crate::realtime::request_for_this_thread().is_ok();
    let mut links = match config.start {
        LinkStart::Launch => Some(Links::start(&config, clock::now(), &observer)?),
        LinkStart::FirstDatagram | LinkStart::Call(_) => None,
    };
    let mut lock = SenderLock::new(config.sender);
    let mut refused = 0;
    let mut next_state = Instant::ZERO;
    while !stop.load(Ordering::Relaxed) {
        let deadline = match &mut links {
            Some(Links { video, ack }) => {
                let now = clock::now();
                if observer.active() && now >= next_state {
                    next_state = now + STATE_EVERY;
                    observer.report(video.state(now, refused));
                }
                video.forward_due(now, &socket, Some(config.to));
                ack.forward_due(now, &socket, lock.sender());
                video.write_log()?;
                ack.write_log()?;
                video.next().min(ack.next())
            }
            None => match config.start.marked() {
                Some(at) => {
                    links = Some(Links::start(&config, at, &observer)?);
                    continue;
                }
                None => Instant::FAR_FUTURE,
            },
        };
        let wait = deadline
            .saturating_duration_since(clock::now())
            .min(MAX_WAIT);
        let d = match rx.recv_timeout(wait) {
            Ok(d) => d,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if !admits(config.loopback_only, d.from) {
            refused += 1;
            continue;
        }
        let Links { video, ack } = match &mut links {
            Some(l) => l,
            None => {
                let at = config.start.marked().map_or(d.at, |m| m.min(d.at));
                links.insert(Links::start(&config, at, &observer)?)
            }
        };
        if d.from == config.to {
            if let (Some(bytes), Some(to)) = (ack.offer(d.at, d.bytes), lock.sender()) {
                ack.totals.packets_out += u64::from(udp::send(&socket, &bytes, to));
            }
        } else if lock.admit(d.at, d.from, &d.bytes) {
            if let Some(bytes) = video.offer(d.at, d.bytes) {
                video.totals.packets_out += u64::from(udp::send(&socket, &bytes, config.to));
            }
        }
    }
    let now = clock::now();
    // Nothing came: the links start now, so that their (empty) logs are written.
    let Links { video, ack } = match links {
        Some(l) => l,
        None => Links::start(&config, now, &observer)?,
    };
    let totals = RelayTotals {
        video: video.finish(now)?,
        ack: ack.finish(now)?,
        refused,
        realtime,
        strangers: lock.strangers,
        senders: lock.learned,
    };
    if let Some(path) = &config.report {
        salsify_codec::output::write(path, totals.to_csv())
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    Ok(totals)
}

impl RelayTotals {
    /// One CSV row per direction: datagrams in and out, and the relay's lateness (quantiles,
    /// and how many datagrams it was counted for).
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "direction,packets_in,packets_out,late_p50_us,late_p99_us,late_p999_us,late_max_us,realtime,late_counted\n",
        );
        for (name, d) in [("video", &self.video), ("ack", &self.ack)] {
            let l = &d.lateness;
            out.push_str(&format!(
                "{name},{},{},{},{},{},{},{},{}\n",
                d.packets_in,
                d.packets_out,
                l.p50.as_micros(),
                l.p99.as_micros(),
                l.p999.as_micros(),
                l.max.as_micros(),
                u8::from(self.realtime),
                l.count
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a relay with `start` on loopback, sends it one datagram after `pause`, and
    /// returns when the datagram was sent and the video log's base timestamp (ms).
    fn base_timestamp_after(start: LinkStart, pause: std::time::Duration) -> (Instant, u64) {
        let dir = std::env::temp_dir().join(format!(
            "salsify-relay-start-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("video.log");
        let receiver = udp::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let socket = udp::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let relay_addr = socket.local_addr().unwrap();
        let link = || {
            Some(salsify_netem::LinkConfig::with_trace(
                salsify_netem::default_trace(),
            ))
        };
        let config = RelayConfig {
            to: receiver.local_addr().unwrap(),
            video: DirectionConfig {
                link: link(),
                log: Some(log.clone()),
                trace_name: "test".into(),
            },
            ack: DirectionConfig {
                link: link(),
                ..DirectionConfig::default()
            },
            loopback_only: true,
            realtime: false,
            report: None,
            start,
            sender: SenderRule {
                known_protocols_only: false,
                ..SenderRule::default()
            },
        };
        let stop = Arc::new(AtomicBool::new(false));
        let relay = std::thread::spawn({
            let stop = stop.clone();
            move || run(config, socket, stop, Observer::default())
        });
        std::thread::sleep(pause);
        let sender = udp::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let sent = clock::now();
        sender.send_to(&[0u8; 100], relay_addr).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        relay.join().unwrap().unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let base = text
            .lines()
            .find_map(|l| l.strip_prefix("# base timestamp: "))
            .expect("a base timestamp")
            .parse()
            .unwrap();
        (sent, base)
    }

    #[test]
    fn the_links_start_at_launch_at_the_first_datagram_or_at_the_call_mark() {
        let pause = std::time::Duration::from_millis(300);
        let ms = |t: Instant| t.as_micros() / 1000;

        let before = clock::now();
        let (sent, base) = base_timestamp_after(LinkStart::Launch, pause);
        assert!(
            base >= ms(before) && base + 250 < ms(sent),
            "{base} {sent:?}"
        );

        let (sent, base) = base_timestamp_after(LinkStart::FirstDatagram, pause);
        assert!(base >= ms(sent) && base < ms(sent) + 50, "{base} {sent:?}");

        // Marked before the relay starts: the links start at the mark, not at launch.
        let call = CallStart::new();
        let mark = clock::now()
            .checked_sub(Duration::from_millis(500))
            .expect("a clock running for a while");
        call.mark(mark);
        let (_, base) = base_timestamp_after(LinkStart::Call(call), pause);
        assert_eq!(base, ms(mark));

        // Never marked: the first datagram starts them.
        let (sent, base) = base_timestamp_after(LinkStart::Call(CallStart::new()), pause);
        assert!(base >= ms(sent) && base < ms(sent) + 50, "{base} {sent:?}");
    }

    #[test]
    fn a_loopback_only_relay_admits_loopback_sources_only() {
        for from in [
            "127.0.0.1:5000",
            "127.8.9.1:1",
            "[::1]:5000",
            "[::ffff:127.0.0.1]:5",
        ] {
            assert!(admits(true, from.parse().unwrap()), "{from}");
        }
        for from in [
            "192.0.2.2:5000",
            "[fd00::2]:5000",
            "[::ffff:192.0.2.2]:5",
            "0.0.0.0:1",
        ] {
            assert!(!admits(true, from.parse().unwrap()), "{from}");
            assert!(admits(false, from.parse().unwrap()), "{from}");
        }
    }
}
