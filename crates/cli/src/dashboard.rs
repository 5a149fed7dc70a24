//! `--dashboard [ADDR]` on `demo`, `send`, `recv` and `link`: what each observation of a call
//! means on the page (`salsify-dashboard` serves it), and starting and ending the dashboard.
//!
//! The call's loops report to a bounded channel that drops rather than waits
//! ([`Observer::bounded`]); the demo's watcher, already off the call's threads, forwards what
//! it observes and the per-frame delay and SSIM it scores.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use anyhow::{bail, Result};
use clap::Args;
use salsify_dashboard::{Agg, Listen, Live, Sink, Translate};
use salsify_endpoint::{Choice, SenderStats};
use salsify_time::{Duration, Instant};
use serde_json::json;

use crate::runtime::clock;
use crate::runtime::observe::{Observation, Observer};

/// The `--dashboard` flag.
#[derive(Args, Debug, Clone, Default)]
pub struct DashboardArgs {
    /// Serve a live dashboard of the call in the browser (charts of the link, the sender, its
    /// scheme and the receiver, and the last shown picture). Its address is printed at the
    /// start. ADDR: 127.0.0.1 and a free port when left out; any other address is served
    /// behind a random token, printed in the URL.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub dashboard: Option<String>,
}

/// `ADDR` of `--dashboard`: `HOST:PORT`, a bare IP (a free port) or a bare port (on
/// 127.0.0.1).
pub fn parse_listen(s: &str) -> Result<SocketAddr> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, 0));
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    bail!("--dashboard takes HOST:PORT, an IP address or a port, not '{s}'")
}

/// Which command runs the dashboard: what its page can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// Sender, link and receiver in one process.
    Demo,
    /// The sender alone: its picture is the last captured one.
    Send,
    /// The receiver alone.
    Recv,
    /// The relay alone.
    Link,
}

/// What a demo's watcher hands on: what it observed, and what it scored of a shown frame.
#[derive(Debug)]
pub enum Fact {
    /// An observation of a loop.
    Observed(Observation),
    /// A frame the demo counted as shown (its summary's count), its capture-to-display
    /// delay and SSIM (where the demo scores it).
    Scored {
        /// When it was shown.
        at: Instant,
        /// Capture to display, where the capture is known.
        delay: Option<Duration>,
        /// Its SSIM against the source.
        ssim: Option<f64>,
    },
}

/// Starts the dashboard if `--dashboard` asked for one (at `addr`), and says where it is.
pub fn start<T: Send + 'static>(
    addr: Option<&str>,
    title: &str,
    scheme: Option<&str>,
    role: Runner,
) -> Result<Option<Live<T>>>
where
    CallView: Translate<T>,
{
    let Some(addr) = addr else {
        return Ok(None);
    };
    let listen = Listen::new(parse_listen(addr)?);
    let note = match role {
        Runner::Send => "the last captured picture",
        Runner::Link => "no pictures at the relay",
        Runner::Demo | Runner::Recv => "the last shown picture",
    };
    let meta = json!({ "mode": "live", "title": title, "scheme": scheme, "picture_note": note });
    let live = Live::start(&listen, meta, clock::now, CallView::new(role))?;
    let scope = match listen.token {
        None => "this machine only".to_string(),
        Some(_) => format!("on {}; keep the token private", live.addr()),
    };
    eprintln!("dashboard: {} ({scope})", live.url());
    Ok(Some(live))
}

/// An observer for a loop: the dashboard's bounded channel, or none.
pub fn observer(live: &Option<Live<Observation>>) -> Observer {
    match live {
        Some(l) => {
            let (tx, dropped) = l.feed().parts();
            Observer::bounded(tx, dropped)
        }
        None => Observer::default(),
    }
}

/// Ends the dashboard: open pages get the last samples, and what they showed last is said.
pub fn finish<T: Send + 'static>(live: Option<Live<T>>) {
    let Some(live) = live else { return };
    let dropped = live.feed().dropped();
    for report in live.finish() {
        let shown = report["totals"]["recv.shown"].as_str().unwrap_or("-");
        let blank: Vec<&str> = report["values"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, v)| v.as_str() == Some("-"))
            .map(|(k, _)| k.as_str())
            .collect();
        let legends = match blank.is_empty() {
            true => "a value in every legend".to_string(),
            false => format!("no value in {}", blank.join(" ")),
        };
        eprintln!(
            "dashboard: a page saw the end: frames shown {shown}, {} samples, {legends}",
            report["samples"]
        );
    }
    if dropped > 0 {
        eprintln!("dashboard: {dropped} updates dropped (the dashboard fell behind the call)");
    }
}

