//! The lab plan: a lab file compiled once, against the device's properties, into everything a
//! measurement needs with every number already worked out.
//!
//! [`compile`] evaluates each expression of a [`LabSpec`] once: buffers get their lengths and
//! types, launches their grid, block, shared memory and arguments, checks their buffers and
//! size arguments, and the timing rule its lab overrides. What comes out is a [`LabPlan`], plain
//! data that serialises to JSON. It is what the measuring child receives (the child never reads
//! a lab file), what an exercise extends with the learner's variant
//! ([`LabPlan::with_learner_kernel`]), and what the cache key is hashed from ([`LabPlan::key`]):
//! a field added to the plan changes the key without anyone remembering to add it there.
//!
//! Presentation (titles, row labels, the access-pattern prose) is not in the plan: rewording a
//! table must not cost a GPU run. This module knows nothing of processes or GPUs; the device's
//! properties reach it as a [`Target`].

mod compile;
mod hardware;
mod key;
mod l2;

pub use compile::{Measurement, compile};
pub use key::Toolchain;
pub use l2::{L2Plan, WindowPlan};

use crate::references::Comparison;
use kernelbook_core::KernelSource;
pub use kernelbook_core::builtins::GemmPrecision;
use kernelbook_core::expr::Params;
use kernelbook_core::results::{DeviceInfo, VariantParams, Work};
use kernelbook_core::spec::{CompareRule, DeviceParams, ElemType, Fill, Swizzle};
use kernelbook_core::stats::StoppingRule;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The device properties a plan is compiled against: what decides whether a launch is
/// possible, what kernels are compiled for, and what a lab's expressions may name
/// ([`DeviceParams`]: `grid = ["2 * sm_count"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub backend: kernelbook_core::results::DeviceApi,
    /// What kernels are compiled for, e.g. "sm_90" or "gfx90a".
    pub arch: String,
    pub max_threads_per_block: u32,
    pub max_grid: [u32; 3],
    pub max_shared_bytes_per_block: u64,
    pub l2_bytes: u64,
    pub sm_count: u32,
    pub max_threads_per_sm: u32,
    pub warp_size: u32,
}

impl Target {
    /// The limits of `device`. Blocks of 1024 threads and grids of 2^31 − 1 × 65535 × 65535
    /// blocks are what CUDA and HIP both allow on every GPU the book runs on.
    pub fn of(device: &DeviceInfo) -> Target {
        Target {
            backend: device.backend,
            arch: device.arch.clone(),
            max_threads_per_block: 1024,
            max_grid: [i32::MAX as u32, 65535, 65535],
            max_shared_bytes_per_block: device.max_shared_bytes_per_block,
            l2_bytes: device.l2_bytes,
            sm_count: device.sm_count,
            max_threads_per_sm: device.max_threads_per_sm,
            warp_size: device.warp_size,
        }
    }

    /// The values a lab's expressions get for the device properties they name.
    pub fn device_params(&self) -> DeviceParams {
        let wide = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        DeviceParams {
            sm_count: i64::from(self.sm_count),
            l2_bytes: wide(self.l2_bytes),
            max_threads_per_sm: i64::from(self.max_threads_per_sm),
            warp_size: i64::from(self.warp_size),
            max_shared_bytes_per_block: wide(self.max_shared_bytes_per_block),
        }
    }
}

/// A lab, compiled: see the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabPlan {
    pub lab: String,
    pub params: Params,
    pub target: Target,
    /// The variant whose bandwidth is the lab's 100 %.
    pub ceiling: Option<String>,
    /// Whether the lab's kernels are profiled under Nsight Compute after measuring.
    pub profile: bool,
    /// Seconds a variant may take (compile, check and timing together) before it counts as hung.
    pub timeout_s: u64,
    pub timing: TimingPlan,
    pub buffers: Vec<BufferPlan>,
    /// Tensor maps over the buffers (`[[tensor_maps]]`), encoded by the device before launch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_maps: Vec<TensorMapPlan>,
    /// Every distinct (kernel, compiler options) pair the variants launch, compiled once each.
    pub builds: Vec<KernelBuild>,
    /// Every distinct check; a variant names one by index.
    pub checks: Vec<CheckPlan>,
    pub variants: Vec<VariantPlan>,
}

