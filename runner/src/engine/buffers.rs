//! A lab's buffers: inputs drawn fresh on the host ([`HostInputs`]), then allocated at the
//! plan's sizes on the device and uploaded once ([`LabBuffers`]).

use super::EngineError;
use crate::backend::{BufferId, Device};
use crate::plan::{LabPlan, ReferencePlan};
use crate::references::{self, HostBuffer};
use kernelbook_core::spec::Fill;

/// The buffers of one run of a plan, by the plan's buffer index.
#[derive(Debug)]
pub struct LabBuffers {
    pub ids: Vec<BufferId>,
    /// The host copy of each filled buffer (random or zero), exactly the bytes uploaded;
    /// `None` for poisoned buffers, which every variant's check poisons again.
    pub host: Vec<Option<Vec<u8>>>,
    /// A device copy of the initial contents of each filled buffer that a variant writes (an
    /// in-place kernel's `y` of `y = a·x + y`), copied back before every run of such a variant.
    pub pristine: Vec<Option<BufferId>>,
}

/// Every buffer some variant of `plan` restores, the variants a check runs included.
fn restored_by_any(plan: &LabPlan) -> Vec<bool> {
    let mut restored = vec![false; plan.buffers.len()];
    let trusted = plan
        .checks
        .iter()
        .filter_map(|check| match &check.reference {
            ReferencePlan::Variant { variant, .. } => Some(variant.as_ref()),
            _ => None,
        });
    for variant in plan.variants.iter().chain(trusted) {
        for index in plan.restored_by(variant) {
            restored[index] = true;
        }
    }
    restored
}

/// The host memory a measuring run of `plan` takes at its peak: every filled buffer's host
/// copy, and for each check the expected output and the output read back to compare.
pub fn host_bytes_needed(plan: &LabPlan) -> u64 {
    let filled: u64 = plan
        .buffers
        .iter()
        .filter(|b| b.fill != Fill::Poison)
        .map(|b| b.bytes as u64)
        .sum();
    let checked: u64 = plan
        .checks
        .iter()
        .filter_map(|check| plan.buffers.get(check.output))
        .map(|b| 2 * b.bytes as u64)
        .sum();
    filled + checked
}

/// Refuses `plan` before anything is drawn when its host side needs more than `available`
/// bytes (this machine's available memory): a lab sized for the GPU's memory may need more
/// of the host's than there is, and would otherwise swap or be killed without a word.
pub fn check_host_memory(plan: &LabPlan, available: Option<u64>) -> Result<(), EngineError> {
    let needed = host_bytes_needed(plan);
    let Some(available) = available.filter(|&free| needed > free) else {
        return Ok(());
    };
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    Err(EngineError::lab(
        &plan.lab,
        format!(
            "its inputs and checks need {:.2} GiB of host memory (the filled buffers, and each \
             checked output twice: expected and read back), and this machine has {:.2} GiB \
             available; lower its size (kernelbook run {} --set ...) or free memory",
            gib(needed),
            gib(available),
            plan.lab
        ),
    ))
}

/// The memory this machine can give without swapping (`MemAvailable`), where it says.
pub fn available_host_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The host side of a lab's buffers: the contents of each filled buffer (random or zero),
/// exactly the bytes uploaded, drawn from the run's seed; `None` for poisoned buffers, which
/// every variant's check poisons again. Drawn on any thread, ahead of the lab if need be
/// ([`super::Ahead`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HostInputs(pub Vec<Option<Vec<u8>>>);

impl HostInputs {
    /// Draws the filled buffers of `plan` from `seed`.
    pub fn draw(plan: &LabPlan, seed: u64) -> HostInputs {
        let mut rng = fastrand::Rng::with_seed(seed);
        HostInputs(
            plan.buffers
                .iter()
                .map(|buffer| {
                    (buffer.fill != Fill::Poison).then(|| {
                        references::initial_contents(buffer.fill, buffer.elem, buffer.len, &mut rng)
                    })
                })
                .collect(),
        )
    }

    /// The host copy of filled buffer `index` as a reference input.
    pub fn input<'a>(&'a self, plan: &'a LabPlan, index: usize) -> Option<HostBuffer<'a>> {
        let spec = plan.buffers.get(index)?;
        Some(HostBuffer {
            name: &spec.name,
            elem: spec.elem,
            bytes: self.0.get(index)?.as_deref()?,
        })
    }
}

impl LabBuffers {
    /// Refuses `plan` where its buffers (and the copies of in-place ones) need more device
    /// memory than is free, before any host memory is spent drawing its inputs.
    pub fn check_fits(plan: &LabPlan, device: &dyn Device) -> Result<(), EngineError> {
        let lab_err = |message: String| EngineError::lab(&plan.lab, message);
        let restored = restored_by_any(plan);
        let needed: u64 = plan
            .buffers
            .iter()
            .zip(&restored)
            .map(|(b, &twice)| b.bytes as u64 * if twice { 2 } else { 1 })
            .sum();
        let (free, total) = device
            .memory()
            .map_err(|err| lab_err(format!("cannot read the GPU's free memory: {err}")))?;
        if needed > free {
            let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
            return Err(lab_err(format!(
                "its buffers need {:.2} GiB of device memory, and {} has {:.2} GiB free of {:.2} GiB; \
                 lower its size (kernelbook run {} --set ...)",
                gib(needed),
                device.info().name,
                gib(free),
                gib(total),
                plan.lab
            )));
        }
        Ok(())
    }

    /// Allocates every buffer of `plan` and uploads the filled ones from `host`. Inputs go up
    /// once per lab: variants only read them (a kernel that wrote one would fail its own check,
    /// and a fault ends the process, whose successor uploads them again).
    pub fn upload(
        plan: &LabPlan,
        device: &mut dyn Device,
        host: HostInputs,
    ) -> Result<LabBuffers, EngineError> {
        let lab_err = |message: String| EngineError::lab(&plan.lab, message);
        let restored = restored_by_any(plan);
        Self::check_fits(plan, device)?;
        let mut ids = Vec::with_capacity(plan.buffers.len());
        for buffer in &plan.buffers {
            let id = device.alloc(buffer.bytes).map_err(|err| {
                lab_err(format!(
                    "cannot allocate buffer `{}` ({:.1} MiB): {err}",
                    buffer.name,
                    buffer.bytes as f64 / (1 << 20) as f64
                ))
            })?;
            ids.push(id);
        }
        let mut pristine = Vec::with_capacity(plan.buffers.len());
        for ((id, data), &restore) in ids.iter().zip(&host.0).zip(&restored) {
            let mut copy = None;
            if let Some(data) = data {
                device
                    .upload(*id, data)
                    .map_err(|err| lab_err(format!("cannot upload the inputs: {err}")))?;
                if restore {
                    let saved = device.alloc(data.len()).map_err(|err| {
                        lab_err(format!(
                            "cannot allocate the copy of an in-place buffer: {err}"
                        ))
                    })?;
                    device
                        .upload(saved, data)
                        .map_err(|err| lab_err(format!("cannot upload the inputs: {err}")))?;
                    copy = Some(saved);
                }
            }
            pristine.push(copy);
        }
        Ok(LabBuffers {
            ids,
            host: host.0,
            pristine,
        })
    }

    /// The buffers every check poisons before it runs.
    pub fn poisoned(&self) -> Vec<BufferId> {
        self.ids
            .iter()
            .zip(&self.host)
            .filter(|(_, host)| host.is_none())
            .map(|(id, _)| *id)
            .collect()
    }
}
