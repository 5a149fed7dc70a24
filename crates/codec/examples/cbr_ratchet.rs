//! libvpx's CBR rate control against a swinging target (why the simulator passes only
//! target changes above 10 % to the conventional encoder).
//!
//! `cargo run --release -p salsify-codec --example cbr_ratchet -- [kbps] [dropframe] [mode]`
//! mode: `c` constant target, `v` +-10 % every frame, `w` alternating kbps and kbps/2 every
//! 3 frames, `s` every 4th frame skipped. Prints the bit rate and mean quantizer per 5 s of
//! the synthetic 320x180 source at 30 fps.

use salsify_codec::{CbrConfig, CbrEncoder, SyntheticSource};

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let kbps: u32 = arg(1).map_or(2000, |s| s.parse().expect("kbps"));
    let dropframe_thresh: u32 = arg(2).map_or(30, |s| s.parse().expect("threshold"));
    let mode = arg(3).unwrap_or_else(|| "c".into());
    let src = SyntheticSource::new(320, 180, 30, 1).expect("source");
    let config = CbrConfig {
        dropframe_thresh,
        ..CbrConfig::default()
    };
    let mut enc = CbrEncoder::new(320, 180, config).expect("encoder");
    enc.set_target_bitrate(kbps).expect("target");
    let (mut bytes, mut q, mut n) = (0usize, 0u64, 0u64);
    for i in 0..900u64 {
        if mode.contains('v') {
            enc.set_target_bitrate(kbps * (9 + (i % 5) as u32) / 10)
                .expect("target");
        }
        if mode.contains('w') {
            let t = if (i / 3) % 2 == 0 { kbps } else { kbps / 2 };
            enc.set_target_bitrate(t).expect("target");
        }
        if !(mode.contains('s') && i % 4 == 3) {
            let img = src.frame(i);
            if let Some(f) = enc.encode(&img, i * 33_333, i == 0).expect("encode") {
                bytes += f.data.len();
                q += u64::from(f.quality);
                n += 1;
            }
        }
        if i % 150 == 149 {
            println!(
                "{:>3} s {:>6} kb/s q {:>5.1} frames {}",
                (i + 1) / 30,
                bytes * 8 / 5 / 1000,
                q as f64 / n.max(1) as f64,
                n
            );
            (bytes, q, n) = (0, 0, 0);
        }
    }
}
