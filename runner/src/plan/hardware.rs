//! What a plan checks of the hardware: whether the target can run a variant that `requires` an
//! architecture, and the sizes of each tensor map against the driver's rules for
//! `cuTensorMapEncodeTiled`, so that a wrong box is an error at the lab file's line rather than
//! the driver's bare "invalid value" at launch.

use super::{BufferPlan, Target, TensorMapPlan};
use kernelbook_core::expr::Params;
use kernelbook_core::results::DeviceApi;
use kernelbook_core::spec::{ComputeCapability, LabError, LabSpec, TensorMapSpec};

/// The most elements a tensor map's box may have along one dimension.
const MAX_BOX: u64 = 256;
/// Global strides must be multiples of this many bytes, and below 2^40.
const STRIDE_ALIGN: u64 = 16;
const MAX_STRIDE: u64 = 1 << 40;

/// Why `target` cannot run a variant that requires `required`, or `None` if it can. Only
/// NVIDIA GPUs have compute capabilities; the fake device of the tests reports one too.
pub fn unsupported_on(target: &Target, required: ComputeCapability) -> Option<String> {
    let have = (target.backend != DeviceApi::Hip)
        .then(|| ComputeCapability::parse_arch(&target.arch))
        .flatten();
    match have {
        Some(have) if have >= required => None,
        Some(have) => Some(format!(
            "{}; this GPU is compute capability {have}",
            required.needs_sentence()
        )),
        None => Some(format!(
            "{}; this GPU is {} ({})",
            required.needs_sentence(),
            target.arch,
            target.backend
        )),
    }
}

/// `spec` evaluated and checked: the buffer it views, its sizes, its box.
pub fn tensor_map(
    lab: &LabSpec,
    spec: &TensorMapSpec,
    buffers: &[BufferPlan],
    env: &Params,
) -> Result<TensorMapPlan, LabError> {
    let at = format!("\"{}\"", spec.name);
    let error =
        |message: String| lab.error_at(&at, format!("tensor map `{}`: {message}", spec.name));
    let (buffer, view) = buffers
        .iter()
        .enumerate()
        .find(|(_, b)| b.name == spec.buffer)
        .ok_or_else(|| error(format!("`{}` is not a buffer", spec.buffer)))?;
    let eval = |expr: &kernelbook_core::expr::Expr| {
        expr.eval(env)
            .map_err(|err| error(format!("`{expr}`: {err}")))
    };
    let dims =
        spec.dims
            .iter()
            .map(|e| {
                eval(e).and_then(|v| {
                    u64::try_from(v).ok().filter(|&v| v >= 1).ok_or_else(|| {
                        error(format!("dimension `{e}` is {v}; it must be at least 1"))
                    })
                })
            })
            .collect::<Result<Vec<u64>, _>>()?;
    let box_dims = spec
        .box_dims
        .iter()
        .map(|e| {
            eval(e).and_then(|v| {
                u32::try_from(v)
                    .ok()
                    .filter(|&v| (1..=MAX_BOX as u32).contains(&v))
                    .ok_or_else(|| {
                        error(format!(
                            "box dimension `{e}` is {v}; it must be 1 to {MAX_BOX}"
                        ))
                    })
            })
        })
        .collect::<Result<Vec<u32>, _>>()?;
    let plan = TensorMapPlan {
        name: spec.name.clone(),
        buffer,
        elem: view.elem,
        dims,
        box_dims,
        swizzle: spec.swizzle,
    };
    check_sizes(&plan, view).map_err(error)?;
    Ok(plan)
}

/// The driver's rules for a tiled tensor map, as `cuTensorMapEncodeTiled` documents them.
fn check_sizes(map: &TensorMapPlan, buffer: &BufferPlan) -> Result<(), String> {
    let elem = map.elem.size() as u64;
    let elements = map
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or("its dimensions overflow")?;
    if elements > buffer.len as u64 {
        return Err(format!(
            "its dimensions hold {elements} elements; buffer `{}` has {}",
            buffer.name, buffer.len
        ));
    }
    for (axis, (&size, &tile)) in map.dims.iter().zip(&map.box_dims).enumerate() {
        if u64::from(tile) > size {
            return Err(format!(
                "box dimension {axis} is {tile}, larger than the tensor's {size}"
            ));
        }
    }
    let inner_bytes = u64::from(map.box_dims[0]) * elem;
    if !inner_bytes.is_multiple_of(16) {
        return Err(format!(
            "the box's inner dimension is {inner_bytes} bytes; it must be a multiple of 16"
        ));
    }
    if let Some(span) = map.swizzle.span_bytes()
        && inner_bytes > span
    {
        return Err(format!(
            "the box's inner dimension is {inner_bytes} bytes, more than the {span}-byte swizzle \
             span"
        ));
    }
    for stride in map.strides() {
        if !stride.is_multiple_of(STRIDE_ALIGN) || stride >= MAX_STRIDE {
            return Err(format!(
                "a row stride of {stride} bytes; strides must be multiples of {STRIDE_ALIGN} \
                 below 2^40 (make the inner dimension a multiple of {} elements)",
                STRIDE_ALIGN / elem.max(1)
            ));
        }
    }
    Ok(())
}

