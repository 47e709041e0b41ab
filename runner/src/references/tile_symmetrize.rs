//! `reference = "tile_symmetrize"`: each `tile` × `tile` block of an n × n f32 matrix plus its
//! own transpose, `output[r][c] = input[r][c] + input[r0 + (c - c0)][c0 + (r - r0)]` for the
//! block at (r0, c0); one add, so bit for bit.

use super::parallel::{f32_at, f32s, for_each_chunk};
use super::{Comparison, Reference, ReferenceCall, ReferenceError, product};
use std::collections::BTreeMap;

const NAME: &str = "tile_symmetrize";

/// What the tile-sizing lab's kernels write, for every tile size it sweeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct TileSymmetrize;

impl Reference for TileSymmetrize {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["n", "tile"]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let (n, tile) = (call.size(NAME, "n")?, call.size(NAME, "tile")?);
        call.fits_output(NAME, product(NAME, "n × n × 4 bytes", &[n, n, 4])?)?;
        Ok(tile_symmetrize_bytes(input, n, tile))
    }
}

/// Every `tile` × `tile` block of an n × n matrix plus its own transpose; rows or columns past
/// the last whole block are left zero, and so is everything for no tile or a short input.
pub fn tile_symmetrize(input: &[f32], n: usize, tile: usize) -> Vec<f32> {
    let input: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    f32s(&tile_symmetrize_bytes(&input, n, tile)).collect()
}

/// [`tile_symmetrize`] from and to little-endian bytes.
fn tile_symmetrize_bytes(input: &[u8], n: usize, tile: usize) -> Vec<u8> {
    let mut out = vec![0u8; n * n * 4];
    if tile == 0 || input.len() / 4 < n * n {
        return out;
    }
    let blocks = n / tile;
    // Each task writes one strip of `tile` whole rows.
    for_each_chunk(&mut out, tile * n * 4, |br, strip| {
        if br >= blocks {
            return;
        }
        let r0 = br * tile;
        for bc in 0..blocks {
            let c0 = bc * tile;
            for r in 0..tile {
                let from = 4 * ((r0 + r) * n + c0);
                let own = input[from..from + 4 * tile].as_chunks::<4>().0;
                let row = &mut strip[4 * (r * n + c0)..4 * (r * n + c0 + tile)];
                for (c, (slot, own)) in row.as_chunks_mut::<4>().0.iter_mut().zip(own).enumerate() {
                    let mirrored = f32_at(input, (r0 + c) * n + c0 + r);
                    *slot = (f32::from_le_bytes(*own) + mirrored).to_le_bytes();
                }
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{awkward_floats, call_check, naive};
    use super::*;
    use kernelbook_core::expr::Expr;
    use kernelbook_core::spec::{BuiltinCheck, ElemType};

    #[test]
    fn tile_symmetrize_adds_each_block_to_its_own_transpose() {
        // A 4 × 4 matrix in 2 × 2 blocks: block (0, 1) holds 2, 3 / 6, 7.
        let input: Vec<f32> = (0..16).map(|v| v as f32).collect();
        let out = tile_symmetrize(&input, 4, 2);
        assert_eq!(&out[2..4], &[2.0 + 2.0, 3.0 + 6.0]);
        assert_eq!(&out[6..8], &[6.0 + 3.0, 7.0 + 7.0]);
        // A block's diagonal doubles.
        assert_eq!(out[0], 0.0);
        assert_eq!(out[5], 10.0);
    }

    #[test]
    fn tile_symmetrize_matches_one_thread_for_whole_and_partial_blocks() {
        let n = 1000;
        let input = awkward_floats(n * n, 15);
        let floats = naive::floats(&input);
        // 20 blocks and 40 rows and columns left zero; one block; no tile; a short input.
        for (tile, len) in [(48, n * n), (1000, n * n), (0, n * n), (48, n * n - 1)] {
            let check = BuiltinCheck::TileSymmetrize {
                input: "in".into(),
                output: "out".into(),
                n: Expr::new(n.to_string()),
                tile: Expr::new(tile.to_string()),
            };
            let want = naive::tile_symmetrize(&floats[..len], n, tile);
            let got = call_check(&check, &[("in", &input[..4 * len])], ElemType::F32);
            assert!(got == naive::bytes(want.iter().copied()), "tile = {tile}");
            let got = tile_symmetrize(&floats[..len], n, tile);
            assert!(naive::bytes(got.into_iter()) == naive::bytes(want.into_iter()));
        }
    }
}
