//! A run's summary, as the paper reported it: quality, delay, frame rate, bit rate,
//! utilisation and the sender's choices, plus the two QoE scores.
//!
//! Quality is averaged the paper's way: mean and p25 of *linear* SSIM over the frames shown,
//! then converted to dB (averaging dB values instead would weight a few near-perfect frames
//! heavily). Delay statistics use the paper's delay metric over every source frame up to the
//! last one shown. Times in the JSON are milliseconds and rates per second, as plain numbers,
//! so any plotting tool reads them.

use super::delay::display_delays;
use super::qoe::QoeModel;
use super::record::{FrameOutcome, FrameRecord};
use super::ssim::ssim_to_db;
use super::stats::{mean, percentile_of_sorted};
use super::MetricsError;
use salsify_time::{Duration, Instant};
use serde::{Deserialize, Serialize};

/// What the link did over the run, from the emulator's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkUsage {
    /// Bytes the link delivered to the receiver (all packets of the flow, headers included).
    pub delivered_bytes: u64,
    /// Bytes the link could have delivered over the run (the trace's delivery opportunities).
    pub capacity_bytes: u64,
}

/// Facts about the run that are not per frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunInfo {
    /// Length of the run over which rates are computed (normally frames x frame interval).
    pub duration: Duration,
    /// Link counters, if a link was emulated.
    pub link: Option<LinkUsage>,
}

/// How many source frames got each [`FrameOutcome`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeCounts {
    /// Salsify's better encoding sent.
    pub better: u64,
    /// Salsify's worse encoding sent.
    pub worse: u64,
    /// The single encoding of a conventional scheme sent.
    pub single: u64,
    /// Nothing sent.
    pub skipped: u64,
    /// Sender's choice not known.
    pub unknown: u64,
}

impl OutcomeCounts {
    fn add(&mut self, choice: FrameOutcome) {
        match choice {
            FrameOutcome::Better => self.better += 1,
            FrameOutcome::Worse => self.worse += 1,
            FrameOutcome::Single => self.single += 1,
            FrameOutcome::Skipped => self.skipped += 1,
            FrameOutcome::Unknown => self.unknown += 1,
        }
    }
}

/// Summary of one run; `None` where there was nothing to measure (e.g. no frame shown).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Source frames in the run.
    pub frames: u64,
    /// Source frames displayed at the receiver.
    pub frames_shown: u64,
    /// Source frames with a delay (all up to the last frame shown).
    pub frames_with_delay: u64,
    /// Run length in seconds.
    pub duration_s: f64,
    /// Mean luma SSIM (linear) over frames with an SSIM value.
    pub ssim_mean: Option<f64>,
    /// 25th percentile of luma SSIM (linear).
    pub ssim_p25: Option<f64>,
    /// `ssim_mean` in dB.
    pub ssim_db_mean: Option<f64>,
    /// `ssim_p25` in dB.
    pub ssim_db_p25: Option<f64>,
    /// Mean of the per-frame PSNR values in dB.
    pub psnr_db_mean: Option<f64>,
    /// Mean delay, ms.
    pub delay_mean_ms: Option<f64>,
    /// Median delay, ms.
    pub delay_median_ms: Option<f64>,
    /// 95th-percentile delay, ms.
    pub delay_p95_ms: Option<f64>,
    /// Frames shown per second of run.
    pub displayed_fps: f64,
    /// Encoded video bytes sent (sum of the records' `size_bytes`).
    pub video_bytes: u64,
    /// Encoded video bytes sent, x 8, per second of run.
    pub video_bitrate_bps: f64,
    /// Bytes the link delivered / bytes it could have delivered.
    pub link_utilisation: Option<f64>,
    /// Counts of each choice.
    pub choices: OutcomeCounts,
    /// Share of source frames the sender skipped.
    pub skip_share: f64,
    /// Share of source frames sent at the better quality.
    pub better_share: f64,
    /// Share of source frames sent at the worse quality.
    pub worse_share: f64,
    /// Share of source frames sent as a scheme's single encoding.
    pub single_share: f64,
    /// Video-call QoE at the mean delay and mean SSIM dB.
    pub qoe_video_call: Option<f64>,
    /// Driving QoE at the mean delay and mean SSIM dB.
    pub qoe_driving: Option<f64>,
    /// Sprout's network measurement of the video link (per-packet delay function,
    /// self-inflicted delay, throughput against capacity), where the link's packets were
    /// seen (simulated runs). Absent in summaries written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::SproutMeasure>,
    /// The call's audio, measured like the video, in runs that carried audio (absent
    /// otherwise, so a run without audio writes the summary it always did).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioFigures>,
}

