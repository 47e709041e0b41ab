//! The vendor library's transpose (cuBLAS `geam` on NVIDIA) and matrix product (`sgemm`), peers
//! of the course's kernels.

use super::{Annotations, Env, Prepared, Refusal, Step, VariantOp, single};
use crate::plan::{GemmOp, TransposeOp, VariantPlan};

impl VariantOp for GemmOp {
    fn prepare(&self, env: &mut Env<'_>, variant: &VariantPlan) -> Result<Prepared, Refusal> {
        let implementation = env
            .device
            .sgemm_library()
            .map_err(|reason| Refusal::Unavailable {
                reason: reason.to_string(),
            })?;
        let step = Step::Gemm {
            c: env.buffer(self.c)?,
            a: env.buffer(self.a)?,
            b: env.buffer(self.b)?,
            m: self.m,
            n: self.n,
            k: self.k,
        };
        Ok(Prepared {
            annotations: Annotations {
                implementation: Some(implementation),
                ..Annotations::default()
            },
            ..single(env, variant, step)?
        })
    }
}

impl VariantOp for TransposeOp {
    fn prepare(&self, env: &mut Env<'_>, variant: &VariantPlan) -> Result<Prepared, Refusal> {
        let implementation =
            env.device
                .transpose_library()
                .map_err(|reason| Refusal::Unavailable {
                    reason: reason.to_string(),
                })?;
        let step = Step::Transpose {
            dst: env.buffer(self.dst)?,
            src: env.buffer(self.src)?,
            rows: self.rows,
            cols: self.cols,
        };
        Ok(Prepared {
            annotations: Annotations {
                implementation: Some(implementation),
                ..Annotations::default()
            },
            ..single(env, variant, step)?
        })
    }
}
