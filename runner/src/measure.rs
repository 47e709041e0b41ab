//! The measurement loop, written once against [`Device`] and [`Compiler`]: compile, load,
//! verify on fresh random input with the output poisoned, warm up, then time with the L2
//! flushed before every sample until the [`StoppingRule`] is satisfied.

use crate::backend::{
    BufferId, CompileError, CompileRequest, Compiler, Device, DeviceError, KernelArg, KernelId, Op,
    ptxas,
};
use crate::reference::{self, POISON_BYTE};
use kernelbook_core::KernelSource;
use kernelbook_core::expr::ExprError;
use kernelbook_core::results::{
    FORMAT_VERSION, FailureStage, KernelResources, LabResults, LaunchShape, Outcome, Provenance,
    VariantResult,
};
use kernelbook_core::spec::{ArgSpec, Builtin, CheckSpec, Fill, LabSpec, ScalarType, VariantSpec};
use kernelbook_core::stats::{StoppingRule, Summary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Knobs of one measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MeasureOptions {
    pub rule: StoppingRule,
    /// Untimed runs of each variant before sampling.
    pub warmup_runs: usize,
    /// Seed of the random input; `None` draws a fresh one.
    pub seed: Option<u64>,
    /// Measure only these variants (by name); all when `None`.
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// Stop after the first variant that hit a device error: a CUDA context that saw a fault
    /// is unusable, so the rest must run in a fresh process.
    #[serde(default)]
    pub stop_after_device_error: bool,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            rule: StoppingRule::default(),
            warmup_runs: 3,
            seed: None,
            only: None,
            stop_after_device_error: false,
        }
    }
}

/// Progress reports for a terminal or a log. Every method has a quiet default.
pub trait Progress {
    fn stage(&mut self, _message: &str) {}
    /// Variant `index` of `total` starts.
    fn variant(&mut self, _index: usize, _total: usize, _name: &str) {}
    fn samples(&mut self, _count: usize) {}
    /// The device, compiler and input are known; measuring begins.
    fn begin(&mut self, _provenance: &Provenance) {}
    /// A variant is done (measured, wrong or failed).
    fn finished(&mut self, _result: &VariantResult) {}
}

/// Reports nothing.
#[derive(Debug, Default)]
pub struct Quiet;
impl Progress for Quiet {}

/// Writes one line per stage and variant to stderr: for builds, where a progress bar would
/// garble mdBook's own output.
#[derive(Debug, Default)]
pub struct StageLog;

impl Progress for StageLog {
    fn stage(&mut self, message: &str) {
        eprintln!("kernelbook: {message}");
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        eprintln!("kernelbook:   [{}/{total}] {name}", index + 1);
    }
}

/// A failure that stops the whole lab (as opposed to one variant).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("lab `{lab}`: {message}")]
    Lab { lab: String, message: String },
}

