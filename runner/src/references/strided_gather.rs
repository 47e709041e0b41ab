//! `reference = "strided_gather"`: `output[i] = input[i * stride]` for `i < count`, bit for bit;
//! a read past the input's end wraps to its start, as the strided sweep's kernel does.

use super::parallel::{CHEAP_CHUNK, for_each_chunk};
use super::{Comparison, Reference, ReferenceCall, ReferenceError, product};
use std::collections::BTreeMap;

const NAME: &str = "strided_gather";

/// Every `stride`-th element of the input, of the input's element type.
#[derive(Debug, Clone, Copy, Default)]
pub struct StridedGather;

impl Reference for StridedGather {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["count", "stride"]
    }

    fn input_count(&self) -> usize {
        1
    }

    fn comparison(&self, _: &BTreeMap<String, i64>) -> Comparison {
        Comparison::EXACT
    }

    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError> {
        let input = call.input(NAME, 0)?;
        let size = call.input_elem(NAME, 0)?.size();
        let (count, stride) = (call.size(NAME, "count")?, call.size(NAME, "stride")?);
        call.fits_output(NAME, product(NAME, "count × element size", &[count, size])?)?;
        // The furthest element read, `(count - 1) * stride`, must be addressable too.
        product(
            NAME,
            "count × stride × element size",
            &[count, stride, size],
        )?;
        Ok(strided_gather(input, count, stride, size))
    }
}

/// `out[i] = input[i * stride]` for `i < count`, an index past the input's end taken modulo its
/// length (the strided sweep's kernel masks it to a power-of-two input, so that its largest
/// strides need no larger buffer).
pub fn strided_gather(input: &[u8], count: usize, stride: usize, size: usize) -> Vec<u8> {
    let mut out = vec![0u8; count * size];
    for_each_chunk(&mut out, CHEAP_CHUNK * size, |index, chunk| {
        let first = index * CHEAP_CHUNK;
        match size {
            4 => gather(chunk.as_chunks_mut::<4>().0, input, first, stride),
            8 => gather(chunk.as_chunks_mut::<8>().0, input, first, stride),
            _ => {
                let elements = input.len() / size;
                for (k, slot) in chunk.chunks_mut(size).enumerate() {
                    let from = wrapped((first + k) * stride, elements) * size;
                    if let Some(element) = input.get(from..from + size) {
                        slot.copy_from_slice(element);
                    }
                }
            }
        }
    });
    out
}

/// [`strided_gather`] into `out`, whose first slot is element `first`; elements of a size known
/// at compile time copy as one load and store rather than a `memcpy` call each.
fn gather<const N: usize>(out: &mut [[u8; N]], input: &[u8], first: usize, stride: usize) {
    let elements = input.len() / N;
    for (k, slot) in out.iter_mut().enumerate() {
        let from = wrapped((first + k) * stride, elements) * N;
        if let Some(element) = input.get(from..from + N) {
            slot.copy_from_slice(element);
        }
    }
}

/// `index` modulo `elements`: the element a read past the input's end wraps to.
fn wrapped(index: usize, elements: usize) -> usize {
    if index < elements {
        index
    } else {
        index.checked_rem(elements).unwrap_or(index)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{awkward_floats, call, f32_bytes, naive};
    use super::*;
    use kernelbook_core::spec::ElemType;

    #[test]
    fn strided_gather_takes_every_stride_th_element() {
        let input = f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(strided_gather(&input, 3, 3, 4), f32_bytes(&[0.0, 3.0, 6.0]));
        assert_eq!(strided_gather(&input, 2, 4, 4), f32_bytes(&[0.0, 4.0]));
    }

    #[test]
    fn reads_past_the_input_end_wrap_to_its_start() {
        let input = f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        // Elements 0, 4, 8 → 0, 12 → 4: the kernel's `& (len - 1)` on a power-of-two input.
        assert_eq!(
            strided_gather(&input, 4, 4, 4),
            f32_bytes(&[0.0, 4.0, 0.0, 4.0])
        );
        let odd: Vec<u8> = (0u8..30).collect();
        assert_eq!(
            strided_gather(&odd, 3, 2, 5),
            [0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 20, 21, 22, 23, 24]
        );
        assert_eq!(strided_gather(&odd, 3, 4, 5)[10..], [10, 11, 12, 13, 14]);
    }

    #[test]
    fn strided_gather_matches_one_thread_past_the_input_end() {
        let input = awkward_floats(1_000_000, 16);
        for (count, stride, size) in [(2 * CHEAP_CHUNK + 77, 3, 4), (CHEAP_CHUNK + 5, 2, 8)] {
            assert!(
                strided_gather(&input, count, stride, size)
                    == naive::strided_gather(&input, count, stride, size),
                "count = {count}"
            );
        }
    }

    #[test]
    fn through_the_trait_the_element_size_is_the_inputs() {
        let input: Vec<u8> = (0u64..10).flat_map(u64::to_le_bytes).collect();
        let args = [("count", 3), ("stride", 4)];
        let want: Vec<u8> = [0u64, 4, 8].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(call(NAME, &[(&input, ElemType::U64)], &args), Ok(want));
        let as_u32 = call(NAME, &[(&input, ElemType::U32)], &args).expect("u32s");
        assert_eq!(as_u32, naive::strided_gather(&input, 3, 4, 4));
    }
}
