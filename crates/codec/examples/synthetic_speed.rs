//! Times the synthetic source: `cargo run --release -p salsify-codec --example synthetic_speed
//! -- [WIDTH HEIGHT FRAMES [OUT.y4m]]` (default 1280 720 600). With OUT, also writes the clip.

use std::time::Instant;

use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::y4m::Y4mWriter;
use salsify_codec::Image;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u32| args.get(i).map_or(Ok(default), |s| s.parse());
    let (width, height, frames) = (num(0, 1280)?, num(1, 720)?, num(2, 600)?);
    let source = SyntheticSource::new(width, height, 60, 1)?;
    let mut image = Image::new(width, height)?;
    let mut times = Vec::with_capacity(frames as usize);
    for index in 0..u64::from(frames) {
        let start = Instant::now();
        source.render_into(index, &mut image);
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let p95 = times[times.len() * 95 / 100];
    println!(
        "{width}x{height}: {frames} frames, mean {mean:.2} ms, median {:.2} ms, p95 {p95:.2} ms",
        times[times.len() / 2]
    );
    if let Some(path) = args.get(3) {
        let mut writer = Y4mWriter::new(std::fs::File::create(path)?, source.y4m_header())?;
        for index in 0..u64::from(frames) {
            writer.write_frame(&source.frame(index))?;
        }
        writer.finish()?;
    }
    Ok(())
}