/// Measures every variant of `lab` on `device`. `kernels` must hold each kernel the lab names.
pub fn measure_lab(
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
    device: &mut dyn Device,
    compiler: &dyn Compiler,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
) -> Result<LabResults, MeasureError> {
    let started = Instant::now();
    let lab_err = |message: String| MeasureError::Lab {
        lab: lab.name.clone(),
        message,
    };
    let expr_err = |err: ExprError| lab_err(err.to_string());

    // Buffers: sizes from the lab, inputs drawn fresh, poisoned outputs filled on the device.
    let seed = options.seed.unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    progress.stage(&format!(
        "lab `{}`: preparing buffers and the CPU reference",
        lab.name
    ));
    let mut lengths = Vec::with_capacity(lab.buffers.len());
    for spec in &lab.buffers {
        let len = usize::try_from(spec.len.eval(&lab.params).map_err(expr_err)?)
            .map_err(|_| lab_err(format!("buffer `{}` has a negative length", spec.name)))?;
        let bytes = len
            .checked_mul(spec.elem.size())
            .ok_or_else(|| lab_err(format!("buffer `{}` is too large to address", spec.name)))?;
        lengths.push((len, bytes));
    }
    let needed: u64 = lengths.iter().map(|(_, bytes)| *bytes as u64).sum();
    let (free, total) = device
        .memory()
        .map_err(|err| lab_err(format!("cannot read the GPU's free memory: {err}")))?;
    if needed > free {
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        return Err(lab_err(format!(
            "its buffers need {:.2} GiB of device memory, and {} has {:.2} GiB free of {:.2} GiB; \
             lower its size (kernelbook run {} --set ...)",
            gib(needed),
            device.info().name,
            gib(free),
            gib(total),
            lab.name
        )));
    }
    let mut buffers = BTreeMap::new();
    let mut host_inputs = Vec::new();
    for (spec, (len, bytes)) in lab.buffers.iter().zip(lengths) {
        let id = device.alloc(bytes).map_err(|err| {
            lab_err(format!(
                "cannot allocate buffer `{}` ({:.1} MiB): {err}",
                spec.name,
                bytes as f64 / (1 << 20) as f64
            ))
        })?;
        if spec.fill != Fill::Poison {
            host_inputs.push((
                id,
                reference::initial_contents(spec.fill, spec.elem, len, &mut rng),
            ));
        }
        buffers.insert(spec.name.clone(), (id, spec));
    }
    // Inputs go up once per lab: variants only read them (a kernel that wrote one would fail its
    // own check, and a fault restarts the lab's process, which uploads them again).
    for (id, data) in &host_inputs {
        device
            .upload(*id, data)
            .map_err(|err| lab_err(format!("cannot upload the inputs: {err}")))?;
    }
    let buffer = |name: &str| {
        buffers.get(name).copied().ok_or_else(|| {
            lab_err(format!(
                "the check names buffer `{name}`, which the lab does not define"
            ))
        })
    };
    // Expected outputs, computed once per distinct check.
    let mut expected_by_check: Vec<(&CheckSpec, Vec<u8>)> = Vec::new();
    let poisoned: Vec<BufferId> = buffers
        .values()
        .filter(|(_, spec)| spec.fill == Fill::Poison)
        .map(|(id, _)| *id)
        .collect();

    let mut provenance = provenance(device, compiler, options, seed);
    progress.begin(&provenance);
    let mut variants = Vec::with_capacity(lab.variants.len());
    for (index, variant) in lab.variants.iter().enumerate() {
        if options
            .only
            .as_ref()
            .is_some_and(|only| !only.contains(&variant.name))
        {
            continue;
        }
        progress.variant(index, lab.variants.len(), &variant.name);
        let bytes_moved = lab.bytes_moved(variant, &lab.params).map_err(expr_err)?;
        let check = lab.check_for(variant);
        if !expected_by_check.iter().any(|(c, _)| *c == check) {
            let (input_id, input_spec) = buffer(check.input())?;
            let input = host_inputs
                .iter()
                .find(|(id, _)| *id == input_id)
                .map(|(_, data)| data.as_slice())
                .ok_or_else(|| {
                    lab_err(format!(
                        "the checked input `{}` must not be a poisoned buffer",
                        check.input()
                    ))
                })?;
            let expected = reference::expected_output(check, input, input_spec.elem, &lab.params)
                .map_err(expr_err)?;
            expected_by_check.push((check, expected));
        }
        let expected = expected_by_check
            .iter()
            .find(|(c, _)| *c == check)
            .map(|(_, e)| e.as_slice())
            .unwrap_or_default();
        let (output_id, output_spec) = buffer(check.output())?;
        let mut result = VariantResult {
            name: variant.name.clone(),
            kernel: variant.kernel_name().map(str::to_string),
            source_hash: variant
                .kernel_name()
                .and_then(|k| kernels.get(k))
                .map(KernelSource::source_hash),
            compile_flags: Vec::new(),
            bytes_moved,
            launch: None,
            resources: None,
            outcome: Outcome::Failed {
                stage: FailureStage::Launch,
                message: String::new(),
            },
            implementation: None,
        };

        // Resolve the operation: a compiled kernel or a builtin.
        let args = resolve_args(lab, variant, &buffers).map_err(lab_err)?;
        let prepared = match (variant.kernel_name(), variant.builtin) {
            (Some(name), _) => {
                let source = kernels
                    .get(name)
                    .ok_or_else(|| lab_err(format!("kernel `{name}` is not in the book")))?;
                match prepare_kernel(lab, variant, source, device, compiler) {
                    Ok((kernel, shape, resources, options)) => {
                        result.compile_flags = options;
                        result.launch = Some(shape);
                        result.resources = Some(resources);
                        Ok(Prepared::Kernel { kernel, shape })
                    }
                    Err(failure) => Err(failure),
                }
            }
            (None, Some(Builtin::Memcpy)) => match args.as_slice() {
                [KernelArg::Buffer(dst), KernelArg::Buffer(src)] => Ok(Prepared::Copy {
                    dst: *dst,
                    src: *src,
                    bytes: expected.len(),
                }),
                _ => Err((FailureStage::Launch, "memcpy takes [dst, src]".to_string())),
            },
            (None, Some(Builtin::LibraryTranspose)) => {
                match (args.as_slice(), transpose_shape(check, lab)) {
                    ([KernelArg::Buffer(dst), KernelArg::Buffer(src)], Some((rows, cols))) => {
                        match device.transpose_library() {
                            Ok(name) => {
                                result.implementation = Some(name);
                                Ok(Prepared::Transpose {
                                    dst: *dst,
                                    src: *src,
                                    rows,
                                    cols,
                                })
                            }
                            Err(reason) => {
                                result.outcome = Outcome::Unavailable { reason };
                                progress.finished(&result);
                                variants.push(result);
                                continue;
                            }
                        }
                    }
                    _ => Err((
                        FailureStage::Launch,
                        "library_transpose takes [dst, src] and a transpose check".to_string(),
                    )),
                }
            }
            (None, Some(Builtin::TorchTranspose)) => {
                result.outcome = match transpose_shape(check, lab) {
                    Some((rows, cols)) => torch_outcome(rows, cols, device, options, &mut result),
                    None => Outcome::Failed {
                        stage: FailureStage::Launch,
                        message: "torch_transpose needs a transpose check".into(),
                    },
                };
                progress.finished(&result);
                variants.push(result);
                continue;
            }
            (None, None) => Err((FailureStage::Launch, "no kernel or builtin".to_string())),
        };
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err((stage, message)) => {
                result.outcome = Outcome::Failed { stage, message };
                progress.finished(&result);
                variants.push(result);
                continue;
            }
        };
        let op = prepared.op(&args);

        // Verify on fresh inputs with every output poisoned, then time.
        let mut actual = vec![0u8; expected.len()];
        let mut device_error = false;
        result.outcome = match verify_and_time(
            device,
            &op,
            &poisoned,
            output_id,
            expected,
            &mut actual,
            output_spec.elem,
            options,
            progress,
        ) {
            Ok(outcome) => outcome,
            Err(err) => {
                device_error = true;
                Outcome::Failed {
                    stage: FailureStage::Launch,
                    message: err.to_string(),
                }
            }
        };
        progress.finished(&result);
        variants.push(result);
        if device_error && options.stop_after_device_error {
            break;
        }
    }

    provenance.measured_at = now_rfc3339();
    provenance.wall_seconds = started.elapsed().as_secs_f64();
    provenance.clocks = device.clocks();
    Ok(LabResults {
        format_version: FORMAT_VERSION,
        lab: lab.name.clone(),
        params: lab.params.clone(),
        provenance,
        ceiling: lab.ceiling.clone(),
        variants,
    })
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Where and how this measurement is made (the date and duration are filled in at the end).
fn provenance(
    device: &dyn Device,
    compiler: &dyn Compiler,
    options: &MeasureOptions,
    seed: u64,
) -> Provenance {
    let info = device.info().clone();
    let l2_mib = info.l2_bytes as f64 / (1 << 20) as f64;
    Provenance {
        driver_version: device.driver_version(),
        compiler_version: compiler.version(),
        runner_version: env!("CARGO_PKG_VERSION").to_string(),
        measured_at: now_rfc3339(),
        wall_seconds: 0.0,
        input_seed: seed,
        timing_method: format!(
            "device events around each launch; L2 ({l2_mib:.0} MiB) flushed before every sample; \
             {} warm-up runs; at least {} samples and {} ms of kernel time, until the mean is \
             known to {:.1} %",
            options.warmup_runs,
            options.rule.min_samples,
            options.rule.min_gpu_ms,
            options.rule.target_rel_error * 100.0
        ),
        device: info,
        clocks: None,
    }
}

