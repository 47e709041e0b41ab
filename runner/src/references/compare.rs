//! The first place a device's output differs from the expected bytes, and how many differ.

use super::Comparison;
use super::parallel::{CHEAP_CHUNK, map_ranges};
use kernelbook_core::results::Mismatch;
use kernelbook_core::spec::{CompareRule, ElemType};

/// The first element where `actual` differs from `expected`, and how many differ: by
/// `comparison.rule` for float outputs (bit for bit, within a tolerance, or within some ulps),
/// bit for bit for integers; only every `comparison.sample_stride`-th element is compared (a
/// sampled check). Outputs of different lengths differ at element 0.
pub fn first_mismatch(
    expected: &[u8],
    actual: &[u8],
    elem: ElemType,
    comparison: &Comparison,
) -> Option<Mismatch> {
    let size = elem.size();
    if expected.len() != actual.len() {
        return Some(Mismatch {
            index: 0,
            expected: format!("{} bytes", expected.len()),
            actual: format!("{} bytes", actual.len()),
            count: 1,
        });
    }
    let stride = comparison.sample_stride.max(1);
    let whole = expected.len() / size;
    let rule = match elem {
        ElemType::F32 | ElemType::F64 => comparison.rule,
        _ => CompareRule::Exact,
    };
    // Each task compares about CHEAP_CHUNK elements of the sample, and says the first that
    // differs in its range and how many do; a sampled check of a big buffer stays one task.
    let mut parts = map_ranges(whole, CHEAP_CHUNK.saturating_mul(stride), |range| {
        let start = range.start.next_multiple_of(stride).min(range.end);
        let bytes = start * size..range.end * size;
        let (e, a) = (&expected[bytes.clone()], &actual[bytes]);
        match (rule, size) {
            // The usual outcome of a bit-for-bit check, all equal, in one memcmp.
            (CompareRule::Exact, _) if stride == 1 && e == a => (None, 0),
            (CompareRule::Exact, 4) => tally(pairs::<4>(e, a), start, stride, |e, a| e == a),
            (CompareRule::Exact, 8) => tally(pairs::<8>(e, a), start, stride, |e, a| e == a),
            (rule, 4) if rule.is_tolerant() => tally(pairs::<4>(e, a), start, stride, |e, a| {
                agree_f32(rule, f32::from_le_bytes(*e), f32::from_le_bytes(*a))
            }),
            (rule, 8) if rule.is_tolerant() => tally(pairs::<8>(e, a), start, stride, |e, a| {
                agree_f64(rule, f64::from_le_bytes(*e), f64::from_le_bytes(*a))
            }),
            _ => {
                let pairs = e.chunks_exact(size).zip(a.chunks_exact(size));
                tally(pairs, start, stride, |e, a| e == a)
            }
        }
    });
    // A last element cut short (the length not a multiple of the size) is compared bit for bit.
    if !expected.len().is_multiple_of(size) && whole.is_multiple_of(stride) {
        let agree = element(expected, whole, size) == element(actual, whole, size);
        parts.push((Some(whole).filter(|_| !agree), u64::from(!agree)));
    }
    let index = parts.iter().find_map(|&(first, _)| first)?;
    Some(Mismatch {
        index: index as u64,
        expected: elem.display(element(expected, index, size)),
        actual: elem.display(element(actual, index, size)),
        count: parts.iter().map(|&(_, count)| count).sum(),
    })
}

/// Whether one element's bytes in `expected` and `actual` agree by `comparison`'s rule, as
/// [`first_mismatch`] compares them: without allocating, for a caller that walks the elements
/// one by one (a wrong output's pattern).
pub fn element_agrees(
    expected: &[u8],
    actual: &[u8],
    elem: ElemType,
    comparison: &Comparison,
) -> bool {
    let rule = match elem {
        ElemType::F32 | ElemType::F64 => comparison.rule,
        _ => CompareRule::Exact,
    };
    if !rule.is_tolerant() {
        return expected == actual;
    }
    if let (Ok(e), Ok(a)) = (<[u8; 4]>::try_from(expected), <[u8; 4]>::try_from(actual)) {
        return agree_f32(rule, f32::from_le_bytes(e), f32::from_le_bytes(a));
    }
    if let (Ok(e), Ok(a)) = (<[u8; 8]>::try_from(expected), <[u8; 8]>::try_from(actual)) {
        return agree_f64(rule, f64::from_le_bytes(e), f64::from_le_bytes(a));
    }
    expected == actual
}

