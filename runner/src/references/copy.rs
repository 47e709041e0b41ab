//! `reference = "copy"`: the output is the input, bit for bit.

use super::parallel::{CHEAP_CHUNK, for_each_chunk};
use super::{Comparison, Reference, ReferenceCall, ReferenceError};
use std::collections::BTreeMap;

const NAME: &str = "copy";

/// The output equals the input: device copies, host-device copies and the course's copy
/// kernels.
#[derive(Debug, Clone, Copy, Default)]
pub struct Copy;

impl Reference for Copy {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        call.fits_output(NAME, input.len())?;
        Ok(copy_of(input))
    }
}

/// A copy of `input`, written by every core: one core copies a GiB (and takes its page faults)
/// in about a fifth of a second.
pub fn copy_of(input: &[u8]) -> Vec<u8> {
    const CHUNK_BYTES: usize = 4 * CHEAP_CHUNK;
    let mut out = vec![0u8; input.len()];
    for_each_chunk(&mut out, CHUNK_BYTES, |index, out| {
        let first = index * CHUNK_BYTES;
        out.copy_from_slice(&input[first..first + out.len()]);
    });
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{awkward_floats, call};
    use super::super::{ReferenceError, find};
    use super::*;
    use kernelbook_core::spec::ElemType;

    #[test]
    fn copies_every_byte_across_chunks() {
        // Several tasks, a partial last one, and two stray bytes at the end.
        let mut input = awkward_floats(3 * CHEAP_CHUNK + 1234, 11);
        input.extend_from_slice(&[7, 9]);
        assert!(call(NAME, &[(&input, ElemType::F32)], &[]).expect("copy") == input);
        assert!(copy_of(&input) == input);
    }

    #[test]
    fn through_the_trait_a_copy_needs_its_input_and_room_for_it() {
        let copy = find(NAME).expect("registered");
        let args = BTreeMap::new();
        let input = [1u8; 16];
        let mut call = ReferenceCall {
            inputs: Vec::new(),
            args: &args,
            output_elem: ElemType::F32,
            output_len: 4,
        };
        let missing = copy.expected(&call).expect_err("no input");
        assert_eq!(
            missing.to_string(),
            "reference `copy` reads 1 input buffer(s); the check gives 0"
        );
        call.inputs.push(super::super::HostBuffer {
            name: "src",
            elem: ElemType::F32,
            bytes: &input,
        });
        assert_eq!(copy.expected(&call), Ok(input.to_vec()));
        call.output_len = 3;
        assert!(matches!(
            copy.expected(&call),
            Err(ReferenceError::ShapeMismatch {
                expected: 16,
                available: 12,
                ..
            })
        ));
        assert_eq!(copy.comparison(&args), Comparison::EXACT);
    }
}
