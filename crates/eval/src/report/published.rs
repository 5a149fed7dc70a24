//! The paper's published results (Fouladi et al., NSDI 2018, figure 11 and the ablations of
//! section 5), and which of our links and systems stand for the paper's.

/// One published point: SSIM dB p25 / mean, delay ms mean / p95 (the paper subtracted its
/// testbed's 67 ms from every delay; ours include the emulated propagation delay).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    /// The paper's name of the link.
    pub trace: &'static str,
    /// The paper's name of the system.
    pub system: &'static str,
    /// SSIM dB, 25th percentile (`None` where the paper gives only the mean).
    pub ssim_db_p25: Option<f64>,
    /// SSIM dB, mean.
    pub ssim_db_mean: f64,
    /// Delay ms, mean.
    pub delay_mean_ms: f64,
    /// Delay ms, 95th percentile.
    pub delay_p95_ms: f64,
}

const fn point(
    trace: &'static str,
    system: &'static str,
    ssim_db_p25: Option<f64>,
    ssim_db_mean: f64,
    delay_mean_ms: f64,
    delay_p95_ms: f64,
) -> Published {
    Published {
        trace,
        system,
        ssim_db_p25,
        ssim_db_mean,
        delay_mean_ms,
        delay_p95_ms,
    }
}

/// Every published number the project's notes carry (`shared/PAPER-NOTES.md`): figure 11's
/// anchors and the ablations on Verizon LTE. FaceTime's and Hangouts' points are only drawn
/// in the paper's figure, not read into the notes, so they are not here.
pub const PUBLISHED: [Published; 15] = [
    point("Verizon LTE", "Salsify-2c", Some(15.1), 15.6, 497.0, 1257.0),
    point("Verizon LTE", "WebRTC", Some(13.2), 13.7, 973.0, 4977.0),
    point("Verizon LTE", "Skype", Some(15.1), 14.1, 1183.0, 6600.0),
    point(
        "Verizon LTE",
        "Salsify, no grace period",
        None,
        8.1,
        442.0,
        539.0,
    ),
    point(
        "Verizon LTE",
        "Salsify, conventional codec",
        None,
        11.4,
        481.0,
        963.0,
    ),
    point(
        "Verizon LTE",
        "Salsify, conventional transport and codec",
        None,
        12.2,
        789.0,
        4293.0,
    ),
    point("AT&T LTE", "Salsify-2c", Some(15.0), 15.4, 282.0, 362.0),
    point("AT&T LTE", "WebRTC", Some(12.4), 13.4, 935.0, 4730.0),
    point(
        "AT&T LTE",
        "WebRTC VP9-SVC",
        Some(13.5),
        14.1,
        775.0,
        3547.0,
    ),
    point(
        "T-Mobile UMTS",
        "Salsify-2c",
        Some(12.9),
        13.3,
        803.0,
        4129.0,
    ),
    point("T-Mobile UMTS", "WebRTC", Some(10.4), 11.5, 1796.0, 8686.0),
    point("Intermittent", "Salsify-2c", Some(15.8), 16.6, 182.0, 263.0),
    point("Intermittent", "WebRTC", Some(16.0), 16.1, 156.0, 169.0),
    point(
        "Wi-Fi 0.57 Mb/s",
        "Salsify-2c",
        Some(9.0),
        9.6,
        235.0,
        429.0,
    ),
    point("Wi-Fi 0.57 Mb/s", "WebRTC", Some(10.0), 10.2, 315.0, 721.0),
];

/// Which link stands for which of the paper's: each Mahimahi trace file (by its name, without
/// `.down`) that is the drive the paper measured, and the synthetic links that emulate its
/// experiments 2 and 3. Exact names only: another drive on the same network
/// (`ATT-LTE-driving-2016`, `TMobile-LTE-driving`) is not the paper's link.
pub const PAPER_LINKS: [(&str, &str); 6] = [
    // Mahimahi's 140 s excerpt of the Verizon LTE drive (the paper ran 10 minutes of it).
    ("Verizon-LTE-short", "Verizon LTE"),
    ("Verizon-LTE-driving", "Verizon LTE"),
    ("ATT-LTE-driving", "AT&T LTE"),
    ("TMobile-UMTS-driving", "T-Mobile UMTS"),
    ("intermittent", "Intermittent"),
    ("wifi", "Wi-Fi 0.57 Mb/s"),
];

/// The paper's name of the link a run's link name stands for, if the paper measured it
/// ([`PAPER_LINKS`]).
pub fn paper_trace(link: &str) -> Option<&'static str> {
    PAPER_LINKS
        .iter()
        .find(|(name, _)| *name == link)
        .map(|(_, paper)| *paper)
}

/// The published point of `system` on the paper's `trace`.
pub fn published(trace: &str, system: &str) -> Option<&'static Published> {
    PUBLISHED
        .iter()
        .find(|p| p.trace == trace && p.system == system)
}

/// What the paper's systems are here: the system they stand beside, or why they cannot run.
pub const SYSTEMS: &str = "The paper's WebRTC was Chromium's of 2017 with VP8; here \
`chromium-vp8` is today's Chromium with VP8 and `chromium-vp9-svc` today's Chromium with VP9 \
and SVC (the paper's WebRTC VP9-SVC), both live and scored by barcodes; `conventional` is \
libwebrtc's GoogCC with libvpx in CBR mode, simulated or live. FaceTime, Hangouts and Skype \
cannot run here: they are closed clients (FaceTime only on Apple devices) with no way to feed \
them a barcoded clip and put their media on an emulated link on this machine. The paper's \
AT&T LTE and T-Mobile UMTS traces are not among the shared traces, so their published rows \
stand alone; the paper's Verizon LTE run was 10 minutes of the drive, ours the shared trace's \
140 s. The paper subtracted its testbed's 67 ms from every delay; ours include the emulated \
propagation delay (20 ms each way unless the link says otherwise).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_links_are_recognised_by_our_names() {
        assert_eq!(paper_trace("Verizon-LTE-short"), Some("Verizon LTE"));
        assert_eq!(paper_trace("ATT-LTE-driving"), Some("AT&T LTE"));
        assert_eq!(paper_trace("intermittent"), Some("Intermittent"));
        assert_eq!(paper_trace("wifi"), Some("Wi-Fi 0.57 Mb/s"));
        assert_eq!(paper_trace("TMobile-LTE-short"), None);
        assert_eq!(paper_trace("dropout"), None);
        assert_eq!(
            published("Verizon LTE", "WebRTC").unwrap().delay_p95_ms,
            4977.0
        );
        assert!(published("Verizon LTE", "FaceTime").is_none());
    }
}
