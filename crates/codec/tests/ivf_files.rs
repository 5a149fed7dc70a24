//! IVF reading and writing: round trips, frame-count patching, malformed files, ffmpeg's files.

use std::io::{Cursor, Seek, SeekFrom, Write};
use std::process::Command;

use proptest::prelude::*;
use salsify_codec::ivf::{
    IvfFrame, IvfHeader, IvfReader, IvfWriter, FILE_HEADER_LEN, MAX_FRAME_LEN,
};
use salsify_codec::{CodecError, FunctionalCodec};

fn sample_frames() -> Vec<IvfFrame> {
    (0..5u64)
        .map(|i| IvfFrame {
            pts: i * 3 + 1,
            data: (0..i * 37).map(|b| (b * 7 + i) as u8).collect(),
        })
        .collect()
}

fn ivf_error(result: Result<impl std::fmt::Debug, CodecError>) -> String {
    match result {
        Err(CodecError::Format {
            format: "IVF",
            message,
        }) => message,
        other => panic!("expected an IVF format error, got {other:?}"),
    }
}

fn write_file(frames: &[IvfFrame]) -> Vec<u8> {
    let mut writer =
        IvfWriter::new(Cursor::new(Vec::new()), IvfHeader::new(322, 182, 60, 1)).unwrap();
    for frame in frames {
        writer.write_frame(frame.pts, &frame.data).unwrap();
    }
    writer.finish_seekable().unwrap().into_inner()
}

#[test]
fn round_trip_with_patched_count() {
    let frames = sample_frames();
    let bytes = write_file(&frames);
    assert_eq!(&bytes[..4], b"DKIF");
    assert_eq!(&bytes[8..12], b"VP80");
    let reader = IvfReader::new(&bytes[..]).unwrap();
    let expected = IvfHeader {
        frame_count: 5,
        ..IvfHeader::new(322, 182, 60, 1)
    };
    assert_eq!(reader.header(), &expected);
    let read: Vec<IvfFrame> = reader.collect::<Result<_, _>>().unwrap();
    assert_eq!(read, frames);
}

/// An AV1 stream's header names it `AV01`, and reads back as AV1.
#[test]
fn av1_streams_are_named_av01() {
    let header = IvfHeader {
        codec: FunctionalCodec::Av1,
        ..IvfHeader::new(640, 360, 30, 1)
    };
    let mut writer = IvfWriter::new(Vec::new(), header).unwrap();
    writer.write_frame(0, &[0x12, 0x00, 0x0a]).unwrap();
    let bytes = writer.finish().unwrap();
    assert_eq!(&bytes[8..12], b"AV01");
    let reader = IvfReader::new(&bytes[..]).unwrap();
    assert_eq!(reader.header().codec, FunctionalCodec::Av1);
    assert_eq!(reader.count(), 1);
}

#[test]
fn header_bytes_match_the_layout() {
    let header = IvfHeader {
        frame_count: 0x0102_0304,
        ..IvfHeader::new(0x0a0b, 0x0c0d, 90_000, 3)
    };
    let bytes = header.to_bytes();
    let expected: [u8; 32] = [
        b'D', b'K', b'I', b'F', 0, 0, 32, 0, b'V', b'P', b'8', b'0', 0x0b, 0x0a, 0x0d, 0x0c, 0x90,
        0x5f, 0x01, 0, 3, 0, 0, 0, 4, 3, 2, 1, 0, 0, 0, 0,
    ];
    assert_eq!(bytes, expected);
    assert_eq!(IvfHeader::parse(&bytes).unwrap(), header);
}