/// Whether two f32s agree by `rule`; NaN never agrees under a tolerance.
pub(crate) fn agree_f32(rule: CompareRule, expected: f32, actual: f32) -> bool {
    match rule {
        CompareRule::Exact => expected.to_bits() == actual.to_bits(),
        CompareRule::Close { rtol, atol } => close(expected.into(), actual.into(), (rtol, atol)),
        CompareRule::Ulps(ulps) => {
            let ordered = |v: f32| {
                let bits = i64::from(v.to_bits() & 0x7FFF_FFFF);
                if v.is_sign_negative() { -bits } else { bits }
            };
            !expected.is_nan()
                && !actual.is_nan()
                && ordered(expected).abs_diff(ordered(actual)) <= ulps
        }
    }
}

/// Whether two f64s agree by `rule`; NaN never agrees under a tolerance.
pub(crate) fn agree_f64(rule: CompareRule, expected: f64, actual: f64) -> bool {
    match rule {
        CompareRule::Exact => expected.to_bits() == actual.to_bits(),
        CompareRule::Close { rtol, atol } => close(expected, actual, (rtol, atol)),
        CompareRule::Ulps(ulps) => {
            let ordered = |v: f64| {
                let bits = i128::from(v.to_bits() & 0x7FFF_FFFF_FFFF_FFFF);
                if v.is_sign_negative() { -bits } else { bits }
            };
            let apart = ordered(expected).abs_diff(ordered(actual));
            !expected.is_nan() && !actual.is_nan() && apart <= u128::from(ulps)
        }
    }
}

/// Whether two floats agree within `(relative, absolute)`: `|e − a| ≤ absolute + relative·|e|`;
/// NaN never agrees, and an infinity agrees only with itself.
pub(crate) fn close(expected: f64, actual: f64, (relative, absolute): (f64, f64)) -> bool {
    if expected.is_infinite() || actual.is_infinite() {
        return expected == actual;
    }
    (expected - actual).abs() <= absolute + relative * expected.abs()
}

/// Element `i` of `size`-byte elements, the last one short where the length is not a multiple of
/// the size.
fn element(bytes: &[u8], i: usize, size: usize) -> &[u8] {
    &bytes[i * size..bytes.len().min((i + 1) * size)]
}

/// The whole `N`-byte elements of `expected` and `actual`, side by side: fixed-size arrays
/// compare as integers, where slices of a run-time length call `memcmp` for each element.
fn pairs<'a, const N: usize>(
    expected: &'a [u8],
    actual: &'a [u8],
) -> impl Iterator<Item = (&'a [u8; N], &'a [u8; N])> + Clone {
    expected
        .as_chunks::<N>()
        .0
        .iter()
        .zip(actual.as_chunks::<N>().0)
}

/// The index of the first of every `stride`-th pair (the first being element `start`) that
/// does not `agree`, and how many do not.
fn tally<T>(
    pairs: impl Iterator<Item = (T, T)> + Clone,
    start: usize,
    stride: usize,
    agree: impl Fn(T, T) -> bool + Copy,
) -> (Option<usize>, u64) {
    // Count first, then look for the first only where there is one: a loop with no early exit
    // or index to keep runs several times faster.
    let count = pairs
        .clone()
        .step_by(stride)
        .map(|(e, a)| u64::from(!agree(e, a)))
        .sum::<u64>();
    if count == 0 {
        return (None, 0);
    }
    let first = pairs.step_by(stride).position(|(e, a)| !agree(e, a));
    (first.map(|k| start + k * stride), count)
}

