//! A failing variant run once more, for its diagnosis ([`super::Purpose::Diagnose`]): launched
//! as its check launches it, its output compared with the reference element by element, and
//! what the wrong elements have in common said ([`OutputPattern`]), with the device address of
//! every buffer of the lab (a sanitizer's report names addresses). No timing.

use super::sample;
use super::{Env, LabRun, References, Row};
use crate::backend::{Device, DeviceError};
use crate::ops::{self, Readback};
use crate::sanitizer::{DeviceBuffer, Launch, OutputPattern, OutputShape, analyse};
use serde::{Deserialize, Serialize};

/// How a variant's diagnostic run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "run", rename_all = "snake_case")]
pub enum DiagnosedRun {
    /// Its output matched the reference (or it is the reference).
    Right,
    /// Its output did not match, as the pattern shows.
    Wrong { pattern: OutputPattern },
    /// It faulted, or could not be prepared or checked.
    Failed { message: String },
}

/// One variant's diagnostic run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantDiagnosis {
    pub variant: String,
    /// The grid and block of the variant's own kernel, where it launches one.
    pub launch: Option<Launch>,
    pub run: DiagnosedRun,
}

/// The device buffers of a lab, by name, where the device gives addresses.
pub(super) fn device_buffers(
    plan: &crate::plan::LabPlan,
    ids: &[crate::backend::BufferId],
    device: &dyn Device,
) -> Vec<DeviceBuffer> {
    plan.buffers
        .iter()
        .zip(ids)
        .filter_map(|(buffer, id)| {
            Some(DeviceBuffer {
                name: buffer.name.clone(),
                elem: buffer.elem,
                address: device.address(*id)?,
                bytes: buffer.bytes as u64,
            })
        })
        .collect()
}

impl LabRun<'_> {
    /// Runs the variant once on poisoned outputs and compares its output with the reference.
    pub(super) fn diagnose(
        &mut self,
        row: &Row<'_>,
        device: &mut dyn Device,
        external: &mut dyn super::ExternalReferences,
        progress: &mut dyn super::Progress,
    ) -> (VariantDiagnosis, Option<DeviceError>) {
        let (mut env, expected, poisoned, scratch) = self.parts(device);
        let mut references = References { expected, external };
        let mut diagnosis = VariantDiagnosis {
            variant: row.variant.name.clone(),
            launch: None,
            run: DiagnosedRun::Right,
        };
        let failed = |message: String| DiagnosedRun::Failed { message };
        let prepared = match row.op.prepare(&mut env, row.variant) {
            Ok(prepared) => prepared,
            Err(refusal) => {
                diagnosis.run = failed(format!("{:?}", refusal.into_outcome()));
                return (diagnosis, None);
            }
        };
        diagnosis.launch = prepared.annotations.launch.map(|shape| Launch {
            grid: shape.grid,
            block: shape.block,
        });
        let outcome = run_and_compare(
            &mut env,
            &mut references,
            row,
            &prepared,
            poisoned,
            scratch,
            progress,
        );
        match outcome {
            Ok(run) => {
                diagnosis.run = run;
                (diagnosis, None)
            }
            Err(err) => {
                diagnosis.run = failed(err.to_string());
                (diagnosis, Some(err))
            }
        }
    }
}

/// The variant's one run and what its output shows against the reference.
fn run_and_compare(
    env: &mut Env<'_>,
    references: &mut References<'_>,
    row: &Row<'_>,
    prepared: &ops::Prepared,
    poisoned: &[crate::backend::BufferId],
    scratch: &mut Vec<u8>,
    progress: &mut dyn super::Progress,
) -> Result<DiagnosedRun, DeviceError> {
    let plan = env.plan;
    let variant = row.variant;
    let expected = match references.expected.get(
        variant.check,
        env,
        poisoned,
        references.external,
        progress,
    )? {
        Ok(super::Expected::Bytes(bytes)) => Some(bytes),
        Ok(super::Expected::Trusted) => None,
        Err(outcome) => {
            return Ok(DiagnosedRun::Failed {
                message: format!("no reference to compare with: {outcome:?}"),
            });
        }
    };
    let restore = ops::restore_steps(plan, variant, env.buffers, env.pristine);
    for step in &restore {
        env.device.run(&step.op())?;
    }
    sample::run_prepared_once(env.device, prepared, poisoned)?;
    let (Some(expected), Some(check)) = (expected, plan.checks.get(variant.check)) else {
        return Ok(DiagnosedRun::Right);
    };
    let output = &plan.buffers[check.output];
    let actual: &[u8] = match prepared.readback {
        Readback::Buffer(id) => env.device.read_back(id, expected.len())?,
        Readback::Host { pinned } => {
            scratch.resize(expected.len(), 0);
            env.device.read_host(pinned, scratch)?;
            scratch
        }
    };
    let shape = prepared
        .annotations
        .launch
        .map(|launch| OutputShape::infer(output.len, launch.grid, launch.block))
        .unwrap_or(OutputShape {
            grid: [1, 1, 1],
            block: [1, 1, 1],
            row_len: None,
        });
    let pattern = analyse(expected, actual, output.elem, &check.comparison, &shape);
    Ok(if pattern.wrong == 0 {
        DiagnosedRun::Right
    } else {
        DiagnosedRun::Wrong { pattern }
    })
}