/// The audio's figures in a run's summary: from what the receiver played and showed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AudioFigures {
    /// Mean mouth-to-ear delay (capture to playout, any lip-sync hold included), ms.
    pub audio_delay_mean_ms: f64,
    /// Its 95th percentile, ms.
    pub audio_delay_p95_ms: f64,
    /// Share of the audio frames played that were lost or late and concealed.
    pub audio_concealed_fraction: f64,
    /// Share of the pictures shown while audio played whose audio was within ITU-R
    /// BT.1359's window (at most 45 ms ahead, 125 ms behind); `None` if none was shown.
    pub av_skew_in_window_fraction: Option<f64>,
    /// Share of the audio frames played that were rebuilt from in-band FEC.
    pub audio_fec_fraction: f64,
    /// Frames the jitter buffer inserted to grow its delay, per audio frame played.
    pub audio_stretch_fraction: f64,
    /// Frames it skipped to shrink its delay (sent, never heard), per audio frame played.
    #[serde(default)]
    pub audio_skipped_fraction: f64,
    /// Frames of concealment it played while waiting out a stalled link (the audio held up,
    /// none lost), per audio frame played.
    #[serde(default)]
    pub audio_stalled_fraction: f64,
    /// Audio frames played faster to shed the delay a stall added, per audio frame played.
    #[serde(default)]
    pub audio_accelerated_fraction: f64,
    /// Audio frames played.
    pub audio_frames_played: u64,
}

/// The paper's delay of every record (see [`display_delays`]), in record order: `None` for
/// records after the last one shown. For the per-frame log; [`summarize`] uses the same.
///
/// Errors: records not in strictly increasing `frame_id`, or a display before its capture.
pub fn record_delays(records: &[FrameRecord]) -> Result<Vec<Option<Duration>>, MetricsError> {
    for pair in records.windows(2) {
        if pair[1].frame_id <= pair[0].frame_id {
            return Err(MetricsError::RecordsOutOfOrder {
                frame_id: pair[1].frame_id,
            });
        }
    }
    let capture: Vec<Instant> = records.iter().map(|r| r.capture).collect();
    let shown: Vec<(usize, Instant)> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.display.map(|t| (i, t)))
        .collect();
    display_delays(&capture, &shown)
}