/// The shape a transpose check gives.
fn transpose_shape(check: &CheckSpec, lab: &LabSpec) -> Option<(usize, usize)> {
    match check {
        CheckSpec::Transpose { rows, cols, .. } => Some((
            usize::try_from(rows.eval(&lab.params).ok()?).ok()?,
            usize::try_from(cols.eval(&lab.params).ok()?).ok()?,
        )),
        CheckSpec::Copy { .. } | CheckSpec::StridedGather { .. } => None,
    }
}

/// Runs the PyTorch peer (CUDA only) and turns its report into an outcome.
fn torch_outcome(
    rows: usize,
    cols: usize,
    device: &dyn Device,
    options: &MeasureOptions,
    result: &mut VariantResult,
) -> Outcome {
    if device.info().backend != "cuda" {
        return Outcome::Unavailable {
            reason: "the PyTorch peer runs on CUDA devices only".into(),
        };
    }
    let flush_bytes = (device.info().l2_bytes * 2).max(64 << 20);
    match crate::peers::torch_transpose(rows, cols, &options.rule, flush_bytes, options.warmup_runs)
    {
        crate::peers::PeerRun::Measured {
            samples_ms,
            implementation,
        } => {
            result.implementation = Some(implementation);
            match Summary::of(&samples_ms) {
                Some(summary) => Outcome::Measured {
                    noisy: summary.is_noisy(&options.rule),
                    stop_reason: options
                        .rule
                        .verdict(&samples_ms, 0.0)
                        .unwrap_or(kernelbook_core::stats::StopReason::TimeLimit),
                    summary,
                    samples_ms,
                },
                None => Outcome::Failed {
                    stage: FailureStage::Timing,
                    message: "torch reported invalid samples".into(),
                },
            }
        }
        crate::peers::PeerRun::Wrong {
            implementation,
            mismatch,
        } => {
            result.implementation = Some(implementation);
            Outcome::WrongResult {
                mismatch: mismatch.unwrap_or(kernelbook_core::results::Mismatch {
                    index: 0,
                    expected: "a transposed matrix".into(),
                    actual: "another shape".into(),
                    count: 0,
                }),
            }
        }
        crate::peers::PeerRun::Unavailable(reason) => Outcome::Unavailable { reason },
        crate::peers::PeerRun::Failed(message) => Outcome::Failed {
            stage: FailureStage::Launch,
            message,
        },
    }
}

