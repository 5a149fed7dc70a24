//! Wall time of luma SSIM and PSNR on 1280x720 planes.
//!
//! `cargo run --release -p salsify-metrics --example ssim_bench [iterations]`
//!
//! Uses synthetic textured planes (the code has no data-dependent branches, so content does
//! not change its speed) with the codec's 16-aligned stride, and reports the median of
//! several batches so one busy moment on a shared machine does not skew the figure.

use salsify_metrics::{psnr_plane, ssim_plane, PlaneView};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("iterations is a number"))
        .unwrap_or(100);
    let (w, h, stride) = (1280usize, 720usize, 1280usize);
    // A deterministic texture and a distorted copy (small xorshift noise).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let a: Vec<u8> = (0..stride * h)
        .map(|i| ((i % w) / 3 + (i / stride) / 2 + (next() % 16) as usize) as u8)
        .collect();
    let b: Vec<u8> = a
        .iter()
        .map(|&s| s.saturating_add((next() % 9) as u8))
        .collect();
    let va = PlaneView::new(&a, w, h, stride).unwrap();
    let vb = PlaneView::new(&b, w, h, stride).unwrap();

    for (name, f) in [
        (
            "ssim",
            &(|| ssim_plane(va, vb).unwrap()) as &dyn Fn() -> f64,
        ),
        (
            "psnr",
            &(|| psnr_plane(va, vb).unwrap()) as &dyn Fn() -> f64,
        ),
    ] {
        black_box(f()); // warm-up
        let mut batches: Vec<f64> = (0..7)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..iterations {
                    black_box(f());
                }
                start.elapsed().as_secs_f64() * 1000.0 / iterations as f64
            })
            .collect();
        batches.sort_by(f64::total_cmp);
        println!(
            "{name} 1280x720 luma: median {:.3} ms/frame (min {:.3}, max {:.3}; 7 batches of {iterations}); value {:.6}",
            batches[3],
            batches[0],
            batches[6],
            f()
        );
    }
}
