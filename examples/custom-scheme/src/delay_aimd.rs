//! An example scheme family kept outside the built-in ones: `delay-aimd`, a delay-based
//! AIMD rate controller over the baselines' wire (see docs/custom-scheme.md).
//!
//! The controller watches each reported packet's one-way delay against the smallest seen
//! (clock offsets cancel): while the queueing delay stays under a threshold it adds a fixed
//! rate per second; past it, or on a loss, it cuts the rate by a factor, at most once per
//! `hold_ms`. Everything else (CBR libvpx, fragmentation, pacing, NACK and PLI, transport
//! feedback) is the baselines' sender, `salsify_baselines::RateSender`, and their receiver.
//!
//! The family joins a registry in this crate's [`crate::registry`], and every driver runs it;
//! nothing under the project's `crates/` names it.

use salsify_baselines::history::PacketResult;
use salsify_baselines::{BaselineReceiver, RateController, RateSender, WireId};
use salsify_endpoint::{EncodeKind, ReceiverEndpoint, SenderEndpoint};
use salsify_time::{Bitrate, Duration, Instant};
use serde::{Deserialize, Serialize};

use salsify_schemes::{
    Family, Marker, Runs, Scheme, SchemeConfig, SchemeError, SchemeInfo, SchemeParams, SourceInfo,
    TableInfo, TableType,
};

/// The family, as registered.
pub static FAMILY: DelayAimd = DelayAimd;

/// The scheme's name, and its parameter table's (`[delay_aimd]`).
const NAME: &str = "delay-aimd";
const TABLE: &str = "delay_aimd";
/// Its number on the baselines' wire (`WireId::Plugin`): one per plugged-in family (a
/// registry refuses a second family claiming it).
pub const WIRE_NUMBER: u8 = 1;

/// The `[delay_aimd]` table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DelayAimdConfig {
    /// Rate before any feedback, kb/s. Default 300.
    pub start_kbps: u64,
    /// Lowest rate, kb/s. Default 50.
    pub min_kbps: u64,
    /// Highest rate, kb/s. Default 12000.
    pub max_kbps: u64,
    /// Queueing delay above which the rate is cut, ms. Default 50.
    pub threshold_ms: f64,
    /// Rate added per second while the queue is short, kb/s. Default 200.
    pub increase_kbps_per_s: f64,
    /// Factor applied on a cut. Default 0.8.
    pub decrease: f64,
    /// Shortest time between two cuts, ms. Default 100.
    pub hold_ms: f64,
}

impl Default for DelayAimdConfig {
    fn default() -> Self {
        DelayAimdConfig {
            start_kbps: 300,
            min_kbps: 50,
            max_kbps: 12_000,
            threshold_ms: 50.0,
            increase_kbps_per_s: 200.0,
            decrease: 0.8,
            hold_ms: 100.0,
        }
    }
}

impl TableType for DelayAimdConfig {
    fn check(&self) -> Result<(), String> {
        if !(1..=self.max_kbps).contains(&self.min_kbps) {
            return Err(format!(
                "min_kbps {} is not in 1..=max_kbps ({})",
                self.min_kbps, self.max_kbps
            ));
        }
        if !(self.min_kbps..=self.max_kbps).contains(&self.start_kbps) {
            return Err(format!(
                "start_kbps {} is not in min..=max",
                self.start_kbps
            ));
        }
        if !(self.threshold_ms > 0.0 && self.threshold_ms <= 10_000.0) {
            return Err(format!(
                "threshold_ms {} is not in (0, 10000]",
                self.threshold_ms
            ));
        }
        if !(self.increase_kbps_per_s >= 0.0 && self.increase_kbps_per_s.is_finite()) {
            return Err(format!(
                "increase_kbps_per_s {} is not >= 0",
                self.increase_kbps_per_s
            ));
        }
        if !(self.decrease > 0.0 && self.decrease < 1.0) {
            return Err(format!("decrease {} is not in (0, 1)", self.decrease));
        }
        if !(self.hold_ms >= 0.0 && self.hold_ms <= 10_000.0) {
            return Err(format!("hold_ms {} is not in [0, 10000]", self.hold_ms));
        }
        Ok(())
    }
}

