//! The measurement loop, written once against [`Device`] and [`Compiler`]: compile, load,
//! verify on fresh random input with the output poisoned, warm up, then time with the L2
//! flushed before every sample until the [`StoppingRule`] is satisfied.

use crate::backend::{
    BufferId, CompileError, CompileRequest, CompiledKernel, Compiler, Device, DeviceError,
    KernelArg, KernelId, LoadedKernel, Op, ptxas,
};
use crate::peers::{PeerRun, PythonPeers};
use crate::reference::{self, POISON_BYTE};
use kernelbook_core::KernelSource;
use kernelbook_core::expr::{Expr, ExprError};
use kernelbook_core::results::{
    CounterResult, DeviceInfo, FORMAT_VERSION, FailureStage, KernelResources, LabResults,
    LaunchShape, Outcome, Provenance, VariantResult, Work,
};
use kernelbook_core::spec::{
    ArgSpec, Builtin, CheckSpec, Fill, LabSpec, LaunchSpec, ScalarType, VariantSpec, compile_flags,
};
use kernelbook_core::stats::{StoppingRule, Summary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::mpsc;
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
    /// Leave out the variants that run in Python (the PyTorch and Triton peers): the parent
    /// process measures those in its one long-lived Python process.
    #[serde(default)]
    pub defer_python: bool,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            rule: StoppingRule::default(),
            warmup_runs: 3,
            seed: None,
            only: None,
            stop_after_device_error: false,
            defer_python: false,
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
    let options = &MeasureOptions {
        rule: lab.stopping_rule(&options.rule),
        ..options.clone()
    };
    let arch = device.info().arch.clone();
    std::thread::scope(|scope| {
        // Compiling runs beside the inputs, the references and the first variants: each
        // variant waits only for its own kernels (one large kernel can take a second).
        let compiling = start_compiling(scope, lab, kernels, &arch, compiler, options);
        measure_variants(lab, kernels, device, compiler, options, progress, compiling)
    })
}

