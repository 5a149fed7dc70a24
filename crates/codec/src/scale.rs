//! Picture scaling: an [`Image`] to another size, each plane resampled separably with a
//! triangle (bilinear) filter. Upscaling is plain bilinear interpolation; downscaling widens
//! the triangle to the scale factor (an area-weighted average, so a 4x reduction does not
//! alias). Sample centres are aligned (`src = (dst + 0.5) x ratio - 0.5`), so scaling down
//! and back up does not shift the picture.

use crate::error::CodecError;
use crate::image::{Image, PlaneId};

/// The smallest side [`halved_size`] makes (or the source's, if that is smaller).
pub const MIN_HALVED_SIDE: u32 = 16;

/// The size of a `width` x `height` picture halved `halvings` times in each dimension, each
/// side rounded down to an even number and kept at least [`MIN_HALVED_SIDE`] (a source side
/// already smaller stays as it is). 0 halvings: the source size.
pub fn halved_size(width: u32, height: u32, halvings: u8) -> (u32, u32) {
    let side = |v: u32| {
        let halved = (v.checked_shr(u32::from(halvings)).unwrap_or(0)) & !1;
        halved.max(MIN_HALVED_SIDE.min(v))
    };
    (side(width), side(height))
}

/// `src` resampled to `width` x `height` (even, as every [`Image`]). The same size returns
/// a copy.
pub fn scale(src: &Image, width: u32, height: u32) -> Result<Image, CodecError> {
    let mut out = Image::new(width, height)?;
    if (src.width(), src.height()) == (width, height) {
        for id in PlaneId::ALL {
            let (s, d) = (src.plane(id), out.plane_mut(id));
            for y in 0..s.height() {
                let w = s.width();
                d.row_mut(y)[..w].copy_from_slice(&s.row(y)[..w]);
            }
        }
        out.extend_edges();
        return Ok(out);
    }
    for id in PlaneId::ALL {
        let s = src.plane(id);
        let (sw, sh) = (s.width(), s.height());
        let d = out.plane_mut(id);
        let (dw, dh) = (d.width(), d.height());
        let xs = weights(sw, dw);
        let ys = weights(sh, dh);
        // Horizontal pass: sh rows of dw samples.
        let mut tmp = vec![0f32; sh * dw];
        for y in 0..sh {
            let row = s.row(y);
            let t = &mut tmp[y * dw..(y + 1) * dw];
            for (x, (first, w)) in xs.iter().enumerate() {
                t[x] = w
                    .iter()
                    .enumerate()
                    .map(|(k, &w)| w * f32::from(row[first + k]))
                    .sum();
            }
        }
        // Vertical pass.
        for (y, (first, w)) in ys.iter().enumerate() {
            let row = d.row_mut(y);
            for (x, out) in row[..dw].iter_mut().enumerate() {
                let v: f32 = w
                    .iter()
                    .enumerate()
                    .map(|(k, &w)| w * tmp[(first + k) * dw + x])
                    .sum();
                *out = v.round().clamp(0.0, 255.0) as u8;
            }
        }
    }
    out.extend_edges();
    Ok(out)
}

/// For each of `dst` output samples: the first source sample and the normalised weights of
/// the consecutive source samples it averages.
fn weights(src: usize, dst: usize) -> Vec<(usize, Vec<f32>)> {
    let ratio = src as f64 / dst as f64;
    // The triangle's half-width in source samples: 1 when enlarging, the ratio when reducing.
    let support = ratio.max(1.0);
    (0..dst)
        .map(|i| {
            let centre = (i as f64 + 0.5) * ratio - 0.5;
            let lo = (centre - support).floor().max(0.0) as usize;
            let hi = ((centre + support).ceil() as usize).min(src - 1);
            let mut w: Vec<f32> = (lo..=hi)
                .map(|j| (1.0 - (j as f64 - centre).abs() / support).max(0.0) as f32)
                .collect();
            let sum: f32 = w.iter().sum();
            if sum > 0.0 {
                w.iter_mut().for_each(|v| *v /= sum);
                (lo, w)
            } else {
                // Past the edge (a centre outside the picture): the nearest sample.
                (
                    centre.round().clamp(0.0, (src - 1) as f64) as usize,
                    vec![1.0],
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(img: &mut Image, f: impl Fn(PlaneId, usize, usize) -> u8) {
        for id in PlaneId::ALL {
            let p = img.plane_mut(id);
            for y in 0..p.height() {
                let w = p.width();
                for (x, v) in p.row_mut(y)[..w].iter_mut().enumerate() {
                    *v = f(id, x, y);
                }
            }
        }
        img.extend_edges();
    }

    fn max_diff(a: &Image, b: &Image) -> u8 {
        PlaneId::ALL
            .iter()
            .flat_map(|&id| {
                let (pa, pb) = (a.plane(id), b.plane(id));
                (0..pa.height()).flat_map(move |y| {
                    (0..pa.width()).map(move |x| pa.row(y)[x].abs_diff(pb.row(y)[x]))
                })
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn same_size_is_the_identity() {
        let mut img = Image::new(34, 22).unwrap();
        fill(&mut img, |id, x, y| {
            (x * 7 + y * 13 + id as usize * 50) as u8
        });
        let out = scale(&img, 34, 22).unwrap();
        assert!(out.visible_eq(&img));
    }

    #[test]
    fn a_constant_picture_stays_constant() {
        let mut img = Image::new(320, 180).unwrap();
        fill(&mut img, |id, _, _| [77, 140, 90][id as usize]);
        for (w, h) in [(240, 134), (160, 90), (80, 46), (640, 360), (322, 182)] {
            let out = scale(&img, w, h).unwrap();
            for id in PlaneId::ALL {
                let p = out.plane(id);
                for y in 0..p.height() {
                    assert!(p.row(y)[..p.width()]
                        .iter()
                        .all(|&v| v == [77, 140, 90][id as usize]));
                }
            }
        }
    }

    #[test]
    fn down_then_up_keeps_a_smooth_gradient() {
        let mut img = Image::new(320, 180).unwrap();
        fill(&mut img, |id, x, y| match id {
            PlaneId::Y => (20 + x * 200 / 320 + y * 30 / 180) as u8,
            _ => (100 + x * 40 / 160) as u8,
        });
        for (w, h) in [(240, 134), (160, 90), (80, 44)] {
            let small = scale(&img, w, h).unwrap();
            assert_eq!((small.width(), small.height()), (w, h));
            let back = scale(&small, 320, 180).unwrap();
            assert!(
                max_diff(&back, &img) <= 3,
                "{w}x{h}: {}",
                max_diff(&back, &img)
            );
        }
    }

    #[test]
    fn odd_sizes_are_refused() {
        let img = Image::new(32, 32).unwrap();
        assert!(scale(&img, 31, 32).is_err());
    }

    #[test]
    fn halved_sizes_are_even_and_bounded_below() {
        assert_eq!(halved_size(1280, 720, 0), (1280, 720));
        assert_eq!(halved_size(1280, 720, 1), (640, 360));
        assert_eq!(halved_size(1280, 720, 2), (320, 180));
        assert_eq!(halved_size(642, 362, 1), (320, 180));
        assert_eq!(halved_size(64, 48, 3), (16, 16));
        assert_eq!(halved_size(12, 10, 1), (12, 10));
        assert_eq!(halved_size(64, 48, 200), (16, 16));
    }
}
