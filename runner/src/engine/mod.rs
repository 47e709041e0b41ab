//! The engine: runs one [`LabPlan`] on one [`Device`].
//!
//! ```text
//! inputs → references → for each variant: prepare · poison · run · check · time
//! ```
//!
//! Kernels compile on every core, ahead of the lab where the caller queued them ([`Ahead`]),
//! and a lab's inputs and references may have been prepared while the GPU measured the lab
//! before; each variant waits only for its own kernel. A variant that fails fails its own row. A sticky device
//! fault (the context is unusable until the process ends) stops the run: the caller measures
//! the remaining variants in a fresh process. The engine knows nothing of processes, Python or
//! Nsight Compute; rows that run in Python are left to the caller.

mod ahead;
mod buffers;
mod diagnose;
mod expected;
mod l2;
mod progress;
mod results;
mod sample;

pub use ahead::{Ahead, LOOK_AHEAD, LabInputs, Locked, SharedReferences, checks_used};
pub use buffers::LabBuffers;
pub use diagnose::{DiagnosedRun, VariantDiagnosis};
pub use expected::{Expected, ExternalReferences};
pub use progress::{Progress, Quiet, StageLog, TRACE_ENV, Traced, notice};
pub(crate) use results::now_rfc3339;
pub use results::{failed_result, lab_results, provenance, result_template};

use crate::backend::{Device, DeviceError};
use crate::ops::{self, Env, VariantOp};
use crate::plan::{LabPlan, OpPlan, VariantPlan};
use buffers::HostInputs;
use kernelbook_core::results::{FailureStage, LabResults, Outcome, VariantResult};
use sample::{Expectation, Sampling};
use std::time::Instant;

/// A failure that stops the whole lab (as opposed to one variant).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lab `{lab}`: {message}")]
pub struct EngineError {
    pub lab: String,
    pub message: String,
}

impl EngineError {
    pub fn lab(lab: &str, message: String) -> EngineError {
        EngineError {
            lab: lab.to_string(),
            message,
        }
    }
}

/// Which variants to run, on which input, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunOptions {
    /// Seed of the random input.
    pub seed: u64,
    /// Only these variants (by name); all when `None`.
    pub only: Option<Vec<String>>,
    /// What each variant's run is for.
    #[serde(default)]
    pub purpose: Purpose,
}

/// What a run of a lab is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// Check every variant, then time it.
    #[default]
    Measure,
    /// Launch every variant once, as its check does (poisoned outputs, after its setup), and
    /// nothing else: no reference, no comparison, no timing. What a profiler watches; the
    /// run's [`EngineRun::launches`] say which kernels each variant launched, in order.
    LaunchOnce,
    /// Launch every variant once as its check does and compare its output element by element:
    /// what a failing variant's sanitizer run needs ([`EngineRun::diagnoses`] say what each
    /// output shows, [`EngineRun::buffers`] where the buffers are). No timing.
    Diagnose,
}

/// The kernels one variant launched in a [`Purpose::LaunchOnce`] run, in order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VariantLaunches {
    pub variant: String,
    pub functions: Vec<String>,
}

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRun {
    /// The rows measured, in the plan's order; Python rows and those after a fault are absent
    /// (and every row, in a [`Purpose::LaunchOnce`] run).
    pub results: LabResults,
    /// The variant whose sticky device fault stopped the run, if one did.
    pub faulted: Option<String>,
    /// In a [`Purpose::LaunchOnce`] run, what each variant launched.
    pub launches: Vec<VariantLaunches>,
    /// In a [`Purpose::Diagnose`] run, each variant's run and what its output shows.
    pub diagnoses: Vec<VariantDiagnosis>,
    /// In a [`Purpose::Diagnose`] run, the lab's buffers and their device addresses.
    pub buffers: Vec<crate::sanitizer::DeviceBuffer>,
}

