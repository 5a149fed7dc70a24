//! A standard VP8 decoder (ffmpeg's) decodes the codec's stream, written as IVF, to exactly
//! the pictures our decoder shows: the functional codec speaks plain VP8.

use std::process::Command;

use salsify_codec::{Decoder, Encoder, IvfHeader, IvfWriter, Quality, State, SyntheticSource};

#[test]
fn ffmpeg_decodes_our_ivf_to_our_pictures() {
    if Command::new("ffmpeg").arg("-version").output().is_err() {
        println!("SKIP: ffmpeg not installed");
        return;
    }
    let (w, h) = (98, 66);
    let dir = std::env::temp_dir().join(format!("salsify-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ivf_path = dir.join("stream.ivf");
    let mut ivf = IvfWriter::new(
        std::fs::File::create(&ivf_path).unwrap(),
        IvfHeader::new(w as u16, h as u16, 30, 1),
    )
    .unwrap();
    let mut encoder = Encoder::new(w, h).unwrap();
    let mut decoder = Decoder::new().unwrap();
    let (mut sent, mut shown) = (State::initial(), State::initial());
    let mut ours = Vec::new();
    for (n, frame) in SyntheticSource::new(w, h, 30, 3)
        .unwrap()
        .take(30)
        .enumerate()
    {
        let q = Quality::new([20, 60, 100][n % 3]).unwrap();
        let f = encoder.encode(&sent, &frame.image, q).unwrap();
        ivf.write_frame(n as u64, f.vp8()).unwrap();
        let (state, picture) = decoder.decode(&shown, &f.bytes).unwrap();
        picture.write_packed(&mut ours);
        sent = f.target;
        shown = state;
    }
    ivf.finish_seekable().unwrap();
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
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
    assert!(out.stdout == ours, "ffmpeg's pictures differ from ours");
    std::fs::remove_dir_all(&dir).ok();
}
