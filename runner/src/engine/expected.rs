//! The expected output of each check the selected variants use: a built-in reference computed
//! on the CPU at once, a NumPy reference handed to the Python side at once and waited for when a
//! variant first needs it (so Python computes while kernels compile and other rows measure), and
//! another variant's output produced on the device the first time it is needed.

use super::EngineError;
use super::buffers::HostInputs;
use crate::backend::{BufferId, DeviceError};
use crate::ops::{self, Env, Readback};
use crate::plan::{CheckPlan, LabPlan, ReferencePlan};
use crate::references::python::{JobId, PythonReferenceError, PythonReferences, ReferenceJob};
use crate::references::{self, HostBuffer, POISON_BYTE, ReferenceCall};
use kernelbook_core::results::{FailureStage, Outcome};
use std::time::{Duration, Instant};

/// Where the engine sends a lab's NumPy references. The measuring process passes its
/// [`PythonReferences`]; tests pass stand-ins.
pub trait ExternalReferences {
    /// Hands `job` over and returns at once.
    fn submit(&mut self, job: &ReferenceJob<'_>) -> Result<JobId, PythonReferenceError>;
    /// The expected bytes of a submitted job, waited for until `deadline`.
    fn wait(&mut self, id: JobId, deadline: Instant) -> Result<Vec<u8>, PythonReferenceError>;
}

impl ExternalReferences for PythonReferences {
    fn submit(&mut self, job: &ReferenceJob<'_>) -> Result<JobId, PythonReferenceError> {
        PythonReferences::submit(self, job)
    }
    fn wait(&mut self, id: JobId, deadline: Instant) -> Result<Vec<u8>, PythonReferenceError> {
        PythonReferences::wait(self, id, deadline)
    }
}

/// What a variant's check compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected<'a> {
    Bytes(&'a [u8]),
    /// The variant is the one the others are checked against: nothing to compare.
    Trusted,
}

/// One check's expected output, as far as it is known.
#[derive(Debug)]
enum Slot {
    /// No selected variant uses the check.
    Unused,
    Ready(Vec<u8>),
    /// A NumPy reference still computing.
    Submitted {
        job: JobId,
        block: String,
    },
    /// Another variant's output, produced when first needed.
    FromVariant,
    Trusted,
    /// The reference could not give an output: every row that uses it says why.
    Failed(Outcome),
}

/// The expected outputs of a run, by the plan's check index.
#[derive(Debug)]
pub struct Expectations {
    slots: Vec<Slot>,
}

impl Expectations {
    /// No expected output for any check: a run that only launches compares nothing.
    pub fn none(plan: &LabPlan) -> Expectations {
        Expectations {
            slots: plan.checks.iter().map(|_| Slot::Unused).collect(),
        }
    }

    /// Computes the built-in references and submits the NumPy ones. A built-in reference that
    /// cannot answer stops the lab (its check is malformed); a NumPy one fails only its rows.
    pub fn start(
        plan: &LabPlan,
        host: &HostInputs,
        used: &[bool],
        external: &mut dyn ExternalReferences,
    ) -> Result<Expectations, EngineError> {
        let mut slots = Vec::with_capacity(plan.checks.len());
        for (check, &used) in plan.checks.iter().zip(used) {
            let slot = if used {
                start_check(plan, check, host, external)?
            } else {
                Slot::Unused
            };
            slots.push(slot);
        }
        Ok(Expectations { slots })
    }

    /// The expected output of check `index`: waits for a NumPy reference (the lab's time limit
    /// less a margin, so that the supervisor does not mistake the wait for a hung kernel), or
    /// runs the variant it is checked against. The inner `Err` is the outcome of every row
    /// using it; the outer one a device error (a sticky one ends the run).
    pub fn get(
        &mut self,
        index: usize,
        env: &mut Env<'_>,
        poisoned: &[BufferId],
        external: &mut dyn ExternalReferences,
        progress: &mut dyn super::Progress,
    ) -> Result<Result<Expected<'_>, Outcome>, DeviceError> {
        let plan = env.plan;
        let Some(slot) = self.slots.get_mut(index) else {
            return Ok(Err(failed("the variant's check is not in the plan")));
        };
        match slot {
            Slot::Submitted { job, block } => {
                let block = std::mem::take(block);
                progress.stage(&format!("waiting for the NumPy reference `{block}`"));
                let limit = plan.timeout().saturating_sub(Duration::from_secs(2));
                let deadline = Instant::now() + limit.max(Duration::from_secs(1));
                *slot = match external.wait(*job, deadline) {
                    Ok(bytes) => Slot::Ready(bytes),
                    Err(err) => Slot::Failed(python_outcome(&block, err)),
                };
                progress.stage(&format!("the NumPy reference `{block}` answered"));
            }
            Slot::FromVariant => {
                let check = &plan.checks[index];
                *slot = match run_trusted(env, check, poisoned) {
                    Ok(bytes) => Slot::Ready(bytes),
                    Err(Trouble::Device(err)) if err.is_sticky() => return Err(err),
                    Err(Trouble::Device(err)) => Slot::Failed(failed(format!(
                        "the variant it is checked against failed: {err}"
                    ))),
                    Err(Trouble::Outcome(outcome)) => Slot::Failed(outcome),
                };
            }
            _ => {}
        }
        Ok(match &self.slots[index] {
            Slot::Ready(bytes) => Ok(Expected::Bytes(bytes)),
            Slot::Trusted => Ok(Expected::Trusted),
            Slot::Failed(outcome) => Err(outcome.clone()),
            Slot::Unused | Slot::Submitted { .. } | Slot::FromVariant => {
                Err(failed("the variant's check has no expected output"))
            }
        })
    }
}

