//! Raw I420 pictures with 16-aligned plane storage.
//!
//! VP8 codes whole 16x16 macroblocks, and libvpx's reference-copy calls crash on frames whose
//! storage is not a multiple of 16. So an [`Image`] always stores planes padded to the next
//! multiple of 16 (8 for chroma) and remembers its visible size separately; everything outside
//! the visible area is padding that callers fill with [`Image::extend_edges`].

use crate::error::CodecError;

/// Largest width or height accepted, in pixels (VP8's frame header has 14 bits for each).
pub const MAX_DIMENSION: u32 = 16383;

/// Largest picture a source (a Y4M file, the synthetic source, a `--size`) may have, in
/// pixels: 4096x4096 covers 4K, and a picture is then 24 MiB. VP8 would code up to
/// 16383x16383, but one such picture takes 400 MB, so sources are held to this.
pub const MAX_PIXELS: u64 = 4096 * 4096;

/// Rounds `n` up to a multiple of 16.
pub const fn align16(n: u32) -> u32 {
    (n + 15) & !15
}

/// Which plane of an I420 picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaneId {
    /// Luma, full resolution.
    Y = 0,
    /// Blue-difference chroma, half resolution both ways.
    U = 1,
    /// Red-difference chroma, half resolution both ways.
    V = 2,
}

impl PlaneId {
    /// The three planes in storage order.
    pub const ALL: [PlaneId; 3] = [PlaneId::Y, PlaneId::U, PlaneId::V];
}

/// One plane's samples: `stored_height` rows of `stride` bytes, of which the top-left
/// `width` x `height` are visible.
#[derive(Clone, PartialEq, Eq)]
pub struct Plane {
    data: Vec<u8>,
    stride: usize,
    width: usize,
    height: usize,
    stored_height: usize,
}

impl Plane {
    fn new(width: usize, height: usize, stride: usize, stored_height: usize) -> Self {
        Plane {
            data: vec![0; stride * stored_height],
            stride,
            width,
            height,
            stored_height,
        }
    }

    /// All stored samples, row after row (`stride` bytes a row), padding included.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// All stored samples, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// Bytes from the start of one row to the start of the next.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Visible width in samples.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Visible height in rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Stored rows (visible height rounded up to the macroblock grid).
    pub fn stored_height(&self) -> usize {
        self.stored_height
    }

    /// The visible samples of row `y` (panics if `y >= height`, a caller bug).
    pub fn row(&self, y: usize) -> &[u8] {
        let start = y * self.stride;
        &self.data[start..start + self.width]
    }

    /// The visible samples of row `y`, mutable (panics if `y >= height`, a caller bug).
    pub fn row_mut(&mut self, y: usize) -> &mut [u8] {
        let start = y * self.stride;
        &mut self.data[start..start + self.width]
    }

    /// The visible rows, top to bottom.
    pub fn rows(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.height).map(move |y| self.row(y))
    }

    /// Copies the last visible column and row into the padding, so the codec sees no edge.
    fn extend_edges(&mut self) {
        let (w, h, stride) = (self.width, self.height, self.stride);
        for y in 0..h {
            let row = &mut self.data[y * stride..(y + 1) * stride];
            let edge = row[w - 1];
            row[w..].fill(edge);
        }
        let (visible, padding) = self.data.split_at_mut(h * stride);
        let last = &visible[(h - 1) * stride..];
        for row in padding.chunks_exact_mut(stride) {
            row.copy_from_slice(last);
        }
    }

    fn visible_eq(&self, other: &Plane) -> bool {
        self.width == other.width
            && self.height == other.height
            && self.rows().zip(other.rows()).all(|(a, b)| a == b)
    }
}

impl std::fmt::Debug for Plane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plane")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("stride", &self.stride)
            .finish_non_exhaustive()
    }
}

/// An I420 (YUV 4:2:0, 8-bit) picture of any even visible size.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Image {
    width: u32,
    height: u32,
    planes: [Plane; 3],
}

