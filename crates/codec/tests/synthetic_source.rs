//! The synthetic source: deterministic, moving, textured, at any even size.

use std::time::Duration;

use salsify_codec::synthetic::SyntheticSource;
use salsify_codec::{CodecError, Image, PlaneId};

/// Mean absolute luma difference between `a` and `b` shifted by (`dx`, `dy`), over the
/// region where both are defined (minus a margin).
fn shifted_mad(a: &Image, b: &Image, dx: i64, dy: i64) -> f64 {
    let (w, h) = (a.width() as i64, a.height() as i64);
    let margin = 12;
    let (mut sum, mut n) = (0u64, 0u64);
    for y in margin..h - margin {
        let (ra, rb) = (a.y().row(y as usize), b.y().row((y + dy) as usize));
        for x in margin..w - margin {
            sum += u64::from(ra[x as usize].abs_diff(rb[(x + dx) as usize]));
            n += 1;
        }
    }
    sum as f64 / n as f64
}

#[test]
fn same_seed_same_frames() {
    let a = SyntheticSource::new(322, 182, 60, 42).unwrap();
    let b = SyntheticSource::new(322, 182, 60, 42).unwrap();
    let mut reused = Image::new(2, 2).unwrap();
    for index in [0, 1, 59, 1000] {
        let frame = a.frame(index);
        assert_eq!(frame, b.frame(index), "frame {index}");
        b.render_into(index, &mut reused);
        assert_eq!(frame, reused, "frame {index} via render_into");
    }
}

#[test]
fn differs_across_seeds_and_frames() {
    let a = SyntheticSource::new(320, 180, 30, 1).unwrap();
    let b = SyntheticSource::new(320, 180, 30, 2).unwrap();
    assert!(!a.frame(0).visible_eq(&b.frame(0)));
    for index in 0..10 {
        assert!(
            !a.frame(index).visible_eq(&a.frame(index + 1)),
            "frame {index}"
        );
    }
}

#[test]
fn content_is_textured_and_coloured() {
    let image = SyntheticSource::new(320, 180, 30, 3).unwrap().frame(5);
    let luma: Vec<u8> = image.y().rows().flatten().copied().collect();
    let (min, max) = (luma.iter().min().unwrap(), luma.iter().max().unwrap());
    assert!(max - min > 100, "luma range {min}..{max}");
    // Neighbouring pixels are correlated (noise would give a mean step near 85).
    let steps: u64 = image
        .y()
        .rows()
        .flat_map(|r| r.windows(2).map(|p| u64::from(p[0].abs_diff(p[1]))))
        .sum();
    let mean_step = steps as f64 / (179.0 * 180.0);
    assert!(mean_step > 1.0 && mean_step < 20.0, "mean step {mean_step}");
    let u = image.plane(PlaneId::U);
    assert!(u.rows().flatten().any(|&s| s.abs_diff(128) > 20));
}

#[test]
fn motion_is_found_by_a_shift_search() {
    // Consecutive frames match better after some small shift than in place: there is motion
    // that prediction can follow, and the best match is far better than an unrelated frame.
    let source = SyntheticSource::new(320, 180, 30, 9).unwrap();
    let (a, b) = (source.frame(10), source.frame(11));
    let still = shifted_mad(&a, &b, 0, 0);
    let best = (-8..=8)
        .flat_map(|dy| (-8..=8).map(move |dx| (dx, dy)))
        .map(|(dx, dy)| shifted_mad(&a, &b, dx, dy))
        .fold(f64::INFINITY, f64::min);
    let unrelated = shifted_mad(
        &a,
        &SyntheticSource::new(320, 180, 30, 10).unwrap().frame(0),
        0,
        0,
    );
    assert!(best < still * 0.6, "best {best}, in place {still}");
    assert!(best * 4.0 < unrelated, "best {best}, unrelated {unrelated}");
}

#[test]
fn padding_is_edge_extended_at_odd_macroblock_sizes() {
    let image = SyntheticSource::new(18, 6, 30, 0).unwrap().frame(3);
    let y = image.y();
    let edge = y.row(0)[17];
    assert!(y.data()[18..32].iter().all(|&s| s == edge));
}

#[test]
fn iterator_and_timestamps() {
    let mut source = SyntheticSource::new(64, 48, 60, 5).unwrap();
    let first: Vec<_> = source.by_ref().take(3).collect();
    assert_eq!(first.iter().map(|f| f.index).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(first[2].timestamp, Duration::from_nanos(33_333_333));
    assert_eq!(source.next_frame().index, 3);
    assert!(first[1].image.visible_eq(&source.frame(1)));
    assert_eq!(source.timestamp(60), Duration::from_secs(1));
    let header = source.y4m_header();
    assert_eq!((header.width, header.height), (64, 48));
    assert_eq!(header.frame_rate.map(|r| (r.num, r.den)), Some((60, 1)));
}

#[test]
fn any_even_size_works_and_bad_arguments_are_errors() {
    for (w, h) in [(2, 2), (16, 2), (1280, 720), (322, 182)] {
        let image = SyntheticSource::new(w, h, 24, 1).unwrap().frame(7);
        assert_eq!((image.width(), image.height()), (w, h));
    }
    for (w, h, fps) in [(3, 2, 30), (0, 2, 30), (4, 2, 0)] {
        let err = SyntheticSource::new(w, h, fps, 1).unwrap_err();
        assert!(matches!(err, CodecError::InvalidInput(_)), "{err}");
    }
}
