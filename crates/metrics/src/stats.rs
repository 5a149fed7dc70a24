//! Mean and percentiles: one definition for every summary, so numbers are comparable.

/// Arithmetic mean, `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// The `p`-th percentile (`p` in 0..=100, clamped) by linear interpolation between the two
/// nearest ranks — numpy's default and R's type 7 — so p0 is the minimum, p100 the maximum
/// and p50 the usual median. `None` for no values.
///
/// Values are sorted with `f64::total_cmp`; callers should not pass NaN (it would sort last).
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(percentile_of_sorted(&sorted, p))
}

/// [`percentile`] of values already sorted ascending (non-empty).
pub(crate) fn percentile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    let rank = p.clamp(0.0, 100.0) / 100.0 * (sorted.len() - 1) as f64;
    let below = rank.floor() as usize;
    let above = rank.ceil() as usize;
    let frac = rank - below as f64;
    if below == above {
        sorted[below]
    } else {
        sorted[below] + (sorted[above] - sorted[below]) * frac
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hand_checked_values() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(mean(&v), Some(2.5));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        // rank 0.25 * 3 = 0.75 between 1 and 2.
        assert_eq!(percentile(&v, 25.0), Some(1.75));
        assert_eq!(percentile(&[7.0], 95.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(mean(&[]), None);
    }

    proptest! {
        #[test]
        fn percentiles_are_ordered_and_bounded(
            v in proptest::collection::vec(-1e6f64..1e6, 1..100),
            p in 0.0f64..100.0,
            q in 0.0f64..100.0,
        ) {
            let (lo, hi) = if p <= q { (p, q) } else { (q, p) };
            let (a, b) = (percentile(&v, lo).unwrap(), percentile(&v, hi).unwrap());
            let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
            let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(a <= b);
            prop_assert!(min <= a && b <= max);
            prop_assert_eq!(percentile(&v, 0.0).unwrap(), min);
            prop_assert_eq!(percentile(&v, 100.0).unwrap(), max);
            let m = mean(&v).unwrap();
            prop_assert!(min - 1e-6 <= m && m <= max + 1e-6);
        }

        #[test]
        fn median_of_odd_length_is_the_middle_value(
            v in proptest::collection::vec(-1e6f64..1e6, 0..50),
        ) {
            let mut odd = v.clone();
            odd.push(0.0);
            if odd.len() % 2 == 0 { odd.push(1.0); }
            let mut sorted = odd.clone();
            sorted.sort_by(f64::total_cmp);
            prop_assert_eq!(percentile(&odd, 50.0).unwrap(), sorted[sorted.len() / 2]);
        }
    }
}
