//! Kernels of the book: compiled once per option set on the process's pool (on every core,
//! ahead of the labs that launch them: [`super::compile`]), loaded on the device's thread,
//! and launched with the plan's shapes and arguments.

use super::compile::{BuildJob, CompilePool};
use super::{Annotations, Env, Prepared, Readback, Refusal, Step, VariantOp, check_output};
use crate::backend::{
    CompileError, CompiledKernel, Device, DeviceErrorKind, KernelArg, KernelId, LoadedKernel,
    TensorMapId, TensorMapRequest, ptxas,
};
use crate::plan::{ArgPlan, KernelOp, LabPlan, LaunchPlan, VariantPlan};
use kernelbook_core::results::{FailureStage, KernelResources, LaunchShape};
use std::collections::BTreeMap;

/// The lab's kernels: compiling on the process's [`CompilePool`], then loaded once each.
#[derive(Debug)]
pub struct Kernels {
    loaded: BTreeMap<usize, Result<Loaded, Refusal>>,
    pool: CompilePool,
}

#[derive(Debug, Clone)]
struct Loaded {
    kernel: KernelId,
    info: LoadedKernel,
    log: String,
    options: Vec<String>,
}

impl Kernels {
    /// Queues `builds` (indices into the plan's builds) on `pool`, in the order given, unless
    /// it compiled or queued them already (ahead of the lab); loading stays on the device's
    /// thread ([`Kernels::load`]).
    pub fn start(plan: &LabPlan, builds: &[usize], pool: &CompilePool) -> Kernels {
        pool.queue(CompilePool::jobs_of(plan, builds));
        Kernels {
            loaded: BTreeMap::new(),
            pool: pool.clone(),
        }
    }

    /// Build `index` loaded on `device`, once: a build several launches share is loaded for
    /// the first and reused.
    fn load(
        &mut self,
        plan: &LabPlan,
        index: usize,
        device: &mut dyn Device,
    ) -> Result<Loaded, Refusal> {
        if let Some(loaded) = self.loaded.get(&index) {
            return loaded.clone();
        }
        let image = match BuildJob::of(plan, index) {
            Some(job) => self.pool.image(&job),
            None => Err(CompileError::Compiler(format!(
                "lab `{}` has no build {index}",
                plan.lab
            ))),
        };
        let loaded = load_image(plan, index, image, device);
        self.loaded.insert(index, loaded.clone());
        loaded
    }

    /// The function name of the kernel loaded as `kernel`, if this lab loaded it.
    pub fn function_of<'p>(&self, plan: &'p LabPlan, kernel: KernelId) -> Option<&'p str> {
        self.loaded.iter().find_map(|(index, loaded)| {
            let loaded = loaded.as_ref().ok()?;
            (loaded.kernel == kernel)
                .then(|| plan.builds.get(*index).map(|b| b.source.name.as_str()))
                .flatten()
        })
    }
}

fn load_image(
    plan: &LabPlan,
    index: usize,
    image: Result<CompiledKernel, CompileError>,
    device: &mut dyn Device,
) -> Result<Loaded, Refusal> {
    let image = image.map_err(|err| match err {
        CompileError::Rejected { log, .. } => {
            let message = match plan.builds.get(index) {
                Some(build) => crate::diagnostics::map_compile_log(&log, &build.source),
                None => log,
            };
            Refusal::failed(FailureStage::Compile, message)
        }
        CompileError::Compiler(message) => Refusal::failed(FailureStage::Compile, message),
    })?;
    let (kernel, info) = device
        .load(&image)
        .map_err(|err| Refusal::failed(FailureStage::Load, err.to_string()))?;
    Ok(Loaded {
        kernel,
        info,
        log: image.log,
        options: image.options,
    })
}

/// The build indices `variants` launch, each once, in the order they first run.
pub fn builds_of<'a>(variants: impl IntoIterator<Item = &'a VariantPlan>) -> Vec<usize> {
    let mut builds = Vec::new();
    for variant in variants {
        if let crate::plan::OpPlan::Kernel(op) = &variant.op {
            for launch in op.launches() {
                if !builds.contains(&launch.build) {
                    builds.push(launch.build);
                }
            }
        }
    }
    builds
}

impl VariantOp for KernelOp {
    fn prepare(&self, env: &mut Env<'_>, variant: &VariantPlan) -> Result<Prepared, Refusal> {
        let setup = self
            .setup
            .iter()
            .map(|launch| launch_step(env, launch).map(|(step, _)| step))
            .collect::<Result<Vec<_>, _>>()?;
        let later = self
            .then
            .iter()
            .map(|launch| launch_step(env, launch).map(|(step, _)| step))
            .collect::<Result<Vec<_>, _>>()?;
        let (main, annotations) = launch_step(env, &self.main)?;
        if let Some(pipeline) = &self.pipeline {
            return super::pipeline::prepare(env, pipeline, main, annotations);
        }
        Ok(Prepared {
            setup,
            timed: std::iter::once(main).chain(later).collect(),
            staging: None,
            readback: Readback::Buffer(check_output(env, variant)?),
            annotations,
        })
    }
}