#[cfg(test)]
mod tests {
    use super::super::POISON_BYTE;
    use super::super::parallel::f32_at;
    use super::super::testing::{awkward_floats, f32_bytes, naive};
    use super::*;

    fn within(tolerance: Option<(f64, f64)>, sample_stride: usize) -> Comparison {
        Comparison {
            rule: naive::rule(tolerance),
            sample_stride,
        }
    }

    #[test]
    fn mismatch_reports_the_first_index_values_and_count() {
        let expected = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
        let mut actual = expected.clone();
        actual[8..12].copy_from_slice(&[POISON_BYTE; 4]);
        actual[12..16].copy_from_slice(&9.5f32.to_le_bytes());
        let exact = Comparison::EXACT;
        let m = first_mismatch(&expected, &actual, ElemType::F32, &exact).expect("mismatch");
        assert_eq!(
            (m.index, m.expected.as_str(), m.actual.as_str(), m.count),
            (2, "3.0", "NaN", 2)
        );
        assert_eq!(
            first_mismatch(&expected, &expected, ElemType::F32, &exact),
            None
        );
    }

    #[test]
    fn a_sampled_check_compares_only_its_sample_and_a_tolerance_accepts_rounding() {
        let expected = f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        let mut actual = expected.clone();
        actual[4..8].copy_from_slice(&9.0f32.to_le_bytes()); // element 1: outside a stride-2 sample
        let f32_check = |actual: &[u8], comparison| {
            first_mismatch(&expected, actual, ElemType::F32, &comparison)
        };
        assert_eq!(f32_check(&actual, within(None, 2)), None);
        assert!(f32_check(&actual, within(None, 1)).is_some());
        let mut close = expected.clone();
        close[8..12].copy_from_slice(&3.000_01f32.to_le_bytes());
        assert_eq!(f32_check(&close, within(Some((1e-5, 1e-6)), 1)), None);
        assert!(f32_check(&close, within(None, 1)).is_some());
    }

