//! The audio's figures, measured like the video's: mouth-to-ear delay (capture to playout,
//! any sync hold included), the concealed share and the A/V skew of every shown picture, all
//! from what the receiver actually played and showed.

use std::collections::BTreeMap;

use salsify_time::{Duration, Instant};

use crate::record::{Arrival, PlayedFrame, PlayedKind};

/// The audio figures of a run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AudioSummary {
    /// Stream frames played.
    pub frames_played: u64,
    /// Mean mouth-to-ear delay, ms.
    pub delay_mean_ms: f64,
    /// 95th percentile of the mouth-to-ear delay, ms.
    pub delay_p95_ms: f64,
    /// Share of played frames whose audio was lost or late and not recovered by FEC.
    pub concealed_fraction: f64,
    /// Share of played frames rebuilt from FEC.
    pub fec_fraction: f64,
    /// Frames inserted to grow the playout delay, per stream frame played.
    pub stretch_fraction: f64,
    /// Frames of concealment played while waiting out a stalled link (the stream paused,
    /// none of it lost), per stream frame played.
    pub stalled_fraction: f64,
    /// Stream frames played faster to shed delay (none of their audio lost), per stream frame
    /// played.
    pub accelerated_fraction: f64,
    /// Frames skipped to shrink the playout delay (captured and sent, never heard), per
    /// stream frame played: the audio lost to catching up, beside what was concealed.
    pub skipped_fraction: f64,
    /// Share of pictures shown while audio played whose audio was inside BT.1359's window.
    pub av_skew_in_window_fraction: f64,
    /// Pictures that share is over.
    pub pictures_scored: u64,
}

/// The audio lead (positive: heard before seen) at each picture shown while audio played:
/// (shown at, lead). `shown`: (captured, shown at) of every picture, in order of showing.
pub fn skews(
    played: &[PlayedFrame],
    shown: &[(Instant, Instant)],
    frame: Duration,
) -> Vec<(Instant, f64)> {
    shown
        .iter()
        .filter_map(|&(seen, at)| {
            let heard = heard_at(played, at, frame)?;
            Some((
                at,
                (heard.as_micros() as f64 - seen.as_micros() as f64) / 1000.0,
            ))
        })
        .collect()
}

/// Frames played without audio that was sent: missing frames whose packet came late, and,
/// between two packets that did arrive, as many missing frames as sequence numbers are
/// missing there (the rest of such a gap is DTX's silence). A missing frame after the last
/// packet counts as concealed (nothing says it was silence).
pub fn concealed_frames(played: &[PlayedFrame], arrivals: &[Arrival]) -> u64 {
    let by_frame: BTreeMap<u64, u32> = arrivals.iter().map(|a| (a.frame, a.seq)).collect();
    // Missing frames per gap (keyed by the arrived frame before it) and the gap's lost count.
    let mut gaps: BTreeMap<Option<u64>, (u64, u64)> = BTreeMap::new();
    let mut concealed = 0;
    for p in played.iter().filter(|p| p.kind == PlayedKind::Missing) {
        let Some(f) = p.frame else { continue };
        if by_frame.contains_key(&f) {
            concealed += 1;
            continue;
        }
        let before = by_frame.range(..f).next_back();
        let after = by_frame.range(f + 1..).next();
        let lost = match (before, after) {
            (Some((_, &a)), Some((_, &b))) => u64::from(b.wrapping_sub(a).saturating_sub(1)),
            (None, Some((_, &b))) => u64::from(b),
            (_, None) => u64::MAX,
        };
        let entry = gaps.entry(before.map(|(f, _)| *f)).or_insert((0, lost));
        entry.0 += 1;
    }
    concealed
        + gaps
            .values()
            .map(|&(missing, lost)| missing.min(lost))
            .sum::<u64>()
}

/// The run's audio figures. `shown`: (captured, shown at) of every picture shown.
pub fn summarize_audio(
    played: &[PlayedFrame],
    arrivals: &[Arrival],
    shown: &[(Instant, Instant)],
    frame: Duration,
) -> AudioSummary {
    let stream: Vec<&PlayedFrame> = played.iter().filter(|p| p.frame.is_some()).collect();
    let n = stream.len() as u64;
    if n == 0 {
        return AudioSummary::default();
    }
    let mut delays: Vec<f64> = stream
        .iter()
        .map(|p| p.at.saturating_duration_since(p.captured).as_secs_f64() * 1000.0)
        .collect();
    delays.sort_by(f64::total_cmp);
    let mean = delays.iter().sum::<f64>() / n as f64;
    let p95 = delays[((0.95 * n as f64).ceil() as usize).clamp(1, delays.len()) - 1];
    let count = |kind: PlayedKind, among: &[PlayedFrame]| {
        among.iter().filter(|p| p.kind == kind).count() as f64
    };
    let fec = count(PlayedKind::Fec, played);
    // Frames inserted after the last stream frame are the stream's end, not a stall.
    let last = played
        .iter()
        .rposition(|p| p.frame.is_some())
        .map_or(0, |i| i + 1);
    let stretch = count(PlayedKind::Stretch, &played[..last]);
    let stalled = count(PlayedKind::Stall, &played[..last]);
    let accelerated = count(PlayedKind::Accelerated, played);
    let skipped = skipped_frames(&stream) as f64;
    let skews = skews(played, shown, frame);
    let ahead = crate::sync::MAX_AHEAD.as_secs_f64() * 1000.0;
    let behind = crate::sync::MAX_BEHIND.as_secs_f64() * 1000.0;
    let inside = skews
        .iter()
        .filter(|(_, lead)| (-behind..=ahead).contains(lead))
        .count();
    AudioSummary {
        frames_played: n,
        delay_mean_ms: mean,
        delay_p95_ms: p95,
        concealed_fraction: concealed_frames(played, arrivals) as f64 / n as f64,
        fec_fraction: fec / n as f64,
        stretch_fraction: stretch / n as f64,
        stalled_fraction: stalled / n as f64,
        accelerated_fraction: accelerated / n as f64,
        skipped_fraction: skipped / n as f64,
        av_skew_in_window_fraction: if skews.is_empty() {
            0.0
        } else {
            inside as f64 / skews.len() as f64
        },
        pictures_scored: skews.len() as u64,
    }
}

