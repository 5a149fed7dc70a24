//! How long a direction's feedback (ACKs, receiver reports) took to reach its sender: the
//! measure of how much a call's other direction delays it. In a one-way run the feedback
//! link carries ACKs only; in a two-way call they queue behind the other side's media.

use salsify_metrics::{mean, percentile};
use salsify_time::Duration;
use serde::{Deserialize, Serialize};

/// One direction's feedback delay, over every feedback datagram its sender received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FeedbackDelay {
    /// Feedback datagrams delivered.
    pub datagrams: u64,
    /// Mean one-way delay, entering the link to reaching the sender (propagation included).
    pub delay_mean_ms: Option<f64>,
    /// Its 95th percentile.
    pub delay_p95_ms: Option<f64>,
    /// Mean time queued and serialised at the bottleneck (the delay less propagation): in a
    /// two-way call, where the other side's media make it grow.
    pub queue_mean_ms: Option<f64>,
    /// Its 95th percentile.
    pub queue_p95_ms: Option<f64>,
}

impl FeedbackDelay {
    /// The figures of feedback datagrams delivered after (queue delay, total delay).
    pub fn of(timings: &[(Duration, Duration)]) -> FeedbackDelay {
        let ms = |pick: fn(&(Duration, Duration)) -> Duration| -> Vec<f64> {
            timings
                .iter()
                .map(|t| pick(t).as_secs_f64() * 1e3)
                .collect()
        };
        let (queue, total) = (ms(|t| t.0), ms(|t| t.1));
        FeedbackDelay {
            datagrams: timings.len() as u64,
            delay_mean_ms: mean(&total),
            delay_p95_ms: percentile(&total, 95.0),
            queue_mean_ms: mean(&queue),
            queue_p95_ms: percentile(&queue, 95.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_queue_and_total_delay() {
        let ms = Duration::from_millis;
        let f = FeedbackDelay::of(&[(ms(0), ms(20)), (ms(10), ms(30))]);
        assert_eq!(f.datagrams, 2);
        assert_eq!(f.delay_mean_ms, Some(25.0));
        assert_eq!(f.queue_mean_ms, Some(5.0));
        assert!((f.queue_p95_ms.unwrap() - 9.5).abs() < 1e-9);
        assert_eq!(FeedbackDelay::of(&[]).delay_mean_ms, None);
    }
}
