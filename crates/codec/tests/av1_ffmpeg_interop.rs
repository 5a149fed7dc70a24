//! A standard AV1 decoder of another lineage (dav1d, through ffmpeg) decodes the AV1 codec's
//! sent stream, written as plain low-overhead OBUs, to exactly the pictures our decoder shows:
//! the functional AV1 codec speaks plain AV1, even when each frame was encoded twice from one
//! state and either option sent.

use std::process::Command;

use salsify_codec::{Av1Decoder, Av1Encoder, Av1Quality, State, SyntheticSource};

#[test]
fn dav1d_decodes_our_obu_stream_to_our_pictures() {
    let has_dav1d = Command::new("ffmpeg")
        .args(["-hide_banner", "-decoders"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libdav1d"));
    if !has_dav1d {
        println!("SKIP: ffmpeg with libdav1d not installed");
        return;
    }
    let (w, h) = (98, 66);
    let dir = std::env::temp_dir().join(format!("salsify-av1-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obu_path = dir.join("stream.obu");
    let mut stream = Vec::new();
    let mut encoders = [
        Av1Encoder::new(w, h).unwrap(),
        Av1Encoder::new(w, h).unwrap(),
    ];
    let mut decoder = Av1Decoder::new().unwrap();
    let (mut sent, mut shown) = (State::initial(), State::initial());
    let mut ours = Vec::new();
    for (n, frame) in SyntheticSource::new(w, h, 30, 3)
        .unwrap()
        .take(30)
        .enumerate()
    {
        let q = |i| Av1Quality::new(i).unwrap();
        let a = encoders[0].encode(&sent, &frame.image, q(10)).unwrap();
        let b = encoders[1].encode(&sent, &frame.image, q(40)).unwrap();
        let f = if n % 3 == 0 { a } else { b };
        stream.extend_from_slice(f.av1());
        let (state, picture) = decoder.decode(&shown, &f.bytes).unwrap();
        picture.write_packed(&mut ours);
        sent = f.target;
        shown = state;
    }
    std::fs::write(&obu_path, &stream).unwrap();
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-c:v", "libdav1d", "-f", "obu", "-i"])
        .arg(&obu_path)
        .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), ours.len(), "frame count or size differs");
    assert!(out.stdout == ours, "dav1d's pictures differ from ours");
    std::fs::remove_dir_all(&dir).ok();
}
