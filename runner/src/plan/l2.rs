//! A variant's L2 controls (`[l2]`, a variant's `l2`), evaluated: the fetch granularity in
//! bytes, the persisting set-aside in bytes, the window's buffer by index, its bytes (checked
//! against the buffer) and its hit ratio.

use super::BufferPlan;
use kernelbook_core::expr::{Expr, Params};
use kernelbook_core::spec::{L2Spec, LabError, LabSpec, VariantSpec, WindowSpec};
use serde::{Deserialize, Serialize};

/// L2 controls, resolved: what the engine asks the device to set before the variant and undo
/// after it. `None` fields are left as the driver has them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L2Plan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_granularity: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persisting_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowPlan>,
}

/// An access-policy window over the first `bytes` of buffer `buffer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowPlan {
    /// Index into [`super::LabPlan::buffers`].
    pub buffer: usize,
    pub bytes: u64,
    pub hit_ratio: f32,
}

/// The L2 controls `variant` of `lab` runs under, evaluated over `env` (the variant's
/// parameters and the target's properties); `None` where it sets none.
pub(super) fn resolve(
    lab: &LabSpec,
    variant: &VariantSpec,
    buffers: &[BufferPlan],
    env: &Params,
) -> Result<Option<L2Plan>, LabError> {
    let Some(spec) = lab.l2_for(variant) else {
        return Ok(None);
    };
    let L2Spec {
        fetch_granularity,
        persisting_bytes,
        window,
    } = &spec;
    let bytes_of = |expr: &Expr, what: &str| -> Result<u64, LabError> {
        let value = expr
            .eval(env)
            .map_err(|err| lab.expr_error(expr, format!("{what}: {err}")))?;
        u64::try_from(value)
            .map_err(|_| lab.expr_error(expr, format!("{what} `{expr}` is {value}, below 0")))
    };
    let persisting_bytes = match persisting_bytes {
        Some(bytes) => Some(bytes_of(bytes, "l2.persisting_bytes")?),
        None => None,
    };
    let window = match window {
        Some(window) => Some(window_plan(lab, variant, window, buffers, bytes_of)?),
        None => None,
    };
    Ok(Some(L2Plan {
        // In 0..=128, checked when the lab was loaded.
        fetch_granularity: fetch_granularity
            .as_ref()
            .and_then(|bytes| u32::try_from(*bytes.get_ref()).ok()),
        persisting_bytes,
        window,
    }))
}

/// The window's buffer by index and its span, which must lie within the buffer.
fn window_plan(
    lab: &LabSpec,
    variant: &VariantSpec,
    window: &WindowSpec,
    buffers: &[BufferPlan],
    bytes_of: impl Fn(&Expr, &str) -> Result<u64, LabError>,
) -> Result<WindowPlan, LabError> {
    let name = window.buffer.get_ref();
    let buffer = buffers
        .iter()
        .position(|b| &b.name == name)
        .ok_or_else(|| {
            lab.error_at(
                &format!("\"{name}\""),
                format!("`{name}` is not a buffer of lab `{}`", lab.name),
            )
        })?;
    let whole = buffers[buffer].bytes as u64;
    let bytes = match &window.bytes {
        Some(bytes) => bytes_of(bytes, "l2.window.bytes")?,
        None => whole,
    };
    if bytes == 0 || bytes > whole {
        return Err(lab.variant_error(
            variant,
            format!(
                "variant `{}`: the L2 window spans {bytes} bytes of `{name}`, which has {whole}",
                variant.name
            ),
        ));
    }
    Ok(WindowPlan {
        buffer,
        bytes,
        hit_ratio: *window.hit_ratio.get_ref() as f32,
    })
}
