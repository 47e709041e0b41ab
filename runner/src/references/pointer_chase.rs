//! `reference = "pointer_chase"`: a pointer chase over `nodes` slots `spacing` u32 apart, visited
//! in the order of [`chase_slot`]; after `warm` warm-up steps and `steps` more, `output[0]` is
//! the u32 index reached. It reads no input: the chain is built on the device by a setup kernel.

use super::{Comparison, Reference, ReferenceCall, ReferenceError, product};
use kernelbook_core::spec::chase_slot;
use std::collections::BTreeMap;

const NAME: &str = "pointer_chase";

/// The index a chase ends on, one u32.
#[derive(Debug, Clone, Copy, Default)]
pub struct PointerChase;

impl Reference for PointerChase {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["nodes", "spacing", "warm", "steps"]
    }

    fn input_count(&self) -> usize {
        0
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let (nodes, spacing) = (call.size(NAME, "nodes")?, call.size(NAME, "spacing")?);
        // The chain spans nodes × spacing words: every index in it must be computable.
        product(NAME, "nodes × spacing", &[nodes, spacing])?;
        // Each is at most i64::MAX, so their sum fits a u64.
        let steps = call.size(NAME, "warm")? as u64 + call.size(NAME, "steps")? as u64;
        call.fits_output(NAME, 4)?;
        let index = pointer_chase_end(nodes as u64, spacing as u64, steps);
        // The kernel stores a u32 index; the chain's u32 words hold no larger one.
        Ok((index as u32).to_le_bytes().to_vec())
    }
}

/// The index a pointer chase reaches after `steps` steps from the first slot of its lap (see
/// [`chase_slot`]).
pub fn pointer_chase_end(nodes: u64, spacing: u64, steps: u64) -> u64 {
    if nodes == 0 {
        return 0;
    }
    chase_slot(steps % nodes, nodes) * spacing
}

#[cfg(test)]
mod tests {
    use super::super::testing::call;
    use super::*;

    #[test]
    fn the_chase_reference_follows_the_chain_the_gpu_builds() {
        for nodes in [1u64, 2, 64, 1024] {
            let spacing = 32;
            // What chase_init writes: slot k of the lap points at slot k + 1.
            let mut chain = vec![0u64; (nodes * spacing) as usize];
            for k in 0..nodes {
                let from = chase_slot(k, nodes);
                let to = chase_slot((k + 1) % nodes, nodes);
                chain[(from * spacing) as usize] = to * spacing;
            }
            let mut p = 0u64;
            for _ in 0..(nodes + 100) {
                p = chain[p as usize];
            }
            assert_eq!(
                p,
                pointer_chase_end(nodes, spacing, nodes + 100),
                "nodes = {nodes}"
            );
        }
    }

    #[test]
    fn the_chase_order_is_a_permutation_that_scatters_neighbours() {
        for nodes in [2u64, 8, 4096, 1 << 16] {
            let mut seen = vec![false; nodes as usize];
            for k in 0..nodes {
                let slot = chase_slot(k, nodes);
                assert!(
                    !seen[slot as usize],
                    "slot {slot} visited twice for {nodes} nodes"
                );
                seen[slot as usize] = true;
            }
        }
        // Consecutive steps rarely land on neighbouring slots.
        let nodes = 1u64 << 16;
        let near = (0..nodes - 1)
            .filter(|&k| chase_slot(k, nodes).abs_diff(chase_slot(k + 1, nodes)) <= 1)
            .count();
        assert!(near < 64, "{near} neighbouring steps");
    }

    #[test]
    fn through_the_trait_warm_up_and_timed_steps_add_up() {
        let args = |warm, steps| {
            [
                ("nodes", 64),
                ("spacing", 32),
                ("warm", warm),
                ("steps", steps),
            ]
        };
        let want = (pointer_chase_end(64, 32, 164) as u32)
            .to_le_bytes()
            .to_vec();
        assert_eq!(call(NAME, &[], &args(64, 100)), Ok(want.clone()));
        assert_eq!(call(NAME, &[], &args(0, 164)), Ok(want));
        // No nodes: the chase never leaves index 0.
        let none = [("nodes", 0), ("spacing", 32), ("warm", 5), ("steps", 5)];
        assert_eq!(call(NAME, &[], &none), Ok(vec![0; 4]));
    }
}
