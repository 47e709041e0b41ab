//! `reference = "bias_gelu_dropout"`: `output = dropout(gelu(input + bias))` over a rows × cols
//! f32 matrix, bias per column, GELU in its tanh form, an element dropped when
//! `dropout_hash(seed, i) < threshold` and the rest scaled by 2^32 / (2^32 − threshold). Within
//! a tolerance: the GPU's `tanhf` rounds differently from the f64 computed here.

use super::parallel::{COSTLY_CHUNK, f32_count, f32s, map_f32s};
use super::{Comparison, Reference, ReferenceCall, ReferenceError};
use kernelbook_core::spec::CompareRule;
use kernelbook_core::spec::dropout_hash;
use std::collections::BTreeMap;

const NAME: &str = "bias_gelu_dropout";

/// The fusion lab's pipeline, fused or not: inputs `[input, bias]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BiasGeluDropout;

impl Reference for BiasGeluDropout {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["rows", "cols", "threshold", "seed"]
    }

    fn input_count(&self) -> usize {
        2
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison {
            rule: CompareRule::Close {
                rtol: 1e-5,
                atol: 1e-6,
            },
            sample_stride: 1,
        }
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let (input, bias) = (call.input(NAME, 0)?, call.input(NAME, 1)?);
        let (rows, cols) = (call.size(NAME, "rows")?, call.size(NAME, "cols")?);
        let threshold = call.u32_arg(NAME, "threshold")?;
        // The kernel's u32 seed: any integer, its low 32 bits, as a kernel argument gets it.
        let seed = call.arg(NAME, "seed")? as u32;
        // Saturating: the count is capped by the input's length anyway.
        let count = rows.saturating_mul(cols);
        call.fits_output(NAME, 4 * f32_count(input, count))?;
        let bias: Vec<f32> = f32s(bias).collect();
        Ok(map_f32s(input, count, COSTLY_CHUNK, |i, x| {
            // A bias shorter than a row: the columns past it add 0.0.
            let b = bias.get(i % cols.max(1)).copied().unwrap_or(0.0);
            bias_gelu_dropout(x, b, i as u32, threshold, seed)
        }))
    }
}

/// GELU in its tanh form, then dropout, for one element.
pub fn bias_gelu_dropout(x: f32, bias: f32, index: u32, threshold: u32, seed: u32) -> f32 {
    let v = f64::from(x + bias);
    let gelu =
        0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh());
    if dropout_hash(seed, index) < threshold {
        0.0
    } else {
        (gelu * (4_294_967_296.0 / (4_294_967_296.0 - f64::from(threshold)))) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::super::parallel::CHEAP_CHUNK;
    use super::super::testing::{awkward_floats, call, call_check, naive};
    use super::*;
    use kernelbook_core::expr::Expr;
    use kernelbook_core::spec::{BuiltinCheck, ElemType};

    #[test]
    fn gelu_dropout_drops_by_hash_and_scales_the_rest() {
        // GELU(0) = 0, and GELU(x) approaches x for large x.
        assert_eq!(bias_gelu_dropout(0.0, 0.0, 0, 0, 1), 0.0);
        assert!((bias_gelu_dropout(5.0, 0.0, 0, 0, 1) - 5.0).abs() < 1e-3);
        // With threshold 2^31 about half the elements are dropped, the rest doubled.
        let threshold = 1u32 << 31;
        let dropped = (0..10_000u32)
            .filter(|&i| bias_gelu_dropout(5.0, 0.0, i, threshold, 9) == 0.0)
            .count();
        assert!((4_500..5_500).contains(&dropped), "{dropped} dropped");
        let kept = (0..100u32)
            .find(|&i| dropout_hash(9, i) >= threshold)
            .expect("a kept element");
        assert!((bias_gelu_dropout(5.0, 0.0, kept, threshold, 9) - 10.0).abs() < 2e-3);
    }

    #[test]
    fn bias_gelu_dropout_matches_one_thread_across_chunks() {
        let mut input = awkward_floats(3 * CHEAP_CHUNK + 1234, 11);
        input.extend_from_slice(&[7, 9]);
        let floats = naive::floats(&input);
        // A bias shorter than a row: the columns past it add 0.0.
        let bias = awkward_floats(4000, 12);
        let bias_floats = naive::floats(&bias);
        for rows in [37, 200] {
            let cols = 5000;
            let check = BuiltinCheck::BiasGeluDropout {
                input: "in".into(),
                bias: "bias".into(),
                output: "out".into(),
                rows: Expr::new(rows.to_string()),
                cols: Expr::new(cols.to_string()),
                threshold: Expr::new("2147483648"),
                seed: Expr::new("9"),
            };
            let want = naive::bytes(floats.iter().take(rows * cols).enumerate().map(|(i, &x)| {
                let b = bias_floats.get(i % cols).copied().unwrap_or(0.0);
                bias_gelu_dropout(x, b, i as u32, 1 << 31, 9)
            }));
            let got = call_check(&check, &[("in", &input), ("bias", &bias)], ElemType::F32);
            assert_eq!(got.len(), want.len(), "rows = {rows}");
            assert!(got == want, "rows = {rows}");
        }
    }

    #[test]
    fn through_the_trait_the_threshold_must_be_a_u32_and_the_bias_is_needed() {
        let x = naive::bytes([0.5f32, -0.5].into_iter());
        let args = |threshold| {
            [
                ("rows", 1),
                ("cols", 2),
                ("threshold", threshold),
                ("seed", -1),
            ]
        };
        let both = [(x.as_slice(), ElemType::F32), (x.as_slice(), ElemType::F32)];
        let want = naive::bytes(
            [(0.5f32, 0u32), (-0.5, 1)]
                .into_iter()
                .map(|(v, i)| bias_gelu_dropout(v, v, i, 7, u32::MAX)),
        );
        assert_eq!(call(NAME, &both, &args(7)), Ok(want));
        let too_big = call(NAME, &both, &args(1 << 32)).expect_err("past u32");
        assert!(
            too_big.to_string().contains("`threshold` is 4294967296"),
            "{too_big}"
        );
        let missing = call(NAME, &both[..1], &args(7)).expect_err("no bias");
        assert!(matches!(
            missing,
            ReferenceError::MissingInput {
                needed: 2,
                given: 1,
                ..
            }
        ));
    }
}
