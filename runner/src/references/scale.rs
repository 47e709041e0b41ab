//! `reference = "scale"`: `output[i] = factor * input[i]` (f32): one IEEE multiply, so bit for
//! bit.

use super::parallel::{CHEAP_CHUNK, f32_count, map_f32s};
use super::{Comparison, Reference, ReferenceCall, ReferenceError};
use std::collections::BTreeMap;

const NAME: &str = "scale";

/// Every f32 of the input times an integer factor.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scale;

impl Reference for Scale {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["factor"]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        // The factor is a value, not a size: any integer, rounded to the f32 the kernel gets.
        let factor = call.arg(NAME, "factor")? as f32;
        call.fits_output(NAME, 4 * f32_count(input, usize::MAX))?;
        Ok(map_f32s(input, usize::MAX, CHEAP_CHUNK, |_, x| factor * x))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{awkward_floats, call, call_check, f32_bytes, naive};
    use super::*;
    use kernelbook_core::expr::Expr;
    use kernelbook_core::spec::{BuiltinCheck, ElemType};

    #[test]
    fn scales_are_exact() {
        let floats = f32_bytes(&[1.5, -2.25]);
        let out = call(NAME, &[(&floats, ElemType::F32)], &[("factor", 3)]);
        assert_eq!(out, Ok(f32_bytes(&[4.5, -6.75])));
        let out = call(NAME, &[(&floats, ElemType::F32)], &[("factor", -2)]);
        assert_eq!(out, Ok(f32_bytes(&[-3.0, 4.5])));
    }

    #[test]
    fn scale_matches_one_thread_across_chunks() {
        // Several tasks, a partial last one, and two stray bytes at the end (not written).
        let mut input = awkward_floats(3 * CHEAP_CHUNK + 1234, 11);
        input.extend_from_slice(&[7, 9]);
        let floats = naive::floats(&input);
        let scale = BuiltinCheck::Scale {
            input: "in".into(),
            output: "out".into(),
            factor: Expr::new("3"),
        };
        let want = naive::bytes(floats.iter().map(|x| 3.0 * x));
        assert!(call_check(&scale, &[("in", &input)], ElemType::F32) == want);
    }
}
