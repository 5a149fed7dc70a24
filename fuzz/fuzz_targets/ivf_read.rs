//! Arbitrary bytes as an IVF file: the reader must never panic, and whatever it accepts
//! must survive being written and read again unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use salsify_codec::ivf::{IvfFrame, IvfReader, IvfWriter};

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = IvfReader::new(data) else {
        return;
    };
    let header = *reader.header();
    let mut frames = Vec::new();
    while let Ok(Some(frame)) = reader.next_frame() {
        frames.push(frame);
    }
    let mut writer = IvfWriter::new(Vec::new(), header).expect("header was accepted");
    for frame in &frames {
        writer
            .write_frame(frame.pts, &frame.data)
            .expect("frame was accepted");
    }
    let bytes = writer.finish().expect("writing to a Vec cannot fail");
    let again: Vec<IvfFrame> = IvfReader::new(&bytes[..])
        .expect("own header reads back")
        .collect::<Result<_, _>>()
        .expect("own frames read back");
    assert_eq!(again, frames);
});
