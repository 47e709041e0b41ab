//! Inputs and CPU references: what a lab's buffers start as, what its output must be, and the
//! first place a device's output differs.

use kernelbook_core::expr::{ExprError, Params};
use kernelbook_core::results::Mismatch;
use kernelbook_core::spec::{CheckSpec, ElemType, Fill, chase_slot, dropout_hash};

/// The byte every element of a poisoned buffer is filled with: all bits set is NaN for floats
/// and -1 for integers, so an element the kernel never wrote cannot match the reference.
pub const POISON_BYTE: u8 = 0xFF;

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

/// Calls `work(index, chunk)` for each `chunk_len`-long chunk of `out`, the chunks shared out
/// over every core. Inputs and references run to GiBs; one core would take seconds. A buffer of
/// one chunk is done on the calling thread, so small ones cost no thread at all.
fn for_each_chunk<T: Send>(out: &mut [T], chunk_len: usize, work: impl Fn(usize, &mut [T]) + Sync) {
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
fn map_ranges<R: Send>(
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

/// Elements per task of the references and comparisons that cost a few nanoseconds an element:
/// 1 MiB of f32s, so a GiB makes about a thousand tasks and a small buffer a single one.
const CHEAP_CHUNK: usize = 1 << 18;

/// Elements per task of a reference that costs tens of nanoseconds an element (a GELU).
const COSTLY_CHUNK: usize = 1 << 16;

/// Computed elements per task of a sampled reference (each one thousands of FMAs).
const SAMPLES_PER_TASK: usize = 256;

/// The f32 stored little-endian at element `i` of `bytes`.
fn f32_at(bytes: &[u8], i: usize) -> f32 {
    let c = &bytes[4 * i..4 * i + 4];
    f32::from_le_bytes([c[0], c[1], c[2], c[3]])
}

/// `f(i, x_i)` for the first `count` f32s `x_i` of `input` (fewer where it is shorter), as
/// little-endian bytes, `chunk` elements per task.
fn map_f32s(
    input: &[u8],
    count: usize,
    chunk: usize,
    f: impl Fn(usize, f32) -> f32 + Sync,
) -> Vec<u8> {
    let count = count.min(input.len() / 4);
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
fn map_sampled_f32s(
    input: &[u8],
    count: usize,
    stride: usize,
    f: impl Fn(f32) -> f32 + Sync,
) -> Vec<u8> {
    let count = count.min(input.len() / 4);
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

/// A copy of `input`, written by every core: one core copies a GiB (and takes its page faults)
/// in about a fifth of a second.
fn copy_of(input: &[u8]) -> Vec<u8> {
    const CHUNK_BYTES: usize = 4 * CHEAP_CHUNK;
    let mut out = vec![0u8; input.len()];
    for_each_chunk(&mut out, CHUNK_BYTES, |index, out| {
        let first = index * CHUNK_BYTES;
        out.copy_from_slice(&input[first..first + out.len()]);
    });
    out
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

/// The output the check expects. `input` gives the host copy of each buffer the check reads
/// ([`CheckSpec::inputs`]); a missing one is read as empty.
pub fn expected_output<'a>(
    check: &CheckSpec,
    input: &dyn Fn(&str) -> Option<&'a [u8]>,
    elem: ElemType,
    params: &Params,
) -> Result<Vec<u8>, ExprError> {
    let size = |expr: &kernelbook_core::expr::Expr| -> Result<usize, ExprError> {
        Ok(usize::try_from(expr.eval(params)?).unwrap_or(0))
    };
    let data = |name: &str| input(name).unwrap_or_default();
    Ok(match check {
        CheckSpec::Copy { input, .. } => copy_of(data(input)),
        CheckSpec::Transpose {
            input, rows, cols, ..
        } => transpose(data(input), size(rows)?, size(cols)?, elem.size()),
        CheckSpec::StridedGather {
            input,
            count,
            stride,
            ..
        } => strided_gather(data(input), size(count)?, size(stride)?, elem.size()),
        CheckSpec::Scale { input, factor, .. } => {
            let factor = factor.eval(params)? as f32;
            map_f32s(data(input), usize::MAX, CHEAP_CHUNK, |_, x| factor * x)
        }
        CheckSpec::ColumnSums { input, n, .. } => column_sums_bytes(data(input), size(n)?),
        CheckSpec::SharedColumnReads {
            input,
            blocks,
            reps,
            ..
        } => shared_column_reads(
            &u32s(data(input)).collect::<Vec<_>>(),
            size(blocks)?,
            size(reps)?,
        ),
        CheckSpec::RegisterPressure {
            input,
            count,
            iters,
            ..
        } => {
            let iters = size(iters)?;
            let stride = check.sample_stride(params)?;
            map_sampled_f32s(data(input), size(count)?, stride, |x| {
                register_pressure(x, iters)
            })
        }
        CheckSpec::PointerChase {
            nodes,
            spacing,
            warm,
            steps,
            ..
        } => {
            let steps = size(warm)? as u64 + size(steps)? as u64;
            let index = pointer_chase_end(size(nodes)? as u64, size(spacing)? as u64, steps);
            (index as u32).to_le_bytes().to_vec()
        }
        CheckSpec::TileSymmetrize { input, n, tile, .. } => {
            tile_symmetrize_bytes(data(input), size(n)?, size(tile)?)
        }
        CheckSpec::WrappingSum {
            input,
            count,
            times,
            ..
        } => {
            let sum = u32s(data(input))
                .take(size(count)?)
                .fold(0u32, u32::wrapping_add);
            sum.wrapping_mul(size(times)? as u32).to_le_bytes().to_vec()
        }
        CheckSpec::BiasGeluDropout {
            input,
            bias,
            rows,
            cols,
            threshold,
            seed,
            ..
        } => {
            let bias: Vec<f32> = f32s(data(bias)).collect();
            let (rows, cols) = (size(rows)?, size(cols)?);
            let threshold = threshold.eval(params)? as u32;
            let seed = seed.eval(params)? as u32;
            map_f32s(
                data(input),
                rows.saturating_mul(cols),
                COSTLY_CHUNK,
                |i, x| {
                    let b = bias.get(i % cols.max(1)).copied().unwrap_or(0.0);
                    bias_gelu_dropout(x, b, i as u32, threshold, seed)
                },
            )
        }
        CheckSpec::FmaChains {
            input,
            count,
            chains,
            rounds,
            ..
        } => {
            let (chains, rounds) = (size(chains)?, size(rounds)?);
            let stride = check.sample_stride(params)?;
            map_sampled_f32s(data(input), size(count)?, stride, |x| {
                fma_chains(x, chains, rounds)
            })
        }
    })
}

fn f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

fn u32s(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Column sums of each 32-row strip, rows added in order; an element past the input's end
/// counts as 0.0.
pub fn column_sums(input: &[f32], n: usize) -> Vec<u8> {
    let input: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    column_sums_bytes(&input, n)
}

/// [`column_sums`] of little-endian bytes.
fn column_sums_bytes(input: &[u8], n: usize) -> Vec<u8> {
    let strips = n / 32;
    let mut out = vec![0u8; strips * n * 4];
    if n == 0 {
        return out;
    }
    let len = input.len() / 4;
    // Whole strips per task, about CHEAP_CHUNK input elements each.
    let strips_per_task = (CHEAP_CHUNK / (32 * n)).max(1);
    for_each_chunk(&mut out, strips_per_task * n * 4, |index, chunk| {
        let mut sums = vec![0f32; n];
        for (k, strip) in chunk.chunks_exact_mut(n * 4).enumerate() {
            let t = index * strips_per_task + k;
            // Row by row, so each column is still summed from 0.0 in row order.
            sums.fill(0.0);
            for r in 0..32 {
                let start = (32 * t + r) * n;
                if start + n <= len {
                    let row = input[4 * start..4 * (start + n)].as_chunks::<4>().0;
                    for (sum, x) in sums.iter_mut().zip(row) {
                        *sum += f32::from_le_bytes(*x);
                    }
                } else {
                    for (c, sum) in sums.iter_mut().enumerate() {
                        *sum += if start + c < len {
                            f32_at(input, start + c)
                        } else {
                            0.0
                        };
                    }
                }
            }
            for (slot, sum) in strip.as_chunks_mut::<4>().0.iter_mut().zip(&sums) {
                *slot = sum.to_le_bytes();
            }
        }
    });
    out
}

/// Every `tile` × `tile` block of an n × n matrix plus its own transpose (see
/// [`CheckSpec::TileSymmetrize`]); rows or columns past the last whole block are left zero.
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

/// The shared-memory column-read microbenchmark's result (see [`CheckSpec::SharedColumnReads`]).
/// Thread (x, y) of block b adds `tile[x][(y + r) mod 32]` for r below `reps`: that is `reps / 32`
/// times row x's sum plus the first `reps mod 32` terms, exactly, in wrapping arithmetic; so each
/// output costs 32 additions, not `reps` (1024 in the lab, over 2 M outputs).
pub fn shared_column_reads(input: &[u32], blocks: usize, reps: usize) -> Vec<u8> {
    let mut out = vec![0u8; blocks * 256 * 4];
    let (laps, rest) = ((reps / 32) as u32, reps % 32);
    for_each_chunk(&mut out, 1024, |b, block| {
        let tile = |i: usize, j: usize| input.get(b * 1024 + 32 * i + j).copied().unwrap_or(0);
        for (slot, bytes) in block.chunks_exact_mut(4).enumerate() {
            let (y, x) = (slot / 32, slot % 32);
            let row = (0..32).fold(0u32, |acc, j| acc.wrapping_add(tile(x, j)));
            let sum = (0..rest).fold(row.wrapping_mul(laps), |acc, r| {
                acc.wrapping_add(tile(x, (y + r) % 32))
            });
            bytes.copy_from_slice(&sum.to_le_bytes());
        }
    });
    out
}

/// One element of the register-pressure kernel (see [`CheckSpec::RegisterPressure`]).
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

/// The u32 index a pointer chase reaches after `steps` steps from the first slot of its lap
/// (see [`chase_slot`]).
pub fn pointer_chase_end(nodes: u64, spacing: u64, steps: u64) -> u64 {
    if nodes == 0 {
        return 0;
    }
    chase_slot(steps % nodes, nodes) * spacing
}

/// GELU in its tanh form, then dropout, for one element (see [`CheckSpec::BiasGeluDropout`]).
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

/// One element of the FMA-throughput kernel (see [`CheckSpec::FmaChains`]).
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

/// `out[i] = input[i * stride]` for `i < count`; elements past the input's end are left zero
/// (the lab's buffer sizes make that impossible for a well-formed lab).
pub fn strided_gather(input: &[u8], count: usize, stride: usize, size: usize) -> Vec<u8> {
    let mut out = vec![0u8; count * size];
    for_each_chunk(&mut out, CHEAP_CHUNK * size, |index, chunk| {
        let first = index * CHEAP_CHUNK;
        match size {
            4 => gather(chunk.as_chunks_mut::<4>().0, input, first, stride),
            8 => gather(chunk.as_chunks_mut::<8>().0, input, first, stride),
            _ => {
                for (k, slot) in chunk.chunks_mut(size).enumerate() {
                    let from = (first + k) * stride * size;
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
    for (k, slot) in out.iter_mut().enumerate() {
        let from = (first + k) * stride * N;
        if let Some(element) = input.get(from..from + N) {
            slot.copy_from_slice(element);
        }
    }
}

/// Transposes a row-major `rows × cols` matrix of `size`-byte elements, in cache-sized blocks
/// so that large matrices take well under a second.
pub fn transpose(input: &[u8], rows: usize, cols: usize, size: usize) -> Vec<u8> {
    const BLOCK: usize = 64;
    let mut out = vec![0u8; rows * cols * size];
    if input.len() < rows * cols * size || rows == 0 {
        return out;
    }
    // Each task writes BLOCK whole output rows (input columns c0..c0 + BLOCK).
    for_each_chunk(&mut out, BLOCK * rows * size, |band, chunk| {
        let c0 = band * BLOCK;
        let c_end = (c0 + BLOCK).min(cols);
        for r0 in (0..rows).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..c_end {
                    let from = (r * cols + c) * size;
                    let to = ((c - c0) * rows + r) * size;
                    chunk[to..to + size].copy_from_slice(&input[from..from + size]);
                }
            }
        }
    });
    out
}

/// The first element where `actual` differs from `expected` (bit for bit), and how many differ.
pub fn first_mismatch(expected: &[u8], actual: &[u8], elem: ElemType) -> Option<Mismatch> {
    first_mismatch_within(expected, actual, elem, None, 1)
}

/// Whether two f32s agree within `(relative, absolute)`; NaN never agrees.
fn close(expected: f32, actual: f32, (relative, absolute): (f64, f64)) -> bool {
    let (e, a) = (f64::from(expected), f64::from(actual));
    (e - a).abs() <= absolute + relative * e.abs()
}

/// Like [`first_mismatch`], but f32 elements within `tolerance` (relative, absolute) agree, and
/// only every `stride`-th element is compared (a sampled check).
pub fn first_mismatch_within(
    expected: &[u8],
    actual: &[u8],
    elem: ElemType,
    tolerance: Option<(f64, f64)>,
    stride: usize,
) -> Option<Mismatch> {
    let size = elem.size();
    if expected.len() != actual.len() {
        return Some(Mismatch {
            index: 0,
            expected: format!("{} bytes", expected.len()),
            actual: format!("{} bytes", actual.len()),
            count: 1,
        });
    }
    let stride = stride.max(1);
    let whole = expected.len() / size;
    let tolerance = tolerance.filter(|_| elem == ElemType::F32);
    // Each task compares about CHEAP_CHUNK elements of the sample, and says the first that
    // differs in its range and how many do; a sampled check of a big buffer stays one task.
    let mut parts = map_ranges(whole, CHEAP_CHUNK.saturating_mul(stride), |range| {
        let start = range.start.next_multiple_of(stride).min(range.end);
        let bytes = start * size..range.end * size;
        let (e, a) = (&expected[bytes.clone()], &actual[bytes]);
        match (tolerance, size) {
            (Some(tolerance), 4) => tally(pairs::<4>(e, a), start, stride, |e, a| {
                close(f32::from_le_bytes(*e), f32::from_le_bytes(*a), tolerance)
            }),
            // The usual outcome of a bit-for-bit check, all equal, in one memcmp.
            (None, _) if stride == 1 && e == a => (None, 0),
            (None, 4) => tally(pairs::<4>(e, a), start, stride, |e, a| e == a),
            (None, 8) => tally(pairs::<8>(e, a), start, stride, |e, a| e == a),
            _ => {
                let pairs = e.chunks_exact(size).zip(a.chunks_exact(size));
                tally(pairs, start, stride, |e, a| e == a)
            }
        }
    });
    // A last element cut short (the length not a multiple of the size) is compared bit for bit.
    if !expected.len().is_multiple_of(size) && whole.is_multiple_of(stride) {
        let agree = element(expected, whole, size) == element(actual, whole, size);
        parts.push((Some(whole).filter(|_| !agree), u64::from(!agree)));
    }
    let index = parts.iter().find_map(|&(first, _)| first)?;
    Some(Mismatch {
        index: index as u64,
        expected: elem.display(element(expected, index, size)),
        actual: elem.display(element(actual, index, size)),
        count: parts.iter().map(|&(_, count)| count).sum(),
    })
}

/// Element `i` of `size`-byte elements, the last one short where the length is not a multiple of
/// the size.
fn element(bytes: &[u8], i: usize, size: usize) -> &[u8] {
    &bytes[i * size..bytes.len().min((i + 1) * size)]
}

/// The whole `N`-byte elements of `expected` and `actual`, side by side: fixed-size arrays
/// compare as integers, where slices of a run-time length call `memcmp` for each element.
fn pairs<'a, const N: usize>(
    expected: &'a [u8],
    actual: &'a [u8],
) -> impl Iterator<Item = (&'a [u8; N], &'a [u8; N])> + Clone {
    expected
        .as_chunks::<N>()
        .0
        .iter()
        .zip(actual.as_chunks::<N>().0)
}

/// The index of the first of every `stride`-th pair (the first being element `start`) that
/// does not `agree`, and how many do not.
fn tally<T>(
    pairs: impl Iterator<Item = (T, T)> + Clone,
    start: usize,
    stride: usize,
    agree: impl Fn(T, T) -> bool + Copy,
) -> (Option<usize>, u64) {
    // Count first, then look for the first only where there is one: a loop with no early exit
    // or index to keep runs several times faster.
    let count = pairs
        .clone()
        .step_by(stride)
        .map(|(e, a)| u64::from(!agree(e, a)))
        .sum::<u64>();
    if count == 0 {
        return (None, 0);
    }
    let first = pairs.step_by(stride).position(|(e, a)| !agree(e, a));
    (first.map(|k| start + k * stride), count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::expr::Expr;

    fn f32s(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn transpose_of_a_2x3_matrix() {
        let input = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(
            transpose(&input, 2, 3, 4),
            f32s(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
        );
    }

    #[test]
    fn transpose_crosses_block_boundaries() {
        let (rows, cols) = (70, 130);
        let input: Vec<u8> = (0..rows * cols)
            .flat_map(|i| (i as u32).to_le_bytes())
            .collect();
        let out = transpose(&input, rows, cols, 4);
        let at = |buf: &[u8], i: usize| {
            u32::from_le_bytes([buf[4 * i], buf[4 * i + 1], buf[4 * i + 2], buf[4 * i + 3]])
        };
        for (r, c) in [(0, 0), (69, 129), (3, 100), (65, 64)] {
            assert_eq!(at(&out, c * rows + r), (r * cols + c) as u32);
        }
    }

    #[test]
    fn expected_output_evaluates_the_check_dimensions() {
        let check = CheckSpec::Transpose {
            input: "a".into(),
            output: "b".into(),
            rows: Expr::new("n"),
            cols: Expr::new("2 * n"),
        };
        let params = Params::from([("n".into(), 1)]);
        let data = f32s(&[1.0, 2.0]);
        let input = |_: &str| Some(data.as_slice());
        let out = expected_output(&check, &input, ElemType::F32, &params).expect("ok");
        assert_eq!(out, f32s(&[1.0, 2.0]));
    }

    #[test]
    fn strided_gather_takes_every_stride_th_element() {
        let input = f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(strided_gather(&input, 3, 3, 4), f32s(&[0.0, 3.0, 6.0]));
        assert_eq!(strided_gather(&input, 2, 4, 4), f32s(&[0.0, 4.0]));
    }

    #[test]
    fn mismatch_reports_the_first_index_values_and_count() {
        let expected = f32s(&[1.0, 2.0, 3.0, 4.0]);
        let mut actual = expected.clone();
        actual[8..12].copy_from_slice(&[POISON_BYTE; 4]);
        actual[12..16].copy_from_slice(&9.5f32.to_le_bytes());
        let m = first_mismatch(&expected, &actual, ElemType::F32).expect("mismatch");
        assert_eq!(
            (m.index, m.expected.as_str(), m.actual.as_str(), m.count),
            (2, "3.0", "NaN", 2)
        );
        assert_eq!(first_mismatch(&expected, &expected, ElemType::F32), None);
    }

    #[test]
    fn random_inputs_are_fresh_per_seed_and_in_range() {
        let a = initial_contents(
            Fill::Random,
            ElemType::F32,
            1000,
            &mut fastrand::Rng::with_seed(1),
        );
        let b = initial_contents(
            Fill::Random,
            ElemType::F32,
            1000,
            &mut fastrand::Rng::with_seed(2),
        );
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

    fn u32s_of(bytes: &[u8]) -> Vec<u32> {
        super::u32s(bytes).collect()
    }

    #[test]
    fn shared_column_reads_agree_with_adding_every_rep() {
        let mut rng = fastrand::Rng::with_seed(7);
        let input: Vec<u32> = (0..3 * 1024).map(|_| rng.u32(..)).collect();
        for reps in [0, 1, 31, 32, 33, 100, 1024] {
            let naive: Vec<u32> = (0..3)
                .flat_map(|b| (0..256).map(move |slot| (b, slot / 32, slot % 32)))
                .map(|(b, y, x)| {
                    (0..reps).fold(0u32, |acc, r| {
                        acc.wrapping_add(input[b * 1024 + 32 * x + (y + r) % 32])
                    })
                })
                .collect();
            assert_eq!(
                u32s_of(&shared_column_reads(&input, 3, reps)),
                naive,
                "reps = {reps}"
            );
        }
    }

    #[test]
    fn shared_column_reads_sum_down_a_column_of_each_tile() {
        // One block, tile[i][j] = 32 i + j; thread (x, y) adds tile[x][(y + r) mod 32].
        let input: Vec<u32> = (0..1024).collect();
        let out = u32s_of(&shared_column_reads(&input, 1, 2));
        // x = 3, y = 0: tile[3][0] + tile[3][1] = 96 + 97.
        assert_eq!(out[3], 193);
        // x = 0, y = 7 (index 7 * 32): tile[0][7] + tile[0][8].
        assert_eq!(out[7 * 32], 15);
        // 32 reps visit the whole row whatever y is: 32 * 5 + (0 + ... + 31).
        let full = u32s_of(&shared_column_reads(&input, 1, 32));
        assert!(
            full.iter()
                .skip(5)
                .step_by(32)
                .all(|v| *v == 32 * 32 * 5 + 496)
        );
    }

    #[test]
    fn the_chase_reference_follows_the_chain_the_gpu_builds() {
        use kernelbook_core::spec::chase_slot;
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
        use kernelbook_core::spec::chase_slot;
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
    fn wrapping_sums_and_scales_are_exact() {
        let input: Vec<u8> = [u32::MAX, 2, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let check = CheckSpec::WrappingSum {
            input: "in".into(),
            output: "out".into(),
            count: Expr::new("3"),
            times: Expr::new("3"),
        };
        let data = |_: &str| Some(input.as_slice());
        let out = expected_output(&check, &data, ElemType::U32, &Params::new()).expect("sum");
        // (2^32 - 1 + 2 + 3) * 3 mod 2^32 = 12.
        assert_eq!(u32s_of(&out), [12]);
        let floats = f32s(&[1.5, -2.25]);
        let scale = CheckSpec::Scale {
            input: "in".into(),
            output: "out".into(),
            factor: Expr::new("3"),
        };
        let data = |_: &str| Some(floats.as_slice());
        let out = expected_output(&scale, &data, ElemType::F32, &Params::new()).expect("scale");
        assert_eq!(out, f32s(&[4.5, -6.75]));
    }

    #[test]
    fn gelu_dropout_drops_by_hash_and_scales_the_rest() {
        use kernelbook_core::spec::dropout_hash;
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
    fn compute_checks_follow_the_kernels_arithmetic() {
        // One chain, one round: fma(x + 0, 0.9999, 0.0001).
        assert_eq!(fma_chains(2.0, 1, 1), 2.0f32.mul_add(0.9999, 0.0001));
        // Two chains, no rounds: (x + 0) + (x + 1).
        assert_eq!(fma_chains(2.0, 2, 0), 5.0);
        // No iterations: the sum of x + k for k < 64.
        assert_eq!(register_pressure(0.0, 0), (0..64).sum::<i32>() as f32);
    }

    #[test]
    fn a_sampled_check_compares_only_its_sample_and_a_tolerance_accepts_rounding() {
        let expected = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        let mut actual = expected.clone();
        actual[4..8].copy_from_slice(&9.0f32.to_le_bytes()); // element 1: outside a stride-2 sample
        assert_eq!(
            first_mismatch_within(&expected, &actual, ElemType::F32, None, 2),
            None
        );
        assert!(first_mismatch_within(&expected, &actual, ElemType::F32, None, 1).is_some());
        let mut close = expected.clone();
        close[8..12].copy_from_slice(&3.000_01f32.to_le_bytes());
        assert_eq!(
            first_mismatch_within(&expected, &close, ElemType::F32, Some((1e-5, 1e-6)), 1),
            None
        );
        assert!(first_mismatch_within(&expected, &close, ElemType::F32, None, 1).is_some());
    }

    #[test]
    fn sampled_strides_are_odd_and_keep_small_problems_whole() {
        let check = |count: &str| CheckSpec::FmaChains {
            input: "in".into(),
            output: "out".into(),
            count: Expr::new(count),
            chains: Expr::new("8"),
            rounds: Expr::new("2"),
        };
        let none = Params::new();
        assert_eq!(check("1000").sample_stride(&none), Ok(1));
        let stride = check("4194304").sample_stride(&none).expect("stride");
        assert_eq!(stride % 2, 1);
        assert!((4194304 / stride).abs_diff(16384) < 100);
        let copy = CheckSpec::Copy {
            input: "a".into(),
            output: "b".into(),
        };
        assert_eq!(copy.sample_stride(&none), Ok(1));
    }

    #[test]
    fn random_inputs_are_reproducible_from_the_seed_across_chunks() {
        // Three and a half 2^20-element chunks, generated twice from the same seed.
        let len = (7 << 20) / 2;
        let a = initial_contents(
            Fill::Random,
            ElemType::U32,
            len,
            &mut fastrand::Rng::with_seed(5),
        );
        let b = initial_contents(
            Fill::Random,
            ElemType::U32,
            len,
            &mut fastrand::Rng::with_seed(5),
        );
        assert_eq!(a.len(), len * 4);
        assert!(a == b, "same seed, same input");
        // Chunks have generators of their own: the second chunk does not repeat the first.
        let chunk = (1 << 20) * 4;
        assert_ne!(a[..64], a[chunk..chunk + 64]);
    }

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

    /// The references as first written, one thread and through `Vec<f32>`s, that the parallel
    /// ones must match bit for bit.
    mod naive {
        use super::super::{close, f32s};
        use kernelbook_core::results::Mismatch;
        use kernelbook_core::spec::ElemType;

        pub fn floats(bytes: &[u8]) -> Vec<f32> {
            f32s(bytes).collect()
        }

        pub fn bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
            values.flat_map(f32::to_le_bytes).collect()
        }

        pub fn column_sums(input: &[f32], n: usize) -> Vec<u8> {
            let strips = n / 32;
            let mut out = vec![0f32; strips * n];
            for t in 0..strips {
                for c in 0..n {
                    let mut sum = 0f32;
                    for r in 0..32 {
                        sum += input.get((32 * t + r) * n + c).copied().unwrap_or(0.0);
                    }
                    out[t * n + c] = sum;
                }
            }
            bytes(out.into_iter())
        }

        pub fn tile_symmetrize(input: &[f32], n: usize, tile: usize) -> Vec<f32> {
            let mut out = vec![0f32; n * n];
            if tile == 0 || input.len() < n * n {
                return out;
            }
            let blocks = n / tile;
            for br in 0..blocks {
                for bc in 0..blocks {
                    let (r0, c0) = (br * tile, bc * tile);
                    for r in 0..tile {
                        for c in 0..tile {
                            out[(r0 + r) * n + c0 + c] =
                                input[(r0 + r) * n + c0 + c] + input[(r0 + c) * n + c0 + r];
                        }
                    }
                }
            }
            out
        }

        pub fn strided_gather(input: &[u8], count: usize, stride: usize, size: usize) -> Vec<u8> {
            let mut out = vec![0u8; count * size];
            for (i, slot) in out.chunks_mut(size).enumerate() {
                let from = i * stride * size;
                if let Some(element) = input.get(from..from + size) {
                    slot.copy_from_slice(element);
                }
            }
            out
        }

        pub fn first_mismatch_within(
            expected: &[u8],
            actual: &[u8],
            elem: ElemType,
            tolerance: Option<(f64, f64)>,
            stride: usize,
        ) -> Option<Mismatch> {
            let size = elem.size();
            if expected.len() != actual.len() {
                return Some(Mismatch {
                    index: 0,
                    expected: format!("{} bytes", expected.len()),
                    actual: format!("{} bytes", actual.len()),
                    count: 1,
                });
            }
            let mut first = None;
            let mut count = 0u64;
            let pairs = expected.chunks(size).zip(actual.chunks(size)).enumerate();
            for (index, (e, a)) in pairs.step_by(stride.max(1)) {
                let agree = match (tolerance, elem) {
                    (Some(tolerance), ElemType::F32) if e.len() == 4 && a.len() == 4 => close(
                        f32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                        f32::from_le_bytes([a[0], a[1], a[2], a[3]]),
                        tolerance,
                    ),
                    _ => e == a,
                };
                if !agree {
                    count += 1;
                    if first.is_none() {
                        first = Some((index, e, a));
                    }
                }
            }
            first.map(|(index, e, a)| Mismatch {
                index: index as u64,
                expected: elem.display(e),
                actual: elem.display(a),
                count,
            })
        }
    }

    /// Random f32s in [-1, 1) with the values whose bits are easiest to get wrong sprinkled in.
    fn awkward_floats(len: usize, seed: u64) -> Vec<u8> {
        let mut out = initial_contents(
            Fill::Random,
            ElemType::F32,
            len,
            &mut fastrand::Rng::with_seed(seed),
        );
        let specials = [
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
        ];
        for (k, v) in specials.iter().enumerate() {
            let i = (k * 7919) % len.max(1);
            if let Some(slot) = out.get_mut(4 * i..4 * i + 4) {
                slot.copy_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    fn reference(check: &CheckSpec, buffers: &[(&str, &[u8])]) -> Vec<u8> {
        let input = |name: &str| buffers.iter().find(|(n, _)| *n == name).map(|(_, d)| *d);
        expected_output(check, &input, ElemType::F32, &Params::new()).expect("reference")
    }

    #[test]
    fn elementwise_references_match_one_thread_across_chunks() {
        // Several tasks of each kind, a partial last one, and two stray bytes at the end.
        let len = 3 * CHEAP_CHUNK + 1234;
        let mut input = awkward_floats(len, 11);
        input.extend_from_slice(&[7, 9]);
        let floats = naive::floats(&input);

        let copy = CheckSpec::Copy {
            input: "in".into(),
            output: "out".into(),
        };
        assert!(reference(&copy, &[("in", &input)]) == input);

        let scale = CheckSpec::Scale {
            input: "in".into(),
            output: "out".into(),
            factor: Expr::new("3"),
        };
        let want = naive::bytes(floats.iter().map(|x| 3.0 * x));
        assert!(reference(&scale, &[("in", &input)]) == want);

        // A bias shorter than a row: the columns past it add 0.0.
        let bias = awkward_floats(4000, 12);
        let bias_floats = naive::floats(&bias);
        for rows in [37, 200] {
            let cols = 5000;
            let check = CheckSpec::BiasGeluDropout {
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
            let got = reference(&check, &[("in", &input), ("bias", &bias)]);
            assert_eq!(got.len(), want.len(), "rows = {rows}");
            assert!(got == want, "rows = {rows}");
        }
    }

    #[test]
    fn sampled_references_match_one_thread_and_leave_the_rest_zero() {
        let input = awkward_floats(790_000, 13);
        let floats = naive::floats(&input);
        let none = Params::new();
        // Strides 43 and 1 (a small count keeps every element), and a count past the input.
        for count in [700_001usize, 5_000, 900_000] {
            let check = CheckSpec::RegisterPressure {
                input: "in".into(),
                output: "out".into(),
                count: Expr::new(count.to_string()),
                iters: Expr::new("2"),
            };
            let stride = check.sample_stride(&none).expect("stride");
            let want = naive::bytes(floats.iter().take(count).enumerate().map(|(i, &x)| {
                if i % stride == 0 {
                    register_pressure(x, 2)
                } else {
                    0.0
                }
            }));
            assert!(
                reference(&check, &[("in", &input)]) == want,
                "count = {count}"
            );

            let check = CheckSpec::FmaChains {
                input: "in".into(),
                output: "out".into(),
                count: Expr::new(count.to_string()),
                chains: Expr::new("3"),
                rounds: Expr::new("5"),
            };
            let stride = check.sample_stride(&none).expect("stride");
            let want = naive::bytes(floats.iter().take(count).enumerate().map(|(i, &x)| {
                if i % stride == 0 {
                    fma_chains(x, 3, 5)
                } else {
                    0.0
                }
            }));
            assert!(
                reference(&check, &[("in", &input)]) == want,
                "count = {count}"
            );
        }
    }

    #[test]
    fn column_sums_match_one_thread_in_row_order() {
        // 65 strips, 3 to a task; then 8 rows past the last strip; then a short input.
        for (n, missing) in [(2100usize, 0usize), (40, 0), (2100, 70_001)] {
            let mut input = awkward_floats(n * n - missing, 14);
            input.push(1);
            let floats = naive::floats(&input);
            let check = CheckSpec::ColumnSums {
                input: "in".into(),
                output: "out".into(),
                n: Expr::new(n.to_string()),
            };
            let want = naive::column_sums(&floats, n);
            assert!(reference(&check, &[("in", &input)]) == want, "n = {n}");
            assert!(column_sums(&floats, n) == want, "n = {n}");
        }
    }

    #[test]
    fn tile_symmetrize_matches_one_thread_for_whole_and_partial_blocks() {
        let n = 1000;
        let input = awkward_floats(n * n, 15);
        let floats = naive::floats(&input);
        // 20 blocks and 40 rows and columns left zero; one block; no tile; a short input.
        for (tile, len) in [(48, n * n), (1000, n * n), (0, n * n), (48, n * n - 1)] {
            let check = CheckSpec::TileSymmetrize {
                input: "in".into(),
                output: "out".into(),
                n: Expr::new(n.to_string()),
                tile: Expr::new(tile.to_string()),
            };
            let want = naive::tile_symmetrize(&floats[..len], n, tile);
            let got = reference(&check, &[("in", &input[..4 * len])]);
            assert!(got == naive::bytes(want.iter().copied()), "tile = {tile}");
            let got = tile_symmetrize(&floats[..len], n, tile);
            assert!(naive::bytes(got.into_iter()) == naive::bytes(want.into_iter()));
        }
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
    fn the_parallel_compare_finds_the_first_mismatch_and_counts_them_all() {
        let len = 3 * CHEAP_CHUNK + 5;
        let expected = awkward_floats(len, 17);
        let put = |buf: &mut Vec<u8>, i: usize, v: f32| {
            buf[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
        };
        // Mismatches on both sides of task boundaries and last; of them only 3 * CHEAP_CHUNK,
        // the first element of a stride-3 check's second task, is a multiple of 3.
        let mut actual = expected.clone();
        let wrong = [
            CHEAP_CHUNK + 7,
            2 * CHEAP_CHUNK - 1,
            2 * CHEAP_CHUNK,
            3 * CHEAP_CHUNK,
            len - 1,
        ];
        for &i in &wrong {
            put(&mut actual, i, 42.0);
        }
        let found = |actual: &[u8], tolerance, stride| {
            first_mismatch_within(&expected, actual, ElemType::F32, tolerance, stride)
                .map(|m| (m.index, m.expected, m.actual, m.count))
        };
        let at = |i: usize| format!("{:?}", f32_at(&expected, i));
        let first = wrong[0] as u64;
        assert_eq!(
            found(&actual, None, 1),
            Some((first, at(wrong[0]), "42.0".into(), 5))
        );
        let third = wrong[3] as u64;
        assert_eq!(
            found(&actual, None, 3),
            Some((third, at(wrong[3]), "42.0".into(), 1))
        );
        assert_eq!(found(&expected, None, 1), None);
        // Under a tolerance the NaN (element 7919) and the two infinities never agree, even
        // with themselves.
        let tolerance = Some((1e-5, 1e-6));
        assert_eq!(
            found(&expected, tolerance, 1).map(|m| (m.0, m.3)),
            Some((7919, 3))
        );

        // Near misses a tolerance accepts, and one it does not.
        let mut near = expected.clone();
        for i in (0..len).step_by(1001) {
            let v = f32_at(&expected, i);
            put(&mut near, i, v * (1.0 + 4e-6));
        }
        put(&mut near, 2 * CHEAP_CHUNK + 3, 1e3);

        // A partial last element, for bit-for-bit and tolerant checks alike.
        let mut short_expected = expected.clone();
        short_expected.extend_from_slice(&[1, 2]);
        let mut short_actual = short_expected.clone();
        let last = short_actual.len() - 1;
        short_actual[last] = 3;

        let poison = vec![POISON_BYTE; expected.len()];
        let cases: [(&[u8], &[u8]); 6] = [
            (&expected, &expected),
            (&expected, &actual),
            (&expected, &near),
            (&short_expected, &short_actual),
            (&expected, &expected[4..]),
            (&expected, &poison),
        ];
        let kinds = [
            (ElemType::F32, None),
            (ElemType::F32, tolerance),
            (ElemType::U64, None),
            (ElemType::U64, tolerance),
        ];
        for (k, (e, a)) in cases.iter().enumerate() {
            for (elem, tolerance) in kinds {
                for stride in [0, 1, 3, CHEAP_CHUNK + 1] {
                    assert_eq!(
                        first_mismatch_within(e, a, elem, tolerance, stride),
                        naive::first_mismatch_within(e, a, elem, tolerance, stride),
                        "case {k}, {elem:?}, {tolerance:?}, stride {stride}"
                    );
                }
            }
        }
    }

    /// Wall-clock timings of the big references and comparisons; not a correctness test.
    /// `cargo test -p kernelbook-runner --release -- --ignored --nocapture time_`
    #[test]
    #[ignore = "a timing run of GiB-sized references; run it by hand in release"]
    fn time_large_references_and_compares() {
        use std::time::Instant;
        let random = |len: usize, seed: u64| {
            initial_contents(
                Fill::Random,
                ElemType::F32,
                len,
                &mut fastrand::Rng::with_seed(seed),
            )
        };
        let none = Params::new();
        let time = |label: &str, check: &CheckSpec, data: &[(&str, &[u8])]| -> Vec<u8> {
            let input = |name: &str| data.iter().find(|(n, _)| *n == name).map(|(_, d)| *d);
            let started = Instant::now();
            let out = expected_output(check, &input, ElemType::F32, &none).expect("reference");
            eprintln!("{label:<40} {:>8.3} s", started.elapsed().as_secs_f64());
            out
        };
        let n = 13440;
        let big = random(n * n, 1);
        time(
            "tile_symmetrize 13440^2 (722 MB)",
            &CheckSpec::TileSymmetrize {
                input: "in".into(),
                output: "out".into(),
                n: Expr::new(n.to_string()),
                tile: Expr::new("64"),
            },
            &[("in", &big)],
        );
        drop(big);
        let m = 8192 * 8192;
        let input = random(m, 2);
        let bias = random(8192, 3);
        let gelu = time(
            "bias_gelu_dropout 8192^2 (64M)",
            &CheckSpec::BiasGeluDropout {
                input: "in".into(),
                bias: "bias".into(),
                output: "out".into(),
                rows: Expr::new("8192"),
                cols: Expr::new("8192"),
                threshold: Expr::new("429496730"),
                seed: Expr::new("1234"),
            },
            &[("in", &input), ("bias", &bias)],
        );
        time(
            "scale 64M",
            &CheckSpec::Scale {
                input: "in".into(),
                output: "out".into(),
                factor: Expr::new("3"),
            },
            &[("in", &input)],
        );
        time(
            "copy 64M (256 MiB)",
            &CheckSpec::Copy {
                input: "in".into(),
                output: "out".into(),
            },
            &[("in", &input)],
        );
        time(
            "column_sums 8192^2",
            &CheckSpec::ColumnSums {
                input: "in".into(),
                output: "out".into(),
                n: Expr::new("8192"),
            },
            &[("in", &input)],
        );
        time(
            "register_pressure 4M, 64 iters",
            &CheckSpec::RegisterPressure {
                input: "in".into(),
                output: "out".into(),
                count: Expr::new("4194304"),
                iters: Expr::new("64"),
            },
            &[("in", &input)],
        );
        time(
            "fma_chains 4M, 8 chains, 2048 rounds",
            &CheckSpec::FmaChains {
                input: "in".into(),
                output: "out".into(),
                count: Expr::new("4194304"),
                chains: Expr::new("8"),
                rounds: Expr::new("2048"),
            },
            &[("in", &input)],
        );
        let compare = |label: &str, actual: &[u8], tolerance: Option<(f64, f64)>| {
            let started = Instant::now();
            let m = first_mismatch_within(&gelu, actual, ElemType::F32, tolerance, 1);
            eprintln!(
                "{label:<40} {:>8.3} s  ({:?} mismatches)",
                started.elapsed().as_secs_f64(),
                m.map(|m| m.count)
            );
        };
        let same = gelu.clone();
        compare("compare 64M, equal, bit for bit", &same, None);
        compare("compare 64M, equal, tolerance", &same, Some((1e-5, 1e-6)));
        let poison = vec![POISON_BYTE; gelu.len()];
        compare("compare 64M, all poison, bit for bit", &poison, None);
    }
}
