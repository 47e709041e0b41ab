//! Copies between host memory (pageable or pinned) and the device, through the backend's host
//! staging buffers.

use super::{Env, Prepared, Readback, Refusal, Staging, Step, VariantOp, single};
use crate::plan::{Direction, HostCopyOp, VariantPlan};
use crate::references::POISON_BYTE;
use kernelbook_core::results::FailureStage;

impl VariantOp for HostCopyOp {
    fn prepare(&self, env: &mut Env<'_>, variant: &VariantPlan) -> Result<Prepared, Refusal> {
        match self.direction {
            Direction::HostToDevice => {
                // The host memory holds the input's host copy: the check then expects the
                // device buffer to equal that input.
                let data = env
                    .host
                    .get(self.src)
                    .and_then(Option::as_ref)
                    .ok_or_else(|| {
                        Refusal::failed(
                            FailureStage::Launch,
                            "a host-to-device copy's source must be a filled buffer",
                        )
                    })?
                    .clone();
                let step = Step::HostToDevice {
                    dst: env.buffer(self.dst)?,
                    bytes: self.bytes,
                    pinned: self.pinned,
                };
                Ok(Prepared {
                    staging: Some(Staging {
                        pinned: self.pinned,
                        data,
                    }),
                    ..single(env, variant, step)?
                })
            }
            Direction::DeviceToHost => {
                // The staging buffer must exist at the right size before the first copy into
                // it, poisoned so that a copy that writes nothing fails; the check reads it.
                let step = Step::DeviceToHost {
                    src: env.buffer(self.src)?,
                    bytes: self.bytes,
                    pinned: self.pinned,
                };
                Ok(Prepared {
                    staging: Some(Staging {
                        pinned: self.pinned,
                        data: vec![POISON_BYTE; self.bytes],
                    }),
                    readback: Readback::Host {
                        pinned: self.pinned,
                    },
                    ..single(env, variant, step)?
                })
            }
        }
    }
}