impl Image {
    /// A black-luma, grey-chroma picture of `width` x `height` visible pixels.
    ///
    /// Both must be even (4:2:0 chroma needs it), non-zero and at most [`MAX_DIMENSION`].
    pub fn new(width: u32, height: u32) -> Result<Self, CodecError> {
        check_size(width, height)?;
        let (aw, ah) = (align16(width) as usize, align16(height) as usize);
        let (w, h) = (width as usize, height as usize);
        let mut planes = [
            Plane::new(w, h, aw, ah),
            Plane::new(w / 2, h / 2, aw / 2, ah / 2),
            Plane::new(w / 2, h / 2, aw / 2, ah / 2),
        ];
        planes[1].data.fill(128);
        planes[2].data.fill(128);
        Ok(Image {
            width,
            height,
            planes,
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

    /// Stored width and height: the visible size rounded up to the macroblock grid.
    pub fn aligned_size(&self) -> (u32, u32) {
        (align16(self.width), align16(self.height))
    }

    /// One plane.
    pub fn plane(&self, id: PlaneId) -> &Plane {
        &self.planes[id as usize]
    }

    /// One plane, mutable.
    pub fn plane_mut(&mut self, id: PlaneId) -> &mut Plane {
        &mut self.planes[id as usize]
    }

    /// Luma plane.
    pub fn y(&self) -> &Plane {
        self.plane(PlaneId::Y)
    }

    /// Bytes of visible picture data: `width * height * 3 / 2`.
    pub fn visible_len(&self) -> usize {
        self.width as usize * self.height as usize * 3 / 2
    }

    /// Fills the padding of every plane by repeating the last visible column and row.
    ///
    /// Call after writing the visible area: the encoder codes the padding too, and a smooth
    /// edge costs fewer bits than whatever was there before.
    pub fn extend_edges(&mut self) {
        for plane in &mut self.planes {
            plane.extend_edges();
        }
    }

    /// True when the visible pictures are identical (padding is ignored).
    pub fn visible_eq(&self, other: &Image) -> bool {
        self.planes
            .iter()
            .zip(&other.planes)
            .all(|(a, b)| a.visible_eq(b))
    }

    /// Copies visible I420 data laid out plane after plane without padding (the Y4M layout).
    pub fn copy_from_packed(&mut self, packed: &[u8]) -> Result<(), CodecError> {
        if packed.len() != self.visible_len() {
            return Err(CodecError::InvalidInput(format!(
                "packed I420 data of {} bytes for a {}x{} picture (expected {})",
                packed.len(),
                self.width,
                self.height,
                self.visible_len()
            )));
        }
        let mut rest = packed;
        for plane in &mut self.planes {
            let w = plane.width;
            for y in 0..plane.height {
                let (row, tail) = rest.split_at(w);
                plane.row_mut(y).copy_from_slice(row);
                rest = tail;
            }
        }
        self.extend_edges();
        Ok(())
    }

    /// Appends the visible I420 data, plane after plane without padding, to `out`.
    pub fn write_packed(&self, out: &mut Vec<u8>) {
        out.reserve(self.visible_len());
        for plane in &self.planes {
            for row in plane.rows() {
                out.extend_from_slice(row);
            }
        }
    }
}

/// Checks a visible picture size; the error names what is wrong.
pub fn check_size(width: u32, height: u32) -> Result<(), CodecError> {
    let bad = |why: &str| {
        Err(CodecError::InvalidInput(format!(
            "picture size {width}x{height}: {why}"
        )))
    };
    if width == 0 || height == 0 {
        return bad("width and height must be non-zero");
    }
    if !width.is_multiple_of(2) || !height.is_multiple_of(2) {
        return bad("width and height must be even for 4:2:0 chroma");
    }
    if width > MAX_DIMENSION || height > MAX_DIMENSION {
        return bad("VP8 allows at most 16383 pixels each way");
    }
    Ok(())
}

/// Checks the size of a picture source ([`check_size`], and at most [`MAX_PIXELS`]): what
/// the Y4M reader, the synthetic source and every `--size` flag accept.
pub fn check_source_size(width: u32, height: u32) -> Result<(), CodecError> {
    check_size(width, height)?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(CodecError::InvalidInput(format!(
            "picture size {width}x{height}: more than {MAX_PIXELS} pixels (4096x4096), the \
             largest source accepted"
        )));
    }
    Ok(())
}

/// A moving diagonal pattern, picture `t` of it: enough motion and texture for real inter
/// prediction, for the codecs' unit tests.
#[cfg(test)]
pub(crate) fn moving_pattern(w: u32, h: u32, t: usize) -> Image {
    let mut img = Image::new(w, h).unwrap();
    for id in PlaneId::ALL {
        let plane = img.plane_mut(id);
        for y in 0..plane.height() {
            for (x, s) in plane.row_mut(y).iter_mut().enumerate() {
                *s = ((x * 3 + y * 5 + t * 7) % 251) as u8 ^ ((x / 8 + y / 8) % 2 * 64) as u8;
            }
        }
    }
    img.extend_edges();
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_sizes_are_capped_at_max_pixels() {
        assert!(check_source_size(4096, 4096).is_ok());
        assert!(check_source_size(3840, 2160).is_ok());
        let err = check_source_size(8000, 8000).unwrap_err().to_string();
        assert!(err.contains("8000x8000") && err.contains("pixels"), "{err}");
        assert!(check_source_size(16382, 1026).is_err());
        assert!(check_source_size(0, 2).is_err());
    }

    #[test]
    fn storage_is_aligned_and_visible_size_kept() {
        let img = Image::new(322, 182).unwrap();
        assert_eq!(img.aligned_size(), (336, 192));
        assert_eq!(img.y().stride(), 336);
        assert_eq!(img.y().stored_height(), 192);
        assert_eq!(img.plane(PlaneId::U).stride(), 168);
        assert_eq!(img.plane(PlaneId::U).width(), 161);
        assert_eq!(img.visible_len(), 322 * 182 * 3 / 2);
    }

    #[test]
    fn bad_sizes_are_rejected_with_a_reason() {
        for (w, h) in [(0, 2), (3, 2), (2, 5), (16384, 2)] {
            let err = Image::new(w, h).unwrap_err().to_string();
            assert!(err.contains(&format!("{w}x{h}")), "{err}");
        }
    }

    #[test]
    fn packed_round_trip_and_edge_extension() {
        let mut img = Image::new(18, 6).unwrap();
        let packed: Vec<u8> = (0..img.visible_len()).map(|i| (i * 7) as u8).collect();
        img.copy_from_packed(&packed).unwrap();
        let mut out = Vec::new();
        img.write_packed(&mut out);
        assert_eq!(out, packed);
        // Padding repeats the edge: column 17 of row 0 fills columns 18..32, row 5 fills 6..16.
        let y = img.y();
        assert!(y.data()[18..32].iter().all(|&s| s == y.row(0)[17]));
        assert_eq!(&y.data()[15 * 32..16 * 32], &y.data()[5 * 32..6 * 32]);
        assert!(img.copy_from_packed(&packed[1..]).is_err());
    }

    #[test]
    fn visible_eq_ignores_padding() {
        let a = Image::new(18, 6).unwrap();
        let mut b = a.clone();
        b.plane_mut(PlaneId::Y).data_mut()[20] = 99; // column 20 of row 0 is padding
        assert!(a.visible_eq(&b));
        b.plane_mut(PlaneId::V).row_mut(2)[3] = 7;
        assert!(!a.visible_eq(&b));
    }
}
