//! The engine: runs one [`LabPlan`] on one [`Device`].
//!
//! ```text
//! inputs → references → for each variant: prepare · poison · run · check · time
//! ```
//!
//! Kernels compile in the background while the inputs are drawn and the references computed;
//! each variant waits only for its own. A variant that fails fails its own row. A sticky device
//! fault (the context is unusable until the process ends) stops the run: the caller measures
//! the remaining variants in a fresh process. The engine knows nothing of processes, Python or
//! Nsight Compute; rows that run in Python are left to the caller.

mod buffers;
mod expected;
mod progress;
mod results;
mod sample;

pub use expected::{Expected, ExternalReferences};
pub use progress::{Progress, Quiet, StageLog, notice};
pub(crate) use results::now_rfc3339;
pub use results::{failed_result, lab_results, provenance, result_template};

use crate::backend::{Compiler, Device, DeviceError};
use crate::ops::{self, Env, VariantOp};
use crate::plan::{LabPlan, OpPlan, VariantPlan};
use buffers::LabBuffers;
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

/// Which variants to run, on which input.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunOptions {
    /// Seed of the random input.
    pub seed: u64,
    /// Only these variants (by name); all when `None`.
    pub only: Option<Vec<String>>,
}

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRun {
    /// The rows measured, in the plan's order; Python rows and those after a fault are absent.
    pub results: LabResults,
    /// The variant whose sticky device fault stopped the run, if one did.
    pub faulted: Option<String>,
}

/// Runs the selected device variants of `plan` on `device`; NumPy references go to `external`.
pub fn run(
    plan: &LabPlan,
    device: &mut dyn Device,
    compiler: &dyn Compiler,
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
    std::thread::scope(|scope| {
        // A variant the target cannot run is neither compiled nor checked.
        let runnable = || {
            selected
                .iter()
                .map(|(_, v, _)| *v)
                .filter(|v| v.unsupported.is_none())
        };
        let builds = ops::kernel::builds_of(runnable());
        let mut kernels = ops::kernel::Kernels::start(scope, plan, builds, compiler);
        let buffers = LabBuffers::prepare(plan, device, options.seed)?;
        let mut used = vec![false; plan.checks.len()];
        for variant in runnable() {
            if let Some(slot) = used.get_mut(variant.check) {
                *slot = true;
            }
        }
        let mut expected = expected::Expectations::start(plan, &buffers, &used, external)?;
        let mut provenance = provenance(device, compiler, plan, options.seed);
        progress.begin(&provenance);
        let poisoned = buffers.poisoned();
        let mut scratch = Vec::new();
        let mut variants = Vec::with_capacity(selected.len());
        let mut faulted = None;
        for (index, variant, op) in selected {
            progress.variant(index, plan.variants.len(), &variant.name);
            let mut env = Env {
                plan,
                device: &mut *device,
                buffers: &buffers.ids,
                host: &buffers.host,
                pristine: &buffers.pristine,
                kernels: &mut kernels,
            };
            let row = Row {
                variant,
                op,
                poisoned: &poisoned,
            };
            let mut references = References {
                expected: &mut expected,
                external: &mut *external,
            };
            let (result, error) = row.measure(&mut env, &mut references, &mut scratch, progress);
            progress.finished(&result);
            variants.push(result);
            if error.is_some_and(|e| e.is_sticky()) {
                faulted = Some(variant.name.clone());
                break;
            }
        }
        provenance.clocks = device.clocks();
        Ok(EngineRun {
            results: lab_results(plan, provenance, started, variants),
            faulted,
        })
    })
}

/// One variant's measurement.
struct Row<'a> {
    variant: &'a VariantPlan,
    op: &'a dyn VariantOp,
    poisoned: &'a [crate::backend::BufferId],
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
        let prepared = match self.op.prepare(env, self.variant) {
            Ok(prepared) => prepared,
            Err(refusal) => {
                let result = result_template(plan, self.variant, refusal.into_outcome());
                return (result, None);
            }
        };
        let expected = references.expected.get(
            self.variant.check,
            env,
            self.poisoned,
            references.external,
            progress,
        );
        let (outcome, counter, error) = match expected {
            Ok(Ok(expected)) => {
                match self.verify_and_time(env, &prepared, expected, scratch, progress) {
                    Ok((outcome, counter)) => (outcome, counter, None),
                    Err(err) => (launch_failure(&err), None, Some(err)),
                }
            }
            Ok(Err(outcome)) => (outcome, None, None),
            Err(err) => (launch_failure(&err), None, Some(err)),
        };
        let mut result = result_template(plan, self.variant, outcome);
        let annotations = prepared.annotations;
        result.compile_flags = annotations.compile_flags;
        result.launch = annotations.launch;
        result.resources = annotations.resources;
        result.implementation = annotations.implementation;
        result.counter = counter;
        (result, error)
    }

    /// Checks `prepared` against the variant's expected output, then times it.
    fn verify_and_time(
        &self,
        env: &mut Env<'_>,
        prepared: &ops::Prepared,
        expected: Expected<'_>,
        scratch: &mut Vec<u8>,
        progress: &mut dyn Progress,
    ) -> Result<(Outcome, Option<kernelbook_core::results::CounterResult>), DeviceError> {
        let plan = env.plan;
        let variant = self.variant;
        let Some(check) = plan.checks.get(variant.check) else {
            let outcome = Outcome::Failed {
                stage: FailureStage::Reference,
                message: "the variant's check is not in the plan".into(),
            };
            return Ok((outcome, None));
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
            self.poisoned,
            &expectation,
            &sampling,
            scratch,
            progress,
        )
    }
}

/// A row whose device work failed.
fn launch_failure(err: &DeviceError) -> Outcome {
    Outcome::Failed {
        stage: FailureStage::Launch,
        message: err.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