enum Prepared {
    Kernel {
        kernel: KernelId,
        shape: LaunchShape,
    },
    Copy {
        dst: BufferId,
        src: BufferId,
        bytes: usize,
    },
    Transpose {
        dst: BufferId,
        src: BufferId,
        rows: usize,
        cols: usize,
    },
}

impl Prepared {
    fn op<'a>(&self, args: &'a [KernelArg]) -> Op<'a> {
        match *self {
            Prepared::Kernel { kernel, shape } => Op::Launch {
                kernel,
                shape,
                args,
            },
            Prepared::Copy { dst, src, bytes } => Op::Copy { dst, src, bytes },
            Prepared::Transpose {
                dst,
                src,
                rows,
                cols,
            } => Op::Transpose {
                dst,
                src,
                rows,
                cols,
            },
        }
    }
}

type Failure = (FailureStage, String);

/// Compiles and loads a kernel and works out its launch shape and resources.
fn prepare_kernel(
    lab: &LabSpec,
    variant: &VariantSpec,
    source: &KernelSource,
    device: &mut dyn Device,
    compiler: &dyn Compiler,
) -> Result<(KernelId, LaunchShape, KernelResources, Vec<String>), Failure> {
    let arch = device.info().arch.clone();
    let compiled = compiler
        .compile(&CompileRequest {
            name: &source.name,
            source: &source.source,
            arch: &arch,
            flags: &lab.compile_flags,
        })
        .map_err(|err| match err {
            CompileError::Rejected { log, .. } => (
                FailureStage::Compile,
                crate::diagnostics::map_compile_log(&log, source),
            ),
            CompileError::Compiler(message) => (FailureStage::Compile, message),
        })?;
    let (kernel, loaded) = device
        .load(&compiled)
        .map_err(|err| (FailureStage::Load, err.to_string()))?;
    let shape = launch_shape(lab, variant).map_err(|message| (FailureStage::Launch, message))?;
    let threads = shape.threads_per_block();
    check_limits(device.info(), &shape, loaded.shared_bytes)
        .map_err(|message| (FailureStage::Launch, message))?;
    let blocks_per_sm = device
        .blocks_per_sm(kernel, threads, shape.shared_bytes)
        .map_err(|err| (FailureStage::Launch, err.to_string()))?;
    let info = device.info();
    let report = ptxas::parse_report(&compiled.log, &source.name);
    let warps_per_sm = (info.max_threads_per_sm / 32).max(1);
    let resources = KernelResources {
        registers: loaded.registers,
        local_bytes: loaded.local_bytes,
        spill_store_bytes: report.map(|r| r.spill_store_bytes),
        spill_load_bytes: report.map(|r| r.spill_load_bytes),
        shared_bytes: loaded.shared_bytes,
        blocks_per_sm,
        occupancy: f64::from(blocks_per_sm * threads.div_ceil(32)) / f64::from(warps_per_sm),
    };
    Ok((kernel, shape, resources, compiled.options))
}

