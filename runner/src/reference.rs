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
/// over every core. Inputs and references run to GiBs; one core would take seconds.
fn for_each_chunk<T: Send>(out: &mut [T], chunk_len: usize, work: impl Fn(usize, &mut [T]) + Sync) {
    let chunks: Vec<(usize, &mut [T])> = out.chunks_mut(chunk_len.max(1)).enumerate().collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, chunks.len().max(1));
    let per_thread = chunks.len().div_ceil(threads).max(1);
    let mut chunks = chunks.into_iter();
    let work = &work;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let group: Vec<(usize, &mut [T])> = chunks.by_ref().take(per_thread).collect();
            scope.spawn(move || {
                for (index, chunk) in group {
                    work(index, chunk);
                }
            });
        }
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
        CheckSpec::Copy { input, .. } => data(input).to_vec(),
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
            to_bytes_f32(f32s(data(input)).map(|x| factor * x))
        }
        CheckSpec::ColumnSums { input, n, .. } => {
            column_sums(&f32s(data(input)).collect::<Vec<_>>(), size(n)?)
        }
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
            to_bytes_f32(
                f32s(data(input))
                    .take(size(count)?)
                    .enumerate()
                    .map(|(i, x)| {
                        if i % stride == 0 {
                            register_pressure(x, iters)
                        } else {
                            0.0
                        }
                    }),
            )
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
            let values: Vec<f32> = f32s(data(input)).collect();
            to_bytes_f32(tile_symmetrize(&values, size(n)?, size(tile)?).into_iter())
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
            to_bytes_f32(
                f32s(data(input))
                    .take(rows * cols)
                    .enumerate()
                    .map(|(i, x)| {
                        let b = bias.get(i % cols.max(1)).copied().unwrap_or(0.0);
                        bias_gelu_dropout(x, b, i as u32, threshold, seed)
                    }),
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
            to_bytes_f32(
                f32s(data(input))
                    .take(size(count)?)
                    .enumerate()
                    .map(|(i, x)| {
                        if i % stride == 0 {
                            fma_chains(x, chains, rounds)
                        } else {
                            0.0
                        }
                    }),
            )
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

fn to_bytes_f32(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

/// Column sums of each 32-row strip, rows added in order.
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
    to_bytes_f32(out.into_iter())
}

/// Every `tile` × `tile` block of an n × n matrix plus its own transpose (see
/// [`CheckSpec::TileSymmetrize`]); rows or columns past the last whole block are left zero.
pub fn tile_symmetrize(input: &[f32], n: usize, tile: usize) -> Vec<f32> {
    let mut out = vec![0f32; n * n];
    if tile == 0 || input.len() < n * n {
        return out;
    }
    let blocks = n / tile;
    // Each task writes one strip of `tile` whole rows.
    for_each_chunk(&mut out, tile * n, |br, strip| {
        if br >= blocks {
            return;
        }
        let r0 = br * tile;
        for bc in 0..blocks {
            let c0 = bc * tile;
            for r in 0..tile {
                for c in 0..tile {
                    let own = input[(r0 + r) * n + c0 + c];
                    let mirrored = input[(r0 + c) * n + c0 + r];
                    strip[r * n + c0 + c] = own + mirrored;
                }
            }
        }
    });
    out
}

/// The shared-memory column-read microbenchmark's result (see [`CheckSpec::SharedColumnReads`]).
pub fn shared_column_reads(input: &[u32], blocks: usize, reps: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(blocks * 256 * 4);
    for b in 0..blocks {
        let tile = |i: usize, j: usize| input.get(b * 1024 + 32 * i + j).copied().unwrap_or(0);
        for y in 0..8 {
            for x in 0..32 {
                let sum = (0..reps).fold(0u32, |acc, r| acc.wrapping_add(tile(x, (y + r) % 32)));
                out.extend_from_slice(&sum.to_le_bytes());
            }
        }
    }
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
    for (i, slot) in out.chunks_mut(size).enumerate() {
        let from = i * stride * size;
        if let Some(element) = input.get(from..from + size) {
            slot.copy_from_slice(element);
        }
    }
    out
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
    let mut first = None;
    let mut count = 0u64;
    let stride = stride.max(1);
    let pairs = expected.chunks(size).zip(actual.chunks(size)).enumerate();
    for (index, (e, a)) in pairs.step_by(stride) {
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
}
