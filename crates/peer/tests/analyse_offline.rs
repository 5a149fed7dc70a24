//! The black-box analysis on a call recorded by hand (no browser): a looping barcoded
//! source, pictures lost, shown late, shown twice, damaged, or from another frame.

use std::path::{Path, PathBuf};

use salsify_codec::y4m::{Rational, Y4mHeader, Y4mWriter};
use salsify_codec::{Image, PlaneId, SyntheticSource};
use salsify_peer::records::{CaptureRecord, RecordWriter, ShownRecord};
use salsify_peer::{analyse, AnalysisInput};
use salsify_time::{Duration, Instant};

const W: u32 = 320;
const H: u32 = 180;
/// Pictures in the source file (the camera loops it).
const LOOP: u64 = 10;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("salsify-analyse-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn source_picture(id: u64) -> Image {
    static SOURCE: std::sync::OnceLock<SyntheticSource> = std::sync::OnceLock::new();
    let mut p = SOURCE
        .get_or_init(|| SyntheticSource::new(W, H, 30, 5).unwrap())
        .frame(id);
    salsify_barcode::stamp(&mut p, id).unwrap();
    p
}

fn write_reference(path: &Path) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = Y4mWriter::new(file, Y4mHeader::new(W, H, Rational::new(30, 1))).unwrap();
    for id in 0..LOOP {
        w.write_frame(&source_picture(id)).unwrap();
    }
    w.finish().unwrap();
}

fn packed(image: &Image) -> Vec<u8> {
    let mut v = Vec::new();
    image.write_packed(&mut v);
    v
}

fn ms(n: u64) -> Instant {
    Instant::from_millis(1_000_000 + n)
}

#[test]
fn a_recorded_call_is_scored_like_a_simulated_run() {
    let dir = temp_dir("call");
    let reference = dir.join("source.y4m");
    write_reference(&reference);
    let mut w = RecordWriter::create(&dir, W, H, Rational::new(30, 1)).unwrap();
    // 25 captures, 40 ms apart: two and a half loops of the 10-picture file, written out
    // of order (the page posts them concurrently).
    for i in (0..25u64).map(|i| {
        if i % 5 == 1 {
            i + 1
        } else if i % 5 == 2 {
            i - 1
        } else {
            i
        }
    }) {
        w.capture(&CaptureRecord {
            capture: ms(40 * i),
            read: ms(40 * i + 1),
            barcode: Ok((i % LOOP) as u32),
        })
        .unwrap();
    }
    let show = |w: &mut RecordWriter, at: u64, image: &Image| {
        let r = ShownRecord {
            display: ms(at),
            received: None,
            width: image.width(),
            height: image.height(),
            rtp: 0,
            missed_before: 0,
        };
        w.shown(&r, &packed(image)).unwrap();
    };
    // Every capture shown 100 ms later, except: 5 and 6 lost; 12 shown twice; 20 damaged;
    // 22 shown with the picture of frame 5 (content from another frame).
    for i in 0..25u64 {
        match i {
            5 | 6 => {}
            20 => {
                let mut p = source_picture(i % LOOP);
                for row in 0..16 {
                    p.plane_mut(PlaneId::Y).row_mut(row).fill(128);
                }
                show(&mut w, 40 * i + 100, &p);
            }
            22 => {
                let mut p = source_picture(5);
                salsify_barcode::stamp(&mut p, 2).unwrap();
                show(&mut w, 40 * i + 100, &p);
            }
            _ => {
                show(&mut w, 40 * i + 100, &source_picture(i % LOOP));
                if i == 12 {
                    show(&mut w, 40 * i + 120, &source_picture(i % LOOP));
                }
            }
        }
    }
    w.finish().unwrap();

    let a = analyse(&AnalysisInput {
        dir: &dir,
        reference: &reference,
        from: None,
        until: None,
    })
    .unwrap();
    let c = &a.counts;
    assert_eq!((c.captures, c.captures_read), (25, 25));
    // 23 presented + 1 repeat; one unreadable, one mismatched.
    assert_eq!(c.shown, 24);
    assert_eq!(c.shown_read, 23);
    assert_eq!(c.shown_content_mismatch, 1);
    assert_eq!(c.shown_matched, 22);
    // Perfect pictures outside the band.
    assert!((c.matched_ssim_mean.unwrap() - 1.0).abs() < 1e-9);
    // Records: times from the first capture; the paper's delay rule.
    assert_eq!(a.records.len(), 25);
    assert_eq!(a.records[0].capture, Instant::ZERO);
    assert_eq!(a.origin, ms(0), "the host time of the records' zero");
    let delays = salsify_metrics::record_delays(&a.records).unwrap();
    assert_eq!(delays[0], Some(Duration::from_millis(100)));
    // 5 waits for 7's display at 380 ms: 180 ms.
    assert_eq!(delays[5], Some(Duration::from_millis(180)));
    // The repeat of 12 keeps its first display.
    assert_eq!(delays[12], Some(Duration::from_millis(100)));
    // Frames shown: 25 less 2 lost, 1 damaged, 1 mismatched (the repeat counts once).
    assert_eq!(a.summary.frames_shown, 21);
    assert_eq!(a.summary.frames, 25);

    // A window that starts at capture 10 drops earlier captures and their pictures.
    let b = analyse(&AnalysisInput {
        dir: &dir,
        reference: &reference,
        from: Some(ms(400)),
        until: None,
    })
    .unwrap();
    assert_eq!(b.records.len(), 15);
    assert_eq!(b.records[0].capture, Instant::ZERO);
    assert_eq!(
        b.origin,
        ms(400),
        "the window's first capture is the records' zero"
    );
    // 10..=24 less 20 and 22, plus the repeat of 12.
    assert_eq!(b.counts.shown_matched, 14);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unreadable_barcodes_are_a_clear_error() {
    let dir = temp_dir("unreadable");
    let reference = dir.join("source.y4m");
    write_reference(&reference);
    let mut w = RecordWriter::create(&dir, W, H, Rational::new(30, 1)).unwrap();
    for i in 0..10u64 {
        w.capture(&CaptureRecord {
            capture: ms(40 * i),
            read: ms(40 * i),
            barcode: if i < 3 {
                Ok(i as u32)
            } else {
                Err("cell 0 ambiguous".into())
            },
        })
        .unwrap();
    }
    w.finish().unwrap();
    let e = analyse(&AnalysisInput {
        dir: &dir,
        reference: &reference,
        from: None,
        until: None,
    })
    .unwrap_err();
    let text = format!("{e:#}");
    assert!(
        text.contains("unreadable in most camera pictures"),
        "{text}"
    );
    assert!(text.contains("3 of 10"), "{text}");
    assert!(text.contains("cell 0 ambiguous"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