/// Stream frames between the first and the last played that were never played (the player
/// skipped them to shrink its delay). `stream`: the played frames that play a stream frame.
pub fn skipped_frames(stream: &[&PlayedFrame]) -> u64 {
    let frames: std::collections::BTreeSet<u64> = stream.iter().filter_map(|p| p.frame).collect();
    match (frames.first(), frames.last()) {
        (Some(first), Some(last)) => last - first + 1 - frames.len() as u64,
        _ => 0,
    }
}

/// The capture time of the audio playing at `at`, if audio was playing then. A frame plays
/// until the next starts (an accelerated one for less than `frame`, through all its audio);
/// an inserted frame plays the moment the stream resumes at.
pub(crate) fn heard_at(played: &[PlayedFrame], at: Instant, frame: Duration) -> Option<Instant> {
    let i = played.partition_point(|p| p.at <= at).checked_sub(1)?;
    let p = &played[i];
    let length = played.get(i + 1).map_or(frame, |next| {
        next.at.saturating_duration_since(p.at).min(frame)
    });
    let into = at - p.at;
    if into > length {
        return None;
    }
    Some(match p.kind {
        PlayedKind::Stretch | PlayedKind::Stall => p.captured,
        PlayedKind::Accelerated if !length.is_zero() => {
            p.captured + frame.mul_f64(into.as_secs_f64() / length.as_secs_f64())
        }
        _ => p.captured + into,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn played(frame: Option<u64>, kind: PlayedKind) -> PlayedFrame {
        PlayedFrame {
            at: Instant::from_millis(frame.unwrap_or(0) * 20 + 100),
            frame,
            captured: Instant::from_millis(frame.unwrap_or(0) * 20),
            kind,
        }
    }

    #[test]
    fn frames_the_player_jumped_over_are_counted_as_skipped() {
        let all = [
            played(Some(3), PlayedKind::Packet),
            played(None, PlayedKind::Stretch),
            played(Some(4), PlayedKind::Missing),
            played(Some(7), PlayedKind::Packet),
            played(Some(8), PlayedKind::Fec),
        ];
        let stream: Vec<&PlayedFrame> = all.iter().filter(|p| p.frame.is_some()).collect();
        assert_eq!(skipped_frames(&stream), 2);
        assert_eq!(skipped_frames(&[]), 0);
        let s = summarize_audio(&all, &[], &[], Duration::from_millis(20));
        assert_eq!(s.frames_played, 4);
        assert_eq!(s.skipped_fraction, 0.5);
        assert_eq!(s.stretch_fraction, 0.25);
    }

    #[test]
    fn a_frame_played_faster_is_heard_through_and_a_trailing_stall_is_not_counted() {
        let at = Instant::from_millis;
        let frame = |t: u64, f: Option<u64>, c: u64, kind| PlayedFrame {
            at: at(t),
            frame: f,
            captured: at(c),
            kind,
        };
        let all = [
            frame(100, None, 0, PlayedKind::Stall),
            frame(120, Some(0), 0, PlayedKind::Accelerated),
            // Frame 0 played in 10 ms: a picture at 125 ms hears its middle (10 ms in).
            frame(130, Some(1), 20, PlayedKind::Packet),
            frame(150, None, 40, PlayedKind::Stall),
        ];
        let ms20 = Duration::from_millis(20);
        let skews = skews(&all, &[(at(10), at(125)), (at(25), at(140))], ms20);
        assert_eq!(skews, vec![(at(125), 0.0), (at(140), 5.0)]);
        let s = summarize_audio(&all, &[], &[], ms20);
        assert_eq!(s.frames_played, 2);
        assert_eq!(s.accelerated_fraction, 0.5);
        assert_eq!(
            s.stalled_fraction, 0.5,
            "the stall after the last frame is the end"
        );
    }
}