/// Summarises a run from its per-frame records (strictly increasing `frame_id`).
///
/// Errors: records out of order, a display before its capture, a non-finite SSIM or PSNR,
/// or a zero duration.
pub fn summarize(records: &[FrameRecord], run: &RunInfo) -> Result<Summary, MetricsError> {
    if run.duration.is_zero() {
        return Err(MetricsError::InvalidRun("zero duration".into()));
    }
    for r in records {
        if r.ssim.is_some_and(|s| !s.is_finite()) || r.psnr_db.is_some_and(|p| !p.is_finite()) {
            return Err(MetricsError::InvalidRun(format!(
                "frame {} has a non-finite SSIM or PSNR",
                r.frame_id
            )));
        }
    }

    let mut delays_ms: Vec<f64> = record_delays(records)?
        .into_iter()
        .flatten()
        .map(|d| d.as_secs_f64() * 1000.0)
        .collect();
    delays_ms.sort_by(f64::total_cmp);

    let mut ssims: Vec<f64> = records.iter().filter_map(|r| r.ssim).collect();
    ssims.sort_by(f64::total_cmp);
    let psnrs: Vec<f64> = records.iter().filter_map(|r| r.psnr_db).collect();

    let mut choices = OutcomeCounts::default();
    for r in records {
        choices.add(r.choice);
    }
    let frames = records.len() as u64;
    let frames_shown = records.iter().filter(|r| r.display.is_some()).count() as u64;
    let share = |n: u64| {
        if frames == 0 {
            0.0
        } else {
            n as f64 / frames as f64
        }
    };
    let seconds = run.duration.as_secs_f64();
    let bytes_sent: u64 = records.iter().map(|r| r.size_bytes).sum();

    let sorted_stat = |v: &[f64], p: f64| (!v.is_empty()).then(|| percentile_of_sorted(v, p));
    let ssim_mean = mean(&ssims);
    let ssim_p25 = sorted_stat(&ssims, 25.0);
    let ssim_db_mean = ssim_mean.map(ssim_to_db);
    let delay_mean_ms = mean(&delays_ms);
    let qoe = |model: QoeModel| {
        let (delay, db) = (delay_mean_ms?, ssim_db_mean?);
        Some(model.score(Duration::from_secs_f64(delay / 1000.0), db))
    };

    Ok(Summary {
        frames,
        frames_shown,
        frames_with_delay: delays_ms.len() as u64,
        duration_s: seconds,
        ssim_mean,
        ssim_p25,
        ssim_db_mean,
        ssim_db_p25: ssim_p25.map(ssim_to_db),
        psnr_db_mean: mean(&psnrs),
        delay_mean_ms,
        delay_median_ms: sorted_stat(&delays_ms, 50.0),
        delay_p95_ms: sorted_stat(&delays_ms, 95.0),
        displayed_fps: frames_shown as f64 / seconds,
        video_bytes: bytes_sent,
        video_bitrate_bps: bytes_sent as f64 * 8.0 / seconds,
        link_utilisation: run
            .link
            .filter(|l| l.capacity_bytes > 0)
            .map(|l| l.delivered_bytes as f64 / l.capacity_bytes as f64),
        choices,
        skip_share: share(choices.skipped),
        better_share: share(choices.better),
        worse_share: share(choices.worse),
        single_share: share(choices.single),
        qoe_video_call: qoe(QoeModel::VideoCall),
        qoe_driving: qoe(QoeModel::Driving),
        network: None,
        audio: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    /// Four frames 10 ms apart: shown, skipped, shown, sent but lost (after the last shown).
    fn four_frames() -> Vec<FrameRecord> {
        let mut r: Vec<FrameRecord> = (0..4)
            .map(|i| FrameRecord::captured(i, ms(10 * i)))
            .collect();
        r[0] = FrameRecord {
            display: Some(ms(50)),
            ssim: Some(0.9),
            psnr_db: Some(30.0),
            size_bytes: 1000,
            quality: Some(40),
            choice: FrameOutcome::Better,
            ..r[0].clone()
        };
        r[2] = FrameRecord {
            display: Some(ms(100)),
            ssim: Some(0.99),
            psnr_db: Some(40.0),
            size_bytes: 500,
            quality: Some(60),
            choice: FrameOutcome::Worse,
            ..r[2].clone()
        };
        r[3].size_bytes = 250;
        r[3].choice = FrameOutcome::Better;
        r
    }

    #[test]
    fn hand_computed_summary() {
        let run = RunInfo {
            duration: Duration::from_millis(40),
            link: Some(LinkUsage {
                delivered_bytes: 1500,
                capacity_bytes: 3000,
            }),
        };
        let s = summarize(&four_frames(), &run).unwrap();
        assert_eq!((s.frames, s.frames_shown, s.frames_with_delay), (4, 2, 3));
        assert_eq!(s.video_bytes, 1750);
        // Delays: 50, 90 (frame 1 waits for frame 2 at 100 ms), 80.
        assert!(close(s.delay_mean_ms, (50.0 + 90.0 + 80.0) / 3.0));
        assert!(close(s.delay_median_ms, 80.0));
        assert!(close(s.delay_p95_ms, 80.0 + 0.9 * 10.0)); // rank 1.9 of [50, 80, 90]
                                                           // SSIM averaged linearly: mean 0.945 -> 12.6 dB, not the mean of 10 and 20 dB.
        assert!(close(s.ssim_mean, 0.945));
        assert!(close(s.ssim_db_mean, -10.0 * 0.055f64.log10()));
        assert!(close(s.ssim_p25, 0.9 + 0.25 * 0.09));
        assert!(close(s.ssim_db_p25, ssim_to_db(0.9225)));
        assert!(close(s.psnr_db_mean, 35.0));
        assert!((s.displayed_fps - 50.0).abs() < 1e-9);
        assert!((s.video_bitrate_bps - 1750.0 * 8.0 / 0.04).abs() < 1e-6);
        assert!(close(s.link_utilisation, 0.5));
        assert_eq!(
            s.choices,
            OutcomeCounts {
                better: 2,
                worse: 1,
                skipped: 1,
                ..Default::default()
            }
        );
        assert_eq!(
            (s.better_share, s.worse_share, s.skip_share),
            (0.5, 0.25, 0.25)
        );
        let call = QoeModel::VideoCall.score(
            Duration::from_secs_f64(s.delay_mean_ms.unwrap() / 1000.0),
            s.ssim_db_mean.unwrap(),
        );
        assert!(close(s.qoe_video_call, call));
        assert!(s.qoe_driving.is_some());
    }

    #[test]
    fn record_delays_follow_the_paper_metric() {
        let d = record_delays(&four_frames()).unwrap();
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(d, vec![ms(50), ms(90), ms(80), None]);
        // Ids with gaps are fine; only the order matters.
        let mut r = four_frames();
        r[3].frame_id = 10;
        assert_eq!(record_delays(&r).unwrap(), d);
    }

    #[test]
    fn json_round_trip_and_nothing_shown() {
        let records: Vec<FrameRecord> = (0..3).map(|i| FrameRecord::captured(i, ms(i))).collect();
        let run = RunInfo {
            duration: Duration::from_secs(1),
            link: None,
        };
        let s = summarize(&records, &run).unwrap();
        assert_eq!(s.frames_shown, 0);
        assert_eq!(
            (s.ssim_db_mean, s.delay_p95_ms, s.qoe_driving),
            (None, None, None)
        );
        assert_eq!(s.skip_share, 1.0);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"delay_p95_ms\":null"), "{json}");
        let back: Summary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let s = summarize(&four_frames(), &run).unwrap();
        let back: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn bad_runs_are_errors() {
        let run = RunInfo {
            duration: Duration::from_secs(1),
            link: None,
        };
        let mut r = four_frames();
        r.swap(1, 2);
        assert_eq!(
            summarize(&r, &run).unwrap_err(),
            MetricsError::RecordsOutOfOrder { frame_id: 1 }
        );
        let mut r = four_frames();
        r[0].ssim = Some(f64::NAN);
        assert!(summarize(&r, &run).is_err());
        let zero = RunInfo {
            duration: Duration::ZERO,
            link: None,
        };
        assert!(summarize(&four_frames(), &zero).is_err());
    }

    proptest! {
        /// Shares add up to one, counts to the number of frames; p25 <= mean-ish bounds hold.
        #[test]
        fn shares_and_bounds(
            picks in proptest::collection::vec((0u8..4, any::<bool>(), 0.0f64..1.0), 1..80),
        ) {
            let records: Vec<FrameRecord> = picks.iter().enumerate().map(|(i, &(c, shown, ssim))| {
                let t = ms(i as u64 * 16);
                FrameRecord {
                    display: shown.then(|| t + Duration::from_millis(30)),
                    ssim: shown.then_some(ssim),
                    choice: [FrameOutcome::Better, FrameOutcome::Worse, FrameOutcome::Single, FrameOutcome::Skipped][c as usize],
                    ..FrameRecord::captured(i as u64, t)
                }
            }).collect();
            let run = RunInfo { duration: Duration::from_secs(2), link: None };
            let s = summarize(&records, &run).unwrap();
            let c = s.choices;
            prop_assert_eq!(c.better + c.worse + c.single + c.skipped + c.unknown, s.frames);
            let total = s.better_share + s.worse_share + s.single_share + s.skip_share;
            prop_assert!((total - 1.0).abs() < 1e-9);
            if let (Some(p25), Some(m)) = (s.ssim_p25, s.ssim_mean) {
                let max = records.iter().filter_map(|r| r.ssim).fold(0.0, f64::max);
                prop_assert!(p25 <= max && m <= max + 1e-12);
                prop_assert!(s.ssim_db_p25.unwrap() <= ssim_to_db(max));
            }
            if let Some(p95) = s.delay_p95_ms {
                prop_assert!(s.delay_median_ms.unwrap() <= p95);
                prop_assert!(s.delay_mean_ms.unwrap() >= 30.0 - 1e-9);
            }
        }
    }
}
