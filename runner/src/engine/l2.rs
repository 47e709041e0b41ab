//! A variant's L2 controls around its row: read the driver's values, set the variant's, run
//! the row, put the driver's values back and turn persisting lines normal again, so that the
//! next variant finds the L2 as the first did. What was asked and what the driver reported go
//! into the row's result.

use crate::backend::l2::{L2Report, L2Request, WindowRequest};
use crate::backend::{BufferId, Device, DeviceError};
use crate::plan::{L2Plan, LabPlan};
use kernelbook_core::results::{L2Result, L2Settings, L2Window};

/// L2 controls in force for one row, with what to put back after it.
pub(super) struct Applied {
    pub result: L2Result,
    before: L2Report,
}

/// Sets `l2` on `device` (`buffers` are the lab's, in the plan's order) and reads it back.
pub(super) fn apply(
    plan: &LabPlan,
    l2: &L2Plan,
    buffers: &[BufferId],
    device: &mut dyn Device,
) -> Result<Applied, DeviceError> {
    let before = device.set_l2(&L2Request::default())?;
    let window = match &l2.window {
        Some(window) => Some(WindowRequest {
            buffer: *buffers.get(window.buffer).ok_or_else(|| {
                DeviceError::invalid("L2 controls", "the window's buffer is not in the lab")
            })?,
            bytes: usize::try_from(window.bytes).unwrap_or(usize::MAX),
            hit_ratio: window.hit_ratio,
        }),
        None => None,
    };
    let request = L2Request {
        fetch_granularity: l2.fetch_granularity.map(u64::from),
        persisting_bytes: l2.persisting_bytes,
        window,
        reset_persisting_lines: true,
    };
    let reported = device.set_l2(&request)?;
    let buffer_name = |index: usize| {
        plan.buffers
            .get(index)
            .map_or_else(String::new, |b| b.name.clone())
    };
    let window_buffer = l2.window.as_ref().map(|w| buffer_name(w.buffer));
    let result = L2Result {
        before: L2Settings {
            fetch_granularity_bytes: Some(before.fetch_granularity),
            persisting_bytes: Some(before.persisting_bytes),
            window: None,
        },
        requested: L2Settings {
            fetch_granularity_bytes: l2.fetch_granularity.map(u64::from),
            persisting_bytes: l2.persisting_bytes,
            window: l2.window.as_ref().map(|w| L2Window {
                buffer: buffer_name(w.buffer),
                bytes: w.bytes,
                hit_ratio: f64::from(w.hit_ratio),
            }),
        },
        reported: L2Settings {
            fetch_granularity_bytes: Some(reported.fetch_granularity),
            persisting_bytes: Some(reported.persisting_bytes),
            window: reported.window.map(|(bytes, hit_ratio)| L2Window {
                buffer: window_buffer.clone().unwrap_or_default(),
                bytes,
                hit_ratio: f64::from(hit_ratio),
            }),
        },
        max_persisting_bytes: reported.max_persisting_bytes,
        max_window_bytes: reported.max_window_bytes,
    };
    Ok(Applied { result, before })
}

impl Applied {
    /// Puts the driver's values from before the row back, with no window and no persisting
    /// line left.
    pub(super) fn undo(&self, device: &mut dyn Device) -> Result<(), DeviceError> {
        device
            .set_l2(&L2Request {
                fetch_granularity: Some(self.before.fetch_granularity),
                persisting_bytes: Some(self.before.persisting_bytes),
                window: None,
                reset_persisting_lines: true,
            })
            .map(|_| ())
    }
}
