//! A built-in video source, so nothing needs a data file by default.
//!
//! Each frame is a textured background panning at constant speed, a few textured discs and
//! boxes bouncing around over it, a fixed lighting gradient and a little per-frame sensor
//! noise. That gives VP8 real work: most blocks are predictable by motion, object edges and
//! uncovered background are not, and the noise keeps residuals from being zero. Everything
//! is a pure function of (size, fps, seed, frame index), so any frame can be regenerated.

use std::time::Duration;

use crate::error::CodecError;
use crate::image::{check_source_size, Image, PlaneId};
use crate::y4m::{Rational, Y4mHeader};

/// Side of the square luma texture tile (a power of two, so wrapping is a mask).
const TILE: usize = 512;
/// Side of the chroma texture tiles.
const CHROMA_TILE: usize = TILE / 2;
/// Length of the noise table rows are drawn from (plus the picture width).
const NOISE_LEN: usize = 8192;
/// Moving objects drawn over the background.
const SHAPES: usize = 5;

/// The splitmix64 finaliser: a cheap, well-mixed hash of one word.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Hashes a seed and three coordinates to a word.
fn hash(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    mix(mix(mix(seed ^ a).wrapping_add(b)).wrapping_add(c))
}

/// A value in `lo..hi` drawn from `h`.
fn pick(h: u64, lo: i64, hi: i64) -> i64 {
    lo + (h % (hi - lo) as u64) as i64
}

/// One frame of the synthetic source.
#[derive(Clone, Debug)]
pub struct SyntheticFrame {
    /// Frame number, from 0.
    pub index: u64,
    /// Presentation time since frame 0: `index / fps`.
    pub timestamp: Duration,
    /// The picture.
    pub image: Image,
}

/// A moving object: a textured disc or box bouncing inside the picture.
#[derive(Clone, Debug)]
struct Shape {
    disc: bool,
    /// Half the side (box) or the radius (disc), in luma pixels.
    radius: i64,
    /// Centre at frame 0 and speed in pixels per second, before bouncing.
    start: (i64, i64),
    speed: (i64, i64),
    /// Where the shape's texture is taken from in the luma tile.
    texture: (usize, usize),
    brightness: i16,
    chroma: (u8, u8),
}

/// Deterministic moving, textured video at any even size and frame rate.
#[derive(Clone, Debug)]
pub struct SyntheticSource {
    width: u32,
    height: u32,
    fps: u32,
    seed: u64,
    next_index: u64,
    tile_y: Vec<u8>,
    tile_u: Vec<u8>,
    tile_v: Vec<u8>,
    /// Background pan speed, pixels per second.
    pan: (i64, i64),
    shapes: Vec<Shape>,
    /// Per-row lighting offset added to luma (a fixed vertical gradient).
    lighting: Vec<i16>,
    noise: Vec<i8>,
}

impl SyntheticSource {
    /// A source of `width` x `height` pictures (even, as for [`Image::new`]) at `fps` frames
    /// per second; different seeds give different textures and motion.
    pub fn new(width: u32, height: u32, fps: u32, seed: u64) -> Result<Self, CodecError> {
        check_source_size(width, height)?;
        if fps == 0 {
            return Err(CodecError::InvalidInput(
                "synthetic source at 0 fps".to_owned(),
            ));
        }
        let (w, h) = (i64::from(width), i64::from(height));
        let pan = (
            pick(hash(seed, 1, 0, 0), w / 20, w / 8 + 1) * if seed & 1 == 0 { 1 } else { -1 },
            pick(hash(seed, 1, 1, 0), -h / 16, h / 16 + 1),
        );
        Ok(SyntheticSource {
            width,
            height,
            fps,
            seed,
            next_index: 0,
            tile_y: luma_tile(seed),
            tile_u: chroma_tile(seed, 2),
            tile_v: chroma_tile(seed, 3),
            pan,
            shapes: (0..SHAPES as u64).map(|i| shape(seed, i, w, h)).collect(),
            lighting: (0..h).map(|y| (y * 40 / h - 20) as i16).collect(),
            noise: (0..NOISE_LEN + width as usize)
                .map(|i| noise_sample(hash(seed, 4, i as u64, 0)))
                .collect(),
        })
    }

    /// Visible width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Visible height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Frames per second.
    pub fn frame_rate(&self) -> Rational {
        Rational::new(self.fps, 1)
    }

    /// A Y4M header describing this source, for writing it to a file.
    pub fn y4m_header(&self) -> Y4mHeader {
        Y4mHeader::new(self.width, self.height, self.frame_rate())
    }

