//! A standard decoder (ffmpeg's: its own VP8 decoder, and dav1d for AV1, a lineage other than
//! libaom) decodes the codec's sent stream, written as IVF, to exactly the pictures our
//! decoder shows: the functional codecs speak plain VP8 and plain AV1, even when each frame
//! was encoded twice from one state and either option sent. One body for both codecs.

use std::process::Command;

use salsify_codec::{
    FunctionalCodec, FunctionalDecoder, FunctionalEncoder, IvfHeader, IvfWriter, Quality, State,
    SyntheticSource,
};

/// ffmpeg's decoders, or `None` (the test skips) when ffmpeg is not installed.
fn ffmpeg_decoders() -> Option<String> {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-decoders"])
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Encodes 30 pictures twice each (at quantizers `fine` and `coarse` on the codec's scale,
/// on two encoders), sends one of the two, writes the sent frames as IVF and checks that
/// ffmpeg (with `decoder` when given) decodes them to our decoder's pictures.
fn ffmpeg_decodes_our_ivf_to_our_pictures(
    codec: FunctionalCodec,
    fine: u8,
    coarse: u8,
    decoder: Option<&str>,
) {
    let (w, h) = (98, 66);
    let dir = std::env::temp_dir().join(format!("salsify-interop-{codec}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ivf_path = dir.join("stream.ivf");
    let header = IvfHeader {
        codec,
        ..IvfHeader::new(w as u16, h as u16, 30, 1)
    };
    let mut ivf = IvfWriter::new(std::fs::File::create(&ivf_path).unwrap(), header).unwrap();
    let encoder = || FunctionalEncoder::new(codec, w, h, -8).unwrap();
    let mut encoders = [encoder(), encoder()];
    let mut ours_decoder = FunctionalDecoder::new().unwrap();
    let (mut sent, mut shown) = (State::initial(), State::initial());
    let mut ours = Vec::new();
    for (n, frame) in SyntheticSource::new(w, h, 30, 3)
        .unwrap()
        .take(30)
        .enumerate()
    {
        let q = |i| Quality::new(i).unwrap();
        let a = encoders[0].encode(&sent, &frame.image, q(fine)).unwrap();
        let b = encoders[1].encode(&sent, &frame.image, q(coarse)).unwrap();
        let f = if n % 3 == 0 { a } else { b };
        ivf.write_frame(n as u64, f.payload()).unwrap();
        let (state, picture) = ours_decoder.decode(&shown, &f.bytes).unwrap();
        picture.write_packed(&mut ours);
        sent = f.target;
        shown = state;
    }
    ivf.finish_seekable().unwrap();
    let mut ffmpeg = Command::new("ffmpeg");
    ffmpeg.args(["-v", "error"]);
    if let Some(decoder) = decoder {
        ffmpeg.args(["-c:v", decoder]);
    }
    let out = ffmpeg
        .arg("-i")
        .arg(&ivf_path)
        .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), ours.len(), "frame count or size differs");
    assert!(
        out.stdout == ours,
        "ffmpeg's {codec} pictures differ from ours"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ffmpeg_decodes_our_vp8_ivf_to_our_pictures() {
    if ffmpeg_decoders().is_none() {
        println!("SKIP: ffmpeg not installed");
        return;
    }
    ffmpeg_decodes_our_ivf_to_our_pictures(FunctionalCodec::Vp8, 20, 100, None);
}

#[test]
fn dav1d_decodes_our_av1_ivf_to_our_pictures() {
    let Some(decoders) = ffmpeg_decoders() else {
        println!("SKIP: ffmpeg not installed");
        return;
    };
    assert!(
        decoders.contains("libdav1d"),
        "ffmpeg has no libdav1d decoder (Debian's ffmpeg has)"
    );
    ffmpeg_decodes_our_ivf_to_our_pictures(FunctionalCodec::Av1, 10, 40, Some("libdav1d"));
}