/// [`measure_lab`] once its kernels are compiling.
fn measure_variants(
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
    device: &mut dyn Device,
    compiler: &dyn Compiler,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
    compiling: mpsc::Receiver<Precompiled>,
) -> Result<LabResults, MeasureError> {
    let started = Instant::now();
    let lab_err = |message: String| MeasureError::Lab {
        lab: lab.name.clone(),
        message,
    };
    let expr_err = |err: ExprError| lab_err(err.to_string());

    let selected = |v: &&VariantSpec| {
        options
            .only
            .as_ref()
            .is_none_or(|only| only.contains(&v.name))
    };
    if lab
        .variants
        .iter()
        .filter(selected)
        .any(|v| v.builtin == Some(Builtin::LibraryTranspose))
    {
        device.start_loading_transpose_library();
    }

    // Buffers: sizes from the lab, inputs drawn fresh, poisoned outputs filled on the device.
    let seed = options.seed.unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    progress.stage(&format!(
        "lab `{}`: preparing buffers and the CPU reference, compiling its kernels",
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
    let host_copy = |name: &str| -> Option<&[u8]> {
        let (id, _) = buffers.get(name)?;
        host_inputs
            .iter()
            .find(|(input, _)| input == id)
            .map(|(_, data)| data.as_slice())
    };
    // Expected outputs, computed once per distinct check.
    let mut expected_by_check: Vec<(&CheckSpec, Vec<u8>)> = Vec::new();
    let poisoned: Vec<BufferId> = buffers
        .values()
        .filter(|(_, spec)| spec.fill == Fill::Poison)
        .map(|(id, _)| *id)
        .collect();
    // Each kernel is compiled and loaded once per lab and set of definitions, however many
    // variants launch it.
    let mut compiled = CompileMemo {
        pending: Some(compiling),
        ..CompileMemo::default()
    };

    let mut provenance = provenance(device, compiler, options, seed, lab);
    progress.begin(&provenance);
    let mut variants = Vec::with_capacity(lab.variants.len());
    // Started on the first variant that runs in Python, if any.
    let mut python: Option<PythonPeers> = None;
    // Where each variant's output is read back to.
    let mut read_back = Vec::new();
    for (index, variant) in lab.variants.iter().enumerate() {
        if options
            .only
            .as_ref()
            .is_some_and(|only| !only.contains(&variant.name))
        {
            continue;
        }
        if options.defer_python && variant.builtin.is_some_and(Builtin::runs_in_python) {
            continue;
        }
        progress.variant(index, lab.variants.len(), &variant.name);
        let bytes_moved = lab.bytes_moved(variant, &lab.params).map_err(expr_err)?;
        let check = lab.check_for(variant);
        if !expected_by_check.iter().any(|(c, _)| *c == check) {
            for name in check.inputs() {
                buffer(name)?;
                if host_copy(name).is_none() {
                    return Err(lab_err(format!(
                        "the checked input `{name}` must not be a poisoned buffer"
                    )));
                }
            }
            let input_elem = check
                .inputs()
                .first()
                .and_then(|name| lab.buffer(name))
                .map_or(kernelbook_core::spec::ElemType::F32, |b| b.elem);
            let expected = reference::expected_output(check, &host_copy, input_elem, &lab.params)
                .map_err(expr_err)?;
            expected_by_check.push((check, expected));
        }
        let expected = expected_by_check
            .iter()
            .find(|(c, _)| *c == check)
            .map(|(_, e)| e.as_slice())
            .unwrap_or_default();
        let (output_id, output_spec) = buffer(check.output())?;
        let work = match lab.work_for(variant) {
            Some(spec) => Some(Work {
                count: u64::try_from(spec.count.eval(&lab.params).map_err(expr_err)?)
                    .map_err(|_| lab_err(format!("work.count `{}` is negative", spec.count)))?,
                unit: spec.unit.clone(),
            }),
            None => None,
        };
        let counter = match lab.counter_for(variant) {
            Some(spec) => Some(CounterPlan {
                buffer: buffer(&spec.buffer)?.0,
                per: u64::try_from(spec.per.eval(&lab.params).map_err(expr_err)?)
                    .unwrap_or(0)
                    .max(1),
                unit: spec.unit.clone(),
            }),
            None => None,
        };
        let mut result = result_template(variant, kernels, bytes_moved);
        result.work = work;

        // Resolve the operations: setup launches, then the variant's kernel or builtin and any
        // later stages.
        let args = resolve_args(lab, &variant.args, &buffers).map_err(lab_err)?;
        let mut readback = Readback::Buffer(output_id);
        let mut stage = None;
        let mut setup = Vec::new();
        let mut later = Vec::new();
        let prepared = match (variant.kernel_name(), variant.builtin) {
            (Some(_), _) => {
                let mut prepare = |plan: &LaunchPlan<'_>| {
                    prepare_launch(
                        lab,
                        plan,
                        kernels,
                        &buffers,
                        device,
                        compiler,
                        &mut compiled,
                    )
                };
                let launches = variant
                    .setup
                    .iter()
                    .map(|l| prepare(&LaunchPlan::of_launch(l)))
                    .collect::<Result<Vec<_>, _>>()
                    .and_then(|s| {
                        setup = s;
                        later = variant
                            .then
                            .iter()
                            .map(|l| prepare(&LaunchPlan::of_launch(l)))
                            .collect::<Result<Vec<_>, _>>()?;
                        LaunchPlan::of_variant(variant)
                            .map(|plan| prepare(&plan))
                            .unwrap_or_else(|| Err((FailureStage::Launch, "no kernel".to_string())))
                    });
                match launches {
                    Ok(main) => {
                        result.compile_flags = main.options.clone();
                        result.launch = Some(main.shape);
                        result.resources = Some(main.resources);
                        Ok(Prepared::Kernel(main))
                    }
                    Err(failure) => Err(failure),
                }
            }
            (None, Some(builtin)) if builtin.is_copy() => match args.as_slice() {
                [KernelArg::Buffer(dst), KernelArg::Buffer(src)] => {
                    let bytes = expected.len();
                    match builtin {
                        Builtin::HostToDevicePageable | Builtin::HostToDevicePinned => {
                            let pinned = builtin == Builtin::HostToDevicePinned;
                            stage =
                                Some((pinned, check.inputs().first().and_then(|n| host_copy(n))));
                            Ok(Prepared::Builtin(Op::HostToDevice {
                                dst: *dst,
                                bytes,
                                pinned,
                            }))
                        }
                        Builtin::DeviceToHostPageable | Builtin::DeviceToHostPinned => {
                            let pinned = builtin == Builtin::DeviceToHostPinned;
                            // The staging buffer must exist at the right size before the first
                            // copy into it; the check reads it back.
                            stage = Some((pinned, None));
                            readback = Readback::Host { pinned };
                            Ok(Prepared::Builtin(Op::DeviceToHost {
                                src: *src,
                                bytes,
                                pinned,
                            }))
                        }
                        _ => Ok(Prepared::Builtin(Op::Copy {
                            dst: *dst,
                            src: *src,
                            bytes,
                        })),
                    }
                }
                _ => Err((
                    FailureStage::Launch,
                    format!("{} takes [dst, src]", builtin.name()),
                )),
            },
            (None, Some(Builtin::LibraryTranspose)) => {
                match (args.as_slice(), transpose_shape(check, lab)) {
                    ([KernelArg::Buffer(dst), KernelArg::Buffer(src)], Some((rows, cols))) => {
                        match device.transpose_library() {
                            Ok(name) => {
                                result.implementation = Some(name);
                                Ok(Prepared::Builtin(Op::Transpose {
                                    dst: *dst,
                                    src: *src,
                                    rows,
                                    cols,
                                }))
                            }
                            Err(why) => {
                                result.outcome = Outcome::Unavailable {
                                    reason: why.message,
                                };
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
            (None, Some(_)) => {
                // The PyTorch peer and Python blocks run in a Python process of their own.
                let peers = python.get_or_insert_with(PythonPeers::new);
                let info = device.info().clone();
                measure_python_variant(&mut result, lab, variant, kernels, &info, options, peers);
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
        let main = prepared.op();
        let later_ops: Vec<Op<'_>> = later.iter().map(PreparedLaunch::op).collect();
        let sequence: Vec<Op<'_>> = std::iter::once(main).chain(later_ops).collect();
        let op = if sequence.len() == 1 {
            main
        } else {
            Op::Sequence(&sequence)
        };
        let setup_ops: Vec<Op<'_>> = setup.iter().map(PreparedLaunch::op).collect();

        // Verify on fresh inputs with every output poisoned, then time.
        let plan = TimingPlan {
            op,
            setup: &setup_ops,
            stage: stage.map(|(pinned, data)| (pinned, data.unwrap_or(&[]), expected.len())),
            poisoned: &poisoned,
            readback,
            expected,
            elem: output_spec.elem,
            tolerance: check.tolerance(),
            sample_stride: check.sample_stride(&lab.params).map_err(expr_err)?,
            flush_l2: variant.flush_l2.unwrap_or(lab.flush_l2),
            counter: counter.as_ref(),
        };
        let mut device_error = false;
        result.outcome = match verify_and_time(device, &plan, options, &mut read_back, progress) {
            Ok((outcome, counted)) => {
                result.counter = counted;
                outcome
            }
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

    provenance.clocks = device.clocks();
    Ok(lab_results(lab, provenance, started, variants))
}

/// A lab's results once every variant is in, stamped with when the lab ended and how long it
/// took since `started`.
pub(crate) fn lab_results(
    lab: &LabSpec,
    mut provenance: Provenance,
    started: Instant,
    variants: Vec<VariantResult>,
) -> LabResults {
    provenance.measured_at = now_rfc3339();
    provenance.wall_seconds = started.elapsed().as_secs_f64();
    LabResults {
        format_version: FORMAT_VERSION,
        lab: lab.name.clone(),
        params: lab.params.clone(),
        provenance,
        ceiling: lab.ceiling.clone(),
        variants,
        profile: None,
    }
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Where and how this measurement is made (the date and duration are filled in at the end).
fn provenance(
    device: &dyn Device,
    compiler: &dyn Compiler,
    options: &MeasureOptions,
    seed: u64,
    lab: &LabSpec,
) -> Provenance {
    let info = device.info().clone();
    let l2_mib = info.l2_bytes as f64 / (1 << 20) as f64;
    let flushes = lab
        .variants
        .iter()
        .map(|v| v.flush_l2.unwrap_or(lab.flush_l2));
    let (all, none) = flushes.fold((true, true), |(all, none), f| (all && f, none && !f));
    let flush = if all {
        format!("L2 ({l2_mib:.0} MiB) flushed before every sample")
    } else if none {
        format!(
            "L2 ({l2_mib:.0} MiB) not flushed: the warm-up runs leave the caches as a re-run finds them"
        )
    } else {
        format!(
            "L2 ({l2_mib:.0} MiB) flushed before every sample where the variant says so, else left warm"
        )
    };
    Provenance {
        driver_version: device.driver_version(),
        compiler_version: compiler.version(),
        runner_version: env!("CARGO_PKG_VERSION").to_string(),
        measured_at: now_rfc3339(),
        wall_seconds: 0.0,
        input_seed: seed,
        timing_method: format!(
            "device events around each launch; {flush}; \
             {} warm-up runs; at least {} samples and {} ms of kernel time, until the mean is \
             known to {:.1} % or for at most {} s",
            options.warmup_runs,
            options.rule.min_samples,
            options.rule.min_gpu_ms,
            options.rule.target_rel_error * 100.0,
            options.rule.max_wall_s
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
        _ => None,
    }
}

/// A variant's result before it runs: its names, source hashes and the bytes it must move,
/// with a placeholder outcome.
pub(crate) fn result_template(
    variant: &VariantSpec,
    kernels: &BTreeMap<String, KernelSource>,
    bytes_moved: u64,
) -> VariantResult {
    VariantResult {
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
        work: None,
        counter: None,
        other_kernels: variant
            .kernel_names()
            .into_iter()
            .filter(|k| Some(*k) != variant.kernel_name())
            .filter_map(|k| Some((k.to_string(), kernels.get(k)?.source_hash())))
            .collect(),
    }
}

/// Measures a variant that runs in Python (the PyTorch peer, or a Python block of the book
/// through `python_transpose`; CUDA only) with `peers`, into `result`.
pub(crate) fn measure_python_variant(
    result: &mut VariantResult,
    lab: &LabSpec,
    variant: &VariantSpec,
    kernels: &BTreeMap<String, KernelSource>,
    device: &DeviceInfo,
    options: &MeasureOptions,
    peers: &PythonPeers,
) {
    (result.outcome, result.implementation) =
        python_outcome(lab, variant, kernels, device, options, peers);
}

/// The outcome of a Python variant, and the implementation that ran (e.g. "torch 2.11.0").
fn python_outcome(
    lab: &LabSpec,
    variant: &VariantSpec,
    kernels: &BTreeMap<String, KernelSource>,
    device: &DeviceInfo,
    options: &MeasureOptions,
    peers: &PythonPeers,
) -> (Outcome, Option<String>) {
    let failed = |stage, message: String| (Outcome::Failed { stage, message }, None);
    let check = lab.check_for(variant);
    let Some((rows, cols)) = transpose_shape(check, lab) else {
        let builtin = variant.builtin.map_or("a Python peer", Builtin::name);
        return failed(
            FailureStage::Launch,
            format!("{builtin} needs a transpose check"),
        );
    };
    let block = match (&variant.builtin, &variant.script) {
        (Some(Builtin::PythonTranspose), Some(name)) => {
            let Some(block) = kernels.get(name.get_ref().as_str()) else {
                return failed(
                    FailureStage::Compile,
                    "the Python block `script` names is not in the book".into(),
                );
            };
            Some(block)
        }
        (Some(Builtin::PythonTranspose), None) => {
            return failed(
                FailureStage::Compile,
                "python_transpose needs `script = \"NAME\"`".into(),
            );
        }
        _ => None,
    };
    if device.backend != "cuda" {
        let reason = "the Python peers (PyTorch, Triton) run on CUDA devices only here".into();
        return (Outcome::Unavailable { reason }, None);
    }
    let request = crate::peers::TransposeRequest {
        rows,
        cols,
        rule: &options.rule,
        flush_bytes: (device.l2_bytes * 2).max(64 << 20),
        warmup_runs: options.warmup_runs,
        block,
    };
    match peers.transpose(&request, lab.timeout()) {
        PeerRun::Measured {
            samples_ms,
            implementation,
        } => {
            let outcome = match Summary::of(&samples_ms) {
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
                    message: "the Python peer reported invalid samples".into(),
                },
            };
            (outcome, Some(implementation))
        }
        PeerRun::Wrong {
            implementation,
            mismatch,
        } => (
            Outcome::WrongResult {
                mismatch: mismatch.unwrap_or(kernelbook_core::results::Mismatch {
                    index: 0,
                    expected: "a transposed matrix".into(),
                    actual: "another shape".into(),
                    count: 0,
                }),
            },
            Some(implementation),
        ),
        PeerRun::Unavailable(reason) => (Outcome::Unavailable { reason }, None),
        PeerRun::Failed(message) => failed(FailureStage::Launch, message),
    }
}

/// One launch of a kernel of the book: a variant's own, or a `setup`/`then` entry.
struct LaunchPlan<'a> {
    kernel: &'a str,
    grid: &'a [Expr],
    block: &'a [Expr],
    shared_bytes: Option<&'a Expr>,
    args: &'a [String],
    defines: &'a BTreeMap<String, String>,
}

impl<'a> LaunchPlan<'a> {
    fn of_variant(variant: &'a VariantSpec) -> Option<LaunchPlan<'a>> {
        Some(LaunchPlan {
            kernel: variant.kernel_name()?,
            grid: &variant.grid,
            block: &variant.block,
            shared_bytes: variant.shared_bytes.as_ref(),
            args: &variant.args,
            defines: &variant.defines,
        })
    }

    fn of_launch(launch: &'a LaunchSpec) -> LaunchPlan<'a> {
        LaunchPlan {
            kernel: launch.kernel_name(),
            grid: &launch.grid,
            block: &launch.block,
            shared_bytes: launch.shared_bytes.as_ref(),
            args: &launch.args,
            defines: &launch.defines,
        }
    }
}

/// A kernel compiled, loaded, and ready to launch with its arguments.
struct PreparedLaunch {
    kernel: KernelId,
    shape: LaunchShape,
    resources: KernelResources,
    options: Vec<String>,
    args: Vec<KernelArg>,
}

impl PreparedLaunch {
    fn op(&self) -> Op<'_> {
        Op::Launch {
            kernel: self.kernel,
            shape: self.shape,
            args: &self.args,
        }
    }
}

/// Kernels already compiled and loaded in this lab, by kernel and compiler options.
#[derive(Default)]
struct CompileMemo {
    entries: Vec<((String, Vec<String>), Compiled)>,
    /// Images compiled ahead of time ([`start_compiling`]), not loaded yet.
    images: Vec<Precompiled>,
    /// Where the rest arrive while compiling goes on; `None` once it has ended.
    pending: Option<mpsc::Receiver<Precompiled>>,
}

impl CompileMemo {
    /// The image compiled ahead of time for `key`, waiting for it if it is still compiling;
    /// `None` if it was not among them.
    fn take_image(
        &mut self,
        key: &(String, Vec<String>),
    ) -> Option<Result<CompiledKernel, CompileError>> {
        loop {
            if let Some(at) = self.images.iter().position(|(k, _)| k == key) {
                return Some(self.images.swap_remove(at).1);
            }
            let received = self.pending.as_ref()?.recv();
            match received {
                Ok(image) => self.images.push(image),
                Err(_) => self.pending = None,
            }
        }
    }
}

/// A (kernel, options) pair and what compiling it gave.
type Precompiled = ((String, Vec<String>), Result<CompiledKernel, CompileError>);

/// Starts compiling every distinct (kernel, options) pair the lab's selected variants launch,
/// in the order the variants come, on as many threads as there are cores (each program
/// compiles independently); the images arrive on the returned channel as they are done.
/// Loading stays on the device's thread.
fn start_compiling<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    lab: &'scope LabSpec,
    kernels: &'scope BTreeMap<String, KernelSource>,
    arch: &'scope str,
    compiler: &'scope dyn Compiler,
    options: &MeasureOptions,
) -> mpsc::Receiver<Precompiled> {
    let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
    for variant in &lab.variants {
        if options
            .only
            .as_ref()
            .is_some_and(|only| !only.contains(&variant.name))
        {
            continue;
        }
        let launches = variant
            .setup
            .iter()
            .map(LaunchPlan::of_launch)
            .chain(LaunchPlan::of_variant(variant))
            .chain(variant.then.iter().map(LaunchPlan::of_launch));
        for plan in launches {
            let key = (
                plan.kernel.to_string(),
                compile_flags(&lab.compile_flags, plan.defines),
            );
            if kernels.contains_key(plan.kernel) && !wanted.contains(&key) {
                wanted.push(key);
            }
        }
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(wanted.len());
    let queue = std::sync::Arc::new(std::sync::Mutex::new(
        wanted
            .into_iter()
            .collect::<std::collections::VecDeque<_>>(),
    ));
    let (images, arrived) = mpsc::channel();
    for _ in 0..threads {
        let queue = std::sync::Arc::clone(&queue);
        let images = images.clone();
        scope.spawn(move || {
            while let Some((kernel, flags)) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                let Some(source) = kernels.get(&kernel) else {
                    continue;
                };
                // A compiler that panics fails its kernel's variants, not the lab.
                let image = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    compiler.compile(&CompileRequest {
                        name: &source.name,
                        source: &source.source,
                        arch,
                        flags: &flags,
                    })
                }))
                .unwrap_or_else(|_| Err(CompileError::Compiler("the compiler panicked".into())));
                if images.send(((kernel, flags), image)).is_err() {
                    break;
                }
            }
        });
    }
    arrived
}

#[derive(Clone)]
struct Compiled {
    kernel: KernelId,
    loaded: LoadedKernel,
    log: String,
    options: Vec<String>,
}

/// What a variant runs: a kernel of the book with its arguments, or one of the runner's own
/// operations (which borrow nothing).
enum Prepared {
    Kernel(PreparedLaunch),
    Builtin(Op<'static>),
}

impl Prepared {
    fn op(&self) -> Op<'_> {
        match self {
            Prepared::Kernel(launch) => launch.op(),
            Prepared::Builtin(op) => *op,
        }
    }
}

type Failure = (FailureStage, String);

/// Compiles (once per lab and option set) and loads a kernel, and works out its launch shape,
/// resources and arguments.
fn prepare_launch(
    lab: &LabSpec,
    plan: &LaunchPlan<'_>,
    kernels: &BTreeMap<String, KernelSource>,
    buffers: &BufferMap<'_>,
    device: &mut dyn Device,
    compiler: &dyn Compiler,
    memo: &mut CompileMemo,
) -> Result<PreparedLaunch, Failure> {
    let source = kernels.get(plan.kernel).ok_or_else(|| {
        (
            FailureStage::Compile,
            format!("kernel `{}` is not in the book", plan.kernel),
        )
    })?;
    let flags = compile_flags(&lab.compile_flags, plan.defines);
    let key = (plan.kernel.to_string(), flags.clone());
    let compiled = match memo.entries.iter().find(|(k, _)| *k == key) {
        Some((_, compiled)) => compiled.clone(),
        None => {
            let image = memo
                .take_image(&key)
                .unwrap_or_else(|| {
                    let arch = device.info().arch.clone();
                    compiler.compile(&CompileRequest {
                        name: &source.name,
                        source: &source.source,
                        arch: &arch,
                        flags: &flags,
                    })
                })
                .map_err(|err| match err {
                    CompileError::Rejected { log, .. } => (
                        FailureStage::Compile,
                        crate::diagnostics::map_compile_log(&log, source),
                    ),
                    CompileError::Compiler(message) => (FailureStage::Compile, message),
                })?;
            let (kernel, loaded) = device
                .load(&image)
                .map_err(|err| (FailureStage::Load, err.to_string()))?;
            let compiled = Compiled {
                kernel,
                loaded,
                log: image.log,
                options: image.options,
            };
            memo.entries.push((key, compiled.clone()));
            compiled
        }
    };
    let shape = launch_shape(lab, plan).map_err(|message| (FailureStage::Launch, message))?;
    let threads = shape.threads_per_block();
    check_limits(device.info(), &shape, compiled.loaded.shared_bytes)
        .map_err(|message| (FailureStage::Launch, message))?;
    let blocks_per_sm = device
        .blocks_per_sm(compiled.kernel, threads, shape.shared_bytes)
        .map_err(|err| (FailureStage::Launch, err.to_string()))?;
    let info = device.info();
    let report = ptxas::parse_report(&compiled.log, &source.name);
    let warps_per_sm = (info.max_threads_per_sm / 32).max(1);
    let resources = KernelResources {
        registers: compiled.loaded.registers,
        local_bytes: compiled.loaded.local_bytes,
        spill_store_bytes: report.map(|r| r.spill_store_bytes),
        spill_load_bytes: report.map(|r| r.spill_load_bytes),
        shared_bytes: compiled.loaded.shared_bytes,
        blocks_per_sm,
        occupancy: f64::from(blocks_per_sm * threads.div_ceil(32)) / f64::from(warps_per_sm),
    };
    let args =
        resolve_args(lab, plan.args, buffers).map_err(|message| (FailureStage::Launch, message))?;
    Ok(PreparedLaunch {
        kernel: compiled.kernel,
        shape,
        resources,
        options: compiled.options,
        args,
    })
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

fn launch_shape(lab: &LabSpec, plan: &LaunchPlan<'_>) -> Result<LaunchShape, String> {
    let dims = |exprs: &[kernelbook_core::expr::Expr]| -> Result<[u32; 3], String> {
        let mut out = [1u32; 3];
        for (slot, expr) in out.iter_mut().zip(exprs) {
            let value = expr.eval(&lab.params).map_err(|e| e.to_string())?;
            *slot = u32::try_from(value)
                .map_err(|_| format!("`{expr}` = {value} does not fit a launch dimension"))?;
        }
        Ok(out)
    };
    let shared_bytes = match plan.shared_bytes {
        Some(expr) => {
            let value = expr.eval(&lab.params).map_err(|e| e.to_string())?;
            u32::try_from(value)
                .map_err(|_| format!("shared_bytes `{expr}` = {value} is out of range"))?
        }
        None => 0,
    };
    Ok(LaunchShape {
        grid: dims(plan.grid)?,
        block: dims(plan.block)?,
        shared_bytes,
    })
}

type BufferMap<'a> = BTreeMap<String, (BufferId, &'a kernelbook_core::spec::BufferSpec)>;

fn resolve_args(
    lab: &LabSpec,
    args: &[String],
    buffers: &BufferMap<'_>,
) -> Result<Vec<KernelArg>, String> {
    let specs = lab.parse_args(args).map_err(|e| e.to_string())?;
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
                    // Small integers (the factors and thresholds labs pass) are exact in f32.
                    ScalarType::F32 => KernelArg::F32(value as f32),
                })
            }
        })
        .collect()
}

/// Where a variant's result is read back from.
#[derive(Debug, Clone, Copy)]
enum Readback {
    Buffer(BufferId),
    /// The host staging buffer of a device-to-host copy.
    Host {
        pinned: bool,
    },
}

/// A value the kernel measures itself: element 0 of a u64 buffer, divided by `per`.
struct CounterPlan {
    buffer: BufferId,
    per: u64,
    unit: String,
}

/// Everything the verify-then-time loop needs for one variant.
struct TimingPlan<'a> {
    op: Op<'a>,
    /// Run once, untimed, before the check.
    setup: &'a [Op<'a>],
    /// Host data to stage for a host copy: (pinned, data, bytes); empty data only sizes it.
    stage: Option<(bool, &'a [u8], usize)>,
    poisoned: &'a [BufferId],
    readback: Readback,
    expected: &'a [u8],
    elem: kernelbook_core::spec::ElemType,
    tolerance: Option<(f64, f64)>,
    /// Compare every this-many-th element only (1: all).
    sample_stride: usize,
    flush_l2: bool,
    counter: Option<&'a CounterPlan>,
}

fn verify_and_time(
    device: &mut dyn Device,
    plan: &TimingPlan<'_>,
    options: &MeasureOptions,
    scratch: &mut Vec<u8>,
    progress: &mut dyn Progress,
) -> Result<(Outcome, Option<CounterResult>), DeviceError> {
    for id in plan.poisoned {
        device.fill(*id, POISON_BYTE)?;
    }
    if let Some((pinned, data, bytes)) = plan.stage {
        let poison;
        let data = if data.is_empty() {
            poison = vec![POISON_BYTE; bytes];
            &poison[..]
        } else {
            data
        };
        device.stage_host(pinned, data)?;
    }
    for op in plan.setup {
        device.run(op)?;
    }
    device.run(&plan.op)?;
    device.synchronize()?;
    // Reused from variant to variant: a fresh buffer of hundreds of MiB costs a page fault
    // per page every time.
    let actual = &mut *scratch;
    actual.clear();
    actual.resize(plan.expected.len(), 0);
    match plan.readback {
        Readback::Buffer(id) => device.download(id, actual)?,
        Readback::Host { pinned } => device.read_host(pinned, actual)?,
    }
    if let Some(mismatch) = reference::first_mismatch_within(
        plan.expected,
        actual,
        plan.elem,
        plan.tolerance,
        plan.sample_stride,
    ) {
        return Ok((Outcome::WrongResult { mismatch }, None));
    }

    for _ in 0..options.warmup_runs {
        device.run(&plan.op)?;
    }
    device.synchronize()?;

    let started = Instant::now();
    let mut samples = Vec::new();
    let mut counted = Vec::new();
    let stop_reason = loop {
        if let Some(reason) = options
            .rule
            .verdict(&samples, started.elapsed().as_secs_f64())
        {
            break reason;
        }
        if plan.flush_l2 {
            device.flush_l2()?;
        }
        samples.push(device.time(&plan.op)?);
        if let Some(counter) = plan.counter {
            let mut raw = [0u8; 8];
            device.download(counter.buffer, &mut raw)?;
            counted.push(u64::from_le_bytes(raw) as f64 / counter.per as f64);
        }
        progress.samples(samples.len());
    };
    let summary = Summary::of(&samples)
        .ok_or_else(|| DeviceError::new("timing", format!("no valid samples (got {samples:?})")))?;
    let counter = plan.counter.map(|c| CounterResult {
        unit: c.unit.clone(),
        per: c.per,
        values: counted,
    });
    Ok((
        Outcome::Measured {
            noisy: summary.is_noisy(&options.rule),
            summary,
            stop_reason,
            samples_ms: samples,
        },
        counter,
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::fake::{FakeCompiler, FakeDevice};
    use kernelbook_core::SourceLocation;
    use kernelbook_core::results::FailureStage;
    use std::path::Path;

    /// A transpose lab with a builtin, a good, a wrong and a broken variant.
    pub(crate) const LAB: &str = r#"
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

    pub(super) fn kernel(name: &str, source: &str) -> (String, KernelSource) {
        (
            name.to_string(),
            KernelSource {
                name: name.to_string(),
                source: source.to_string(),
                origin: SourceLocation {
                    file: "lab.md".into(),
                    line: 1,
                },
                language: Default::default(),
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
        let results = measure_lab(
            &lab,
            &BTreeMap::from([kernel("transpose", "ok")]),
            &mut b,
            &FakeCompiler,
            &options,
            &mut Quiet,
        )
        .expect("measured");
        // A kernel missing from the book fails its own variant, not the lab.
        match &results.variant("wrong").expect("wrong").outcome {
            Outcome::Failed { stage, message } => {
                assert_eq!(*stage, FailureStage::Compile);
                assert!(message.contains("not in the book"), "{message}");
            }
            other => panic!("expected a failure, got {other:?}"),
        }
        assert_ne!(
            a.buffers[0], b.buffers[0],
            "different seeds, different inputs"
        );
    }
}

#[cfg(test)]
mod limit_tests {
    use super::tests::kernel;
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
                language: Default::default(),
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

    /// A lab of copies that exercises the multi-launch, host-copy, counter and no-flush paths.
    const PIPELINE: &str = r#"
name = "p"
title = "P"
bytes = "2 * n * 4"
flush_l2 = false
[params]
n = 256
[counter]
buffer = "count"
per = "4"
unit = "ticks per step"
[[buffers]]
name = "in"
len = "n"
fill = "random"
[[buffers]]
name = "mid"
len = "n"
fill = "poison"
[[buffers]]
name = "out"
len = "n"
fill = "poison"
[[buffers]]
name = "count"
elem = "u64"
len = "1"
fill = "random"
[check]
reference = "copy"
input = "in"
output = "out"
[[variants]]
name = "two_stages"
kernel = "copy_first"
grid = [1]
block = [256]
args = ["mid", "in"]
then = [{ kernel = "copy_second", grid = [1], block = [256], args = ["out", "mid"] }]
[[variants]]
name = "first_stage_only"
kernel = "copy_first"
grid = [1]
block = [256]
args = ["mid", "in"]
[[variants]]
name = "h2d"
builtin = "host_to_device_pinned"
args = ["out", "in"]
[[variants]]
name = "d2h"
builtin = "device_to_host_pageable"
args = ["out", "in"]
"#;

    fn run_pipeline(device: &mut FakeDevice) -> LabResults {
        let lab = LabSpec::parse(PIPELINE, Path::new("p.toml")).expect("lab");
        let kernels = BTreeMap::from([kernel("copy_first", "ok"), kernel("copy_second", "ok")]);
        let options = MeasureOptions {
            seed: Some(7),
            ..MeasureOptions::default()
        };
        measure_lab(&lab, &kernels, device, &FakeCompiler, &options, &mut Quiet).expect("measured")
    }

    #[test]
    fn later_stages_run_with_the_variant_and_without_them_the_check_fails() {
        let results = run_pipeline(&mut FakeDevice::new());
        assert!(matches!(
            results.variant("two_stages").expect("variant").outcome,
            Outcome::Measured { .. }
        ));
        // Only `then` writes `out`: without it the poisoned output cannot pass.
        assert!(matches!(
            results
                .variant("first_stage_only")
                .expect("variant")
                .outcome,
            Outcome::WrongResult { .. }
        ));
        let two = results.variant("two_stages").expect("variant");
        assert_eq!(
            two.other_kernels.keys().collect::<Vec<_>>(),
            ["copy_second"],
            "the later stage's fingerprint is kept for staleness checks"
        );
    }

    #[test]
    fn host_copies_are_checked_through_the_staging_buffer() {
        let results = run_pipeline(&mut FakeDevice::new());
        for name in ["h2d", "d2h"] {
            match &results.variant(name).expect("variant").outcome {
                Outcome::Measured { .. } => {}
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_lab_that_keeps_its_caches_is_never_flushed_and_reads_its_counter_per_sample() {
        let mut device = FakeDevice::new();
        let results = run_pipeline(&mut device);
        assert_eq!(device.flushes, 0, "flush_l2 = false");
        let raw = u64::from_le_bytes(device.buffers[3][..8].try_into().expect("8 bytes"));
        let two = results.variant("two_stages").expect("variant");
        let counter = two.counter.as_ref().expect("counter");
        let Outcome::Measured { samples_ms, .. } = &two.outcome else {
            panic!("not measured");
        };
        assert_eq!(counter.values.len(), samples_ms.len());
        assert!(counter.values.iter().all(|v| *v == raw as f64 / 4.0));
        assert_eq!(counter.unit, "ticks per step");
    }

    #[test]
    fn each_kernel_and_option_set_is_compiled_once_per_lab() {
        let lab = LabSpec::parse(PIPELINE, Path::new("p.toml")).expect("lab");
        let kernels = BTreeMap::from([kernel("copy_first", "ok"), kernel("copy_second", "ok")]);
        let images: Vec<Precompiled> = std::thread::scope(|scope| {
            let options = MeasureOptions::default();
            start_compiling(scope, &lab, &kernels, "sm_90", &FakeCompiler, &options)
                .iter()
                .collect()
        });
        let mut names: Vec<&str> = images.iter().map(|((k, _), _)| k.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["copy_first", "copy_second"]);
        assert!(images.iter().all(|(_, image)| image.is_ok()));
    }
}
