//! The last shown picture as a JPEG for the page: scaled down to at most [`MAX_WIDTH`]
//! pixels wide and converted from VP8's BT.601 limited-range YUV to RGB. Runs on the
//! dashboard's own thread, never the call's.

use anyhow::{Context, Result};
use salsify_codec::{Image, PlaneId};

/// Widest picture sent to the page: the width the page shows it at (CSS pixels). A 720p
/// picture is sent at a quarter of its width; a smaller JPEG is quicker to make here and to
/// fetch and decode in the browser, which may share the call's machine.
pub const MAX_WIDTH: u32 = 320;

/// JPEG quality: enough to see what the receiver saw, a few tens of kB.
const QUALITY: u8 = 75;

/// `image` as a JPEG, scaled by a whole factor so that it is at most [`MAX_WIDTH`] wide.
pub fn encode_jpeg(image: &Image) -> Result<Vec<u8>> {
    let step = image.width().div_ceil(MAX_WIDTH).max(1) as usize;
    let (w, h) = (
        image.width() as usize / step,
        image.height() as usize / step,
    );
    let rgb = to_rgb(image, step, w, h);
    let mut out = Vec::with_capacity(w * h / 4);
    let encoder = jpeg_encoder::Encoder::new(&mut out, QUALITY);
    encoder
        .encode(&rgb, w as u16, h as u16, jpeg_encoder::ColorType::Rgb)
        .context("cannot encode the picture as JPEG")?;
    Ok(out)
}

/// Every `step`-th sample of `image` as packed RGB, `w` x `h` of them.
fn to_rgb(image: &Image, step: usize, w: usize, h: usize) -> Vec<u8> {
    let (y, u, v) = (
        image.plane(PlaneId::Y),
        image.plane(PlaneId::U),
        image.plane(PlaneId::V),
    );
    let mut rgb = Vec::with_capacity(w * h * 3);
    for row in 0..h {
        let (sy, sc) = (row * step, row * step / 2);
        let (yr, ur, vr) = (y.row(sy), u.row(sc), v.row(sc));
        for col in 0..w {
            let (sx, cx) = (col * step, col * step / 2);
            rgb.extend(yuv_to_rgb(yr[sx], ur[cx], vr[cx]));
        }
    }
    rgb
}

/// BT.601 limited range to full-range RGB (integer arithmetic, 8 fractional bits).
fn yuv_to_rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    let c = (i32::from(y) - 16) * 298;
    let (d, e) = (i32::from(u) - 128, i32::from(v) - 128);
    let clamp = |x: i32| ((x + 128) >> 8).clamp(0, 255) as u8;
    [
        clamp(c + 409 * e),
        clamp(c - 100 * d - 208 * e),
        clamp(c + 516 * d),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Black, white and grey come out as themselves; a 720p picture is sent at 320x180.
    #[test]
    fn colours_and_size() {
        assert_eq!(yuv_to_rgb(16, 128, 128), [0, 0, 0]);
        assert_eq!(yuv_to_rgb(235, 128, 128), [255, 255, 255]);
        let grey = yuv_to_rgb(126, 128, 128);
        assert!(grey[0] == grey[1] && grey[1] == grey[2], "{grey:?}");
        let image = Image::new(1280, 720).unwrap();
        let jpeg = encode_jpeg(&image).unwrap();
        assert_eq!(&jpeg[..2], &[0xff, 0xd8], "a JPEG starts with SOI");
        // The frame header (SOF0) holds height then width.
        let sof = jpeg.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
        let size = |i: usize| u16::from_be_bytes([jpeg[sof + i], jpeg[sof + i + 1]]);
        assert_eq!((size(5), size(7)), (180, 320));
    }
}
