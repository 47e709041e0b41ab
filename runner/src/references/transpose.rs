//! `reference = "transpose"`: the output (cols × rows) is the transpose of the input
//! (rows × cols), bit for bit, for elements of any size.

use super::parallel::for_each_chunk;
use super::{Comparison, Reference, ReferenceCall, ReferenceError, product};
use std::collections::BTreeMap;

const NAME: &str = "transpose";

/// The transpose of a row-major matrix, of the input's element type.
#[derive(Debug, Clone, Copy, Default)]
pub struct Transpose;

impl Reference for Transpose {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let size = call.input_elem(NAME, 0)?.size();
        let (rows, cols) = (call.size(NAME, "rows")?, call.size(NAME, "cols")?);
        let bytes = product(NAME, "rows × cols × element size", &[rows, cols, size])?;
        call.fits_output(NAME, bytes)?;
        Ok(transpose(input, rows, cols, size))
    }
}

/// Transposes a row-major `rows × cols` matrix of `size`-byte elements, in cache-sized blocks
/// so that large matrices take well under a second. An input shorter than the matrix gives
/// all zeros (a well-formed lab cannot have one).
pub fn transpose(input: &[u8], rows: usize, cols: usize, size: usize) -> Vec<u8> {
    const BLOCK: usize = 64;
    let mut out = vec![0u8; rows * cols * size];
    if input.len() < rows * cols * size || rows == 0 {
        return out;
    }
    // Each task writes BLOCK whole output rows (input columns c0..c0 + BLOCK).
    for_each_chunk(&mut out, BLOCK * rows * size, |band, chunk| {
        let c0 = band * BLOCK;
        let c_end = (c0 + BLOCK).min(cols);
        for r0 in (0..rows).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..c_end {
                    let from = (r * cols + c) * size;
                    let to = ((c - c0) * rows + r) * size;
                    chunk[to..to + size].copy_from_slice(&input[from..from + size]);
                }
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, call_check, f32_bytes};
    use super::*;
    use kernelbook_core::expr::Expr;
    use kernelbook_core::spec::{BuiltinCheck, ElemType};

    #[test]
    fn transpose_of_a_2x3_matrix() {
        let input = f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(
            transpose(&input, 2, 3, 4),
            f32_bytes(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
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
    fn through_the_trait_the_shape_comes_from_the_args_and_the_size_from_the_input() {
        let check = BuiltinCheck::Transpose {
            input: "a".into(),
            output: "b".into(),
            rows: Expr::new("1"),
            cols: Expr::new("2 * 1"),
        };
        let data = f32_bytes(&[1.0, 2.0]);
        assert_eq!(
            call_check(&check, &[("a", &data)], ElemType::F32),
            f32_bytes(&[1.0, 2.0])
        );
        // Two 8-byte elements of a 1 × 2 matrix become a 2 × 1 one: the same bytes.
        let u64s: Vec<u8> = [3u64, 4].iter().flat_map(|v| v.to_le_bytes()).collect();
        let out = call(NAME, &[(&u64s, ElemType::U64)], &[("rows", 2), ("cols", 1)]);
        assert_eq!(out, Ok(u64s.clone()));
        let negative = call(
            NAME,
            &[(&u64s, ElemType::U64)],
            &[("rows", -2), ("cols", 1)],
        );
        assert!(
            matches!(
                negative,
                Err(ReferenceError::OutOfRange {
                    arg: "rows",
                    value: -2,
                    ..
                })
            ),
            "{negative:?}"
        );
        let huge = call(
            NAME,
            &[(&u64s, ElemType::U64)],
            &[("rows", i64::MAX), ("cols", i64::MAX)],
        );
        assert!(
            matches!(huge, Err(ReferenceError::Overflow { .. })),
            "{huge:?}"
        );
        let missing = call(NAME, &[(&u64s, ElemType::U64)], &[("rows", 2)]);
        assert_eq!(
            missing.map_err(|e| e.to_string()),
            Err(
                "reference `transpose` needs the argument `cols`, which the check does not give"
                    .into()
            )
        );
    }
}
