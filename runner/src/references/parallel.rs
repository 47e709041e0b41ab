//! Sharing a reference's work out over every core, and reading little-endian elements. Inputs
//! and references run to GiBs; one core would take seconds. Every helper here gives the same
//! bytes as one thread would, whatever the number of cores: tasks write disjoint chunks and
//! nothing is summed across them.

/// Elements per task of the references and comparisons that cost a few nanoseconds an element:
/// 1 MiB of f32s, so a GiB makes about a thousand tasks and a small buffer a single one.
pub(crate) const CHEAP_CHUNK: usize = 1 << 18;

/// Computed elements per task of a sampled reference (each one thousands of FMAs).
pub(crate) const SAMPLES_PER_TASK: usize = 256;

/// Calls `work(index, chunk)` for each `chunk_len`-long chunk of `out`, the chunks shared out
/// over every core. A buffer of one chunk is done on the calling thread, so small ones cost no
/// thread at all.
pub(crate) fn for_each_chunk<T: Send>(
    out: &mut [T],
    chunk_len: usize,
    work: impl Fn(usize, &mut [T]) + Sync,
) {
    let chunk_len = chunk_len.max(1);
    let threads = threads_for(out.len().div_ceil(chunk_len));
    if threads <= 1 {
        for (index, chunk) in out.chunks_mut(chunk_len).enumerate() {
            work(index, chunk);
        }
        return;
    }
    // Each thread takes the next chunk when it finishes one, so chunks of uneven cost (a
    // reference's last partial strip, a busy core) still keep every core busy to the end.
    let chunks = std::sync::Mutex::new(out.chunks_mut(chunk_len).enumerate());
    let run = || {
        // A poisoned lock means another worker panicked; the scope re-raises that panic.
        while let Some((index, chunk)) = chunks.lock().ok().and_then(|mut c| c.next()) {
            work(index, chunk);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(run);
        }
        run();
    });
}

/// How many threads `tasks` tasks are shared out over: every core, but no more than the tasks.
fn threads_for(tasks: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, tasks.max(1))
}

/// `work(range)` for each `chunk_len`-long range of `0..len`, shared out like
/// [`for_each_chunk`]; the results in range order.
pub(crate) fn map_ranges<R: Send>(
    len: usize,
    chunk_len: usize,
    work: impl Fn(std::ops::Range<usize>) -> R + Sync,
) -> Vec<R> {
    let chunk_len = chunk_len.max(1);
    let mut results: Vec<Option<R>> = (0..len.div_ceil(chunk_len)).map(|_| None).collect();
    for_each_chunk(&mut results, 1, |index, slot| {
        let start = index * chunk_len;
        slot[0] = Some(work(start..len.min(start + chunk_len)));
    });
    results.into_iter().flatten().collect()
}

/// How many whole f32s [`map_f32s`] and [`map_sampled_f32s`] write for `count` requested from
/// `input`: no more than the input holds.
pub(crate) fn f32_count(input: &[u8], count: usize) -> usize {
    count.min(input.len() / 4)
}

/// `f(i, x_i)` for the first `count` f32s `x_i` of `input` (fewer where it is shorter), as
/// little-endian bytes, `chunk` elements per task.
pub(crate) fn map_f32s(
    input: &[u8],
    count: usize,
    chunk: usize,
    f: impl Fn(usize, f32) -> f32 + Sync,
) -> Vec<u8> {
    let count = f32_count(input, count);
    let chunk = chunk.max(1);
    let mut out = vec![0u8; count * 4];
    for_each_chunk(&mut out, chunk.saturating_mul(4), |index, out| {
        let first = index * chunk;
        let input = input[4 * first..4 * first + out.len()].as_chunks::<4>().0;
        for (k, (slot, x)) in out.as_chunks_mut::<4>().0.iter_mut().zip(input).enumerate() {
            *slot = f(first + k, f32::from_le_bytes(*x)).to_le_bytes();
        }
    });
    out
}

/// Like [`map_f32s`] with `f(x_i)` for every `stride`-th element from 0 only; the others stay
/// 0.0 (all bits zero), as the sampled kernels' unchecked elements are.
pub(crate) fn map_sampled_f32s(
    input: &[u8],
    count: usize,
    stride: usize,
    f: impl Fn(f32) -> f32 + Sync,
) -> Vec<u8> {
    let count = f32_count(input, count);
    let stride = stride.max(1);
    let chunk = stride.saturating_mul(SAMPLES_PER_TASK);
    let mut out = vec![0u8; count * 4];
    for_each_chunk(&mut out, chunk.saturating_mul(4), |index, out| {
        let first = index * chunk;
        let end = first + out.len() / 4;
        for i in (first.next_multiple_of(stride)..end).step_by(stride) {
            let k = 4 * (i - first);
            out[k..k + 4].copy_from_slice(&f(f32_at(input, i)).to_le_bytes());
        }
    });
    out
}

/// The f32 stored little-endian at element `i` of `bytes`.
pub(crate) fn f32_at(bytes: &[u8], i: usize) -> f32 {
    let c = &bytes[4 * i..4 * i + 4];
    f32::from_le_bytes([c[0], c[1], c[2], c[3]])
}

/// The whole little-endian f32s of `bytes`.
pub(crate) fn f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// The whole little-endian u32s of `bytes`.
pub(crate) fn u32s(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}