/// A launch loaded and checked against the device's limits, with what the table says of it.
fn launch_step(env: &mut Env<'_>, launch: &LaunchPlan) -> Result<(Step, Annotations), Refusal> {
    let loaded = env.kernels.load(env.plan, launch.build, env.device)?;
    let shape = LaunchShape {
        grid: launch.grid,
        block: launch.block,
        shared_bytes: launch.shared_bytes,
    };
    check_shared_memory(env.device, &shape, loaded.info.shared_bytes)?;
    let resources = resources(env, launch, &loaded, &shape)?;
    let args = launch
        .args
        .iter()
        .map(|arg| kernel_arg(env, *arg))
        .collect::<Result<Vec<_>, _>>()?;
    let annotations = Annotations {
        compile_flags: loaded.options.clone(),
        launch: Some(shape),
        resources: Some(resources),
        implementation: None,
    };
    let step = Step::Launch {
        kernel: loaded.kernel,
        shape,
        args,
    };
    Ok((step, annotations))
}

/// Encodes the plan's tensor map `index` over its buffer on the device.
fn tensor_map(env: &mut Env<'_>, index: usize) -> Result<TensorMapId, Refusal> {
    let map = env
        .plan
        .tensor_maps
        .get(index)
        .ok_or_else(|| Refusal::failed(FailureStage::Launch, "no such tensor map"))?;
    let strides = map.strides();
    let request = TensorMapRequest {
        buffer: env.buffer(map.buffer)?,
        elem: map.elem,
        dims: &map.dims,
        strides: &strides,
        box_dims: &map.box_dims,
        swizzle: map.swizzle,
    };
    env.device
        .tensor_map(&request)
        .map_err(|err| match err.kind {
            DeviceErrorKind::Unavailable => Refusal::Unavailable {
                reason: err.message,
            },
            _ => Refusal::failed(
                FailureStage::Launch,
                format!("tensor map `{}`: {err}", map.name),
            ),
        })
}

/// Registers, spills, shared memory and occupancy of a launch.
fn resources(
    env: &Env<'_>,
    launch: &LaunchPlan,
    loaded: &Loaded,
    shape: &LaunchShape,
) -> Result<KernelResources, Refusal> {
    let threads = shape.threads_per_block();
    let blocks_per_sm = env
        .device
        .blocks_per_sm(loaded.kernel, threads, shape.shared_bytes)
        .map_err(|err| Refusal::failed(FailureStage::Launch, err.to_string()))?;
    let entry = env
        .plan
        .builds
        .get(launch.build)
        .map_or("", |b| b.source.name.as_str());
    let report = ptxas::parse_report(&loaded.log, entry);
    let warps_per_sm = (env.device.info().max_threads_per_sm / 32).max(1);
    Ok(KernelResources {
        registers: loaded.info.registers,
        local_bytes: loaded.info.local_bytes,
        spill_store_bytes: report.map(|r| r.spill_store_bytes),
        spill_load_bytes: report.map(|r| r.spill_load_bytes),
        shared_bytes: loaded.info.shared_bytes,
        blocks_per_sm,
        occupancy: f64::from(blocks_per_sm * threads.div_ceil(32)) / f64::from(warps_per_sm),
    })
}

/// Refuses a launch whose static plus dynamic shared memory is over the device's limit, with
/// the limit named, before the driver answers with a bare "invalid value". (The plan checked
/// the dynamic part alone; the static part is known once the kernel is compiled.)
fn check_shared_memory(
    device: &dyn Device,
    shape: &LaunchShape,
    static_shared: u32,
) -> Result<(), Refusal> {
    let info = device.info();
    let shared = u64::from(static_shared) + u64::from(shape.shared_bytes);
    if shared > info.max_shared_bytes_per_block {
        return Err(Refusal::failed(
            FailureStage::Launch,
            format!(
                "the kernel needs {shared} bytes of shared memory per block ({static_shared} static + {} dynamic); \
                 {} allows at most {} per block",
                shape.shared_bytes, info.name, info.max_shared_bytes_per_block
            ),
        ));
    }
    Ok(())
}

pub(super) fn kernel_arg(env: &mut Env<'_>, arg: ArgPlan) -> Result<KernelArg, Refusal> {
    Ok(match arg {
        ArgPlan::Buffer(index) => KernelArg::Buffer(env.buffer(index)?),
        ArgPlan::TensorMap(index) => KernelArg::TensorMap(tensor_map(env, index)?),
        ArgPlan::I32(v) => KernelArg::I32(v),
        ArgPlan::I64(v) => KernelArg::I64(v),
        ArgPlan::U32(v) => KernelArg::U32(v),
        ArgPlan::U64(v) => KernelArg::U64(v),
        ArgPlan::F32(v) => KernelArg::F32(v),
        ArgPlan::F64(v) => KernelArg::F64(v),
    })
}