    #[test]
    fn the_parallel_compare_finds_the_first_mismatch_and_counts_them_all() {
        let len = 3 * CHEAP_CHUNK + 5;
        let expected = awkward_floats(len, 17);
        let put = |buf: &mut Vec<u8>, i: usize, v: f32| {
            buf[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        };
        // Mismatches on both sides of task boundaries and last; of them only 3 * CHEAP_CHUNK,
        // the first element of a stride-3 check's second task, is a multiple of 3.
        let mut actual = expected.clone();
        let wrong = [
            CHEAP_CHUNK + 7,
            2 * CHEAP_CHUNK - 1,
            2 * CHEAP_CHUNK,
            3 * CHEAP_CHUNK,
            len - 1,
        ];
        for &i in &wrong {
            put(&mut actual, i, 42.0);
        }
        let found = |actual: &[u8], tolerance, stride| {
            first_mismatch(&expected, actual, ElemType::F32, &within(tolerance, stride))
                .map(|m| (m.index, m.expected, m.actual, m.count))
        };
        let at = |i: usize| format!("{:?}", f32_at(&expected, i));
        let first = wrong[0] as u64;
        assert_eq!(
            found(&actual, None, 1),
            Some((first, at(wrong[0]), "42.0".into(), 5))
        );
        let third = wrong[3] as u64;
        assert_eq!(
            found(&actual, None, 3),
            Some((third, at(wrong[3]), "42.0".into(), 1))
        );
        assert_eq!(found(&expected, None, 1), None);
        // Under a tolerance the NaN (element 7919) never agrees, even with itself; an infinity
        // agrees with itself only (as NumPy's isclose has it).
        let tolerance = Some((1e-5, 1e-6));
        assert_eq!(
            found(&expected, tolerance, 1).map(|m| (m.0, m.3)),
            Some((7919, 1))
        );

        // Near misses a tolerance accepts, and one it does not.
        let mut near = expected.clone();
        for i in (0..len).step_by(1001) {
            let v = f32_at(&expected, i);
            put(&mut near, i, v * (1.0 + 4e-6));
        }
        put(&mut near, 2 * CHEAP_CHUNK + 3, 1e3);

        // A partial last element, for bit-for-bit and tolerant checks alike.
        let mut short_expected = expected.clone();
        short_expected.extend_from_slice(&[1, 2]);
        let mut short_actual = short_expected.clone();
        let last = short_actual.len() - 1;
        short_actual[last] = 3;

        let poison = vec![POISON_BYTE; expected.len()];
        let cases: [(&[u8], &[u8]); 6] = [
            (&expected, &expected),
            (&expected, &actual),
            (&expected, &near),
            (&short_expected, &short_actual),
            (&expected, &expected[4..]),
            (&expected, &poison),
        ];
        let kinds = [
            (ElemType::F32, None),
            (ElemType::F32, tolerance),
            (ElemType::U64, None),
            (ElemType::U64, tolerance),
        ];
        for (k, (e, a)) in cases.iter().enumerate() {
            for (elem, tolerance) in kinds {
                for stride in [0, 1, 3, CHEAP_CHUNK + 1] {
                    assert_eq!(
                        first_mismatch(e, a, elem, &within(tolerance, stride)),
                        naive::first_mismatch_within(e, a, elem, tolerance, stride),
                        "case {k}, {elem:?}, {tolerance:?}, stride {stride}"
                    );
                }
            }
        }
    }

    #[test]
    fn ulps_and_tolerances_compare_f32_and_f64_alike() {
        let one_up = f32::from_bits(1.0f32.to_bits() + 1);
        let three_up = f32::from_bits(1.0f32.to_bits() + 3);
        assert!(agree_f32(CompareRule::Ulps(1), 1.0, one_up));
        assert!(!agree_f32(CompareRule::Ulps(2), 1.0, three_up));
        // Across zero: the smallest subnormals either side are two steps apart.
        let tiny = f32::from_bits(1);
        assert!(agree_f32(CompareRule::Ulps(2), tiny, -tiny));
        assert!(!agree_f32(CompareRule::Ulps(1), tiny, -tiny));
        assert!(agree_f32(CompareRule::Ulps(0), 0.0, -0.0));
        assert!(!agree_f32(CompareRule::Ulps(u64::MAX), f32::NAN, f32::NAN));
        assert!(agree_f32(
            CompareRule::Ulps(0),
            f32::INFINITY,
            f32::INFINITY
        ));
        let one_up = f64::from_bits(1.0f64.to_bits() + 1);
        assert!(agree_f64(CompareRule::Ulps(1), 1.0, one_up));
        assert!(!agree_f64(CompareRule::Ulps(0), 1.0, one_up));
        let close = CompareRule::Close {
            rtol: 1e-9,
            atol: 0.0,
        };
        assert!(agree_f64(close, 1.0, 1.0 + 1e-10));
        assert!(!agree_f64(close, 1.0, 1.0 + 1e-8));
        assert!(!agree_f64(close, f64::INFINITY, f64::NEG_INFINITY));

        // Through first_mismatch: an f64 output within 1 ulp passes, 2 ulps fail.
        let bytes = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let expected = bytes(&[1.0, 2.0, 3.0]);
        let near = bytes(&[1.0, f64::from_bits(2.0f64.to_bits() + 1), 3.0]);
        let far = bytes(&[1.0, 2.0, f64::from_bits(3.0f64.to_bits() + 2)]);
        let within = Comparison {
            rule: CompareRule::Ulps(1),
            sample_stride: 1,
        };
        assert_eq!(
            first_mismatch(&expected, &near, ElemType::F64, &within),
            None
        );
        let m = first_mismatch(&expected, &far, ElemType::F64, &within).expect("2 ulps");
        assert_eq!((m.index, m.count), (2, 1));
        // Integers ignore a tolerance: they compare bit for bit.
        let ints = [5u32, 6]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>();
        let other = [5u32, 7]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>();
        let loose = Comparison::close(1.0, 10.0, 1);
        assert!(first_mismatch(&ints, &other, ElemType::U32, &loose).is_some());
    }
}
