//! Encode time in the control loop: keeps one picture's encodes within the camera's frame
//! interval by limiting how fine a quantizer the sender explores.
//!
//! Why: an encode's cost grows with the bytes it codes. On the project's VM (libvpx VP8,
//! cpu-used -8, synthetic 1280x720) an encode coding 2.4 KB takes 4.6 ms, one coding 97 KB
//! 14 ms (`salsify bench codec --qualities 3,30,64`). On a fast link the budget lets the
//! sender climb to the finest quantizers, and once a picture's encodes take longer than the
//! frame interval, pictures wait for the encoder or are dropped: frame rate and delay suffer
//! where a slightly coarser frame would have kept up.
//!
//! How: the finest quantizer allowed (the floor) moves coarser by `step` from a job's finest
//! quantizer when the job took longer than the target and its bytes were a real part of its
//! time, and one step finer after a job at the floor whose byte-dependent part took under
//! `relax` of what the target leaves it, or whose bytes were no real part of its time. The
//! target is `share` of the frame interval, leaving the rest to the decoder, the camera and the
//! network threads. "A real part": at least `min_byte_share` of the job's time by a model of
//! job time as `a + b x bytes` (least squares over recent jobs, exponentially weighted,
//! refitted whenever the sizes have spread enough to tell). So a job slow because the machine
//! stalled is no reason to code less, and an encoder whose cost is all per picture (the
//! simulator's area-only cost model) never holds a floor for long; and when the per-picture
//! part `a` alone is over the target (a busy machine) the target becomes the whole interval:
//! quality is given up only as far as it keeps frames flowing. All inputs are times the driver
//! passes in (the simulator's modelled encode times, the runtime's clock), so simulated and
//! live runs follow one rule.

use salsify_codec::Quality;
use salsify_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Parameters of `EncodeTimeControl` (`[salsify.encode_time]` in experiment files).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EncodeTimeConfig {
    /// Limit the quantizers explored by what the encodes cost. Default true.
    pub enabled: bool,
    /// Share of the frame interval one picture's encodes may take: the rest is for the
    /// decoder, the camera and the network threads that share the machine. Default 0.75.
    pub share: f64,
    /// A job at the floor whose byte-dependent time is under this share of what the target
    /// leaves it lets the floor move one step finer. Default 0.7.
    pub relax: f64,
    /// Quantizer steps the floor moves coarser by after a job over the limit. Default 4.
    pub step: u8,
    /// Weight of the newest job in the cost model's moments. Default 1/16.
    pub weight: f64,
    /// Jobs seen before the model is trusted. Default 8.
    pub min_jobs: u32,
    /// Bytes coded below this share of a job's time (by the model) are no reason to code
    /// less. Default 0.1.
    pub min_byte_share: f64,
    /// While the floor holds (the machine, not the link, limits the quality) and this many
    /// frames in a row each took at most 1/`single_encode_margin` of the budget, the sender
    /// asks for the better option only: the worse one would never be sent, and its encode
    /// takes the core the finer quantizer needs. A frame over that share or a skip brings
    /// the two options back. Default 30; 0 never.
    pub single_encode_after: u32,
    /// See `single_encode_after`. Default 4.
    pub single_encode_margin: f64,
}

impl Default for EncodeTimeConfig {
    fn default() -> Self {
        EncodeTimeConfig {
            enabled: true,
            share: 0.75,
            relax: 0.7,
            step: 4,
            weight: 1.0 / 16.0,
            min_jobs: 8,
            min_byte_share: 0.1,
            single_encode_after: 30,
            single_encode_margin: 4.0,
        }
    }
}

impl EncodeTimeConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &'static str, reason: &str| {
            Err(ConfigError::Invalid {
                field,
                reason: reason.into(),
            })
        };
        if !(self.share > 0.0 && self.share <= 1.0) {
            return bad("encode_time.share", "must be in (0, 1]");
        }
        if !(self.relax > 0.0 && self.relax < 1.0) {
            return bad("encode_time.relax", "must be in (0, 1)");
        }
        if self.step == 0 {
            return bad("encode_time.step", "must be positive");
        }
        if !(self.weight > 0.0 && self.weight <= 1.0) {
            return bad("encode_time.weight", "must be in (0, 1]");
        }
        if self.single_encode_margin.is_nan() || self.single_encode_margin < 1.0 {
            return bad("encode_time.single_encode_margin", "must be at least 1");
        }
        if !(0.0..1.0).contains(&self.min_byte_share) {
            return bad("encode_time.min_byte_share", "must be in [0, 1)");
        }
        Ok(())
    }
}

