//! The driver's device-to-device copy: the ceiling the course's copy kernels are held to.

use super::{Env, Prepared, Refusal, Step, VariantOp, single};
use crate::plan::{DeviceCopyOp, VariantPlan};

impl VariantOp for DeviceCopyOp {
    fn prepare(&self, env: &mut Env<'_>, variant: &VariantPlan) -> Result<Prepared, Refusal> {
        let step = Step::Copy {
            dst: env.buffer(self.dst)?,
            src: env.buffer(self.src)?,
            bytes: self.bytes,
        };
        single(env, variant, step)
    }
}
