//! Live cells of the matrix: what a group marked `live = true` may run and what each live
//! run records beyond a simulated run's. Running them (sockets, threads, the browser) is the
//! command's business; this module only names and checks.
//!
//! A live group's systems are our schemes that run over UDP (every scheme but the oracle,
//! which reads the link's future) and Chromium's own WebRTC with one codec each:
//!
//! - `chromium-vp8`: VP8, Chrome's defaults;
//! - `chromium-vp9-svc`: VP9 with `scalabilityMode` [`VP9_SVC_MODE`] (why that mode: see
//!   the constant);
//! - `chromium-av1`: AV1, only where this Chromium offers it for WebRTC (the call refuses
//!   with the codecs it does offer otherwise).

use salsify_netem::{LinkDrop, LinkEvent, LinkEventKind};
use salsify_time::Instant;
use serde::{Deserialize, Serialize};

use salsify_schemes::{registry, Runs};

/// The browser systems a live group can name (the registry's peers).
pub fn chromium_systems() -> Vec<&'static str> {
    registry::peer_names()
}

/// The VP9 scalability mode of the VP9-SVC peer (see [`salsify_schemes::VP9_SVC_MODE`]).
pub use salsify_schemes::VP9_SVC_MODE;

/// Bytes an encrypted datagram of our live schemes carries beyond its plaintext
/// (`salsify_secure::OVERHEAD`: a 13-byte header and a 16-byte tag), and so the value of the
/// experiment's `link.datagram_overhead_bytes` under which a live cell of ours encrypts.
pub const ENCRYPTED_OVERHEAD_BYTES: u32 = 29;

/// Whether a live cell of one of our schemes encrypts, read from its experiment's
/// `link.datagram_overhead_bytes`, the bytes its simulated twin adds to every datagram: 0
/// runs it in plaintext, [`ENCRYPTED_OVERHEAD_BYTES`] encrypted. Any other value has no live
/// counterpart and is refused. Without this the live cell always encrypted while its
/// simulation charged nothing: 29 bytes more per datagram live, enough to move the
/// conventional scheme's mean delay on Verizon LTE from 75 to 116 ms in the simulator
/// (results/sim-vs-live).
pub fn live_encryption(datagram_overhead_bytes: u32) -> Result<bool, String> {
    match datagram_overhead_bytes {
        0 => Ok(false),
        ENCRYPTED_OVERHEAD_BYTES => Ok(true),
        n => Err(format!(
            "{n} bytes has no live counterpart: a live cell of ours runs with 0 (plaintext) or \
             {ENCRYPTED_OVERHEAD_BYTES} (encrypted)"
        )),
    }
}

/// How a live cell runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveSystem {
    /// Headless Chromium's WebRTC with this codec.
    Chromium(ChromiumCodec),
    /// One of our schemes over UDP through the link relay.
    Scheme(String),
}

/// Chromium's video codec in a live cell.
pub use salsify_schemes::PeerCodec as ChromiumCodec;

