//! Y4M reading and writing: round trips, the shared clip, malformed input, and no panics.

use proptest::prelude::*;
use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::y4m::{ChromaSiting, Interlace, Rational, Y4mHeader, Y4mReader, Y4mWriter};
use salsify_codec::{CodecError, Image, PlaneId};

const CLIP: &str = "/work/shared/video/FourPeople_320x180_60_120f.y4m";

/// Some distinct, non-trivial frames.
fn frames(width: u32, height: u32, count: u64) -> Vec<Image> {
    let source = SyntheticSource::new(width, height, 30, 7).unwrap();
    (0..count).map(|i| source.frame(i)).collect()
}

fn write_stream(header: Y4mHeader, images: &[Image]) -> Vec<u8> {
    let mut writer = Y4mWriter::new(Vec::new(), header).unwrap();
    for image in images {
        writer.write_frame(image).unwrap();
    }
    assert_eq!(writer.frames_written(), images.len() as u64);
    writer.finish().unwrap()
}

fn read_all(bytes: &[u8]) -> Result<Vec<Image>, CodecError> {
    Y4mReader::new(bytes)?.collect()
}

/// The message of a Y4M format error (anything else fails the test).
fn y4m_error(result: Result<impl std::fmt::Debug, CodecError>) -> String {
    match result {
        Err(CodecError::Format {
            format: "Y4M",
            message,
        }) => message,
        other => panic!("expected a Y4M format error, got {other:?}"),
    }
}

fn header_error(line: &str) -> String {
    let mut bytes = line.as_bytes().to_vec();
    bytes.push(b'\n');
    y4m_error(Y4mReader::new(&bytes[..]).map(|r| r.header().clone()))
}

fn round_trip(width: u32, height: u32) {
    let images = frames(width, height, 4);
    let mut header = Y4mHeader::new(width, height, Rational::new(30000, 1001));
    header.aspect = Some(Rational::new(128, 117));
    header.chroma = ChromaSiting::Mpeg2;
    header.comments = vec!["COLORRANGE=LIMITED".to_owned()];
    let bytes = write_stream(header.clone(), &images);
    let mut reader = Y4mReader::new(&bytes[..]).unwrap();
    assert_eq!(reader.header(), &header);
    // Reading into one reused image must give the same pictures as fresh ones.
    let mut reused = Image::new(2, 2).unwrap();
    for (i, expected) in images.iter().enumerate() {
        assert!(reader.read_frame_into(&mut reused).unwrap(), "frame {i}");
        assert!(reused.visible_eq(expected), "frame {i} differs");
        assert_eq!((reused.width(), reused.height()), (width, height));
    }
    assert!(!reader.read_frame_into(&mut reused).unwrap());
    assert_eq!(reader.frames_read(), 4);
    let again = read_all(&bytes).unwrap();
    assert_eq!(again.len(), 4);
    assert!(again.iter().zip(&images).all(|(a, b)| a.visible_eq(b)));
}

#[test]
fn round_trip_320x180() {
    round_trip(320, 180);
}

#[test]
fn round_trip_size_not_a_multiple_of_16() {
    round_trip(322, 182);
}

#[test]
fn header_line_is_what_ffmpeg_expects() {
    let header = Y4mHeader::new(64, 48, Rational::new(60, 1));
    assert_eq!(
        header.to_string(),
        "YUV4MPEG2 W64 H48 F60:1 Ip A0:0 C420jpeg"
    );
}

#[test]
fn shared_clip_reads_120_frames() {
    let Ok(file) = std::fs::File::open(CLIP) else {
        eprintln!("note: {CLIP} is absent; skipping");
        return;
    };
    let mut reader = Y4mReader::new(file).unwrap();
    let header = reader.header().clone();
    assert_eq!((header.width, header.height), (320, 180));
    assert_eq!(header.frame_rate, Some(Rational::new(60, 1)));
    assert_eq!(header.chroma, ChromaSiting::Mpeg2);
    assert_eq!(header.interlace, Interlace::Progressive);
    let mut count = 0;
    let mut first_luma = Vec::new();
    while let Some(image) = reader.next_frame().unwrap() {
        if count == 0 {
            first_luma = image.y().row(90).to_vec();
        }
        count += 1;
    }
    assert_eq!(count, 120);
    // Real content, not a blank picture.
    assert!(first_luma.iter().max() > first_luma.iter().min());
}

