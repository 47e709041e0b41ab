//! `reference = "fma_chains"`: `chains` independent FMA chains per element, `v_k = input[i] + k`,
//! then `rounds` times `v_k = fma(v_k, 0.9999, 0.0001)`, and `output[i] = Σ_k v_k` in order. Bit
//! for bit (a fused multiply-add rounds once everywhere), but sampled: the CPU cost is the
//! kernel's whole arithmetic.

use super::parallel::{f32_count, map_sampled_f32s};
use super::{Comparison, Reference, ReferenceCall, ReferenceError, sampled_stride};
use kernelbook_core::spec::CompareRule;
use std::collections::BTreeMap;

const NAME: &str = "fma_chains";

/// Every sampled element of the FMA-throughput kernel's output.
#[derive(Debug, Clone, Copy, Default)]
pub struct FmaChains;

impl Reference for FmaChains {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["count", "chains", "rounds"]
    }

    fn input_count(&self) -> usize {
        1
    }

    /// A missing `count` (the plan checks it is there) compares every element.
    fn comparison(&self, args: &BTreeMap<String, i64>) -> Comparison {
        Comparison {
            rule: CompareRule::Exact,
            sample_stride: args.get("count").map_or(1, |&count| sampled_stride(count)),
        }
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let count = call.size(NAME, "count")?;
        let (chains, rounds) = (call.size(NAME, "chains")?, call.size(NAME, "rounds")?);
        call.fits_output(NAME, 4 * f32_count(input, count))?;
        let stride = self.comparison(call.args).sample_stride;
        Ok(map_sampled_f32s(input, count, stride, |x| {
            fma_chains(x, chains, rounds)
        }))
    }
}

/// One element of the FMA-throughput kernel.
pub fn fma_chains(x: f32, chains: usize, rounds: usize) -> f32 {
    let mut sum = 0f32;
    let mut values: Vec<f32> = (0..chains).map(|k| x + k as f32).collect();
    for _ in 0..rounds {
        for v in &mut values {
            *v = v.mul_add(0.9999, 0.0001);
        }
    }
    for v in values {
        sum += v;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::super::testing::{awkward_floats, call_check, naive};
    use super::*;
    use kernelbook_core::expr::{Expr, Params};
    use kernelbook_core::spec::{BuiltinCheck, ElemType};

    #[test]
    fn fma_chains_follow_the_kernels_arithmetic() {
        // One chain, one round: fma(x + 0, 0.9999, 0.0001).
        assert_eq!(fma_chains(2.0, 1, 1), 2.0f32.mul_add(0.9999, 0.0001));
        // Two chains, no rounds: (x + 0) + (x + 1).
        assert_eq!(fma_chains(2.0, 2, 0), 5.0);
    }

    #[test]
    fn sampled_fma_chains_match_one_thread_and_leave_the_rest_zero() {
        let input = awkward_floats(790_000, 13);
        let floats = naive::floats(&input);
        // Strides 43 and 1 (a small count keeps every element), and a count past the input.
        for count in [700_001usize, 5_000, 900_000] {
            let check = BuiltinCheck::FmaChains {
                input: "in".into(),
                output: "out".into(),
                count: Expr::new(count.to_string()),
                chains: Expr::new("3"),
                rounds: Expr::new("5"),
            };
            let stride = check.sample_stride(&Params::new()).expect("stride");
            let want = naive::bytes(floats.iter().take(count).enumerate().map(|(i, &x)| {
                if i % stride == 0 {
                    fma_chains(x, 3, 5)
                } else {
                    0.0
                }
            }));
            assert!(
                call_check(&check, &[("in", &input)], ElemType::F32) == want,
                "count = {count}"
            );
        }
    }
}
