//! `reference = "shared_column_reads"`: the shared-memory column-read microbenchmark (u32,
//! wrapping). Block `b` stages `tile[i][j] = input[b * 1024 + 32 i + j]` and thread (x, y) of its
//! 32 × 8 threads writes `output[b * 256 + 32 y + x] = Σ_{r < reps} tile[x][(y + r) mod 32]`.

use super::parallel::{for_each_chunk, u32s};
use super::{Comparison, Reference, ReferenceCall, ReferenceError, product};
use std::collections::BTreeMap;

const NAME: &str = "shared_column_reads";

/// What the bank-conflict lab's kernels write, whatever their tile's padding.
#[derive(Debug, Clone, Copy, Default)]
pub struct SharedColumnReads;

impl Reference for SharedColumnReads {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["blocks", "reps"]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let (blocks, reps) = (call.size(NAME, "blocks")?, call.size(NAME, "reps")?);
        // Block b reads words b * 1024 onwards: those indices must be addressable.
        product(NAME, "blocks × 1024 words × 4 bytes", &[blocks, 1024, 4])?;
        call.fits_output(
            NAME,
            product(NAME, "blocks × 256 × 4 bytes", &[blocks, 256, 4])?,
        )?;
        let words: Vec<u32> = u32s(input).collect();
        Ok(shared_column_reads(&words, blocks, reps))
    }
}

/// The microbenchmark's output for `blocks` blocks. Thread (x, y) of block b adds
/// `tile[x][(y + r) mod 32]` for r below `reps`: that is `reps / 32` times row x's sum plus the
/// first `reps mod 32` terms, exactly, in wrapping arithmetic; so each output costs 32
/// additions, not `reps` (1024 in the lab, over 2 M outputs). A word past the input's end
/// counts as 0.
pub fn shared_column_reads(input: &[u32], blocks: usize, reps: usize) -> Vec<u8> {
    let mut out = vec![0u8; blocks * 256 * 4];
    let (laps, rest) = ((reps / 32) as u32, reps % 32);
    for_each_chunk(&mut out, 1024, |b, block| {
        let tile = |i: usize, j: usize| input.get(b * 1024 + 32 * i + j).copied().unwrap_or(0);
        for (slot, bytes) in block.chunks_exact_mut(4).enumerate() {
            let (y, x) = (slot / 32, slot % 32);
            let row = (0..32).fold(0u32, |acc, j| acc.wrapping_add(tile(x, j)));
            let sum = (0..rest).fold(row.wrapping_mul(laps), |acc, r| {
                acc.wrapping_add(tile(x, (y + r) % 32))
            });
            bytes.copy_from_slice(&sum.to_le_bytes());
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::call;
    use super::*;
    use kernelbook_core::spec::ElemType;

    fn u32s_of(bytes: &[u8]) -> Vec<u32> {
        u32s(bytes).collect()
    }

    #[test]
    fn shared_column_reads_agree_with_adding_every_rep() {
        let mut rng = fastrand::Rng::with_seed(7);
        let input: Vec<u32> = (0..3 * 1024).map(|_| rng.u32(..)).collect();
        for reps in [0, 1, 31, 32, 33, 100, 1024] {
            let naive: Vec<u32> = (0..3)
                .flat_map(|b| (0..256).map(move |slot| (b, slot / 32, slot % 32)))
                .map(|(b, y, x)| {
                    (0..reps).fold(0u32, |acc, r| {
                        acc.wrapping_add(input[b * 1024 + 32 * x + (y + r) % 32])
                    })
                })
                .collect();
            assert_eq!(
                u32s_of(&shared_column_reads(&input, 3, reps)),
                naive,
                "reps = {reps}"
            );
        }
    }

    #[test]
    fn shared_column_reads_sum_down_a_column_of_each_tile() {
        // One block, tile[i][j] = 32 i + j; thread (x, y) adds tile[x][(y + r) mod 32].
        let input: Vec<u32> = (0..1024).collect();
        let out = u32s_of(&shared_column_reads(&input, 1, 2));
        // x = 3, y = 0: tile[3][0] + tile[3][1] = 96 + 97.
        assert_eq!(out[3], 193);
        // x = 0, y = 7 (index 7 * 32): tile[0][7] + tile[0][8].
        assert_eq!(out[7 * 32], 15);
        // 32 reps visit the whole row whatever y is: 32 * 5 + (0 + ... + 31).
        let full = u32s_of(&shared_column_reads(&input, 1, 32));
        assert!(
            full.iter()
                .skip(5)
                .step_by(32)
                .all(|v| *v == 32 * 32 * 5 + 496)
        );
    }

    #[test]
    fn through_the_trait_the_input_is_read_as_u32s() {
        let words: Vec<u32> = (0..2 * 1024).map(|i| i * 7).collect();
        let bytes: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        let out = call(
            NAME,
            &[(&bytes, ElemType::U32)],
            &[("blocks", 2), ("reps", 40)],
        );
        assert_eq!(out, Ok(shared_column_reads(&words, 2, 40)));
    }
}