impl LiveSystem {
    /// The live system a group's scheme name stands for, or why it cannot run live.
    pub fn parse(name: &str) -> Result<LiveSystem, String> {
        match registry::scheme(name) {
            Some(s) => match s.runs {
                Runs::Peer(codec) => Ok(LiveSystem::Chromium(codec)),
                Runs::SimulatorOnly => Err(format!(
                    "'{name}' runs only in the simulator (it reads the link's future), not live"
                )),
                Runs::Anywhere if !s.sends_video => Err(format!(
                    "'{name}' sends no video, and a live cell is scored by the pictures it shows"
                )),
                Runs::Anywhere => Ok(LiveSystem::Scheme(name.to_string())),
            },
            None => Err(format!(
                "unknown live system '{name}'; one of {}, or a scheme: {}",
                chromium_systems().join(", "),
                registry::schemes()
                    .filter(|s| s.runs == Runs::Anywhere && s.sends_video)
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// What a live cell records in its `run.json` beyond a simulated run's facts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveFacts {
    /// The 1-minute load average just before the cell started: live figures depend on how
    /// busy the machine was, so each run says.
    pub load_before: f64,
    /// ... and just after it ended.
    pub load_after: f64,
    /// Presented pictures whose barcode matched their source picture, of all recorded.
    pub pictures_matched: (u64, u64),
    /// Presentations not recorded (the page or the recorder could not keep up); they count
    /// as not shown in the summary.
    #[serde(default)]
    pub presentations_missed: u64,
    /// What ran: Chromium's version line, or our scheme's name.
    pub system: String,
    /// Chromium's encoder as its `getStats` named it at the end of the call, with the
    /// scalability mode it used (which can be fewer layers than asked for: Chrome drops
    /// spatial layers a small picture cannot hold), e.g. "libvpx L1T3".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder: Option<String>,
    /// How faithful the emulated link was: the relay's 99th-percentile lateness forwarding
    /// video datagrams (µs after the link delivered them), from its `relay.csv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_late_p99_us: Option<u64>,
    /// Whether the relay ran under real-time scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_realtime: Option<bool>,
}

/// The 1-minute load average from `/proc/loadavg`'s text.
pub fn parse_load_average(text: &str) -> Result<f64, String> {
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("'{}' is not a load average line", text.trim()))
}

/// The link events of an `mm-link` log written by the live relay (`video.log`): arrivals,
/// delivery opportunities, departures (with their queueing delay) and drops, at the log's
/// millisecond times, which are the host's monotonic clock like the run's records.
pub fn parse_link_log(text: &str) -> Result<Vec<LinkEvent>, String> {
    let mut events = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || format!("line {}: '{line}' is not an mm-link log line", n + 1);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| -> Result<u64, String> {
            fields.get(i).and_then(|f| f.parse().ok()).ok_or_else(bad)
        };
        let at = number(0)?;
        let time = Instant::from_micros(at.checked_mul(1000).ok_or_else(bad)?);
        let size = |i| number(i).map(|b| b as usize);
        let kind = match fields.get(1).copied() {
            Some("+") => LinkEventKind::Arrival {
                seq: 0,
                size_bytes: size(2)?,
            },
            Some("#") => LinkEventKind::Opportunity {
                bytes: u32::try_from(number(2)?).map_err(|_| bad())?,
            },
            Some("-") => LinkEventKind::Departure {
                seq: 0,
                size_bytes: size(2)?,
                enqueued_at: Instant::from_micros(at.saturating_sub(number(3)?) * 1000),
            },
            Some("d") => LinkEventKind::Drop {
                seq: 0,
                size_bytes: size(3)?,
                reason: LinkDrop::QueueFull,
            },
            _ => return Err(bad()),
        };
        events.push(LinkEvent { time, kind });
    }
    Ok(events)
}

/// A live run's link events with `origin` (the host time of the scored records' zero, see
/// `salsify_peer::Analysis::origin`) as time zero, as a simulated run's are; what happened
/// before it is left out.
pub fn events_from(events: &[LinkEvent], origin: Instant) -> Vec<LinkEvent> {
    let shift = |t: Instant| Instant::from_micros(t.as_micros().saturating_sub(origin.as_micros()));
    events
        .iter()
        .filter(|e| e.time >= origin)
        .map(|e| LinkEvent {
            time: shift(e.time),
            kind: match e.kind {
                LinkEventKind::Departure {
                    seq,
                    size_bytes,
                    enqueued_at,
                } => LinkEventKind::Departure {
                    seq,
                    size_bytes,
                    enqueued_at: shift(enqueued_at),
                },
                other => other,
            },
        })
        .collect()
}

/// The encoder and scalability mode the last line of a call's `stats.jsonl` (Chrome's
/// `getStats` of the sending side, one JSON object a line) reports, if any.
pub fn encoder_in_stats(stats: &str) -> Option<String> {
    let line = stats.lines().rev().find(|l| l.contains("outbound"))?;
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let outbound = value.get("outbound")?;
    let field = |k: &str| outbound.get(k).and_then(|v| v.as_str());
    let parts: Vec<&str> = [field("encoderImplementation"), field("scalabilityMode")]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_logs_parse_and_move_onto_the_runs_start() {
        let log = "# mahimahi mm-link (Uplink) [x] > salsify-netem\n# base timestamp: 9000\n\
                   9001 # 1500\n9002 + 1200\n9010 - 1200 8\n9011 d 1 900\n";
        let events = parse_link_log(log).unwrap();
        assert_eq!(events.len(), 4);
        assert_eq!(events[2].time, Instant::from_micros(9_010_000));
        let events = events_from(&events, Instant::from_micros(9_002_000));
        assert_eq!(events[0].time, Instant::ZERO);
        assert_eq!(
            events.len(),
            3,
            "the opportunity before the start is left out"
        );
        let LinkEventKind::Departure { enqueued_at, .. } = events[1].kind else {
            panic!("{events:?}");
        };
        assert_eq!(enqueued_at, Instant::from_micros(0));
        for bad in ["9001 x 1", "abc + 1", "9001 + ", "9001 # 99999999999"] {
            assert!(parse_link_log(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn live_systems_parse_and_the_oracle_is_refused() {
        assert_eq!(
            LiveSystem::parse("chromium-vp9-svc"),
            Ok(LiveSystem::Chromium(ChromiumCodec::Vp9Svc))
        );
        assert_eq!(
            LiveSystem::parse("salsify-2c"),
            Ok(LiveSystem::Scheme("salsify-2c".into()))
        );
        let e = LiveSystem::parse("oracle").unwrap_err();
        assert!(e.contains("only in the simulator"), "{e}");
        let e = LiveSystem::parse("skype").unwrap_err();
        assert!(
            e.contains("chromium-vp8") && e.contains("conventional"),
            "{e}"
        );
        assert!(!e.contains("oracle") && !e.contains("bulk"), "{e}");
        let e = LiveSystem::parse("sprout-bulk").unwrap_err();
        assert!(e.contains("no video"), "{e}");
        assert_eq!(
            LiveSystem::parse("sprout"),
            Ok(LiveSystem::Scheme("sprout".into()))
        );
        assert_eq!(ChromiumCodec::Vp9Svc.scalability_mode(), Some("L3T3_KEY"));
        assert_eq!(ChromiumCodec::Av1.mime_type(), "video/AV1");
    }

    #[test]
    fn the_encoder_is_read_from_the_last_stats_line() {
        let stats = "{\"outbound\":{\"encoderImplementation\":\"libvpx\",\"scalabilityMode\":\"L3T3_KEY\"}}\n\
                     {\"outbound\":{\"encoderImplementation\":\"libvpx\",\"scalabilityMode\":\"L1T3\"}}\n\
                     {\"pair\":{}}\n";
        assert_eq!(encoder_in_stats(stats).as_deref(), Some("libvpx L1T3"));
        assert_eq!(encoder_in_stats("{\"pair\":{}}"), None);
        assert_eq!(encoder_in_stats("not json outbound"), None);
    }

    #[test]
    fn load_averages_parse() {
        assert_eq!(parse_load_average("0.29 1.35 2.19 1/81 6056\n"), Ok(0.29));
        assert!(parse_load_average("").is_err());
        assert!(parse_load_average("x 1 2").is_err());
    }

    /// A live cell of ours encrypts exactly when its simulated twin charges the encrypted
    /// datagram's bytes; other overheads cannot be run live.
    #[test]
    fn a_live_cell_encrypts_when_its_simulation_charges_for_it() {
        assert_eq!(live_encryption(0), Ok(false));
        assert_eq!(live_encryption(ENCRYPTED_OVERHEAD_BYTES), Ok(true));
        let refused = live_encryption(28).unwrap_err();
        assert!(refused.contains("28 bytes"), "{refused}");
    }
}
