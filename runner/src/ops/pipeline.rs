//! A pipelined row: the kernel's launch once per chunk, between the chunk's copies from and to
//! pinned host memory, on the plan's streams. The check's input, staged in pinned memory, goes
//! in; each chunk's output comes back over its own input there, where the check reads it.

use super::kernel::kernel_arg;
use super::{Annotations, Env, Prepared, Readback, Refusal, Staging, Step};
use crate::backend::pipeline::{ChunkLaunch, Pipeline};
use crate::plan::PipelinePlan;
use kernelbook_core::results::FailureStage;

/// `main` (chunk 0's launch, loaded) repeated with each chunk's arguments.
pub fn prepare(
    env: &mut Env<'_>,
    plan: &PipelinePlan,
    main: Step,
    annotations: Annotations,
) -> Result<Prepared, Refusal> {
    let Step::Launch { kernel, shape, .. } = main else {
        return Err(Refusal::failed(
            FailureStage::Launch,
            "a pipeline's kernel step is not a launch",
        ));
    };
    let chunks = plan
        .chunk_args
        .iter()
        .map(|args| {
            let args = args
                .iter()
                .map(|arg| kernel_arg(env, *arg))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(ChunkLaunch {
                kernel,
                shape,
                args,
            })
        })
        .collect::<Result<Vec<_>, Refusal>>()?;
    let data = env
        .host
        .get(plan.input)
        .and_then(Option::as_ref)
        .ok_or_else(|| {
            Refusal::failed(
                FailureStage::Launch,
                "a pipeline's input must be a filled buffer",
            )
        })?
        .clone();
    let pipeline = Pipeline {
        streams: plan.streams,
        input: env.buffer(plan.input)?,
        output: env.buffer(plan.output)?,
        chunk_bytes: plan.chunk_bytes,
        chunks,
    };
    Ok(Prepared {
        setup: Vec::new(),
        timed: vec![Step::Pipeline(pipeline)],
        staging: Some(Staging { pinned: true, data }),
        readback: Readback::Host { pinned: true },
        annotations,
    })
}