#[test]
fn accepted_header_variants() {
    let cases = [
        (
            "YUV4MPEG2 W4 H2 F25:1",
            ChromaSiting::Jpeg,
            Interlace::Unknown,
        ),
        (
            "YUV4MPEG2 W4 H2 F25:1 C420 I?",
            ChromaSiting::Generic,
            Interlace::Unknown,
        ),
        (
            "YUV4MPEG2 W4 H2 C420paldv Ip",
            ChromaSiting::PalDv,
            Interlace::Progressive,
        ),
        (
            "YUV4MPEG2  W4 H2 XA=B C420jpeg X",
            ChromaSiting::Jpeg,
            Interlace::Unknown,
        ),
    ];
    for (line, chroma, interlace) in cases {
        let header = Y4mHeader::parse(line.as_bytes()).unwrap();
        assert_eq!((header.width, header.height), (4, 2), "{line}");
        assert_eq!(
            (header.chroma, header.interlace),
            (chroma, interlace),
            "{line}"
        );
    }
    let header = Y4mHeader::parse(b"YUV4MPEG2 W4 H2 F0:0 A0:0").unwrap();
    assert_eq!((header.frame_rate, header.aspect), (None, None));
}

#[test]
fn malformed_headers_name_the_field() {
    let cases = [
        ("YUV4MPEG W4 H2", "signature"),
        ("yuv4mpeg2 W4 H2", "signature"),
        ("YUV4MPEG2 H2 F25:1", "W (width) is missing"),
        ("YUV4MPEG2 W4 F25:1", "H (height) is missing"),
        ("YUV4MPEG2 W0 H2", "W (width) 0"),
        ("YUV4MPEG2 W5 H2", "W (width) 5"),
        ("YUV4MPEG2 W4 H3", "H (height) 3"),
        ("YUV4MPEG2 W+4 H2", "W (width)"),
        ("YUV4MPEG2 W H2", "W (width)"),
        ("YUV4MPEG2 W99999999999 H2", "W (width)"),
        ("YUV4MPEG2 W4 W4 H2", "W (width) appears twice"),
        ("YUV4MPEG2 W16000 H16000", "W x H"),
        ("YUV4MPEG2 W4 H2 C444", "C (colour space) \"444\""),
        ("YUV4MPEG2 W4 H2 C422", "C (colour space)"),
        ("YUV4MPEG2 W4 H2 Cmono", "C (colour space)"),
        ("YUV4MPEG2 W4 H2 C420p10", "C (colour space)"),
        ("YUV4MPEG2 W4 H2 It", "I (interlacing) \"t\""),
        ("YUV4MPEG2 W4 H2 Im", "I (interlacing)"),
        ("YUV4MPEG2 W4 H2 Fabc:1", "F (frame rate)"),
        ("YUV4MPEG2 W4 H2 F25", "F (frame rate)"),
        ("YUV4MPEG2 W4 H2 F25:0", "F (frame rate)"),
        ("YUV4MPEG2 W4 H2 Ax:1", "A (aspect)"),
    ];
    for (line, expected) in cases {
        let message = header_error(line);
        assert!(message.contains(expected), "{line:?}: {message:?}");
    }
}

#[test]
fn header_without_newline_or_empty_input_is_an_error() {
    assert!(y4m_error(Y4mReader::new(&b"YUV4MPEG2 W4 H2"[..])).contains("truncated"));
    assert!(y4m_error(Y4mReader::new(&b""[..])).contains("empty"));
    let long = format!("YUV4MPEG2 W4 H2 X{}\n", "a".repeat(5000));
    assert!(y4m_error(Y4mReader::new(long.as_bytes())).contains("longer"));
}

#[test]
fn truncated_frame_names_the_frame() {
    let images = frames(16, 8, 3);
    let bytes = write_stream(Y4mHeader::new(16, 8, Rational::new(1, 1)), &images);
    // Cut inside the pixels of frame 2 (each frame is 6 + 192 bytes).
    let cut = &bytes[..bytes.len() - 10];
    let mut reader = Y4mReader::new(cut).unwrap();
    assert!(reader.next_frame().unwrap().is_some());
    assert!(reader.next_frame().unwrap().is_some());
    let message = y4m_error(reader.next_frame());
    assert!(
        message.contains("frame 2 is truncated: 182 of 192"),
        "{message}"
    );
    // Cut inside the FRAME line of frame 1.
    let frame_len = 6 + 192;
    let cut = &bytes[..bytes.len() - 2 * frame_len + 3];
    let message = y4m_error(read_all(cut));
    assert!(message.contains("frame 1"), "{message}");
    // The iterator stops after an error.
    let mut iter = Y4mReader::new(cut).unwrap();
    assert!(iter.next().unwrap().is_ok());
    assert!(iter.next().unwrap().is_err());
    assert!(iter.next().is_none());
}

