//! Inputs and CPU references: what a lab's buffers start as, what its output must be, and the
//! first place a device's output differs.

use kernelbook_core::expr::{ExprError, Params};
use kernelbook_core::results::Mismatch;
use kernelbook_core::spec::{CheckSpec, ElemType, Fill};

/// The byte every element of a poisoned buffer is filled with: all bits set is NaN for floats
/// and -1 for integers, so an element the kernel never wrote cannot match the reference.
pub const POISON_BYTE: u8 = 0xFF;

/// A buffer's initial contents (little-endian elements).
pub fn initial_contents(
    fill: Fill,
    elem: ElemType,
    len: usize,
    rng: &mut fastrand::Rng,
) -> Vec<u8> {
    match fill {
        Fill::Zero => vec![0; len * elem.size()],
        Fill::Poison => vec![POISON_BYTE; len * elem.size()],
        Fill::Random => {
            let mut out = Vec::with_capacity(len * elem.size());
            match elem {
                ElemType::F32 => {
                    for _ in 0..len {
                        out.extend_from_slice(&(rng.f32() * 2.0 - 1.0).to_le_bytes());
                    }
                }
                ElemType::F64 => {
                    for _ in 0..len {
                        out.extend_from_slice(&(rng.f64() * 2.0 - 1.0).to_le_bytes());
                    }
                }
                ElemType::I32 | ElemType::U32 => {
                    for _ in 0..len {
                        out.extend_from_slice(&rng.u32(..).to_le_bytes());
                    }
                }
            }
            out
        }
    }
}

/// The output the check expects for `input`.
pub fn expected_output(
    check: &CheckSpec,
    input: &[u8],
    elem: ElemType,
    params: &Params,
) -> Result<Vec<u8>, ExprError> {
    match check {
        CheckSpec::Copy { .. } => Ok(input.to_vec()),
        CheckSpec::Transpose { rows, cols, .. } => {
            let rows = usize::try_from(rows.eval(params)?).unwrap_or(0);
            let cols = usize::try_from(cols.eval(params)?).unwrap_or(0);
            Ok(transpose(input, rows, cols, elem.size()))
        }
        CheckSpec::StridedGather { count, stride, .. } => {
            let count = usize::try_from(count.eval(params)?).unwrap_or(0);
            let stride = usize::try_from(stride.eval(params)?).unwrap_or(0);
            Ok(strided_gather(input, count, stride, elem.size()))
        }
    }
}

/// `out[i] = input[i * stride]` for `i < count`; elements past the input's end are left zero
/// (the lab's buffer sizes make that impossible for a well-formed lab).
pub fn strided_gather(input: &[u8], count: usize, stride: usize, size: usize) -> Vec<u8> {
    let mut out = vec![0u8; count * size];
    for (i, slot) in out.chunks_mut(size).enumerate() {
        let from = i * stride * size;
        if let Some(element) = input.get(from..from + size) {
            slot.copy_from_slice(element);
        }
    }
    out
}

/// Transposes a row-major `rows × cols` matrix of `size`-byte elements, in cache-sized blocks
/// so that large matrices take well under a second.
pub fn transpose(input: &[u8], rows: usize, cols: usize, size: usize) -> Vec<u8> {
    const BLOCK: usize = 64;
    let mut out = vec![0u8; rows * cols * size];
    if input.len() < rows * cols * size {
        return out;
    }
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    let from = (r * cols + c) * size;
                    let to = (c * rows + r) * size;
                    out[to..to + size].copy_from_slice(&input[from..from + size]);
                }
            }
        }
    }
    out
}

/// The first element where `actual` differs from `expected` (bit for bit), and how many differ.
pub fn first_mismatch(expected: &[u8], actual: &[u8], elem: ElemType) -> Option<Mismatch> {
    let size = elem.size();
    if expected.len() != actual.len() {
        return Some(Mismatch {
            index: 0,
            expected: format!("{} bytes", expected.len()),
            actual: format!("{} bytes", actual.len()),
            count: 1,
        });
    }
    let mut first = None;
    let mut count = 0u64;
    for (index, (e, a)) in expected.chunks(size).zip(actual.chunks(size)).enumerate() {
        if e != a {
            count += 1;
            if first.is_none() {
                first = Some((index, e, a));
            }
        }
    }
    first.map(|(index, e, a)| Mismatch {
        index: index as u64,
        expected: elem.display(e),
        actual: elem.display(a),
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::expr::Expr;

    fn f32s(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn transpose_of_a_2x3_matrix() {
        let input = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(
            transpose(&input, 2, 3, 4),
            f32s(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
        );
    }

    #[test]
    fn transpose_crosses_block_boundaries() {
        let (rows, cols) = (70, 130);
        let input: Vec<u8> = (0..rows * cols)
            .flat_map(|i| (i as u32).to_le_bytes())
            .collect();
        let out = transpose(&input, rows, cols, 4);
        let at = |buf: &[u8], i: usize| {
            u32::from_le_bytes([buf[4 * i], buf[4 * i + 1], buf[4 * i + 2], buf[4 * i + 3]])
        };
        for (r, c) in [(0, 0), (69, 129), (3, 100), (65, 64)] {
            assert_eq!(at(&out, c * rows + r), (r * cols + c) as u32);
        }
    }

    #[test]
    fn expected_output_evaluates_the_check_dimensions() {
        let check = CheckSpec::Transpose {
            input: "a".into(),
            output: "b".into(),
            rows: Expr::new("n"),
            cols: Expr::new("2 * n"),
        };
        let params = Params::from([("n".into(), 1)]);
        let out = expected_output(&check, &f32s(&[1.0, 2.0]), ElemType::F32, &params).expect("ok");
        assert_eq!(out, f32s(&[1.0, 2.0]));
    }

    #[test]
    fn strided_gather_takes_every_stride_th_element() {
        let input = f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(strided_gather(&input, 3, 3, 4), f32s(&[0.0, 3.0, 6.0]));
        assert_eq!(strided_gather(&input, 2, 4, 4), f32s(&[0.0, 4.0]));
    }

    #[test]
    fn mismatch_reports_the_first_index_values_and_count() {
        let expected = f32s(&[1.0, 2.0, 3.0, 4.0]);
        let mut actual = expected.clone();
        actual[8..12].copy_from_slice(&[POISON_BYTE; 4]);
        actual[12..16].copy_from_slice(&9.5f32.to_le_bytes());
        let m = first_mismatch(&expected, &actual, ElemType::F32).expect("mismatch");
        assert_eq!(
            (m.index, m.expected.as_str(), m.actual.as_str(), m.count),
            (2, "3.0", "NaN", 2)
        );
        assert_eq!(first_mismatch(&expected, &expected, ElemType::F32), None);
    }

    #[test]
    fn random_inputs_are_fresh_per_seed_and_in_range() {
        let a = initial_contents(
            Fill::Random,
            ElemType::F32,
            1000,
            &mut fastrand::Rng::with_seed(1),
        );
        let b = initial_contents(
            Fill::Random,
            ElemType::F32,
            1000,
            &mut fastrand::Rng::with_seed(2),
        );
        assert_ne!(a, b);
        assert!(a.chunks(4).all(|c| {
            let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            (-1.0..1.0).contains(&v)
        }));
        let poison = initial_contents(
            Fill::Poison,
            ElemType::F32,
            2,
            &mut fastrand::Rng::with_seed(1),
        );
        assert!(f32::from_le_bytes([poison[0], poison[1], poison[2], poison[3]]).is_nan());
    }
}
