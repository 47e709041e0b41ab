//! `reference = "register_pressure"`: the register-pressure kernel (f32), 64 accumulators per
//! element, `iters` rounds of `acc[k] = fma(acc[k], 0.999, 0.001 * acc[(k + 7) mod 64])` in
//! order, then their sum. Sampled, and within a tolerance: the CPU cost is the kernel's whole
//! arithmetic, and a compiler may fuse the `0.001 *` into the FMA differently.

use super::parallel::{f32_count, map_sampled_f32s};
use super::{Comparison, Reference, ReferenceCall, ReferenceError, sampled_stride};
use kernelbook_core::spec::CompareRule;
use std::collections::BTreeMap;

const NAME: &str = "register_pressure";

/// Every sampled element of the register-pressure kernel's output.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegisterPressure;

impl Reference for RegisterPressure {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["count", "iters"]
    }

    fn input_count(&self) -> usize {
        1
    }

    /// A missing `count` (the plan checks it is there) compares every element.
    fn comparison(&self, args: &BTreeMap<String, i64>) -> Comparison {
        Comparison {
            rule: CompareRule::Close {
                rtol: 1e-5,
                atol: 1e-6,
            },
            sample_stride: args.get("count").map_or(1, |&count| sampled_stride(count)),
        }
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let (count, iters) = (call.size(NAME, "count")?, call.size(NAME, "iters")?);
        call.fits_output(NAME, 4 * f32_count(input, count))?;
        let stride = self.comparison(call.args).sample_stride;
        Ok(map_sampled_f32s(input, count, stride, |x| {
            register_pressure(x, iters)
        }))
    }
}

/// One element of the register-pressure kernel.
pub fn register_pressure(x: f32, iters: usize) -> f32 {
    const K: usize = 64;
    let mut acc = [0f32; K];
    for (k, slot) in acc.iter_mut().enumerate() {
        *slot = x + k as f32;
    }
    for _ in 0..iters {
        for k in 0..K {
            acc[k] = acc[k].mul_add(0.999, 0.001 * acc[(k + 7) % K]);
        }
    }
    acc.iter().fold(0.0, |sum, v| sum + v)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{awkward_floats, call_check, naive};
    use super::*;
    use kernelbook_core::expr::{Expr, Params};
    use kernelbook_core::spec::{BuiltinCheck, ElemType};

    #[test]
    fn no_iterations_sum_x_plus_k() {
        assert_eq!(register_pressure(0.0, 0), (0..64).sum::<i32>() as f32);
    }

    #[test]
    fn sampled_register_pressure_matches_one_thread_and_leaves_the_rest_zero() {
        let input = awkward_floats(790_000, 13);
        let floats = naive::floats(&input);
        // Strides 43 and 1 (a small count keeps every element), and a count past the input.
        for count in [700_001usize, 5_000, 900_000] {
            let check = BuiltinCheck::RegisterPressure {
                input: "in".into(),
                output: "out".into(),
                count: Expr::new(count.to_string()),
                iters: Expr::new("2"),
            };
            let stride = check.sample_stride(&Params::new()).expect("stride");
            let want = naive::bytes(floats.iter().take(count).enumerate().map(|(i, &x)| {
                if i % stride == 0 {
                    register_pressure(x, 2)
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