/// Runs the selected device variants of `plan` on `device`, with the kernels and inputs that
/// `ahead` prepared (or prepares now); NumPy references go to `external`.
pub fn run(
    plan: &LabPlan,
    device: &mut dyn Device,
    ahead: &Ahead,
    options: &RunOptions,
    external: &mut dyn ExternalReferences,
    progress: &mut dyn Progress,
) -> Result<EngineRun, EngineError> {
    let started = Instant::now();
    let selected: Vec<(usize, &VariantPlan, &dyn VariantOp)> = plan
        .variants
        .iter()
        .enumerate()
        .filter(|(_, v)| options.only.as_ref().is_none_or(|o| o.contains(&v.name)))
        .filter_map(|(index, v)| Some((index, v, ops::on_device(&v.op)?)))
        .collect();
    if selected
        .iter()
        .any(|(_, v, _)| matches!(v.op, OpPlan::LibraryTranspose(_) | OpPlan::LibrarySgemm(_)))
    {
        device.start_loading_transpose_library();
    }
    progress.stage(&format!(
        "lab `{}`: preparing buffers and the CPU reference, compiling its kernels",
        plan.lab
    ));
    // A variant the target cannot run is neither compiled nor checked.
    let builds = ops::kernel::builds_of(
        selected
            .iter()
            .map(|(_, v, _)| *v)
            .filter(|v| v.unsupported.is_none()),
    );
    buffers::check_host_memory(plan, buffers::available_host_memory())?;
    let host = buffers::host_bytes_needed(plan);
    if host >= 1 << 30 {
        // Drawing and checking this much takes a while: said before it starts.
        progress.stage(&format!(
            "lab `{}`: {:.1} GiB of inputs and checked outputs on the host",
            plan.lab,
            host as f64 / (1u64 << 30) as f64
        ));
    }
    let mut kernels = ops::kernel::Kernels::start(plan, &builds, ahead.compiles());
    LabBuffers::check_fits(plan, device)?;
    let LabInputs {
        host,
        mut expectations,
    } = lab_inputs(plan, ahead, options, external)?;
    progress.mark("inputs drawn, references ready or submitted");
    let buffers = LabBuffers::upload(plan, device, host)?;
    progress.mark("inputs uploaded");
    let addresses = match options.purpose {
        Purpose::Diagnose => diagnose::device_buffers(plan, &buffers.ids, device),
        Purpose::Measure | Purpose::LaunchOnce => Vec::new(),
    };
    let mut provenance = provenance(device, ahead.compiles().compiler(), plan, options.seed);
    progress.begin(&provenance);
    let mut lab = LabRun {
        plan,
        buffers: &buffers,
        poisoned: buffers.poisoned(),
        kernels: &mut kernels,
        expectations: &mut expectations,
        scratch: Vec::new(),
    };
    let mut rows = Rows::default();
    for (index, variant, op) in selected {
        progress.variant(index, plan.variants.len(), &variant.name);
        let row = Row { variant, op };
        let error = lab.run_row(
            &row,
            options.purpose,
            (device, external),
            progress,
            &mut rows,
        );
        if error.is_some_and(|e| e.is_sticky()) {
            rows.faulted = Some(variant.name.clone());
            break;
        }
    }
    provenance.clocks = device.clocks();
    Ok(EngineRun {
        results: lab_results(plan, provenance, started, rows.results),
        faulted: rows.faulted,
        launches: rows.launches,
        diagnoses: rows.diagnoses,
        buffers: addresses,
    })
}

/// What a run's rows produced so far.
#[derive(Default)]
struct Rows {
    results: Vec<VariantResult>,
    launches: Vec<VariantLaunches>,
    diagnoses: Vec<VariantDiagnosis>,
    faulted: Option<String>,
}

/// The inputs and expected outputs of the run: prepared ahead, else now; a run that only
/// launches needs no reference.
fn lab_inputs(
    plan: &LabPlan,
    ahead: &Ahead,
    options: &RunOptions,
    external: &mut dyn ExternalReferences,
) -> Result<LabInputs, EngineError> {
    match options.purpose {
        Purpose::LaunchOnce => Ok(LabInputs {
            host: HostInputs::draw(plan, options.seed),
            expectations: expected::Expectations::none(plan),
        }),
        Purpose::Measure | Purpose::Diagnose => match ahead.take(plan, options.seed) {
            Some(prepared) => prepared,
            None => {
                let used = ahead::checks_used(plan, options.only.as_deref());
                LabInputs::prepare(plan, options.seed, &used, external)
            }
        },
    }
}

/// A lab's state while its rows run.
struct LabRun<'a> {
    plan: &'a LabPlan,
    buffers: &'a LabBuffers,
    poisoned: Vec<crate::backend::BufferId>,
    kernels: &'a mut ops::kernel::Kernels,
    expectations: &'a mut expected::Expectations,
    /// Reused from variant to variant: a fresh buffer of hundreds of MiB costs a page fault
    /// per page every time.
    scratch: Vec<u8>,
}

