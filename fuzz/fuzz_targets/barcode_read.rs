//! Arbitrary bytes as the band of a picture (what a black-box peer's page sends): the barcode
//! reader must never panic, and whatever it accepts must be a valid code word, i.e. the band
//! re-stamped with the id it read reads back as that id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_codec::{Image, PlaneId};

const WIDTH: u32 = 320;

fuzz_target!(|data: &[u8]| {
    let w = WIDTH as usize;
    let mut image = Image::new(WIDTH, salsify_barcode::MIN_HEIGHT).expect("size");
    let plane = image.plane_mut(PlaneId::Y);
    for (row, chunk) in data.chunks(w).take(salsify_barcode::BAND_ROWS as usize).enumerate() {
        plane.row_mut(row)[..chunk.len()].copy_from_slice(chunk);
    }
    if let Ok(id) = salsify_barcode::read(&image) {
        let mut stamped = image.clone();
        salsify_barcode::stamp(&mut stamped, u64::from(id)).expect("an id read fits");
        assert_eq!(salsify_barcode::read(&stamped).ok(), Some(id));
    }
});