/// How samples are taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingPlan {
    /// The runner's stopping rule with the lab's `[timing]` overrides applied.
    pub rule: StoppingRule,
    /// Untimed runs of each variant before sampling.
    pub warmup_runs: usize,
}

/// A device buffer, sized and typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferPlan {
    pub name: String,
    pub elem: ElemType,
    /// Elements.
    pub len: usize,
    pub bytes: usize,
    pub fill: Fill,
}

/// A tensor map, evaluated and checked against the driver's rules: a dense row-major view of
/// buffer `buffer` with `dims` elements (innermost first), moved in tiles of `box_dims`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorMapPlan {
    pub name: String,
    /// Index into [`LabPlan::buffers`].
    pub buffer: usize,
    pub elem: ElemType,
    pub dims: Vec<u64>,
    pub box_dims: Vec<u32>,
    pub swizzle: Swizzle,
}

/// A kernel of the book and the compiler options one or more launches build it with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelBuild {
    /// The name the lab file uses (a kernel of the book, or the learner's kernel).
    pub key: String,
    pub source: KernelSource,
    /// The lab's compiler flags, then the launch's definitions.
    pub flags: Vec<String>,
}

/// A check bound to its buffers: where the expected output comes from and how outputs compare
/// with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckPlan {
    pub reference: ReferencePlan,
    /// Buffers the reference reads (each filled once per lab, so its host copy is what the GPU
    /// received), by index into [`LabPlan::buffers`].
    pub inputs: Vec<usize>,
    /// The buffer compared with the reference.
    pub output: usize,
    pub comparison: Comparison,
}

impl CheckPlan {
    /// How the check compares, in words, for the results file and the page.
    pub fn describe(&self) -> String {
        let against = match &self.reference {
            ReferencePlan::Builtin { name, .. } => format!("the CPU reference `{name}`"),
            ReferencePlan::Python { block, .. } => format!("the NumPy reference `{}`", block.name),
            ReferencePlan::Variant { name, .. } => format!("variant `{name}`"),
            ReferencePlan::Trusted => {
                return "the reference the other rows are checked against (not checked itself)"
                    .into();
            }
        };
        let rule = match self.comparison.rule {
            CompareRule::Exact => "bit for bit".to_string(),
            CompareRule::Close { rtol, atol } => format!("within rtol {rtol:e}, atol {atol:e}"),
            CompareRule::Ulps(ulps) => format!("within {ulps} ulps"),
        };
        let sample = match self.comparison.sample_stride {
            0 | 1 => String::new(),
            stride => format!(", every {stride}th element"),
        };
        format!("{rule} against {against}{sample}")
    }
}

/// Where a check's expected output comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReferencePlan {
    /// A built-in CPU reference ([`crate::references::find`]) and its size arguments, evaluated.
    Builtin { name: String, args: Params },
    /// A NumPy reference of the book, called with the inputs and these values (the lab's
    /// parameters and the check's own arguments).
    Python {
        block: KernelSource,
        params: std::collections::BTreeMap<String, f64>,
    },
    /// The output of another variant of the lab, run once on the same inputs (the plan carries
    /// the variant, so that a plan of some variants only can still compute it).
    Variant {
        name: String,
        variant: Box<VariantPlan>,
    },
    /// The variant the others are checked against: run and timed, compared with nothing.
    Trusted,
}

/// One row of the lab's table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantPlan {
    pub name: String,
    /// Bytes the variant must move: the numerator of its effective bandwidth.
    pub bytes_moved: u64,
    /// Index into [`LabPlan::checks`].
    pub check: usize,
    /// Flush the L2 before every timed sample.
    pub flush_l2: bool,
    pub work: Option<Work>,
    pub counter: Option<CounterPlan>,
    pub op: OpPlan,
    /// The buffers the lab file says the variant writes (`writes`), by index into
    /// [`LabPlan::buffers`]; empty where it does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<usize>,
    /// Why the target cannot run the variant (it `requires` a newer architecture): the row
    /// says so instead of running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
    /// The variant's own parameters and the sweep it comes from: its results keep them, and
    /// the cache key holds them with the rest of the plan.
    #[serde(default)]
    pub params: VariantParams,
    /// The L2 controls it runs under (`[l2]`), set before it and undone after it; absent where
    /// it sets none (so that other labs' cache keys stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<L2Plan>,
}