#[test]
fn frame_record_layout() {
    let bytes = write_file(&[IvfFrame {
        pts: 0x0102_0304_0506_0708,
        data: vec![0xaa, 0xbb],
    }]);
    assert_eq!(bytes.len(), FILE_HEADER_LEN + 12 + 2);
    assert_eq!(&bytes[32..36], &[2, 0, 0, 0]);
    assert_eq!(&bytes[36..44], &[8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(&bytes[44..], &[0xaa, 0xbb]);
}

#[test]
fn unpatched_count_for_pipes_and_patching_at_an_offset() {
    let frames = sample_frames();
    let mut writer = IvfWriter::new(Vec::new(), IvfHeader::new(64, 48, 10, 1)).unwrap();
    for frame in &frames {
        writer.write_frame(frame.pts, &frame.data).unwrap();
    }
    assert_eq!(writer.header().frame_count, 5);
    let bytes = writer.finish().unwrap();
    let reader = IvfReader::new(&bytes[..]).unwrap();
    assert_eq!(reader.header().frame_count, 0);
    assert_eq!(reader.count(), 5);

    // A stream that does not start at offset 0 gets its own header patched.
    let mut out = Cursor::new(Vec::new());
    out.write_all(b"prefix").unwrap();
    let mut writer = IvfWriter::new(out, IvfHeader::new(64, 48, 10, 1)).unwrap();
    writer.write_frame(0, b"x").unwrap();
    let mut out = writer.finish_seekable().unwrap();
    assert_eq!(out.stream_position().unwrap(), out.get_ref().len() as u64);
    out.seek(SeekFrom::Start(6)).unwrap();
    let reader = IvfReader::new(out).unwrap();
    assert_eq!(reader.header().frame_count, 1);
}

#[test]
fn malformed_headers_name_the_field() {
    let good = IvfHeader::new(64, 48, 30, 1).to_bytes();
    let corrupt = |at: usize, value: u8| {
        let mut bytes = good;
        bytes[at] = value;
        ivf_error(IvfReader::new(&bytes[..]))
    };
    assert!(corrupt(0, b'X').contains("signature"));
    assert!(corrupt(4, 1).contains("version 1"));
    assert!(corrupt(6, 12).contains("header size 12"));
    assert!(corrupt(11, b'1').contains("fourcc \"VP81\""));
    assert!(corrupt(12, 0).contains("width is 0"));
    assert!(corrupt(14, 0).contains("height is 0"));
    assert!(corrupt(16, 0).contains("timebase rate is 0"));
    assert!(corrupt(20, 0).contains("timebase scale is 0"));
    let message = ivf_error(IvfReader::new(&good[..20]));
    assert!(
        message.contains("file header is truncated: 20 of 32"),
        "{message}"
    );
    assert!(ivf_error(IvfReader::new(&b""[..])).contains("0 of 32"));
}

#[test]
fn truncated_and_oversized_frames_name_the_frame() {
    let bytes = write_file(&sample_frames());
    // Frame 4 is the last: 12 + 148 bytes. Cut its payload, then its header.
    let message = ivf_error(
        IvfReader::new(&bytes[..bytes.len() - 1])
            .unwrap()
            .collect::<Result<Vec<_>, _>>(),
    );
    assert!(
        message.contains("frame 4 is truncated: 147 of 148"),
        "{message}"
    );
    let message = ivf_error(
        IvfReader::new(&bytes[..bytes.len() - 148 - 5])
            .unwrap()
            .collect::<Result<Vec<_>, _>>(),
    );
    assert!(
        message.contains("frame 4 header is truncated: 7 of 12"),
        "{message}"
    );

    let mut huge = IvfHeader::new(64, 48, 30, 1).to_bytes().to_vec();
    huge.extend_from_slice(&(MAX_FRAME_LEN + 1).to_le_bytes());
    huge.extend_from_slice(&[0; 8]);
    let message = ivf_error(IvfReader::new(&huge[..]).unwrap().next_frame());
    assert!(message.contains("frame 0 size"), "{message}");
    // Just under the limit but absent: an error, without buffering 32 MiB first.
    huge[32..36].copy_from_slice(&MAX_FRAME_LEN.to_le_bytes());
    let message = ivf_error(IvfReader::new(&huge[..]).unwrap().next_frame());
    assert!(message.contains("frame 0 is truncated: 0 of"), "{message}");
}

#[test]
fn writer_rejects_bad_headers() {
    assert!(IvfWriter::new(Vec::new(), IvfHeader::new(0, 48, 30, 1)).is_err());
    assert!(IvfWriter::new(Vec::new(), IvfHeader::new(64, 48, 0, 1)).is_err());
}

#[test]
fn read_frame_into_reuses_the_buffer() {
    let bytes = write_file(&sample_frames());
    let mut reader = IvfReader::new(&bytes[..]).unwrap();
    let mut data = Vec::with_capacity(1024);
    let mut pts = Vec::new();
    while let Some(p) = reader.read_frame_into(&mut data).unwrap() {
        pts.push(p);
        assert_eq!(data.capacity(), 1024);
    }
    assert_eq!(pts, [1, 4, 7, 10, 13]);
    assert_eq!(reader.frames_read(), 5);
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn reads_an_ivf_file_made_by_ffmpeg() {
    if !have("ffmpeg") {
        eprintln!("note: ffmpeg is not installed; skipping");
        return;
    }
    let dir = std::env::temp_dir().join(format!("salsify-ivf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("testsrc.ivf");
    let status = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=64x48:rate=10",
        ])
        .args(["-frames:v", "5", "-c:v", "libvpx", "-f", "ivf"])
        .arg(&path)
        .status()
        .unwrap();
    if !status.success() {
        eprintln!("note: this ffmpeg cannot encode VP8 (no libvpx); skipping");
        return;
    }
    let reader = IvfReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let header = *reader.header();
    assert_eq!((header.width, header.height), (64, 48));
    assert_eq!((header.rate, header.scale), (10, 1));
    let frames: Vec<IvfFrame> = reader.collect::<Result<_, _>>().unwrap();
    assert_eq!(frames.len(), 5);
    // A VP8 keyframe starts with a clear "not inter" bit and the start code 9d 01 2a.
    assert_eq!(frames[0].data[0] & 1, 0);
    assert_eq!(&frames[0].data[3..6], &[0x9d, 0x01, 0x2a]);
    assert_eq!(
        frames.iter().map(|f| f.pts).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );

    // Copy it through our writer: ffprobe must see the same 5 frames and size.
    let copy = dir.join("copy.ivf");
    let mut writer = IvfWriter::new(
        std::fs::File::create(&copy).unwrap(),
        IvfHeader::new(64, 48, 10, 1),
    )
    .unwrap();
    for frame in &frames {
        writer.write_frame(frame.pts, &frame.data).unwrap();
    }
    writer.finish_seekable().unwrap();
    let probe = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args([
            "-show_entries",
            "stream=codec_name,width,height,nb_read_frames",
        ])
        .args(["-of", "csv=p=0"])
        .arg(&copy)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        probe.status.success(),
        "{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "vp8,64,48,5");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(reader) = IvfReader::new(&bytes[..]) {
            for frame in reader {
                let _ = frame;
            }
        }
    }

    #[test]
    fn valid_header_then_arbitrary_frames_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..200)
    ) {
        let mut bytes = IvfHeader::new(64, 48, 30, 1).to_bytes().to_vec();
        bytes.extend_from_slice(&tail);
        let reader = IvfReader::new(&bytes[..]).unwrap();
        for frame in reader {
            let _ = frame;
        }
    }
}

#[cfg(unix)]
#[test]
fn finish_seekable_on_a_pipe_leaves_the_count_at_zero() {
    use std::os::fd::OwnedFd;
    use std::process::Stdio;
    // A `File` that is really a pipe (as `/dev/stdout` piped into ffplay would be).
    let Ok(mut cat) = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    else {
        eprintln!("note: no `cat` to pipe through; skipping");
        return;
    };
    let pipe = std::fs::File::from(OwnedFd::from(cat.stdin.take().unwrap()));
    let mut writer = IvfWriter::new(pipe, IvfHeader::new(64, 48, 10, 1)).unwrap();
    writer.write_frame(7, b"frame").unwrap();
    drop(writer.finish_seekable().unwrap());
    let output = cat.wait_with_output().unwrap();
    let mut reader = IvfReader::new(&output.stdout[..]).unwrap();
    assert_eq!(reader.header().frame_count, 0);
    let frame = reader.next_frame().unwrap().unwrap();
    assert_eq!((frame.pts, &frame.data[..]), (7, &b"frame"[..]));
}
