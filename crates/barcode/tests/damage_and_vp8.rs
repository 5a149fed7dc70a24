//! The reader on real damage: flipped or smeared cells are rejected (never read as another
//! id), and codes survive VP8 at coarse quantisers.

use proptest::prelude::*;
use salsify_barcode::{read, stamp, BandLayout, BAND_ROWS, CELLS, MAX_FRAME_ID};
use salsify_codec::{Decoder, Encoder, Image, PlaneId, Quality, State, SyntheticSource};

fn picture(seed: u64, index: u64) -> Image {
    SyntheticSource::new(640, 360, 30, seed)
        .unwrap()
        .frame(index)
}

/// Overwrites cell `cell`'s luma in the band with `value`.
fn paint_cell(image: &mut Image, cell: usize, value: u8) {
    let l = BandLayout::for_size(image.width(), image.height()).unwrap();
    let x = l.left + cell * l.cell_width;
    for row in 0..BAND_ROWS as usize {
        image.plane_mut(PlaneId::Y).row_mut(row)[x..x + l.cell_width].fill(value);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// One to three cells flipped to the opposite colour: always rejected.
    #[test]
    fn flipped_cells_are_rejected(
        id in 0..=MAX_FRAME_ID,
        cells in proptest::collection::btree_set(0..CELLS, 1..=3),
    ) {
        let mut image = picture(1, 0);
        stamp(&mut image, id).unwrap();
        let before = image.clone();
        for &c in &cells {
            let l = BandLayout::for_size(640, 360).unwrap();
            let was_bright = before.plane(PlaneId::Y).row(8)[l.left + c * l.cell_width + 8] > 128;
            paint_cell(&mut image, c, if was_bright { 16 } else { 235 });
        }
        prop_assert!(read(&image).is_err());
    }

    /// Any rectangle of the band overwritten with any value: the reader gives the stamped id
    /// or an error, never another id.
    #[test]
    fn smeared_bands_never_read_as_another_id(
        id in 0..=MAX_FRAME_ID,
        x in 0usize..640, w in 1usize..640,
        y in 0usize..16, h in 1usize..16,
        value in any::<u8>(),
    ) {
        let mut image = picture(2, 5);
        stamp(&mut image, id).unwrap();
        for row in y..(y + h).min(16) {
            let line = image.plane_mut(PlaneId::Y).row_mut(row);
            let end = (x + w).min(640);
            line[x..end].fill(value);
        }
        if let Ok(got) = read(&image) {
            prop_assert_eq!(u64::from(got), id);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// A stream of barcoded pictures coded at a coarse quantiser (index 96..=127 of VP8's
    /// 0..=127; libvpx's real-time CBR mode goes no coarser than 56 of 63, index 100):
    /// every decoded picture reads back as its id.
    #[test]
    fn codes_survive_coarse_vp8(
        first_id in 0..=(MAX_FRAME_ID - 8),
        seed in any::<u64>(),
        q in 96u8..=127,
    ) {
        let source = SyntheticSource::new(640, 360, 30, seed).unwrap();
        let mut enc = Encoder::new(640, 360).unwrap();
        let mut dec = Decoder::new().unwrap();
        let mut enc_state = State::initial();
        let mut dec_state = State::initial();
        for i in 0..6u64 {
            let mut image = source.frame(i);
            stamp(&mut image, first_id + i).unwrap();
            let frame = enc.encode(&enc_state, &image, Quality::new(q).unwrap()).unwrap();
            let (next, shown) = dec.decode(&dec_state, &frame.bytes).unwrap();
            dec_state = next;
            enc_state = dec_state.clone();
            prop_assert_eq!(read(&shown).map(u64::from), Ok(first_id + i), "q {}", q);
        }
    }
}