    /// Time of frame `index` since frame 0.
    pub fn timestamp(&self, index: u64) -> Duration {
        let nanos = u128::from(index) * 1_000_000_000 / u128::from(self.fps);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Frame `index`, freshly allocated.
    pub fn frame(&self, index: u64) -> Image {
        // The size was checked in `new`, so this cannot fail.
        let mut image = Image::new(self.width, self.height).expect("size checked in new");
        self.render_into(index, &mut image);
        image
    }

    /// Draws frame `index` into `image`, replacing it if its size differs from the source's.
    pub fn render_into(&self, index: u64, image: &mut Image) {
        if image.width() != self.width || image.height() != self.height {
            *image = Image::new(self.width, self.height).expect("size checked in new");
        }
        let fps = i64::from(self.fps);
        let t = i64::try_from(index).unwrap_or(i64::MAX);
        let at = |speed: i64| speed.saturating_mul(t) / fps;
        self.background(image, (at(self.pan.0), at(self.pan.1)));
        for shape in &self.shapes {
            let centre = (
                bounce(shape.start.0 + at(shape.speed.0), shape.radius, self.width),
                bounce(shape.start.1 + at(shape.speed.1), shape.radius, self.height),
            );
            self.draw_shape(image, shape, centre);
        }
        self.light_and_noise(image, index);
        image.extend_edges();
    }

    /// The next frame in sequence (the source never ends).
    pub fn next_frame(&mut self) -> SyntheticFrame {
        let index = self.next_index;
        self.next_index += 1;
        SyntheticFrame {
            index,
            timestamp: self.timestamp(index),
            image: self.frame(index),
        }
    }

    /// Copies the tiles, shifted by `offset` luma pixels (half that for chroma).
    fn background(&self, image: &mut Image, offset: (i64, i64)) {
        let planes = [
            (PlaneId::Y, &self.tile_y, TILE, offset),
            (
                PlaneId::U,
                &self.tile_u,
                CHROMA_TILE,
                (offset.0 / 2, offset.1 / 2),
            ),
            (
                PlaneId::V,
                &self.tile_v,
                CHROMA_TILE,
                (offset.0 / 2, offset.1 / 2),
            ),
        ];
        for (id, tile, side, (ox, oy)) in planes {
            let plane = image.plane_mut(id);
            let x0 = ox.rem_euclid(side as i64) as usize;
            for y in 0..plane.height() {
                let ty = (y as i64 + oy).rem_euclid(side as i64) as usize;
                copy_wrapped(plane.row_mut(y), &tile[ty * side..(ty + 1) * side], x0);
            }
        }
    }

    fn draw_shape(&self, image: &mut Image, shape: &Shape, (cx, cy): (i64, i64)) {
        let mask = TILE - 1;
        let plane = image.plane_mut(PlaneId::Y);
        for (y, x0, x1) in spans(shape, (cx, cy), 1, (plane.width(), plane.height())) {
            let ty = (y as i64 - cy) as usize;
            let tile_row = &self.tile_y[((ty.wrapping_add(shape.texture.1)) & mask) * TILE..];
            let tx0 = (x0 as i64 - cx) as usize;
            for (i, px) in plane.row_mut(y)[x0..x1].iter_mut().enumerate() {
                let texel = tile_row[(tx0.wrapping_add(i).wrapping_add(shape.texture.0)) & mask];
                *px = (i16::from(texel) + shape.brightness).clamp(0, 255) as u8;
            }
        }
        for (id, value) in [(PlaneId::U, shape.chroma.0), (PlaneId::V, shape.chroma.1)] {
            let plane = image.plane_mut(id);
            for (y, x0, x1) in spans(shape, (cx / 2, cy / 2), 2, (plane.width(), plane.height())) {
                plane.row_mut(y)[x0..x1].fill(value);
            }
        }
    }

    /// Adds the lighting gradient and this frame's noise to luma.
    fn light_and_noise(&self, image: &mut Image, index: u64) {
        let plane = image.plane_mut(PlaneId::Y);
        for y in 0..plane.height() {
            let start = (hash(self.seed, 5, index, y as u64) % NOISE_LEN as u64) as usize;
            let noise = &self.noise[start..];
            let light = self.lighting[y];
            for (px, &n) in plane.row_mut(y).iter_mut().zip(noise) {
                *px = (i16::from(*px) + light + i16::from(n)).clamp(0, 255) as u8;
            }
        }
    }
}

/// Yields frames 0, 1, 2, ... forever.
impl Iterator for SyntheticSource {
    type Item = SyntheticFrame;

    fn next(&mut self) -> Option<SyntheticFrame> {
        Some(self.next_frame())
    }
}

/// Fills `row` from `tile_row` starting at column `x0`, wrapping around the tile.
fn copy_wrapped(row: &mut [u8], tile_row: &[u8], x0: usize) {
    let first = (tile_row.len() - x0).min(row.len());
    row[..first].copy_from_slice(&tile_row[x0..x0 + first]);
    for chunk in row[first..].chunks_mut(tile_row.len()) {
        chunk.copy_from_slice(&tile_row[..chunk.len()]);
    }
}

/// A position moving freely along a line folded back and forth inside `[radius, size - radius]`.
fn bounce(free: i64, radius: i64, size: u32) -> i64 {
    let span = i64::from(size) - 2 * radius;
    if span <= 0 {
        return i64::from(size) / 2;
    }
    let folded = free.rem_euclid(2 * span);
    radius
        + if folded < span {
            folded
        } else {
            2 * span - folded
        }
}

/// The rows of `shape` centred at (`cx`, `cy`) at 1/`scale` resolution, clipped to a
/// `width` x `rows` plane: `(row, first column, end column)`.
fn spans(
    shape: &Shape,
    (cx, cy): (i64, i64),
    scale: i64,
    (width, rows): (usize, usize),
) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    let r = shape.radius / scale;
    let width = width as i64;
    let y0 = (cy - r).max(0);
    let y1 = (cy + r + 1).min(rows as i64);
    (y0..y1).filter_map(move |y| {
        let dy = y - cy;
        let half = if shape.disc {
            ((r * r - dy * dy) as f64).sqrt() as i64
        } else {
            r
        };
        let x0 = (cx - half).max(0);
        let x1 = (cx + half + 1).min(width);
        (x0 < x1).then_some((y as usize, x0 as usize, x1 as usize))
    })
}