/// Refuses launches the device cannot run, with the limit named, before the driver answers
/// with a bare "invalid value".
fn check_limits(
    info: &kernelbook_core::results::DeviceInfo,
    shape: &LaunchShape,
    static_shared: u32,
) -> Result<(), String> {
    const MAX_THREADS_PER_BLOCK: u32 = 1024;
    let threads = shape.threads_per_block();
    if threads > MAX_THREADS_PER_BLOCK {
        return Err(format!(
            "a block of {threads} threads is more than the {MAX_THREADS_PER_BLOCK} a block may have"
        ));
    }
    let shared = u64::from(static_shared) + u64::from(shape.shared_bytes);
    if shared > info.max_shared_bytes_per_block {
        return Err(format!(
            "the kernel needs {shared} bytes of shared memory per block ({static_shared} static + {} dynamic); \
             {} allows at most {} per block",
            shape.shared_bytes, info.name, info.max_shared_bytes_per_block
        ));
    }
    Ok(())
}

fn launch_shape(lab: &LabSpec, variant: &VariantSpec) -> Result<LaunchShape, String> {
    let dims = |exprs: &[kernelbook_core::expr::Expr]| -> Result<[u32; 3], String> {
        let mut out = [1u32; 3];
        for (slot, expr) in out.iter_mut().zip(exprs) {
            let value = expr.eval(&lab.params).map_err(|e| e.to_string())?;
            *slot = u32::try_from(value)
                .map_err(|_| format!("`{expr}` = {value} does not fit a launch dimension"))?;
        }
        Ok(out)
    };
    let shared_bytes = match &variant.shared_bytes {
        Some(expr) => {
            let value = expr.eval(&lab.params).map_err(|e| e.to_string())?;
            u32::try_from(value)
                .map_err(|_| format!("shared_bytes `{expr}` = {value} is out of range"))?
        }
        None => 0,
    };
    Ok(LaunchShape {
        grid: dims(&variant.grid)?,
        block: dims(&variant.block)?,
        shared_bytes,
    })
}

