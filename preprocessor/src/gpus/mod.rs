//! `{{#gpus-compared}}` (or `{{#gpus-compared lab other_lab}}`): every recorded GPU side by
//! side, a table per lab, a group of cells per GPU: effective GB/s, % of that GPU's own
//! theoretical peak and % of its own copy ceiling (the lab's ceiling variant, measured in the
//! same run). The GPUs are the folders of the book's recordings (`labs/recorded/<gpu>/`) and the
//! GPUs this build measured on. A recording of kernels edited since is marked, as in the lab's
//! own table.
//!
//! In data-flow order: `recorded::recorded_columns` reads the recordings (this module does no
//! I/O), [`view`] sets the GPUs side by side (pure), [`chart`] draws each lab's GB/s with a
//! series per GPU, and `templates/gpus-compared.hbs` renders it.

pub mod chart;
pub mod view;

use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use kernelbook_runner::store::gpu_folder_name;
use std::collections::BTreeMap;
use view::GpuColumn;

/// The directive's name: `{{#gpus-compared}}`.
pub const DIRECTIVE: &str = "gpus-compared";

/// The column of the GPU this build measured on: the labs it measured (cached or now), under
/// the folder it would record into; `None` where it measured none.
pub fn live_column<'a>(
    outcomes: impl IntoIterator<Item = (&'a str, &'a LabOutcome)>,
) -> Option<GpuColumn> {
    let labs: BTreeMap<String, LabOutcome> = outcomes
        .into_iter()
        .filter(|(_, outcome)| matches!(outcome, LabOutcome::Measured { .. }))
        .map(|(lab, outcome)| (lab.to_string(), outcome.clone()))
        .collect();
    let folder = labs.values().find_map(|outcome| match outcome {
        LabOutcome::Measured { results, .. } => Some(gpu_folder_name(&results.provenance.device)),
        _ => None,
    })?;
    Some(GpuColumn {
        folder,
        live: true,
        labs,
    })
}

/// The labs a comparison shows: those `names` (every lab of `labs`, in `order` first, where it
/// names none).
pub fn compared_labs<'a>(
    names: &[String],
    order: &[&'a LabSpec],
    labs: &'a BTreeMap<String, LabSpec>,
) -> Vec<&'a LabSpec> {
    if !names.is_empty() {
        return names.iter().filter_map(|name| labs.get(name)).collect();
    }
    let mut all: Vec<&LabSpec> = order.to_vec();
    all.extend(
        labs.values()
            .filter(|lab| !order.iter().any(|o| o.name == lab.name)),
    );
    all
}

#[cfg(test)]
mod tests;