/// A moving object whose size and speed scale with the picture.
fn shape(seed: u64, i: u64, w: i64, h: i64) -> Shape {
    let h_ = |k: u64| hash(seed, 6, i, k);
    let small = w.min(h);
    let radius = pick(h_(0), small / 16 + 1, small / 6 + 2);
    Shape {
        disc: h_(1) & 1 == 0,
        radius,
        start: (pick(h_(2), 0, w.max(1)), pick(h_(3), 0, h.max(1))),
        speed: (
            pick(h_(4), -w / 4, w / 4 + 1),
            pick(h_(5), -h / 4, h / 4 + 1),
        ),
        texture: (h_(6) as usize % TILE, h_(7) as usize % TILE),
        brightness: pick(h_(8), -60, 61) as i16,
        chroma: (pick(h_(9), 60, 197) as u8, pick(h_(10), 60, 197) as u8),
    }
}

/// Sensor-like noise: mostly -1..=1, sometimes up to 3.
fn noise_sample(h: u64) -> i8 {
    let small = (h % 3) as i8 - 1;
    if (h >> 8) & 7 == 0 {
        small * 3
    } else {
        small
    }
}

/// Smooth value noise with period `side` at `cell`-pixel resolution, 0..=1 at (x, y).
fn value_noise(seed: u64, octave: u64, side: usize, cell: usize, x: usize, y: usize) -> f32 {
    let cells = side / cell;
    let lattice = |gx: usize, gy: usize| {
        let h = hash(seed, octave, (gx % cells) as u64, (gy % cells) as u64);
        (h >> 40) as f32 / (1u64 << 24) as f32
    };
    let smooth = |t: f32| t * t * (3.0 - 2.0 * t);
    let (gx, gy) = (x / cell, y / cell);
    let fx = smooth((x % cell) as f32 / cell as f32);
    let fy = smooth((y % cell) as f32 / cell as f32);
    let top = lattice(gx, gy) * (1.0 - fx) + lattice(gx + 1, gy) * fx;
    let bottom = lattice(gx, gy + 1) * (1.0 - fx) + lattice(gx + 1, gy + 1) * fx;
    top * (1.0 - fy) + bottom * fy
}

/// The background luma: layered value noise, a grid of darker lines (sharp edges for motion
/// search to lock onto) and fine per-pixel grain, seamless when tiled.
fn luma_tile(seed: u64) -> Vec<u8> {
    let octaves = [(128, 110.0), (64, 60.0), (32, 36.0), (16, 20.0), (4, 10.0)];
    let mut tile = vec![0; TILE * TILE];
    for (i, px) in tile.iter_mut().enumerate() {
        let (x, y) = (i % TILE, i / TILE);
        let mut v = 128.0 - octaves.iter().map(|o| o.1).sum::<f32>() / 2.0;
        for (k, &(cell, amplitude)) in octaves.iter().enumerate() {
            v += amplitude * value_noise(seed, 10 + k as u64, TILE, cell, x, y);
        }
        if x % 64 < 2 || (y % 32 < 2 && (x / 64 + y / 32) % 2 == 0) {
            v -= 45.0;
        }
        v += ((hash(seed, 7, x as u64, y as u64) % 13) as f32) - 6.0;
        *px = v.clamp(0.0, 255.0) as u8;
    }
    tile
}

/// A chroma plane's background: gentle colour variation around grey.
fn chroma_tile(seed: u64, which: u64) -> Vec<u8> {
    let mut tile = vec![0; CHROMA_TILE * CHROMA_TILE];
    for (i, px) in tile.iter_mut().enumerate() {
        let (x, y) = (i % CHROMA_TILE, i / CHROMA_TILE);
        let v = 88.0
            + 56.0 * value_noise(seed, 20 + which, CHROMA_TILE, 64, x, y)
            + 24.0 * value_noise(seed, 30 + which, CHROMA_TILE, 16, x, y);
        *px = v.clamp(0.0, 255.0) as u8;
    }
    tile
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The synthetic source is held to the Y4M reader's cap: an 8000x8000 source (400 MB a
    /// picture with its textures) is refused rather than allocated.
    #[test]
    fn huge_sizes_are_refused_like_a_y4m_file() {
        let err = SyntheticSource::new(8000, 8000, 30, 1)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("8000x8000"), "{err}");
        assert!(SyntheticSource::new(64, 48, 30, 1).is_ok());
    }
}