fn resolve_args(
    lab: &LabSpec,
    variant: &VariantSpec,
    buffers: &BTreeMap<String, (BufferId, &kernelbook_core::spec::BufferSpec)>,
) -> Result<Vec<KernelArg>, String> {
    let specs = lab.args(variant).map_err(|e| e.to_string())?;
    specs
        .iter()
        .map(|arg| match arg {
            ArgSpec::Buffer(name) => buffers
                .get(name)
                .map(|(id, _)| KernelArg::Buffer(*id))
                .ok_or_else(|| format!("unknown buffer `{name}`")),
            ArgSpec::Scalar { expr, ty } => {
                let value = expr.eval(&lab.params).map_err(|e| e.to_string())?;
                let out_of_range = || format!("argument `{expr}` = {value} does not fit {ty:?}");
                Ok(match ty {
                    ScalarType::I32 => {
                        KernelArg::I32(i32::try_from(value).map_err(|_| out_of_range())?)
                    }
                    ScalarType::I64 => KernelArg::I64(value),
                    ScalarType::U32 => {
                        KernelArg::U32(u32::try_from(value).map_err(|_| out_of_range())?)
                    }
                    ScalarType::U64 => {
                        KernelArg::U64(u64::try_from(value).map_err(|_| out_of_range())?)
                    }
                })
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn verify_and_time(
    device: &mut dyn Device,
    op: &Op<'_>,
    poisoned: &[BufferId],
    output: BufferId,
    expected: &[u8],
    actual: &mut [u8],
    elem: kernelbook_core::spec::ElemType,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
) -> Result<Outcome, DeviceError> {
    for id in poisoned {
        device.fill(*id, POISON_BYTE)?;
    }
    device.run(op)?;
    device.synchronize()?;
    device.download(output, actual)?;
    if let Some(mismatch) = reference::first_mismatch(expected, actual, elem) {
        return Ok(Outcome::WrongResult { mismatch });
    }

    for _ in 0..options.warmup_runs {
        device.run(op)?;
    }
    device.synchronize()?;

    let started = Instant::now();
    let mut samples = Vec::new();
    let stop_reason = loop {
        if let Some(reason) = options
            .rule
            .verdict(&samples, started.elapsed().as_secs_f64())
        {
            break reason;
        }
        device.flush_l2()?;
        samples.push(device.time(op)?);
        progress.samples(samples.len());
    };
    let summary = Summary::of(&samples)
        .ok_or_else(|| DeviceError::new("timing", format!("no valid samples (got {samples:?})")))?;
    Ok(Outcome::Measured {
        noisy: summary.is_noisy(&options.rule),
        summary,
        stop_reason,
        samples_ms: samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::fake::{FakeCompiler, FakeDevice};
    use kernelbook_core::SourceLocation;
    use kernelbook_core::results::FailureStage;
    use std::path::Path;

    const LAB: &str = r#"
name = "t"
title = "T"
bytes = "2 * n * n * 4"
ceiling = "memcpy"
[params]
n = 64
[[buffers]]
name = "in"
len = "n * n"
fill = "random"
[[buffers]]
name = "out"
len = "n * n"
fill = "poison"
[check]
reference = "transpose"
input = "in"
output = "out"
rows = "n"
cols = "n"
[[variants]]
name = "memcpy"
builtin = "memcpy"
args = ["out", "in"]
check = { reference = "copy", input = "in", output = "out" }
[[variants]]
name = "good"
kernel = "transpose"
grid = ["n / 32", "n / 32"]
block = [32, 8]
args = ["out", "in", "n"]
[[variants]]
name = "wrong"
kernel = "transpose_skip_last"
grid = ["n / 32", "n / 32"]
block = [32, 8]
args = ["out", "in", "n"]
[[variants]]
name = "broken"
kernel = "broken"
grid = [1]
block = [32]
args = ["out", "in", "n"]
"#;

    fn kernel(name: &str, source: &str) -> (String, KernelSource) {
        (
            name.to_string(),
            KernelSource {
                name: name.to_string(),
                source: source.to_string(),
                origin: SourceLocation {
                    file: "lab.md".into(),
                    line: 1,
                },
            },
        )
    }

    fn run(device: &mut FakeDevice) -> LabResults {
        let lab = LabSpec::parse(LAB, Path::new("t.toml")).expect("lab");
        let kernels = BTreeMap::from([
            kernel("transpose", "ok"),
            kernel("transpose_skip_last", "ok"),
            kernel("broken", "int x;\n#error this does not compile\n"),
        ]);
        let options = MeasureOptions {
            seed: Some(42),
            ..MeasureOptions::default()
        };
        measure_lab(&lab, &kernels, device, &FakeCompiler, &options, &mut Quiet).expect("measured")
    }

    #[test]
    fn a_correct_kernel_is_verified_then_timed_with_a_flush_before_every_sample() {
        let mut device = FakeDevice::new();
        let results = run(&mut device);
        let good = results.variant("good").expect("good");
        let Outcome::Measured {
            summary,
            samples_ms,
            ..
        } = &good.outcome
        else {
            panic!("expected a measurement, got {:?}", good.outcome);
        };
        assert!(samples_ms.len() >= 10);
        assert!((summary.median_ms - 1.001).abs() < 0.002);
        assert_eq!(device.flushes, device.timed, "one flush per timed sample");
        assert_eq!(good.bytes_moved, 2 * 64 * 64 * 4);
        let resources = good.resources.expect("resources");
        assert_eq!(
            (resources.spill_store_bytes, resources.blocks_per_sm),
            (Some(4), 8)
        );
        assert_eq!(
            resources.occupancy, 1.0,
            "8 blocks of 8 warps fill 64 warp slots"
        );
        assert_eq!(results.provenance.input_seed, 42);
    }

    #[test]
    fn a_builtin_with_its_own_check_is_measured() {
        let results = run(&mut FakeDevice::new());
        assert!(matches!(
            results.variant("memcpy").expect("memcpy").outcome,
            Outcome::Measured { .. }
        ));
    }

    #[test]
    fn a_wrong_kernel_reports_the_first_mismatch_and_no_time() {
        let results = run(&mut FakeDevice::new());
        match &results.variant("wrong").expect("wrong").outcome {
            Outcome::WrongResult { mismatch } => {
                assert_eq!(mismatch.index, 64 * 64 - 1);
                assert_eq!(mismatch.actual, "NaN", "the poison shows through");
                assert_eq!(mismatch.count, 1);
            }
            other => panic!("expected a wrong result, got {other:?}"),
        }
    }

    #[test]
    fn a_compile_error_fails_only_its_own_variant() {
        let results = run(&mut FakeDevice::new());
        match &results.variant("broken").expect("broken").outcome {
            Outcome::Failed { stage, message } => {
                assert_eq!(*stage, FailureStage::Compile);
                assert_eq!(message, "lab.md:2: error: #error this does not compile");
            }
            other => panic!("expected a compile failure, got {other:?}"),
        }
        assert_eq!(results.variants.len(), 4);
    }

    #[test]
    fn inputs_are_fresh_for_each_seed() {
        let mut a = FakeDevice::new();
        let mut b = FakeDevice::new();
        run(&mut a);
        let lab = LabSpec::parse(LAB, Path::new("t.toml")).expect("lab");
        let options = MeasureOptions {
            seed: Some(43),
            ..MeasureOptions::default()
        };
        measure_lab(
            &lab,
            &BTreeMap::from([kernel("transpose", "ok")]),
            &mut b,
            &FakeCompiler,
            &options,
            &mut Quiet,
        )
        .map(|_| ())
        .expect_err("the lab names kernels that are missing here");
        assert_ne!(
            a.buffers[0], b.buffers[0],
            "different seeds, different inputs"
        );
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;
    use crate::backend::fake::{FakeCompiler, FakeDevice};
    use kernelbook_core::SourceLocation;
    use std::path::Path;

    fn lab(n: i64, shared_bytes: u32) -> LabSpec {
        let text = format!(
            r#"
name = "big"
title = "Big"
bytes = "2 * n * 4"
[params]
n = {n}
[[buffers]]
name = "src"
len = "n"
fill = "random"
[[buffers]]
name = "dst"
len = "n"
fill = "poison"
[check]
reference = "copy"
input = "src"
output = "dst"
[[variants]]
name = "copy"
kernel = "copy"
grid = [1]
block = [256]
shared_bytes = {shared_bytes}
args = ["dst", "src", "n"]
"#
        );
        LabSpec::parse(&text, Path::new("labs/big.toml")).expect("lab")
    }

    fn run(lab: &LabSpec) -> Result<LabResults, MeasureError> {
        let kernels = BTreeMap::from([(
            "copy".to_string(),
            KernelSource {
                name: "copy".into(),
                source: "ok".into(),
                origin: SourceLocation {
                    file: "a.md".into(),
                    line: 1,
                },
            },
        )]);
        let options = MeasureOptions {
            seed: Some(1),
            ..MeasureOptions::default()
        };
        measure_lab(
            lab,
            &kernels,
            &mut FakeDevice::new(),
            &FakeCompiler,
            &options,
            &mut Quiet,
        )
    }

    #[test]
    fn a_lab_larger_than_free_memory_names_the_lab_and_the_limit() {
        // 2 buffers of 2^28 floats: 2 GiB on a fake GPU with 1 GiB.
        let err = run(&lab(1 << 28, 0)).expect_err("too big");
        let message = err.to_string();
        assert!(
            message.starts_with("lab `big`: its buffers need 2.00 GiB"),
            "{message}"
        );
        assert!(
            message.contains("Fake GPU has 1.00 GiB free of 1.00 GiB"),
            "{message}"
        );
    }

    #[test]
    fn more_shared_memory_than_a_block_may_have_is_refused_with_the_limit() {
        let results = run(&lab(1024, 65536)).expect("measured");
        match &results.variants[0].outcome {
            Outcome::Failed {
                stage: FailureStage::Launch,
                message,
            } => assert_eq!(
                message,
                "the kernel needs 65536 bytes of shared memory per block (0 static + 65536 dynamic); \
                 Fake GPU allows at most 49152 per block"
            ),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
