//! What a lab's buffers start as.

use super::POISON_BYTE;
use super::parallel::for_each_chunk;
use kernelbook_core::spec::{ElemType, Fill};

/// A buffer's initial contents (little-endian elements). Random contents depend only on the
/// seed drawn from `rng`, not on how many threads generate them.
pub fn initial_contents(
    fill: Fill,
    elem: ElemType,
    len: usize,
    rng: &mut fastrand::Rng,
) -> Vec<u8> {
    match fill {
        Fill::Zero => vec![0; len * elem.size()],
        Fill::Poison => vec![POISON_BYTE; len * elem.size()],
        Fill::Random => {
            let mut out = vec![0u8; len * elem.size()];
            fill_random(&mut out, elem, rng.u64(..));
            out
        }
    }
}

/// Fills `out` with random elements, 2^20 elements per chunk, each chunk from its own generator
/// seeded by `seed` and the chunk's index, the chunks shared out over every core: a lab's inputs
/// run to GiBs, and one thread makes about half a GiB a second.
fn fill_random(out: &mut [u8], elem: ElemType, seed: u64) {
    const CHUNK_ELEMENTS: usize = 1 << 20;
    for_each_chunk(out, CHUNK_ELEMENTS * elem.size(), |index, chunk| {
        let chunk_seed = seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        fill_chunk(chunk, elem, &mut fastrand::Rng::with_seed(chunk_seed));
    });
}

/// Floats uniform in [-1, 1), integers any bit pattern.
fn fill_chunk(chunk: &mut [u8], elem: ElemType, rng: &mut fastrand::Rng) {
    match elem {
        ElemType::F32 => {
            for slot in chunk.chunks_exact_mut(4) {
                slot.copy_from_slice(&(rng.f32() * 2.0 - 1.0).to_le_bytes());
            }
        }
        ElemType::F64 => {
            for slot in chunk.chunks_exact_mut(8) {
                slot.copy_from_slice(&(rng.f64() * 2.0 - 1.0).to_le_bytes());
            }
        }
        ElemType::I32 | ElemType::U32 => {
            for slot in chunk.chunks_exact_mut(4) {
                slot.copy_from_slice(&rng.u32(..).to_le_bytes());
            }
        }
        ElemType::U64 => {
            for slot in chunk.chunks_exact_mut(8) {
                slot.copy_from_slice(&rng.u64(..).to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(elem: ElemType, len: usize, seed: u64) -> Vec<u8> {
        initial_contents(Fill::Random, elem, len, &mut fastrand::Rng::with_seed(seed))
    }

    #[test]
    fn random_inputs_are_fresh_per_seed_and_in_range() {
        let a = random(ElemType::F32, 1000, 1);
        let b = random(ElemType::F32, 1000, 2);
        assert_ne!(a, b);
        assert!(a.chunks(4).all(|c| {
            let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            (-1.0..1.0).contains(&v)
        }));
        let poison = initial_contents(
            Fill::Poison,
            ElemType::F32,
            2,
            &mut fastrand::Rng::with_seed(1),
        );
        assert!(f32::from_le_bytes([poison[0], poison[1], poison[2], poison[3]]).is_nan());
    }

    #[test]
    fn random_inputs_are_reproducible_from_the_seed_across_chunks() {
        // Three and a half 2^20-element chunks, generated twice from the same seed.
        let len = (7 << 20) / 2;
        let a = random(ElemType::U32, len, 5);
        let b = random(ElemType::U32, len, 5);
        assert_eq!(a.len(), len * 4);
        assert!(a == b, "same seed, same input");
        // Chunks have generators of their own: the second chunk does not repeat the first.
        let chunk = (1 << 20) * 4;
        assert_ne!(a[..64], a[chunk..chunk + 64]);
    }

    /// Pins today's generator: the lab plan's cache key promises the same inputs for the same
    /// seed, so a change here must be a deliberate one.
    #[test]
    fn random_inputs_are_the_same_bytes_as_before_the_split() {
        let bytes = random(ElemType::U32, 4, 42);
        let mut rng = fastrand::Rng::with_seed(42);
        let mut chunk_rng = fastrand::Rng::with_seed(rng.u64(..));
        let want: Vec<u8> = (0..4)
            .flat_map(|_| chunk_rng.u32(..).to_le_bytes())
            .collect();
        assert_eq!(bytes, want);
        assert_eq!(
            initial_contents(Fill::Zero, ElemType::U64, 3, &mut rng),
            vec![0; 24]
        );
    }
}
