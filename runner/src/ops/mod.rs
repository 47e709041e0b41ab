//! One kind of variant each: how a planned operation is made ready to run on a device.
//!
//! The engine runs every kind the same way (poison, setup, run, check, time); what differs is
//! [`VariantOp::prepare`]: compiling and loading kernels ([`kernel`]), the driver's copy
//! ([`device_copy`]), staging host memory ([`host_copy`]), finding the vendor library
//! ([`library`]). Python rows ([`python`]) run in the Python process, which the engine knows
//! nothing of: the supervisor measures them.

pub mod compile;
pub mod device_copy;
pub mod host_copy;
pub mod kernel;
pub mod library;
pub mod pipeline;
pub mod python;

use crate::backend::{BufferId, Device, GemmPrecision, KernelArg, KernelId, Op};
use crate::plan::{LabPlan, OpPlan, VariantPlan};
use kernelbook_core::results::{FailureStage, KernelResources, LaunchShape, Outcome};

/// What preparing an operation may use.
pub struct Env<'e> {
    pub plan: &'e LabPlan,
    pub device: &'e mut dyn Device,
    /// Device buffers by the plan's buffer index.
    pub buffers: &'e [BufferId],
    /// Host copies of the filled buffers, by the plan's buffer index.
    pub host: &'e [Option<Vec<u8>>],
    /// Device copies of the initial contents of buffers that variants write in place.
    pub pristine: &'e [Option<BufferId>],
    pub kernels: &'e mut kernel::Kernels,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("lab", &self.plan.lab)
            .finish_non_exhaustive()
    }
}

impl Env<'_> {
    /// Puts back the initial contents of every filled buffer `variant` writes (untimed), so
    /// that each of its runs starts from the inputs the reference saw.
    pub fn restore(&mut self, variant: &VariantPlan) -> Result<(), crate::backend::DeviceError> {
        for step in restore_steps(self.plan, variant, self.buffers, self.pristine) {
            self.device.run(&step.op())?;
        }
        Ok(())
    }

    /// The device buffer of the plan's buffer `index`.
    pub fn buffer(&self, index: usize) -> Result<BufferId, Refusal> {
        self.buffers
            .get(index)
            .copied()
            .ok_or_else(|| Refusal::failed(FailureStage::Launch, "no such buffer"))
    }
}

/// A step of device work that owns its arguments (a [`Op`] borrows them).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Launch {
        kernel: KernelId,
        shape: LaunchShape,
        args: Vec<KernelArg>,
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
    Gemm {
        c: BufferId,
        a: BufferId,
        b: BufferId,
        m: usize,
        n: usize,
        k: usize,
        precision: GemmPrecision,
    },
    HostToDevice {
        dst: BufferId,
        bytes: usize,
        pinned: bool,
    },
    DeviceToHost {
        src: BufferId,
        bytes: usize,
        pinned: bool,
    },
    Pipeline(crate::backend::pipeline::Pipeline),
}

impl Step {
    pub fn op(&self) -> Op<'_> {
        match self {
            Step::Launch {
                kernel,
                shape,
                args,
            } => Op::Launch {
                kernel: *kernel,
                shape: *shape,
                args,
            },
            Step::Copy { dst, src, bytes } => Op::Copy {
                dst: *dst,
                src: *src,
                bytes: *bytes,
            },
            Step::Transpose {
                dst,
                src,
                rows,
                cols,
            } => Op::Transpose {
                dst: *dst,
                src: *src,
                rows: *rows,
                cols: *cols,
            },
            Step::Gemm {
                c,
                a,
                b,
                m,
                n,
                k,
                precision,
            } => Op::Gemm {
                c: *c,
                a: *a,
                b: *b,
                m: *m,
                n: *n,
                k: *k,
                precision: *precision,
            },
            Step::HostToDevice { dst, bytes, pinned } => Op::HostToDevice {
                dst: *dst,
                bytes: *bytes,
                pinned: *pinned,
            },
            Step::DeviceToHost { src, bytes, pinned } => Op::DeviceToHost {
                src: *src,
                bytes: *bytes,
                pinned: *pinned,
            },
            Step::Pipeline(pipeline) => Op::Pipeline(pipeline),
        }
    }
}