#[test]
fn frame_lines_with_params_and_bad_frame_lines() {
    let mut bytes = b"YUV4MPEG2 W2 H2 F1:1\nFRAME Ixyz\n".to_vec();
    bytes.extend_from_slice(&[10, 20, 30, 40, 50, 60]);
    let images = read_all(&bytes).unwrap();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].y().row(1), &[30, 40]);
    assert_eq!(images[0].plane(PlaneId::V).row(0), &[60]);
    let message = y4m_error(read_all(b"YUV4MPEG2 W2 H2\nFRAMES\n123456"));
    assert!(message.contains("FRAME line of frame 0"), "{message}");
}

#[test]
fn writer_rejects_bad_headers_and_sizes() {
    assert!(Y4mWriter::new(Vec::new(), Y4mHeader::new(3, 2, Rational::new(1, 1))).is_err());
    let mut header = Y4mHeader::new(4, 2, Rational::new(1, 1));
    header.comments = vec!["two words".to_owned()];
    assert!(Y4mWriter::new(Vec::new(), header).is_err());
    let mut writer = Y4mWriter::new(Vec::new(), Y4mHeader::new(4, 2, Rational::new(1, 1))).unwrap();
    let err = writer.write_frame(&Image::new(6, 2).unwrap()).unwrap_err();
    assert!(matches!(err, CodecError::InvalidInput(_)), "{err}");
}

#[test]
fn huge_claimed_size_does_not_allocate_it() {
    // 4096x4096 is allowed, but with no data the frame is just truncated.
    let message = y4m_error(read_all(b"YUV4MPEG2 W4096 H4096\nFRAME\nabc"));
    assert!(message.contains("frame 0 is truncated: 3 of"), "{message}");
}

#[test]
fn reads_through_a_pipe_like_reader() {
    // A reader that hands out one byte at a time, like a slow pipe.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((&first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            if buf.is_empty() {
                return Ok(0);
            }
            buf[0] = first;
            self.0 = rest;
            Ok(1)
        }
    }
    let images = frames(18, 6, 2);
    let bytes = write_stream(Y4mHeader::new(18, 6, Rational::new(1, 1)), &images);
    let read: Vec<Image> = Y4mReader::new(Trickle(&bytes))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(read.len(), 2);
    assert!(read[1].visible_eq(&images[1]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Y4mHeader::parse(&bytes);
        if let Ok(reader) = Y4mReader::new(&bytes[..]) {
            for frame in reader {
                let _ = frame;
            }
        }
    }

    #[test]
    fn header_like_lines_never_panic(
        tokens in prop::collection::vec("[WHFCIAXQ][0-9a-z:?+-]{0,8}", 0..8)
    ) {
        let line = format!("YUV4MPEG2 {}\nFRAME\n\0\0\0\0\0\0", tokens.join(" "));
        if let Ok(reader) = Y4mReader::new(line.as_bytes()) {
            for frame in reader {
                let _ = frame;
            }
        }
    }
}

fn have_ffmpeg() -> bool {
    std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn ffmpeg_reads_our_files_and_we_read_its_pipe() {
    use std::process::{Command, Stdio};
    if !have_ffmpeg() {
        eprintln!("note: ffmpeg is not installed; skipping");
        return;
    }
    // ffmpeg writes a Y4M stream to a pipe; we read it straight from its stdout.
    let mut child = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=66x50:rate=25",
        ])
        .args([
            "-frames:v",
            "7",
            "-pix_fmt",
            "yuv420p",
            "-f",
            "yuv4mpegpipe",
            "-",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = Y4mReader::new(child.stdout.take().unwrap()).unwrap();
    assert_eq!((reader.header().width, reader.header().height), (66, 50));
    assert_eq!(reader.header().frame_rate, Some(Rational::new(25, 1)));
    let images: Vec<Image> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(images.len(), 7);

    // We write those frames back; ffmpeg must decode them to the same bytes.
    let bytes = write_stream(Y4mHeader::new(66, 50, Rational::new(25, 1)), &images);
    let path = std::env::temp_dir().join(format!("salsify-y4m-{}.y4m", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let output = Command::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(&path)
        .args(["-f", "rawvideo", "-pix_fmt", "yuv420p", "-"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut expected = Vec::new();
    for image in &images {
        image.write_packed(&mut expected);
    }
    assert!(output.stdout == expected, "ffmpeg decoded different pixels");
}
