//! `reference = "wrapping_sum"`: `output[0]` = `times` × (Σ input[0..count]), u32 wrapping: the
//! bandwidth sweep's kernels read their working set `times` times and must still add it up.

use super::parallel::u32s;
use super::{Comparison, Reference, ReferenceCall, ReferenceError};
use std::collections::BTreeMap;

const NAME: &str = "wrapping_sum";

/// One u32: a wrapping sum of the first `count` words, times `times`.
#[derive(Debug, Clone, Copy, Default)]
pub struct WrappingSum;

impl Reference for WrappingSum {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["count", "times"]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let (count, times) = (call.size(NAME, "count")?, call.size(NAME, "times")?);
        call.fits_output(NAME, 4)?;
        Ok(wrapping_sum(input, count, times).to_le_bytes().to_vec())
    }
}

/// `times` × the wrapping sum of the first `count` u32s of `input` (fewer where it is shorter).
/// Only `times` mod 2^32 matters in wrapping arithmetic, so it is truncated to a u32.
pub fn wrapping_sum(input: &[u8], count: usize, times: usize) -> u32 {
    let sum = u32s(input).take(count).fold(0u32, u32::wrapping_add);
    sum.wrapping_mul(times as u32)
}

#[cfg(test)]
mod tests {
    use super::super::testing::call;
    use super::*;
    use kernelbook_core::spec::ElemType;

    #[test]
    fn wrapping_sums_are_exact() {
        let input: Vec<u8> = [u32::MAX, 2, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let out = call(
            NAME,
            &[(&input, ElemType::U32)],
            &[("count", 3), ("times", 3)],
        );
        // (2^32 - 1 + 2 + 3) * 3 mod 2^32 = 12.
        assert_eq!(out, Ok(12u32.to_le_bytes().to_vec()));
        // A count past the input adds what there is; 2^32 + 1 times is once.
        let out = call(
            NAME,
            &[(&input, ElemType::U32)],
            &[("count", 10), ("times", (1 << 32) + 1)],
        );
        assert_eq!(out, Ok(4u32.to_le_bytes().to_vec()));
    }
}