/// Exponentially weighted first and second moments of (bytes, seconds) pairs.
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
}

impl Moments {
    fn add(&mut self, weight: f64, x: f64, y: f64) {
        let mix = |old: f64, new: f64| old + weight * (new - old);
        self.x = mix(self.x, x);
        self.y = mix(self.y, y);
        self.xx = mix(self.xx, x * x);
        self.xy = mix(self.xy, x * y);
    }

    /// The least-squares line `a + b x bytes` (seconds), once the sizes have spread enough
    /// (a relative standard deviation of 10%) for its slope to mean anything.
    fn line(&self) -> Option<(f64, f64)> {
        let var = self.xx - self.x * self.x;
        if self.x <= 0.0 || var < (0.1 * self.x).powi(2) {
            return None;
        }
        let slope = (self.xy - self.x * self.y) / var;
        Some((self.y - slope * self.x, slope))
    }
}

/// The encode-time rule's state: the camera's interval, the cost model and the floor.
#[derive(Debug, Clone)]
pub struct EncodeTimeControl {
    config: EncodeTimeConfig,
    last_capture: Option<Instant>,
    /// Mean interval between camera pictures, in seconds.
    interval: Option<f64>,
    moments: Moments,
    jobs: u32,
    floor: Option<Quality>,
    /// The model's last per-picture part `a`, in seconds.
    per_picture: f64,
    /// The model's last cost per byte `b`, in seconds (`None` before it has one).
    per_byte: Option<f64>,
}

impl EncodeTimeControl {
    /// No pictures, no jobs, no floor.
    pub fn new(config: EncodeTimeConfig) -> Self {
        EncodeTimeControl {
            config,
            last_capture: None,
            interval: None,
            moments: Moments::default(),
            jobs: 0,
            floor: None,
            per_picture: 0.0,
            per_byte: None,
        }
    }

    /// A camera picture captured at `captured`: the frame interval follows the camera.
    pub fn on_picture(&mut self, captured: Instant) {
        if let Some(last) = self.last_capture.filter(|l| captured > *l) {
            // A stalled camera (over 1 s between pictures) says nothing about its rate.
            let gap = captured.saturating_duration_since(last).as_secs_f64();
            if gap <= 1.0 {
                self.interval = Some(match self.interval {
                    Some(mean) => mean + (gap - mean) / 8.0,
                    None => gap,
                });
            }
        }
        self.last_capture = Some(captured.max(self.last_capture.unwrap_or(captured)));
    }

    /// A job of the sender's usual options finished: it took `elapsed`, coded `bytes` in
    /// all, and its finest quantizer was `finest`. `range` is the sender's own quantizer range.
    pub fn on_job(
        &mut self,
        elapsed: Duration,
        bytes: usize,
        finest: Quality,
        range: (Quality, Quality),
    ) {
        if !self.config.enabled {
            return;
        }
        self.jobs = self.jobs.saturating_add(1);
        self.moments
            .add(self.config.weight, bytes as f64, elapsed.as_secs_f64());
        let Some(interval) = self.interval else {
            return;
        };
        if self.jobs < self.config.min_jobs {
            return;
        }
        if let Some((per_picture, per_byte)) = self.moments.line() {
            self.per_picture = per_picture;
            self.per_byte = Some(per_byte);
        }
        let target = match self.config.share * interval {
            headroom if self.per_picture < headroom => headroom,
            _ => interval,
        };
        // What the bytes may take: the part of the target the per-picture cost leaves.
        let a = self.per_picture.clamp(0.0, target);
        let (lo, hi) = range;
        let took = elapsed.as_secs_f64();
        // A job over the target because the machine stalled, not because of what it coded,
        // is no reason to code less: its bytes must be a real part of its time.
        let bytes_matter = self
            .per_byte
            .is_none_or(|b| b * bytes as f64 >= self.config.min_byte_share * took);
        if took > target && bytes_matter {
            let coarser = finest.index().saturating_add(self.config.step);
            let coarser = Quality::clamped(i32::from(coarser), lo, hi);
            self.floor = Some(self.floor.map_or(coarser, |f| f.max(coarser)));
        } else if !bytes_matter || took - a < self.config.relax * (target - a) {
            // Not every index is a quantizer libvpx codes: a floor of 36 is coded as 37.
            if let Some(floor) = self.floor.filter(|f| finest <= f.effective()) {
                let finer = Quality::clamped(i32::from(floor.index()) - 1, lo, hi);
                self.floor = (finer > lo).then_some(finer);
            }
        }
    }