/// What a variant runs: one kind of operation each (see the `ops` module of this crate, which prepares each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OpPlan {
    /// Kernels of the book: untimed setup launches, then the variant's own launch and any later
    /// stages, timed together.
    Kernel(KernelOp),
    /// The driver's device-to-device copy.
    DeviceCopy(DeviceCopyOp),
    /// A copy between host memory and the device, pageable or pinned.
    HostCopy(HostCopyOp),
    /// The vendor library's transpose (cuBLAS `geam`).
    LibraryTranspose(TransposeOp),
    /// The vendor library's matrix product (cuBLAS `sgemm`, or `cublasGemmEx` on BF16 inputs).
    LibrarySgemm(GemmOp),
    /// A row measured by the Python process: PyTorch's transpose, or a Python block of the book.
    Python(PythonOp),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelOp {
    pub setup: Vec<LaunchPlan>,
    pub main: LaunchPlan,
    pub then: Vec<LaunchPlan>,
    /// For a pipelined row, the chunks `main` is launched on (its arguments chunk 0's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelinePlan>,
}

/// A pipelined row (`pipeline = { chunks, streams }`): the check's input buffer filled and its
/// output buffer emptied chunk by chunk, from and into pinned host memory, on `streams` streams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelinePlan {
    pub streams: u32,
    /// Indices into [`LabPlan::buffers`].
    pub input: usize,
    pub output: usize,
    /// Bytes each chunk copies in each direction.
    pub chunk_bytes: usize,
    /// The kernel's arguments for each chunk, evaluated with `chunk` bound.
    pub chunk_args: Vec<Vec<ArgPlan>>,
}

impl KernelOp {
    /// Every launch in the order it runs.
    pub fn launches(&self) -> impl Iterator<Item = &LaunchPlan> {
        self.setup
            .iter()
            .chain(std::iter::once(&self.main))
            .chain(&self.then)
    }
}

/// One launch, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchPlan {
    /// Index into [`LabPlan::builds`].
    pub build: usize,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
    pub args: Vec<ArgPlan>,
}

/// A kernel argument, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ArgPlan {
    /// The device pointer of a buffer (index into [`LabPlan::buffers`]).
    Buffer(usize),
    /// A tensor map's descriptor (index into [`LabPlan::tensor_maps`]).
    TensorMap(usize),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCopyOp {
    pub dst: usize,
    pub src: usize,
    pub bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HostToDevice,
    DeviceToHost,
}

/// A host↔device copy. Host to device copies the host copy of `src` (a filled buffer) into
/// `dst`; device to host copies `src` into host memory, and the check reads that memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCopyOp {
    pub direction: Direction,
    pub pinned: bool,
    pub dst: usize,
    pub src: usize,
    pub bytes: usize,
}

/// A row-major fp32 matrix product `c = a · b`, `a` of `m × k` and `b` of `k × n` floats
/// (indices into [`LabPlan::buffers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GemmOp {
    pub c: usize,
    pub a: usize,
    pub b: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// fp32 inputs, or `a` and `b` rounded to BF16 once before the product (untimed).
    #[serde(default)]
    pub precision: GemmPrecision,
}

/// A row-major `rows × cols` f32 transpose of `src` into `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransposeOp {
    pub dst: usize,
    pub src: usize,
    pub rows: usize,
    pub cols: usize,
}

/// A job timed in the Python worker (see the `peers` module): the builtin's name, which
/// `worker.py`'s table of jobs knows, with its sizes and tolerances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonOp {
    /// The builtin's name, a key of `worker.py`'s `JOBS`.
    pub job: String,
    /// What the job is told, by name: `rows` and `cols` for a transpose, `n`, `rtol` and `atol`
    /// for a sum.
    pub params: BTreeMap<String, f64>,
    /// The Python block of the book it runs (`python_transpose`).
    pub script: Option<KernelSource>,
}

impl PythonOp {
    /// The worker's job for `builtin`, told `params`.
    pub fn job<const N: usize>(
        builtin: kernelbook_core::spec::Builtin,
        params: [(&str, f64); N],
        script: Option<KernelSource>,
    ) -> PythonOp {
        PythonOp {
            job: builtin.name().to_string(),
            params: params
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect(),
            script,
        }
    }