/// Host memory a copy needs staged before its check: the bytes to put there (an input's host
/// copy, or poison of the copy's size so that a copy that writes nothing cannot pass).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staging {
    pub pinned: bool,
    pub data: Vec<u8>,
}

/// Where a variant's output is read back from for its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readback {
    Buffer(BufferId),
    /// The host staging buffer of a device-to-host copy.
    Host {
        pinned: bool,
    },
}

/// What the results table says about how a variant ran, besides its times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotations {
    pub compile_flags: Vec<String>,
    pub launch: Option<LaunchShape>,
    pub resources: Option<KernelResources>,
    pub implementation: Option<String>,
}

/// An operation ready to verify and time.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// Run once, untimed, before the check.
    pub setup: Vec<Step>,
    /// What is timed: one step, or several in order (an unfused pipeline).
    pub timed: Vec<Step>,
    pub staging: Option<Staging>,
    pub readback: Readback,
    pub annotations: Annotations,
}

/// Why an operation cannot run here.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    Failed {
        stage: FailureStage,
        message: String,
    },
    /// A peer this machine does not have (a vendor library).
    Unavailable { reason: String },
}

impl Refusal {
    pub fn failed(stage: FailureStage, message: impl Into<String>) -> Refusal {
        Refusal::Failed {
            stage,
            message: message.into(),
        }
    }

    pub fn into_outcome(self) -> Outcome {
        match self {
            Refusal::Failed { stage, message } => Outcome::Failed { stage, message },
            Refusal::Unavailable { reason } => Outcome::Unavailable { reason },
        }
    }
}

/// One kind of variant the engine runs on a device.
pub trait VariantOp {
    /// Makes the operation ready: kernels compiled and loaded, library found, host data chosen.
    fn prepare(&self, env: &mut Env<'_>, variant: &VariantPlan) -> Result<Prepared, Refusal>;
}

/// The copies that put back what `variant` overwrites in place (see [`Env::restore`]).
pub fn restore_steps(
    plan: &LabPlan,
    variant: &VariantPlan,
    buffers: &[BufferId],
    pristine: &[Option<BufferId>],
) -> Vec<Step> {
    plan.restored_by(variant)
        .into_iter()
        .filter_map(|index| {
            Some(Step::Copy {
                dst: *buffers.get(index)?,
                src: (*pristine.get(index)?)?,
                bytes: plan.buffers.get(index)?.bytes,
            })
        })
        .collect()
}

/// The device operation of `variant`, or `None` for a row the Python process measures.
pub fn on_device(op: &OpPlan) -> Option<&dyn VariantOp> {
    match op {
        OpPlan::Kernel(op) => Some(op),
        OpPlan::DeviceCopy(op) => Some(op),
        OpPlan::HostCopy(op) => Some(op),
        OpPlan::LibraryTranspose(op) => Some(op),
        OpPlan::LibrarySgemm(op) => Some(op),
        OpPlan::Python(_) => None,
    }
}

/// Where the check of `variant` reads its output on the device.
pub fn check_output(env: &Env<'_>, variant: &VariantPlan) -> Result<BufferId, Refusal> {
    let check = env
        .plan
        .checks
        .get(variant.check)
        .ok_or_else(|| Refusal::failed(FailureStage::Launch, "no such check"))?;
    env.buffer(check.output)
}

/// A prepared single step whose output the check reads from the check's output buffer.
pub fn single(env: &Env<'_>, variant: &VariantPlan, step: Step) -> Result<Prepared, Refusal> {
    Ok(Prepared {
        setup: Vec::new(),
        timed: vec![step],
        staging: None,
        readback: Readback::Buffer(check_output(env, variant)?),
        annotations: Annotations::default(),
    })
}