    /// The finest quantizer the sender may ask for now (`None`: no limit).
    pub fn floor(&self) -> Option<Quality> {
        self.floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(i: u8) -> Quality {
        Quality::new(i).unwrap()
    }

    const RANGE: (u8, u8) = (3, 127);

    fn range() -> (Quality, Quality) {
        (q(RANGE.0), q(RANGE.1))
    }

    /// Pictures `pictures` at `fps` through `c`, each encoded at the floor (an unlimited link):
    /// `job(picture, asked)` says what the job coded, how long it took (ms) and at which
    /// quantizer. Returns the job times.
    fn drive(
        c: &mut EncodeTimeControl,
        pictures: std::ops::Range<u32>,
        fps: u32,
        job: impl Fn(u32, Quality) -> (usize, f64, Quality),
    ) -> Vec<f64> {
        let interval = Duration::from_micros(1_000_000 / u64::from(fps));
        let mut times = Vec::new();
        for i in pictures {
            c.on_picture(Instant::ZERO + interval * i);
            let asked = c.floor().unwrap_or(q(RANGE.0));
            let (bytes, ms, coded) = job(i, asked);
            times.push(ms);
            let took = Duration::from_micros((ms * 1000.0) as u64);
            c.on_job(took, bytes, coded, range());
        }
        times
    }

    /// The content varies: +-20% bytes from picture to picture.
    fn wobble(i: u32) -> f64 {
        0.8 + 0.4 * ((i * 7919) % 13) as f64 / 12.0
    }

    /// A machine where a job takes `base_ms + per_kb_ms x KB` (+-15% from job to job), an
    /// encoder whose job codes `bytes_at(q)` (+-20%), 600 pictures.
    fn settle(
        base_ms: f64,
        per_kb_ms: f64,
        bytes_at: impl Fn(u8) -> usize,
        fps: u32,
    ) -> (EncodeTimeControl, Vec<f64>) {
        let mut c = EncodeTimeControl::new(EncodeTimeConfig::default());
        let times = drive(&mut c, 0..600, fps, |i, asked| {
            let bytes = (bytes_at(asked.index()) as f64 * wobble(i)) as usize;
            let jitter = 0.85 + 0.3 * ((i * 104_729) % 17) as f64 / 16.0;
            let ms = (base_ms + per_kb_ms * bytes as f64 / 1000.0) * jitter;
            (bytes, ms, asked)
        });
        (c, times)
    }

    /// Bytes halve every 12 quantizer steps from 100 KB at q3 (a synthetic-like source).
    fn halving(qi: u8) -> usize {
        (100_000.0 * 0.5f64.powf(f64::from(qi - 3) / 12.0)) as usize
    }

    #[test]
    fn a_costly_fine_quantizer_is_avoided_until_the_job_fits_the_interval() {
        // 5 ms + 0.1 ms/KB: 15 ms at q3 does not fit 75% of 16.7 ms; 50 KB (10 ms) does.
        let (c, times) = settle(5.0, 0.1, halving, 60);
        let floor = c.floor().expect("a floor").index();
        assert!((5..=30).contains(&floor), "floor {floor}");
        let late = &times[300..];
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!(
            (0.5 * 16.7..=0.75 * 16.7).contains(&mean),
            "mean job {mean} ms"
        );
    }

    #[test]
    fn the_floor_comes_down_through_indices_libvpx_codes_as_coarser_ones() {
        let mut c = EncodeTimeControl::new(EncodeTimeConfig::default());
        // Costly at first: the floor rises. Then cheap: every job fits. Each job is coded at
        // what libvpx makes of the request.
        let coded_job = |per_kb: f64| {
            move |_, asked: Quality| {
                let coded = asked.effective();
                let bytes = halving(coded.index());
                (bytes, 3.0 + per_kb * bytes as f64 / 1000.0, coded)
            }
        };
        drive(&mut c, 0..50, 60, coded_job(0.3));
        let high = c.floor().expect("a floor").index();
        drive(&mut c, 50..400, 60, coded_job(0.0));
        let low = c.floor().map_or(3, |f| f.index());
        assert!(low + 10 < high, "floor {high} then {low}");
    }

    #[test]
    fn no_floor_when_the_finest_quantizer_fits_anyway() {
        let (c, _) = settle(2.0, 0.02, halving, 30);
        assert_eq!(c.floor(), None);
    }

    #[test]
    fn no_floor_when_coarser_frames_would_not_save_time() {
        // 20 ms whatever the bytes (the simulator's area-only model of a slow machine).
        let (c, _) = settle(20.0, 0.0, halving, 60);
        assert_eq!(c.floor(), None);
        // 1% of the time per byte: not worth a quantizer step.
        let (c, _) = settle(20.0, 0.002, halving, 60);
        assert_eq!(c.floor(), None);
    }

    #[test]
    fn a_machine_too_busy_for_the_interval_codes_less_only_while_bytes_matter() {
        // 18 ms per picture + 0.05 ms/KB: nothing fits 16.7 ms. Coarser frames help until the
        // bytes are under 10% of a job (about 36 KB), not beyond: the rest is the machine.
        let (c, times) = settle(18.0, 0.05, halving, 60);
        let floor = c.floor().expect("a floor").index();
        assert!((8..=40).contains(&floor), "floor {floor}");
        let late = &times[300..];
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!(mean < 21.0, "mean job {mean} ms (23 at the finest)");
    }

    #[test]
    fn a_busy_machine_gives_up_quality_only_as_far_as_it_keeps_frames_flowing() {
        // 14 ms per picture (over 75% of 16.7 ms) + 0.05 ms/KB: 19 ms at q3 overruns the
        // interval, 50 KB (16.5 ms) does not.
        let (c, times) = settle(14.0, 0.05, halving, 60);
        let floor = c.floor().expect("a floor").index();
        assert!((8..=40).contains(&floor), "floor {floor}");
        let late = &times[300..];
        let mean = late.iter().sum::<f64>() / late.len() as f64;
        assert!(mean <= 16.7, "mean job {mean} ms");
    }

    #[test]
    fn the_floor_comes_back_down_when_encodes_get_cheaper() {
        let mut c = EncodeTimeControl::new(EncodeTimeConfig::default());
        let job = |per_kb: f64| {
            move |i, asked: Quality| {
                let bytes = (halving(asked.index()) as f64 * wobble(i)) as usize;
                (bytes, 5.0 + per_kb * bytes as f64 / 1000.0, asked)
            }
        };
        drive(&mut c, 0..600, 60, job(0.2));
        let loaded = c.floor().expect("a floor under load").index();
        drive(&mut c, 600..1200, 60, job(0.02));
        let idle = c.floor().map_or(3, |f| f.index());
        assert!(idle < loaded, "floor {loaded} under load, {idle} after");
    }

    #[test]
    fn disabled_never_sets_a_floor_and_bad_configs_are_refused() {
        let mut c = EncodeTimeControl::new(EncodeTimeConfig {
            enabled: false,
            ..EncodeTimeConfig::default()
        });
        for i in 0..100u32 {
            c.on_picture(Instant::ZERO + Duration::from_millis(16) * i);
            c.on_job(Duration::from_millis(40), 100_000, q(3), range());
        }
        assert_eq!(c.floor(), None);
        for bad in [
            EncodeTimeConfig {
                share: 0.0,
                ..Default::default()
            },
            EncodeTimeConfig {
                relax: 1.0,
                ..Default::default()
            },
            EncodeTimeConfig {
                step: 0,
                ..Default::default()
            },
            EncodeTimeConfig {
                weight: f64::NAN,
                ..Default::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert!(EncodeTimeConfig::default().validate().is_ok());
    }
}