static SCHEMES: [SchemeInfo; 1] = [SchemeInfo {
    name: NAME,
    about: "example: delay-based AIMD over the baselines' sender (docs/custom-scheme.md)",
    runs: Runs::Anywhere,
    sends_video: true,
    color: "#E31A1C",
    marker: Marker::Star,
    roles: &[],
}];

static TABLES: [TableInfo; 1] = [TableInfo::of::<DelayAimdConfig>(
    TABLE,
    "the example delay-based AIMD controller",
)];

/// The family.
pub struct DelayAimd;

impl Family for DelayAimd {
    fn id(&self) -> &'static str {
        NAME
    }

    fn schemes(&self) -> &'static [SchemeInfo] {
        &SCHEMES
    }

    fn tables(&self) -> &'static [TableInfo] {
        &TABLES
    }

    fn configure(&self, _name: &str, params: &SchemeParams) -> Result<SchemeConfig, SchemeError> {
        let config: DelayAimdConfig = params.get_or_default(TABLE)?;
        config
            .check()
            .map_err(|why| SchemeError::Invalid { scheme: TABLE, why })?;
        Ok(SchemeConfig::new(DelayAimdScheme(config)))
    }

    fn wire_ids(&self) -> Vec<WireId> {
        vec![WireId::Plugin(WIRE_NUMBER)]
    }

    fn scheme_of_datagram(&self, datagram: &[u8]) -> Option<&'static str> {
        (salsify_baselines::scheme_of(datagram)? == WireId::Plugin(WIRE_NUMBER)).then_some(NAME)
    }
}

/// The scheme configured.
#[derive(Debug)]
struct DelayAimdScheme(DelayAimdConfig);

impl Scheme for DelayAimdScheme {
    fn name(&self) -> &'static str {
        NAME
    }

    fn encode_jobs(&self) -> &'static [EncodeKind] {
        // The baselines' video sender encodes with libvpx's rate control.
        &[EncodeKind::Cbr]
    }

    fn build_sender(
        &self,
        source: &SourceInfo,
        _connection_id: u16,
    ) -> Result<Box<dyn SenderEndpoint>, SchemeError> {
        let controller = Controller::new(self.0);
        Ok(Box::new(RateSender::new(
            controller,
            (source.width, source.height),
        )))
    }

    fn build_receiver(
        &self,
        source: &SourceInfo,
    ) -> Result<Box<dyn ReceiverEndpoint>, SchemeError> {
        // Feedback every 50 ms (libwebrtc's transport feedback for a receive-only peer).
        let config = salsify_baselines::ReceiverConfig {
            feedback_interval: Some(Duration::from_millis(50)),
            ..Default::default()
        };
        let receiver =
            BaselineReceiver::new(config, (source.width, source.height)).map_err(|e| {
                SchemeError::Invalid {
                    scheme: TABLE,
                    why: e.to_string(),
                }
            })?;
        Ok(Box::new(receiver))
    }
}

/// The rate controller.
#[derive(Debug)]
pub struct Controller {
    config: DelayAimdConfig,
    rate_kbps: f64,
    /// Smallest one-way delay seen, µs (arrival on the receiver's clock minus send time).
    base_delay: Option<i64>,
    last_update: Option<Instant>,
    last_cut: Option<Instant>,
}

impl Controller {
    /// A controller at its start rate.
    pub fn new(config: DelayAimdConfig) -> Self {
        Controller {
            config,
            rate_kbps: config.start_kbps as f64,
            base_delay: None,
            last_update: None,
            last_cut: None,
        }
    }

    fn cut(&mut self, now: Instant) {
        let hold = Duration::from_secs_f64(self.config.hold_ms / 1000.0);
        if self
            .last_cut
            .is_none_or(|t| now.saturating_duration_since(t) >= hold)
        {
            self.rate_kbps *= self.config.decrease;
            self.last_cut = Some(now);
        }
    }
}

