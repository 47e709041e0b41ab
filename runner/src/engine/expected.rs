//! The expected output of each check the selected variants use, computed once on the CPU from
//! the host copies of the inputs.

use super::EngineError;
use super::buffers::LabBuffers;
use crate::plan::LabPlan;
use crate::references::{self, ReferenceCall};

/// The expected bytes of each check, by the plan's check index; `None` for a check no selected
/// variant uses.
pub fn expected_outputs(
    plan: &LabPlan,
    buffers: &LabBuffers,
    used: &[bool],
) -> Result<Vec<Option<Vec<u8>>>, EngineError> {
    let lab_err = |message: String| EngineError::lab(&plan.lab, message);
    plan.checks
        .iter()
        .zip(used)
        .map(|(check, &used)| {
            if !used {
                return Ok(None);
            }
            let reference = references::find(&check.reference)
                .ok_or_else(|| lab_err(format!("no reference named `{}`", check.reference)))?;
            let inputs = check
                .inputs
                .iter()
                .map(|&index| {
                    buffers.host_input(plan, index).ok_or_else(|| {
                        lab_err(format!(
                            "the checked input `{}` must be a filled buffer, not a poisoned one",
                            plan.buffers.get(index).map_or("?", |b| b.name.as_str())
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let output = plan
                .buffers
                .get(check.output)
                .ok_or_else(|| lab_err("the check's output is not a buffer".into()))?;
            let call = ReferenceCall {
                inputs,
                args: &check.args,
                output_elem: output.elem,
                output_len: output.len,
            };
            reference
                .expected(&call)
                .map(Some)
                .map_err(|err| lab_err(err.to_string()))
        })
        .collect()
}