fn failed(message: impl Into<String>) -> Outcome {
    Outcome::Failed {
        stage: FailureStage::Reference,
        message: message.into(),
    }
}

/// How a NumPy reference's failure shows in its rows: one line where Python or NumPy is
/// missing (no number either way).
fn python_outcome(block: &str, err: PythonReferenceError) -> Outcome {
    match err {
        PythonReferenceError::Unavailable(reason) => Outcome::Unavailable {
            reason: format!("not checked: the NumPy reference `{block}` cannot run here: {reason}"),
        },
        // The message names the block and where it stands in the chapter.
        other => failed(format!("NumPy reference: {other}")),
    }
}

fn start_check(
    plan: &LabPlan,
    check: &CheckPlan,
    host: &HostInputs,
    external: &mut dyn ExternalReferences,
) -> Result<Slot, EngineError> {
    let lab_err = |message: String| EngineError::lab(&plan.lab, message);
    let output = plan
        .buffers
        .get(check.output)
        .ok_or_else(|| lab_err("the check's output is not a buffer".into()))?;
    let inputs = || -> Result<Vec<HostBuffer<'_>>, EngineError> {
        check
            .inputs
            .iter()
            .map(|&index| {
                host.input(plan, index).ok_or_else(|| {
                    lab_err(format!(
                        "the checked input `{}` must be a filled buffer, not a poisoned one",
                        plan.buffers.get(index).map_or("?", |b| b.name.as_str())
                    ))
                })
            })
            .collect()
    };
    Ok(match &check.reference {
        ReferencePlan::Builtin { name, args } => {
            let reference = references::find(name)
                .ok_or_else(|| lab_err(format!("no reference named `{name}`")))?;
            let call = ReferenceCall {
                inputs: inputs()?,
                args,
                output_elem: output.elem,
                output_len: output.len,
            };
            Slot::Ready(
                reference
                    .expected(&call)
                    .map_err(|err| lab_err(err.to_string()))?,
            )
        }
        ReferencePlan::Python { block, params } => {
            let job = ReferenceJob {
                block,
                inputs: inputs()?,
                params,
                output: &output.name,
                output_elem: output.elem,
                output_len: output.len,
            };
            match external.submit(&job) {
                Ok(job) => Slot::Submitted {
                    job,
                    block: block.name.clone(),
                },
                Err(err) => Slot::Failed(python_outcome(&block.name, err)),
            }
        }
        ReferencePlan::Variant { .. } => Slot::FromVariant,
        ReferencePlan::Trusted => Slot::Trusted,
    })
}

/// Why the variant a check is against gave no output.
enum Trouble {
    Device(DeviceError),
    Outcome(Outcome),
}

impl From<DeviceError> for Trouble {
    fn from(err: DeviceError) -> Self {
        Trouble::Device(err)
    }
}

/// The output of the variant `check` is against, run once on poisoned outputs and restored
/// inputs, exactly as that variant's own check runs it.
fn run_trusted(
    env: &mut Env<'_>,
    check: &CheckPlan,
    poisoned: &[BufferId],
) -> Result<Vec<u8>, Trouble> {
    let ReferencePlan::Variant { name, variant } = &check.reference else {
        return Err(Trouble::Outcome(failed(
            "the check is not against a variant",
        )));
    };
    let because = |what: String| {
        Trouble::Outcome(failed(format!(
            "the variant `{name}` it is checked against {what}"
        )))
    };
    let op = ops::on_device(&variant.op)
        .ok_or_else(|| because("runs in Python, not on the device".into()))?;
    let prepared = op.prepare(env, variant).map_err(|refusal| {
        because(format!(
            "could not run: {}",
            describe(refusal.into_outcome())
        ))
    })?;
    let bytes = env.plan.buffers.get(check.output).map_or(0, |b| b.bytes);
    let mut out = vec![0u8; bytes];
    env.restore(variant)?;
    for id in poisoned {
        env.device.fill(*id, POISON_BYTE)?;
    }
    if let Some(staging) = &prepared.staging {
        env.device.stage_host(staging.pinned, &staging.data)?;
    }
    for step in prepared.setup.iter().chain(&prepared.timed) {
        env.device.run(&step.op())?;
    }
    env.device.synchronize()?;
    match prepared.readback {
        Readback::Buffer(id) => env.device.download(id, &mut out)?,
        Readback::Host { pinned } => env.device.read_host(pinned, &mut out)?,
    }
    Ok(out)
}

fn describe(outcome: Outcome) -> String {
    match outcome {
        Outcome::Failed { message, .. } => message,
        Outcome::Unavailable { reason } => reason,
        other => format!("{other:?}"),
    }
}
