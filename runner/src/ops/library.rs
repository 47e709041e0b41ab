//! The vendor library's transpose (cuBLAS `geam` on NVIDIA) and matrix products (`sgemm`, and
//! `cublasGemmEx` on BF16 inputs rounded here from the lab's f32 buffers), peers
//! of the course's kernels.

use super::{Annotations, Env, Prepared, Refusal, Step, VariantOp, single};
use crate::backend::{BufferId, DeviceError, GemmPrecision};
use crate::plan::{GemmOp, TransposeOp, VariantPlan};
use kernelbook_core::results::FailureStage;

impl VariantOp for GemmOp {
    fn prepare(&self, env: &mut Env<'_>, variant: &VariantPlan) -> Result<Prepared, Refusal> {
        let implementation =
            env.device
                .gemm_library(self.precision)
                .map_err(|reason| Refusal::Unavailable {
                    reason: reason.to_string(),
                })?;
        let (a, b) = match self.precision {
            GemmPrecision::F32 => (env.buffer(self.a)?, env.buffer(self.b)?),
            GemmPrecision::Bf16 => (bf16_copy(env, self.a)?, bf16_copy(env, self.b)?),
        };
        let step = Step::Gemm {
            c: env.buffer(self.c)?,
            a,
            b,
            m: self.m,
            n: self.n,
            k: self.k,
            precision: self.precision,
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

/// A device buffer holding the lab's f32 buffer `index` rounded to BF16 (to nearest, ties to
/// even), made once before the row is run: the conversion is not the product's work.
fn bf16_copy(env: &mut Env<'_>, index: usize) -> Result<BufferId, Refusal> {
    let floats = env
        .host
        .get(index)
        .and_then(Option::as_ref)
        .ok_or_else(|| {
            Refusal::failed(
                FailureStage::Launch,
                "a BF16 product's inputs must be filled buffers (random or zero)",
            )
        })?;
    let halves: Vec<u8> = floats
        .chunks_exact(4)
        .flat_map(|f| bf16_bits(f32::from_le_bytes([f[0], f[1], f[2], f[3]])).to_le_bytes())
        .collect();
    let failed = |err: DeviceError| Refusal::failed(FailureStage::Launch, err.to_string());
    let buffer = env.device.alloc(halves.len()).map_err(failed)?;
    env.device.upload(buffer, &halves).map_err(failed)?;
    Ok(buffer)
}

/// The BF16 nearest `value` (ties to even), as its 16 bits; a NaN stays a NaN.
pub fn bf16_bits(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) as u16) | 0x0040;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
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

#[cfg(test)]
mod tests {
    use super::bf16_bits;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(-2.0), 0xc000);
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
        assert_eq!(bf16_bits(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3 · 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: to the even one.
        assert_eq!(bf16_bits(1.0 + 3.0 / 256.0), 0x3f82);
        assert!(f32::from_bits(u32::from(bf16_bits(f32::NAN)) << 16).is_nan());
    }
}