impl TensorMapPlan {
    /// The byte stride of each dimension after the innermost, for a dense row-major tensor.
    pub fn strides(&self) -> Vec<u64> {
        let elem = self.elem.size() as u64;
        self.dims
            .iter()
            .scan(elem, |stride, &d| {
                *stride = stride.saturating_mul(d);
                Some(*stride)
            })
            .take(self.dims.len().saturating_sub(1))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::spec::{ElemType, Fill, Swizzle};

    fn buffer(len: usize) -> BufferPlan {
        BufferPlan {
            name: "in".into(),
            elem: ElemType::F32,
            len,
            bytes: len * 4,
            fill: Fill::Random,
        }
    }

    fn map(dims: Vec<u64>, box_dims: Vec<u32>, swizzle: Swizzle) -> TensorMapPlan {
        TensorMapPlan {
            name: "tiles".into(),
            buffer: 0,
            elem: ElemType::F32,
            dims,
            box_dims,
            swizzle,
        }
    }

    #[test]
    fn a_dense_matrix_has_one_row_stride() {
        let m = map(vec![8192, 4096], vec![32, 32], Swizzle::B128);
        assert_eq!(m.strides(), vec![8192 * 4]);
        assert_eq!(check_sizes(&m, &buffer(8192 * 4096)), Ok(()));
    }

    #[test]
    fn the_driver_rules_are_checked_with_reasons() {
        let too_wide = map(vec![64, 64], vec![64, 32], Swizzle::B128);
        let err = check_sizes(&too_wide, &buffer(64 * 64)).expect_err("256 B > 128 B swizzle");
        assert!(err.contains("128-byte swizzle span"), "{err}");
        let ragged = map(vec![6, 8], vec![3, 2], Swizzle::None);
        let err = check_sizes(&ragged, &buffer(48)).expect_err("12-byte inner box");
        assert!(err.contains("multiple of 16"), "{err}");
        let tall_box = map(vec![32, 4], vec![32, 8], Swizzle::None);
        let err = check_sizes(&tall_box, &buffer(128)).expect_err("8 rows of 4");
        assert!(err.contains("larger than the tensor's 4"), "{err}");
        let odd_rows = map(vec![36, 8], vec![4, 8], Swizzle::None);
        assert_eq!(
            check_sizes(&odd_rows, &buffer(36 * 8)),
            Ok(()),
            "144-byte rows are fine"
        );
        let misaligned = map(vec![10, 8], vec![4, 8], Swizzle::None);
        let err = check_sizes(&misaligned, &buffer(80)).expect_err("40-byte rows");
        assert!(err.contains("multiples of 16"), "{err}");
        let short = map(vec![64, 64], vec![32, 32], Swizzle::None);
        let err = check_sizes(&short, &buffer(64 * 63)).expect_err("buffer too small");
        assert!(err.contains("4032"), "{err}");
    }

    fn target(backend: &str, arch: &str) -> Target {
        Target {
            backend: serde_json::from_value(serde_json::json!(backend)).expect("a backend"),
            arch: arch.into(),
            max_threads_per_block: 1024,
            max_grid: [1, 1, 1],
            max_shared_bytes_per_block: 0,
            l2_bytes: 0,
            sm_count: 1,
            max_threads_per_sm: 2048,
            warp_size: 32,
        }
    }

    #[test]
    fn a_variant_runs_on_its_architecture_and_later_ones_only() {
        let hopper = ComputeCapability { major: 9, minor: 0 };
        assert_eq!(unsupported_on(&target("cuda", "sm_90"), hopper), None);
        assert_eq!(unsupported_on(&target("cuda", "sm_100"), hopper), None);
        assert_eq!(
            unsupported_on(&target("cuda", "sm_80"), hopper).as_deref(),
            Some(
                "needs a Hopper-class GPU (compute capability 9.0); this GPU is compute \
                 capability 8.0"
            )
        );
        let on_amd = unsupported_on(&target("hip", "gfx942"), hopper).expect("not NVIDIA");
        assert!(on_amd.starts_with("needs a Hopper-class GPU"), "{on_amd}");
        assert!(on_amd.contains("gfx942"), "{on_amd}");
    }
}
