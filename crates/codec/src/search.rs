//! Searching the quantizer scale for a frame size: the finest quality whose frame, encoded
//! from a given state, fits a byte bound. A codec capability (each trial is a real encode);
//! which bound to ask for is the caller's policy (the oracle's, in this project).

use crate::{CodecError, EncodedFrame, Encoder, Image, Quality, State};

/// The finest quantizer whose frame (encoded from `state`) fits in `bytes`, found by
/// galloping from `start` (the previous frame's quantizer) and then bisecting, since sizes
/// fall as the index rises. Consecutive frames need similar quantizers, so this takes about
/// half the encodes of a bisection over the whole range. `None` when even the coarsest
/// quantizer makes a larger frame.
pub fn finest_fitting(
    enc: &mut Encoder,
    state: &State,
    image: &Image,
    bytes: usize,
    start: Quality,
) -> Result<Option<EncodedFrame>, CodecError> {
    let mut trial = |q: u8| -> Result<Option<EncodedFrame>, CodecError> {
        let f = enc.encode(state, image, Quality::new(q)?)?;
        Ok((f.vp8().len() <= bytes).then_some(f))
    };
    let start = start.index();
    // Invariant once both are known: `good` fits (with its frame `best`), `bad` does not,
    // bad < good.
    let (mut bad, mut good, mut best): (Option<u8>, u8, _);
    if let Some(f) = trial(start)? {
        (good, best) = (start, f);
        bad = None;
        let mut step = 4u8;
        while good > 0 {
            let q = good.saturating_sub(step);
            match trial(q)? {
                Some(f) => (good, best, step) = (q, f, step.saturating_mul(2)),
                None => {
                    bad = Some(q);
                    break;
                }
            }
        }
    } else {
        let mut failed = start;
        let mut step = 4u8;
        loop {
            if failed == Quality::WORST.index() {
                return Ok(None);
            }
            let q = failed.saturating_add(step).min(Quality::WORST.index());
            if let Some(f) = trial(q)? {
                (good, best, bad) = (q, f, Some(failed));
                break;
            }
            (failed, step) = (q, step.saturating_mul(2));
        }
    }
    let Some(bad) = bad else {
        return Ok(Some(best));
    };
    let (mut lo, mut hi) = (bad + 1, good);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match trial(mid)? {
            Some(f) => (hi, best) = (mid, f),
            None => lo = mid + 1,
        }
    }
    Ok(Some(best))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SyntheticSource;

    /// The search returns a quantizer that fits while the next finer one does not, from any
    /// starting point, and nothing when even the coarsest is too big.
    #[test]
    fn finds_the_finest_quantizer_that_fits() {
        let mut enc = Encoder::new(128, 96).unwrap();
        let source = SyntheticSource::new(128, 96, 30, 3).unwrap();
        let q = |i: u8| Quality::new(i).unwrap();
        let key = enc
            .encode(&State::initial(), &source.frame(0), q(40))
            .unwrap();
        let image = source.frame(1);
        // Size and quantizer actually coded (libvpx's 64 steps: some indices share one).
        let size_and_q = |enc: &mut Encoder, i: u8| {
            let f = enc.encode(&key.target, &image, q(i)).unwrap();
            (f.vp8().len(), f.quality.index())
        };
        let smallest = size_and_q(&mut enc, 127).0;
        assert!(
            finest_fitting(&mut enc, &key.target, &image, smallest - 1, q(64))
                .unwrap()
                .is_none()
        );
        for budget in [smallest, smallest + 50, 400, 1500, 100_000] {
            for start in [0, 20, 64, 127] {
                let f = finest_fitting(&mut enc, &key.target, &image, budget, q(start))
                    .unwrap()
                    .unwrap();
                let found = f.quality.index();
                assert!(f.vp8().len() <= budget, "budget {budget} start {start}");
                if found > 0 {
                    let (finer, coded) = size_and_q(&mut enc, found - 1);
                    assert!(
                        finer > budget || coded == found,
                        "budget {budget} start {start}: q{found}"
                    );
                }
            }
        }
    }
}