    /// The Python block of the book it runs, if any.
    pub fn script(&self) -> Option<&KernelSource> {
        self.script.as_ref()
    }
}

/// A value the kernel measures itself: element 0 of a u64 buffer, divided by `per`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterPlan {
    pub buffer: usize,
    pub per: u64,
    pub unit: String,
}

/// Why a learner's variant cannot be added to a lab.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LearnerError {
    #[error("lab `{lab}` has no variant `{starter}`")]
    NoStarter { lab: String, starter: String },
    #[error(
        "lab `{lab}` already has a variant `{name}`, the name `kernelbook check` gives the \
         learner's kernel; rename that variant"
    )]
    NameTaken { lab: String, name: String },
    #[error("the exercise's starter `{starter}` of lab `{lab}` runs a builtin, not a kernel")]
    BuiltinStarter { lab: String, starter: String },
}

impl LabPlan {
    pub fn variant(&self, name: &str) -> Option<&VariantPlan> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// Whether any variant runs in the Python process.
    pub fn runs_python(&self) -> bool {
        self.variants
            .iter()
            .any(|v| matches!(v.op, OpPlan::Python(_)))
    }

    /// The same plan with only the variants named in `names`, in the plan's order. Buffers,
    /// builds and checks stay, so indices stay valid.
    pub fn select(&self, names: &[String]) -> LabPlan {
        LabPlan {
            variants: self
                .variants
                .iter()
                .filter(|v| names.contains(&v.name))
                .cloned()
                .collect(),
            ..self.clone()
        }
    }

    /// The kernel build a launch uses.
    pub fn build(&self, launch: &LaunchPlan) -> Option<&KernelBuild> {
        self.builds.get(launch.build)
    }

    /// The build of `variant`'s own kernel (not its setup or later stages), if it runs one.
    pub fn kernel_of(&self, variant: &VariantPlan) -> Option<&KernelBuild> {
        match &variant.op {
            OpPlan::Kernel(op) => self.build(&op.main),
            _ => None,
        }
    }

    /// A copy of this plan with the learner's variant inserted right after `starter` (so the
    /// two are timed back to back): the starter's launch in every respect, running `kernel`
    /// (the learner's source, under the key `key`) instead of the starter's kernel.
    pub fn with_learner_kernel(
        &self,
        starter: &str,
        name: &str,
        key: &str,
        kernel: KernelSource,
    ) -> Result<LabPlan, LearnerError> {
        let position = self
            .variants
            .iter()
            .position(|v| v.name == starter)
            .ok_or_else(|| LearnerError::NoStarter {
                lab: self.lab.clone(),
                starter: starter.to_string(),
            })?;
        if self.variant(name).is_some() {
            return Err(LearnerError::NameTaken {
                lab: self.lab.clone(),
                name: name.to_string(),
            });
        }
        let mut learner = self.variants[position].clone();
        let OpPlan::Kernel(op) = &mut learner.op else {
            return Err(LearnerError::BuiltinStarter {
                lab: self.lab.clone(),
                starter: starter.to_string(),
            });
        };
        let mut plan = self.clone();
        let flags = plan.builds[op.main.build].flags.clone();
        plan.builds.push(KernelBuild {
            key: key.to_string(),
            source: kernel,
            flags,
        });
        op.main.build = plan.builds.len() - 1;
        learner.name = name.to_string();
        plan.variants.insert(position + 1, learner);
        Ok(plan)
    }

    /// The filled buffers `variant` writes, which must be restored before each of its runs: its
    /// check's output where that is a filled buffer (an in-place kernel), and any it declares.
    pub fn restored_by(&self, variant: &VariantPlan) -> Vec<usize> {
        let output = self.checks.get(variant.check).map(|check| check.output);
        let mut restored: Vec<usize> = output
            .into_iter()
            .chain(variant.writes.iter().copied())
            .filter(|&index| {
                self.buffers
                    .get(index)
                    .is_some_and(|b| b.fill != Fill::Poison)
            })
            .collect();
        restored.sort_unstable();
        restored.dedup();
        restored
    }

    /// Seconds a variant may take.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_s)
    }
}

#[cfg(test)]
pub(crate) mod tests;