impl LabRun<'_> {
    /// One row, run for `purpose`, its outcome added to `rows`; the device error that ended
    /// it, if one did.
    fn run_row(
        &mut self,
        row: &Row<'_>,
        purpose: Purpose,
        (device, external): (&mut dyn Device, &mut dyn ExternalReferences),
        progress: &mut dyn Progress,
        rows: &mut Rows,
    ) -> Option<DeviceError> {
        let l2 = match &row.variant.l2 {
            Some(l2) if row.variant.unsupported.is_none() => {
                match l2::apply(self.plan, l2, &self.buffers.ids, device) {
                    Ok(applied) => Some(applied),
                    Err(err) => return self.l2_refused(row, purpose, err, progress, rows),
                }
            }
            _ => None,
        };
        let error = self.run_row_as(row, purpose, (device, external), progress, rows, &l2);
        let undone = l2.and_then(|applied| applied.undo(device).err());
        error.or(undone)
    }

    /// A row whose L2 controls the device refused: unavailable where the backend has none,
    /// failed otherwise; the device error, unless it is only that the backend has none.
    fn l2_refused(
        &self,
        row: &Row<'_>,
        purpose: Purpose,
        err: DeviceError,
        progress: &mut dyn Progress,
        rows: &mut Rows,
    ) -> Option<DeviceError> {
        let unavailable = err.kind == crate::backend::DeviceErrorKind::Unavailable;
        if purpose == Purpose::Measure {
            let outcome = if unavailable {
                Outcome::Unavailable {
                    reason: err.message.clone(),
                }
            } else {
                launch_failure(&err)
            };
            let result = result_template(self.plan, row.variant, outcome);
            progress.finished(&result);
            rows.results.push(result);
        }
        (!unavailable).then_some(err)
    }

    /// [`LabRun::run_row`] once the row's L2 controls (`l2`) are in force.
    fn run_row_as(
        &mut self,
        row: &Row<'_>,
        purpose: Purpose,
        (device, external): (&mut dyn Device, &mut dyn ExternalReferences),
        progress: &mut dyn Progress,
        rows: &mut Rows,
        l2: &Option<l2::Applied>,
    ) -> Option<DeviceError> {
        match purpose {
            Purpose::Measure => {
                let (mut result, error) = self.measure(row, device, external, progress);
                result.l2 = l2.as_ref().map(|applied| applied.result.clone());
                progress.finished(&result);
                rows.results.push(result);
                error
            }
            Purpose::LaunchOnce => {
                let (launches, error) = self.launch_once(row, device);
                rows.launches.extend(launches);
                error
            }
            Purpose::Diagnose => {
                let (diagnosis, error) = self.diagnose(row, device, external, progress);
                rows.diagnoses.push(diagnosis);
                error
            }
        }
    }

    /// The lab's state for one row on `device`: the row's environment, the expected outputs,
    /// the buffers the check poisons, and the scratch a host readback reuses.
    fn parts<'s>(
        &'s mut self,
        device: &'s mut dyn Device,
    ) -> (
        Env<'s>,
        &'s mut expected::Expectations,
        &'s [crate::backend::BufferId],
        &'s mut Vec<u8>,
    ) {
        let LabRun {
            plan,
            buffers,
            poisoned,
            kernels,
            expectations,
            scratch,
        } = self;
        let env = Env {
            plan,
            device,
            buffers: &buffers.ids,
            host: &buffers.host,
            pristine: &buffers.pristine,
            kernels,
        };
        (env, expectations, poisoned, scratch)
    }

    fn measure(
        &mut self,
        row: &Row<'_>,
        device: &mut dyn Device,
        external: &mut dyn ExternalReferences,
        progress: &mut dyn Progress,
    ) -> (VariantResult, Option<DeviceError>) {
        let (mut env, expected, poisoned, scratch) = self.parts(device);
        let mut references = References { expected, external };
        row.measure(&mut env, &mut references, poisoned, scratch, progress)
    }

    /// Runs the variant once, as its check would, and says what it launched.
    fn launch_once(
        &mut self,
        row: &Row<'_>,
        device: &mut dyn Device,
    ) -> (Option<VariantLaunches>, Option<DeviceError>) {
        if row.variant.unsupported.is_some() {
            return (None, None);
        }
        let (mut env, _, poisoned, _) = self.parts(device);
        let Ok(prepared) = row.op.prepare(&mut env, row.variant) else {
            return (None, None);
        };
        let ran = env
            .restore(row.variant)
            .and_then(|()| sample::run_prepared_once(env.device, &prepared, poisoned));
        let functions = prepared
            .setup
            .iter()
            .chain(&prepared.timed)
            .filter_map(|step| match step {
                ops::Step::Launch { kernel, .. } => env.kernels.function_of(env.plan, *kernel),
                _ => None,
            })
            .map(str::to_string)
            .collect();
        let launches = VariantLaunches {
            variant: row.variant.name.clone(),
            functions,
        };
        match ran {
            Ok(()) => (Some(launches), None),
            Err(err) => (None, Some(err)),
        }
    }
}

