//! Ready-made links for the paper's experiments (Salsify, NSDI 2018, section 4).
//!
//! All use the paper's testbed defaults unless the experiment says otherwise: a 256-packet
//! DropTail queue and 20 ms of propagation delay each way (40 ms round trip). Change fields
//! of the returned config to sweep them.

use salsify_time::Duration;

use crate::config::LinkConfig;
use crate::generators::{self, Bitrate, CellularParams, GeneratorError, RampParams};
use crate::loss::LossModel;
use crate::trace::{Trace, TraceError};

/// A recorded cellular trace (AT&T LTE, T-Mobile UMTS, Verizon LTE in the paper) with the
/// testbed's queue and delay.
pub fn cellular_trace(trace: Trace) -> LinkConfig {
    LinkConfig::with_trace(trace)
}

/// [`cellular_trace`] from a Mahimahi trace file.
pub fn cellular_trace_file(path: impl AsRef<std::path::Path>) -> Result<LinkConfig, TraceError> {
    Ok(cellular_trace(Trace::from_path(path)?))
}

/// The paper's intermittent link: 12 Mb/s, failing after exponential gaps of mean 5 s for
/// exponential times of mean 0.2 s, every packet dropped while failed. `seed` picks the
/// failure schedule.
pub fn intermittent(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let mut c = LinkConfig::with_trace(generators::constant(Bitrate::mbps(12))?);
    c.loss = vec![LossModel::paper_intermittent()];
    c.seed = seed;
    Ok(c)
}

/// The paper's emulated Wi-Fi: Poisson deliveries averaging 570 kb/s (a 10-minute period,
/// the length of the paper's runs). `seed` picks the delivery times.
pub fn wifi_poisson(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let trace = generators::poisson(Bitrate::kbps(570), Duration::from_secs(600), seed)?;
    let mut c = LinkConfig::with_trace(trace);
    c.seed = seed;
    Ok(c)
}

/// Capacity falling to zero and back ([`RampParams::default`]: 4 Mb/s, 20 s cycle).
pub fn ramp() -> Result<LinkConfig, GeneratorError> {
    Ok(LinkConfig::with_trace(generators::ramp(
        &RampParams::default(),
    )?))
}

/// The paper's one-second dropout on a constant 500 kb/s link, starting `at` after the link
/// starts; every packet offered during that second is lost.
pub fn dropout_500k(at: Duration) -> Result<LinkConfig, GeneratorError> {
    let mut c = LinkConfig::with_trace(generators::constant(Bitrate::kbps(500))?);
    c.loss = vec![LossModel::outage(at, Duration::from_secs(1))];
    Ok(c)
}

/// A synthetic cellular-like link (Sprout's model) for runs that need no data file.
pub fn synthetic_cellular(seed: u64) -> Result<LinkConfig, GeneratorError> {
    let trace = generators::cellular(&CellularParams::default(), seed)?;
    let mut c = LinkConfig::with_trace(trace);
    c.seed = seed;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueLimit;

    #[test]
    fn presets_are_valid_and_have_the_papers_numbers() {
        let all = [
            intermittent(1).unwrap(),
            wifi_poisson(1).unwrap(),
            ramp().unwrap(),
            dropout_500k(Duration::from_secs(10)).unwrap(),
            synthetic_cellular(1).unwrap(),
        ];
        for c in &all {
            c.validate().unwrap();
            assert_eq!(c.queue, QueueLimit::packets(256));
            assert_eq!(c.propagation_delay, Duration::from_millis(20));
        }
        let mbps = |c: &LinkConfig| c.trace.mean_rate_bps(c.opportunity_bytes) / 1e6;
        assert!((mbps(&all[0]) - 12.0).abs() < 1e-9);
        assert_eq!(all[0].loss, vec![LossModel::paper_intermittent()]);
        assert!((mbps(&all[1]) - 0.57).abs() < 0.001);
        assert!((mbps(&all[3]) - 0.5).abs() < 1e-9);
        assert_eq!(
            all[3].loss,
            vec![LossModel::outage(
                Duration::from_secs(10),
                Duration::from_secs(1)
            )]
        );
    }
}