/// Turns a call's observations into the page's series (names as in `page/app.js`).
#[derive(Debug)]
pub struct CallView {
    role: Runner,
    /// Sender counters at the last report (summed over sessions: they only grow).
    sender: SenderStats,
    /// Receiver: lost and refused at the last report (a session's count from zero).
    lost: u64,
    bad: u64,
    rejected: u64,
    /// Link counters at the last report.
    capacity: u64,
    delivered: u64,
    drops: u64,
    refused: u64,
}

impl CallView {
    /// For a dashboard of `role`.
    pub fn new(role: Runner) -> CallView {
        CallView {
            role,
            sender: SenderStats::default(),
            lost: 0,
            bad: 0,
            rejected: 0,
            capacity: 0,
            delivered: 0,
            drops: 0,
            refused: 0,
        }
    }

    fn sent(&mut self, s: &mut Sink<'_>, f: &salsify_endpoint::SentFrame) {
        let at = f.at;
        let kb = f.bytes as f64 / 1e3;
        s.value(at, "send.sent_kbps", Agg::Rate, kb * 8.0);
        s.value(at, "send.frames", Agg::Rate, 1.0);
        s.value(at, "send.frame_kB", Agg::Mean, kb);
        s.value(at, "send.frame_max_kB", Agg::Max, kb);
        s.value(
            at,
            "send.quantizer",
            Agg::Mean,
            f64::from(f.quality.index()),
        );
        if let Some(b) = f.budget {
            s.value(at, "send.budget_kB", Agg::Mean, b as f64 / 1e3);
        }
        let choice = match f.choice {
            Choice::Better => "send.better",
            Choice::Worse => "send.worse",
            Choice::ForcedWorse => "send.forced",
            Choice::Only => "send.only",
        };
        s.value(at, choice, Agg::Rate, 1.0);
    }

    fn sender_state(&mut self, s: &mut Sink<'_>, at: Instant, stats: &SenderStats) {
        let b = &self.sender;
        let skipped = stats.skipped.saturating_sub(b.skipped);
        let dropped = stats.dropped.saturating_sub(b.dropped);
        s.value(at, "send.skipped", Agg::Rate, skipped as f64);
        s.value(at, "send.dropped", Agg::Rate, dropped as f64);
        if let Some(t) = stats.target {
            s.value(at, "send.target_kbps", Agg::Last, t.as_f64() / 1e3);
        }
        self.sender = *stats;
    }

    fn receiver_state(
        &mut self,
        s: &mut Sink<'_>,
        at: Instant,
        lost: u64,
        bad: u64,
        rejected: u64,
    ) {
        // A new session counts from zero again.
        let delta = |now: u64, before: u64| if now >= before { now - before } else { now };
        s.value(at, "recv.lost", Agg::Rate, delta(lost, self.lost) as f64);
        let refused = delta(bad, self.bad) + rejected.saturating_sub(self.rejected);
        s.value(at, "recv.refused", Agg::Rate, refused as f64);
        (self.lost, self.bad, self.rejected) = (lost, bad, rejected);
    }

    fn link_state(&mut self, s: &mut Sink<'_>, o: &Observation) {
        let Observation::LinkState {
            at,
            capacity_bytes,
            delivered_bytes,
            queued_bytes,
            dropped,
            refused,
        } = *o
        else {
            return;
        };
        if let Some(c) = capacity_bytes {
            let kbit = c.saturating_sub(self.capacity) as f64 * 8.0 / 1e3;
            s.value(at, "link.capacity_kbps", Agg::Rate, kbit);
            self.capacity = c;
            s.value(at, "link.queue_kB", Agg::Max, queued_bytes as f64 / 1e3);
        }
        if let Some(d) = delivered_bytes {
            let kbit = d.saturating_sub(self.delivered) as f64 * 8.0 / 1e3;
            s.value(at, "link.delivered_kbps", Agg::Rate, kbit);
            self.delivered = d;
        }
        s.value(
            at,
            "link.drops",
            Agg::Rate,
            dropped.saturating_sub(self.drops) as f64,
        );
        self.drops = dropped;
        if self.role == Runner::Link {
            s.value(
                at,
                "recv.refused",
                Agg::Rate,
                refused.saturating_sub(self.refused) as f64,
            );
        }
        self.refused = refused;
    }
}

