//! What the references' tests share: awkward inputs, calls through the trait, and the
//! references as first written (one thread, through `Vec<f32>`s) that the parallel ones must
//! match bit for bit.

use super::{HostBuffer, ReferenceCall, ReferenceError, find, initial_contents};
use kernelbook_core::expr::Params;
use kernelbook_core::spec::{BuiltinCheck, ElemType, Fill};
use std::collections::BTreeMap;

/// Little-endian bytes of `values`.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Random f32s in [-1, 1) with the values whose bits are easiest to get wrong sprinkled in.
pub fn awkward_floats(len: usize, seed: u64) -> Vec<u8> {
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

/// The reference `name` called through the trait with `inputs` (bytes and element type) and
/// `args`, into an output buffer large enough for anything.
pub fn call(
    name: &str,
    inputs: &[(&[u8], ElemType)],
    args: &[(&str, i64)],
) -> Result<Vec<u8>, ReferenceError> {
    let args: BTreeMap<String, i64> = args.iter().map(|&(k, v)| (k.to_string(), v)).collect();
    let reference = find(name).expect("a built-in reference");
    reference.expected(&ReferenceCall {
        inputs: inputs
            .iter()
            .map(|&(bytes, elem)| HostBuffer {
                name: "in",
                elem,
                bytes,
            })
            .collect(),
        args: &args,
        output_elem: ElemType::U64,
        output_len: usize::MAX / 8,
    })
}

/// `check`'s reference, its size expressions evaluated with no parameters, its inputs found by
/// name in `buffers` (f32 unless `elem` says otherwise): what the engine will do with a plan.
pub fn call_check(check: &BuiltinCheck, buffers: &[(&str, &[u8])], elem: ElemType) -> Vec<u8> {
    let (name, inputs, _, exprs) = super::call_parts(check);
    let args: Vec<(&str, i64)> = exprs
        .iter()
        .map(|(arg, expr)| (*arg, expr.eval(&Params::new()).expect("a constant")))
        .collect();
    let inputs: Vec<(&[u8], ElemType)> = inputs
        .iter()
        .map(|input| {
            let bytes = buffers.iter().find(|(n, _)| n == input).map(|(_, d)| *d);
            (bytes.expect("every input given"), elem)
        })
        .collect();
    call(name, &inputs, &args).expect("a well-formed call")
}

pub mod naive {
    use super::super::parallel::f32s;
    use kernelbook_core::results::Mismatch;
    use kernelbook_core::spec::{CompareRule, ElemType};

    pub fn floats(bytes: &[u8]) -> Vec<f32> {
        f32s(bytes).collect()
    }

    pub fn bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
        values.flat_map(f32::to_le_bytes).collect()
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
        let elements = input.len() / size;
        for (i, slot) in out.chunks_mut(size).enumerate() {
            let from = (i * stride % elements.max(1)) * size;
            if let Some(element) = input.get(from..from + size) {
                slot.copy_from_slice(element);
            }
        }
        out
    }

    /// The comparison rule of a `(relative, absolute)` tolerance, or bit for bit.
    pub fn rule(tolerance: Option<(f64, f64)>) -> CompareRule {
        match tolerance {
            Some((rtol, atol)) => CompareRule::Close { rtol, atol },
            None => CompareRule::Exact,
        }
    }

    /// A plain loop over every `stride`-th element, written independently of the fast path.
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
                (Some(tolerance), ElemType::F32) if e.len() == 4 && a.len() == 4 => {
                    let e = f32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                    let a = f32::from_le_bytes([a[0], a[1], a[2], a[3]]);
                    if e.is_infinite() || a.is_infinite() {
                        e == a
                    } else {
                        (f64::from(e) - f64::from(a)).abs()
                            <= tolerance.1 + tolerance.0 * f64::from(e).abs()
                    }
                }
                (Some(tolerance), ElemType::F64) if e.len() == 8 && a.len() == 8 => {
                    let e = f64::from_le_bytes(e.try_into().unwrap_or([0; 8]));
                    let a = f64::from_le_bytes(a.try_into().unwrap_or([0; 8]));
                    if e.is_infinite() || a.is_infinite() {
                        e == a
                    } else {
                        (e - a).abs() <= tolerance.1 + tolerance.0 * e.abs()
                    }
                }
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