impl RateController for Controller {
    fn scheme(&self) -> &'static str {
        NAME
    }

    fn wire_number(&self) -> u8 {
        WIRE_NUMBER
    }

    fn start_rate(&self) -> Bitrate {
        Bitrate::kbps(self.config.start_kbps)
    }

    fn on_feedback(&mut self, now: Instant, packets: &[PacketResult]) {
        let mut queueing_ms: f64 = 0.0;
        let mut lost = false;
        for p in packets {
            let Some(arrival) = p.arrival else {
                lost = true;
                continue;
            };
            let delay = arrival.as_micros() as i64 - p.sent.as_micros() as i64;
            let base = self.base_delay.map_or(delay, |b| b.min(delay));
            self.base_delay = Some(base);
            queueing_ms = queueing_ms.max((delay - base) as f64 / 1000.0);
        }
        let elapsed = self
            .last_update
            .map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64());
        self.last_update = Some(now);
        if lost || queueing_ms > self.config.threshold_ms {
            self.cut(now);
        } else {
            self.rate_kbps += self.config.increase_kbps_per_s * elapsed.min(1.0);
        }
        let (lo, hi) = (self.config.min_kbps as f64, self.config.max_kbps as f64);
        self.rate_kbps = self.rate_kbps.clamp(lo, hi);
    }

    fn target(&mut self, _now: Instant) -> Bitrate {
        Bitrate::kbps(self.rate_kbps as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(sent_ms: u64, arrival_ms: Option<u64>) -> PacketResult {
        PacketResult {
            seq: 0,
            sent: Instant::from_millis(sent_ms),
            size: 1200,
            arrival: arrival_ms.map(Instant::from_millis),
        }
    }

    #[test]
    fn a_short_queue_adds_rate_and_a_long_one_cuts_it() {
        let mut c = Controller::new(DelayAimdConfig::default());
        let at = Instant::from_millis;
        c.on_feedback(at(100), &[packet(0, Some(20))]);
        c.on_feedback(at(1100), &[packet(1000, Some(1020))]);
        assert_eq!(c.target(at(1100)), Bitrate::kbps(500));
        // 80 ms above the smallest delay: cut by 0.8, once within the hold.
        c.on_feedback(at(1200), &[packet(1100, Some(1200))]);
        assert_eq!(c.target(at(1200)), Bitrate::kbps(400));
        c.on_feedback(at(1250), &[packet(1150, Some(1250))]);
        assert_eq!(c.target(at(1250)), Bitrate::kbps(400));
        // A loss cuts too.
        c.on_feedback(at(1400), &[packet(1300, None)]);
        assert_eq!(c.target(at(1400)), Bitrate::kbps(320));
    }

    #[test]
    fn the_table_is_checked_and_the_wire_names_the_scheme() {
        salsify_schemes::registry::install(crate::registry().unwrap()).unwrap();
        let mut params = SchemeParams::default();
        params.set(
            TABLE,
            &DelayAimdConfig {
                decrease: 1.5,
                ..Default::default()
            },
        );
        assert!(SchemeConfig::named(NAME, &params).is_err());
        let s = SchemeConfig::named(NAME, &SchemeParams::default()).unwrap();
        assert!(s.runs_live());
        assert_eq!(FAMILY.receiver_scheme(NAME), NAME);
        let header = salsify_baselines::wire::MediaHeader {
            transport_seq: 1,
            media_seq: 1,
            frame: 0,
            fragment: 0,
            count: 1,
            keyframe: true,
            retransmission: false,
            scheme: WireId::Plugin(WIRE_NUMBER),
        };
        let datagram = salsify_baselines::wire::Packet::Media {
            header,
            payload: vec![0; 10],
        }
        .emit()
        .unwrap();
        assert_eq!(FAMILY.scheme_of_datagram(&datagram), Some(NAME));
    }
}