/// One audio frame the receiver played, on the page.
fn audio_played(s: &mut Sink<'_>, p: &salsify_audio::PlayedFrame) {
    for (name, agg, value) in audio_values(p) {
        s.value(p.at, name, agg, value);
    }
}

/// The page's values of one audio frame played, live or replayed: its mouth-to-ear delay (a
/// frame of the stream), or a frame inserted (to grow the playout delay, or while waiting out
/// a stalled link); and whether it had no packet in time (concealed, or DTX's silence: the page cannot tell them
/// apart as it plays).
pub fn audio_values(p: &salsify_audio::PlayedFrame) -> Vec<(&'static str, Agg, f64)> {
    use salsify_audio::PlayedKind;
    let stretch = p.frame.is_none();
    let mut values = vec![(
        "recv.audio_stretched",
        Agg::Rate,
        f64::from(u8::from(stretch)),
    )];
    if stretch {
        return values;
    }
    let ms = p.at.saturating_duration_since(p.captured).as_secs_f64() * 1e3;
    let missing = p.kind == PlayedKind::Missing;
    values.extend([
        ("recv.audio_delay_ms", Agg::Mean, ms),
        ("recv.audio_delay_max_ms", Agg::Max, ms),
        (
            "recv.audio_missing",
            Agg::Rate,
            f64::from(u8::from(missing)),
        ),
    ]);
    values
}

impl Translate<Observation> for CallView {
    fn translate(&mut self, o: Observation, s: &mut Sink<'_>) {
        match o {
            Observation::Captured { image, picture, .. } if self.role == Runner::Send => {
                s.picture(image, Some(picture))
            }
            Observation::Captured { .. } => {}
            Observation::Sent(f) => self.sent(s, &f),
            Observation::SenderSession { .. } => {}
            Observation::Shown {
                at,
                image,
                sent_at,
                frame,
                ..
            } => {
                // The demo counts shown frames as its summary does (Fact::Scored).
                if self.role != Runner::Demo {
                    s.value(at, "recv.shown", Agg::Rate, 1.0);
                }
                s.value(at, "recv.height", Agg::Last, f64::from(image.height()));
                if let Some(sent) = sent_at {
                    let ms = at.saturating_duration_since(sent).as_secs_f64() * 1e3;
                    s.value(at, "recv.net_delay_ms", Agg::Mean, ms);
                }
                s.picture(image, Some(u64::from(frame)));
            }
            Observation::AudioPlayed(frame) => audio_played(s, &frame),
            // Per frame above; the per-second and whole-call figures are the status line's and
            // the summary's.
            Observation::LinkStarted { .. }
            | Observation::AudioSecond { .. }
            | Observation::AudioSummary(_) => {}
            Observation::SenderState {
                at,
                stats,
                diagnostics,
            } => {
                self.sender_state(s, at, &stats);
                for d in diagnostics {
                    s.value(at, &format!("scheme.{}", d.name), Agg::Last, d.value);
                }
            }
            Observation::ReceiverState {
                at,
                stats,
                rejected,
                ..
            } => self.receiver_state(s, at, stats.frames_lost, stats.bad_datagrams, rejected),
            o @ Observation::LinkState { .. } => self.link_state(s, &o),
        }
    }
}

impl Translate<Fact> for CallView {
    fn translate(&mut self, f: Fact, s: &mut Sink<'_>) {
        match f {
            Fact::Observed(o) => Translate::<Observation>::translate(self, o, s),
            Fact::Scored { at, delay, ssim } => {
                s.value(at, "recv.shown", Agg::Rate, 1.0);
                if let Some(delay) = delay {
                    let ms = delay.as_secs_f64() * 1e3;
                    s.value(at, "recv.delay_ms", Agg::Mean, ms);
                    s.value(at, "recv.delay_max_ms", Agg::Max, ms);
                }
                if let Some(v) = ssim {
                    s.value(
                        at,
                        "recv.ssim_db",
                        Agg::Mean,
                        salsify_eval::metrics::ssim_to_db(v),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare `--dashboard` is loopback with a free port; a port or an IP alone fill in the
    /// rest; nonsense is refused.
    #[test]
    fn dashboard_addresses() {
        assert_eq!(
            parse_listen("127.0.0.1:0").unwrap().to_string(),
            "127.0.0.1:0"
        );
        assert_eq!(parse_listen("8080").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(parse_listen("::1").unwrap().to_string(), "[::1]:0");
        assert!(parse_listen("localhost:x").is_err());
    }
}
