//! `reference = "column_sums"`: column sums of each 32-row strip of an n × n f32 matrix, added
//! in row order, so bit for bit (a sum in another order rounds differently, and the drill asks
//! for this order).

use super::parallel::{CHEAP_CHUNK, f32_at, for_each_chunk};
use super::{Comparison, Reference, ReferenceCall, ReferenceError, product};
use std::collections::BTreeMap;

const NAME: &str = "column_sums";

/// `output[t * n + c] = Σ_{r < 32} input[(32 t + r) * n + c]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ColumnSums;

impl Reference for ColumnSums {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["n"]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let n = call.size(NAME, "n")?;
        // Every element of the n × n input is read: its index must be addressable.
        product(NAME, "n × n × 4 bytes", &[n, n, 4])?;
        call.fits_output(
            NAME,
            product(NAME, "n / 32 × n × 4 bytes", &[n / 32, n, 4])?,
        )?;
        Ok(column_sums_bytes(input, n))
    }
}

/// Column sums of each 32-row strip, rows added in order; an element past the input's end
/// counts as 0.0.
pub fn column_sums(input: &[f32], n: usize) -> Vec<u8> {
    let input: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    column_sums_bytes(&input, n)
}

/// [`column_sums`] of little-endian bytes.
fn column_sums_bytes(input: &[u8], n: usize) -> Vec<u8> {
    let strips = n / 32;
    let mut out = vec![0u8; strips * n * 4];
    if n == 0 {
        return out;
    }
    let len = input.len() / 4;
    // Whole strips per task, about CHEAP_CHUNK input elements each.
    let strips_per_task = (CHEAP_CHUNK / (32 * n)).max(1);
    for_each_chunk(&mut out, strips_per_task * n * 4, |index, chunk| {
        let mut sums = vec![0f32; n];
        for (k, strip) in chunk.chunks_exact_mut(n * 4).enumerate() {
            let t = index * strips_per_task + k;
            // Row by row, so each column is still summed from 0.0 in row order.
            sums.fill(0.0);
            for r in 0..32 {
                add_row(&mut sums, input, (32 * t + r) * n, len);
            }
            for (slot, sum) in strip.as_chunks_mut::<4>().0.iter_mut().zip(&sums) {
                *slot = sum.to_le_bytes();
            }
        }
    });
    out
}

/// Adds the row of `sums.len()` f32s starting at element `start` of `input` (`len` whole
/// elements) to `sums`, an element past the end counting as 0.0.
fn add_row(sums: &mut [f32], input: &[u8], start: usize, len: usize) {
    let n = sums.len();
    if start + n <= len {
        let row = input[4 * start..4 * (start + n)].as_chunks::<4>().0;
        for (sum, x) in sums.iter_mut().zip(row) {
            *sum += f32::from_le_bytes(*x);
        }
    } else {
        for (c, sum) in sums.iter_mut().enumerate() {
            *sum += if start + c < len {
                f32_at(input, start + c)
            } else {
                0.0
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{awkward_floats, call, call_check, naive};
    use super::*;
    use kernelbook_core::expr::Expr;
    use kernelbook_core::spec::{BuiltinCheck, ElemType};

    #[test]
    fn column_sums_match_one_thread_in_row_order() {
        // 65 strips, 3 to a task; then 8 rows past the last strip; then a short input.
        for (n, missing) in [(2100usize, 0usize), (40, 0), (2100, 70_001)] {
            let mut input = awkward_floats(n * n - missing, 14);
            input.push(1);
            let floats = naive::floats(&input);
            let check = BuiltinCheck::ColumnSums {
                input: "in".into(),
                output: "out".into(),
                n: Expr::new(n.to_string()),
            };
            let want = naive::column_sums(&floats, n);
            assert!(
                call_check(&check, &[("in", &input)], ElemType::F32) == want,
                "n = {n}"
            );
            assert!(column_sums(&floats, n) == want, "n = {n}");
        }
    }

    #[test]
    fn through_the_trait_fewer_than_32_rows_sum_nothing() {
        let input = [0u8; 64];
        assert_eq!(
            call(NAME, &[(&input, ElemType::F32)], &[("n", 31)]),
            Ok(Vec::new())
        );
        assert_eq!(
            call(NAME, &[(&input, ElemType::F32)], &[("n", 0)]),
            Ok(Vec::new())
        );
    }
}
