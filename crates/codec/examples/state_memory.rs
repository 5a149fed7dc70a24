//! Does an encode depend on the encodes before it? (It must not: the output should be a
//! function of (state, picture, quality).)
//!
//! `cargo run --release -p salsify-codec --example state_memory -- [WxH] [fine] [coarse]`
//! Encodes the synthetic source at quality `fine` (default 3) for 2 s, at `coarse` (127) for
//! 2 s, then at `fine` again for 4 s, with one encoder reused throughout. Alongside, from the
//! same states, a fresh encoder per frame encodes the same pictures, and the reused encoder
//! repeats each call once. Prints size and PSNR per 10 frames for both, and how many frames
//! were byte-identical. `VERBOSE=1` prints every frame's loop-filter level and quantizer index
//! as its header says.

use salsify_codec::{Encoder, Image, PlaneId, Quality, State, SyntheticSource};

fn psnr(a: &Image, b: &Image) -> f64 {
    let (pa, pb) = (a.plane(PlaneId::Y), b.plane(PlaneId::Y));
    let mut sse = 0u64;
    for y in 0..pa.height() {
        for (x, y2) in pa.row(y).iter().zip(pb.row(y)) {
            let d = i64::from(*x) - i64::from(*y2);
            sse += (d * d) as u64;
        }
    }
    let mse = sse as f64 / (pa.width() * pa.height()) as f64;
    10.0 * (255.0 * 255.0 / mse.max(1e-9)).log10()
}

/// The VP8 boolean decoder (RFC 6386 section 7), enough to read the frame header.
struct Bools<'a> {
    data: &'a [u8],
    pos: usize,
    value: u32,
    range: u32,
    bits: i32,
}

impl<'a> Bools<'a> {
    fn new(data: &'a [u8]) -> Self {
        let mut b = Bools {
            data,
            pos: 0,
            value: 0,
            range: 255,
            bits: -8,
        };
        b.fill();
        b
    }
    fn fill(&mut self) {
        while self.bits < 0 {
            let byte = self.data.get(self.pos).copied().unwrap_or(0);
            self.pos += 1;
            self.value = (self.value << 8) | u32::from(byte);
            self.bits += 8;
        }
    }
    fn bool(&mut self, prob: u32) -> bool {
        let split = 1 + (((self.range - 1) * prob) >> 8);
        let big_split = split << self.bits;
        let bit = if self.value >= big_split {
            self.range -= split;
            self.value -= big_split;
            true
        } else {
            self.range = split;
            false
        };
        while self.range < 128 {
            self.range <<= 1;
            self.bits -= 1;
        }
        self.fill();
        bit
    }
    fn literal(&mut self, n: u32) -> u32 {
        (0..n).fold(0, |v, _| (v << 1) | u32::from(self.bool(128)))
    }
    fn signed(&mut self, n: u32) -> i32 {
        let m = self.literal(n) as i32;
        if self.bool(128) {
            -m
        } else {
            m
        }
    }
}

/// (loop filter level, base quantizer index, segmentation on) from a VP8 frame header.
fn header_fields(vp8: &[u8]) -> (u32, u32, bool) {
    let key = vp8[0] & 1 == 0;
    let mut b = Bools::new(&vp8[if key { 10 } else { 3 }..]);
    if key {
        b.literal(2);
    }
    let seg = b.bool(128);
    if seg {
        return (0, 0, true);
    }
    b.literal(1);
    let level = b.literal(6);
    b.literal(3);
    if b.bool(128) && b.bool(128) {
        for _ in 0..8 {
            if b.bool(128) {
                b.signed(6);
            }
        }
    }
    b.literal(2);
    (level, b.literal(7), false)
}

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let size = arg(1).unwrap_or_else(|| "640x360".into());
    let (w, h) = size.split_once('x').expect("WxH");
    let (w, h): (u32, u32) = (w.parse().expect("width"), h.parse().expect("height"));
    let fine = Quality::new(arg(2).map_or(3, |s| s.parse().expect("fine"))).expect("q");
    let coarse = Quality::new(arg(3).map_or(127, |s| s.parse().expect("coarse"))).expect("q");
    let src = SyntheticSource::new(w, h, 30, 1).expect("source");
    let mut reused = Encoder::new(w, h).expect("encoder");
    let mut state = State::initial();
    let (mut bytes_r, mut bytes_f, mut psnr_r, mut psnr_f, mut n) = (0, 0, 0.0, 0.0, 0);
    let mut first_diff = None;
    let (mut repeats_same, mut fresh_same) = (0, 0);
    for i in 0..240u64 {
        let q = if (60..120).contains(&i) { coarse } else { fine };
        let img = src.frame(i);
        let mut fresh = Encoder::new(w, h).expect("encoder");
        let f = fresh.encode(&state, &img, q).expect("encode");
        let r = reused.encode(&state, &img, q).expect("encode");
        if f.bytes != r.bytes && first_diff.is_none() {
            first_diff = Some(i);
        }
        // The same call again on the reused encoder, right after the first.
        let again = reused.encode(&state, &img, q).expect("encode");
        repeats_same += usize::from(again.bytes == r.bytes);
        fresh_same += usize::from(f.bytes == r.bytes);
        if std::env::var_os("VERBOSE").is_some() {
            println!(
                "{i:>3} {q}: reused {:>6} B lf/q/seg {:?} | fresh {:>6} B lf/q/seg {:?}",
                r.len(),
                header_fields(r.vp8()),
                f.len(),
                header_fields(f.vp8())
            );
        }
        bytes_r += r.len();
        bytes_f += f.len();
        psnr_r += psnr(&img, &r.target.picture().expect("picture"));
        psnr_f += psnr(&img, &f.target.picture().expect("picture"));
        n += 1;
        // The reused encoder's output drives the chain, as in the sender.
        state = r.target;
        if i % 10 == 9 {
            println!(
                "frames {:>3}..{:>3} {q}: reused {:>6} B {:>5.2} dB | fresh {:>6} B {:>5.2} dB",
                i - 9,
                i,
                bytes_r / n,
                psnr_r / n as f64,
                bytes_f / n,
                psnr_f / n as f64
            );
            (bytes_r, bytes_f, psnr_r, psnr_f, n) = (0, 0, 0.0, 0.0, 0);
        }
    }
    println!("first frame whose bytes differ: {first_diff:?}");
    println!(
        "byte-identical of 240: repeated call on the reused encoder {repeats_same}, \
         fresh encoder vs reused {fresh_same}"
    );
}
