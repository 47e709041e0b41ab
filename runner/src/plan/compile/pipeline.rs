//! A pipelined row's plan: its chunks' bytes and each chunk's kernel arguments.

use super::PlanCompiler;
use crate::plan::{BufferPlan, KernelOp, PipelinePlan};
use kernelbook_core::spec::{CheckSpec, LabError, VariantSpec};

impl PlanCompiler<'_> {
    /// `op` with its chunks where `variant` declares a `pipeline`; the copies move the check's
    /// input in and its output out, which must be buffers of one size that the chunks divide.
    pub(super) fn pipelined(
        &self,
        mut op: KernelOp,
        variant: &VariantSpec,
        check: &CheckSpec,
        buffers: &[BufferPlan],
    ) -> Result<KernelOp, LabError> {
        let Some(spec) = variant.pipeline.as_ref().map(|p| *p.get_ref()) else {
            return Ok(op);
        };
        let here = variant.anchor();
        let Some(input) = check
            .as_builtin()
            .and_then(|builtin| builtin.inputs().first().copied())
        else {
            return Err(self.lab.variant_error(
                variant,
                format!(
                    "variant `{}`: a pipelined row copies its check's input in; give it a check \
                     with one input (`reference = \"scale\"`, say)",
                    variant.name
                ),
            ));
        };
        let input = self.buffer_index(input, &here)?;
        let output = self.buffer_index(check.output(), &here)?;
        let bytes = buffers[input].bytes;
        let chunks = spec.chunks as usize;
        if input == output || buffers[output].bytes != bytes || !bytes.is_multiple_of(chunks) {
            return Err(self.lab.variant_error(
                variant,
                format!(
                    "variant `{}`: a pipeline's input and output must be two buffers of one size \
                     that its {chunks} chunks divide (`{}` has {bytes} bytes, `{}` {})",
                    variant.name, buffers[input].name, buffers[output].name, buffers[output].bytes
                ),
            ));
        }
        let chunk_args = (0..spec.chunks)
            .map(|chunk| {
                let mut env = self.env(Some(variant));
                spec.bind(&mut env, chunk);
                self.args(&variant.args, &env)
            })
            .collect::<Result<Vec<_>, _>>()?;
        op.main.args = chunk_args.first().cloned().unwrap_or_default();
        op.pipeline = Some(PipelinePlan {
            streams: spec.streams,
            input,
            output,
            chunk_bytes: bytes / chunks,
            chunk_args,
        });
        Ok(op)
    }
}