/// One variant's measurement.
struct Row<'a> {
    variant: &'a VariantPlan,
    op: &'a dyn VariantOp,
}

/// Where a row's expected output comes from.
struct References<'r> {
    expected: &'r mut expected::Expectations,
    external: &'r mut dyn ExternalReferences,
}

impl Row<'_> {
    /// The variant's result, and the device error that ended it, if one did.
    fn measure(
        &self,
        env: &mut Env<'_>,
        references: &mut References<'_>,
        poisoned: &[crate::backend::BufferId],
        scratch: &mut Vec<u8>,
        progress: &mut dyn Progress,
    ) -> (VariantResult, Option<DeviceError>) {
        let plan = env.plan;
        if let Some(reason) = &self.variant.unsupported {
            let outcome = Outcome::Unavailable {
                reason: reason.clone(),
            };
            return (result_template(plan, self.variant, outcome), None);
        }
        let prepared = self.op.prepare(env, self.variant);
        progress.mark("prepared");
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err(refusal) => {
                let result = result_template(plan, self.variant, refusal.into_outcome());
                return (result, None);
            }
        };
        let expected = references.expected.get(
            self.variant.check,
            env,
            poisoned,
            references.external,
            progress,
        );
        progress.mark("reference ready");
        let (timed, error) = match expected {
            Ok(Ok(expected)) => {
                match self.verify_and_time(env, &prepared, expected, poisoned, scratch, progress) {
                    Ok(timed) => (timed, None),
                    Err(err) => (sample::Timed::untimed(launch_failure(&err)), Some(err)),
                }
            }
            Ok(Err(outcome)) => (sample::Timed::untimed(outcome), None),
            Err(err) => (sample::Timed::untimed(launch_failure(&err)), Some(err)),
        };
        let mut result = result_template(plan, self.variant, timed.outcome);
        let annotations = prepared.annotations;
        result.compile_flags = annotations.compile_flags;
        result.launch = annotations.launch;
        result.resources = annotations.resources;
        result.implementation = annotations.implementation;
        result.counter = timed.counter;
        result.sampling_seconds = timed.sampling_seconds;
        result.timeline = timed.timeline;
        (result, error)
    }

    /// Checks `prepared` against the variant's expected output, then times it.
    fn verify_and_time(
        &self,
        env: &mut Env<'_>,
        prepared: &ops::Prepared,
        expected: Expected<'_>,
        poisoned: &[crate::backend::BufferId],
        scratch: &mut Vec<u8>,
        progress: &mut dyn Progress,
    ) -> Result<sample::Timed, DeviceError> {
        let plan = env.plan;
        let variant = self.variant;
        let Some(check) = plan.checks.get(variant.check) else {
            let outcome = Outcome::Failed {
                stage: FailureStage::Reference,
                message: "the variant's check is not in the plan".into(),
            };
            return Ok(sample::Timed::untimed(outcome));
        };
        let elem = plan
            .buffers
            .get(check.output)
            .map(|b| b.elem)
            .unwrap_or_default();
        let counter = variant
            .counter
            .as_ref()
            .and_then(|c| Some((*env.buffers.get(c.buffer)?, c)));
        let expectation = Expectation {
            expected: match expected {
                Expected::Bytes(bytes) => Some(bytes),
                Expected::Trusted => None,
            },
            elem,
            comparison: &check.comparison,
        };
        let restore = ops::restore_steps(plan, variant, env.buffers, env.pristine);
        let sampling = Sampling {
            timing: &plan.timing,
            flush_l2: variant.flush_l2,
            counter,
            restore: &restore,
        };
        sample::verify_and_time(
            env.device,
            prepared,
            poisoned,
            &expectation,
            &sampling,
            scratch,
            progress,
        )
    }
}

/// A row whose device work failed.
fn launch_failure(err: &DeviceError) -> Outcome {
    // What this backend cannot do at all (several streams on HIP) says so rather than failing.
    if err.kind == crate::backend::DeviceErrorKind::Unavailable {
        return Outcome::Unavailable {
            reason: err.message.clone(),
        };
    }
    Outcome::Failed {
        stage: FailureStage::Launch,
        message: err.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
