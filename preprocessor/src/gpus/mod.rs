//! `{{#gpus-compared}}` (or `{{#gpus-compared lab other_lab}}`): every recorded GPU side by
//! side, a table per lab, a group of cells per GPU: effective GB/s, % of that GPU's own
//! theoretical peak and % of its own copy ceiling (the lab's ceiling variant, measured in the
//! same run). The GPUs are the folders of the book's recordings (`labs/recorded/<gpu>/`) and the
//! GPUs this build measured on. A recording of kernels edited since is marked, as in the lab's
//! own table.
//!
//! In data-flow order: [`recorded_columns`] reads the recordings, [`view`] sets the GPUs side by
//! side (pure), [`chart`] draws each lab's GB/s with a series per GPU, and
//! `templates/gpus-compared.hbs` renders it.

pub mod chart;
pub mod view;

use crate::scan::BookIndex;
use handlebars::Handlebars;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use kernelbook_runner::store::{Recordings, gpu_folder_name, stale_kernels};
use std::collections::BTreeMap;
use view::{ComparisonView, GpuColumn};

/// The directive's name: `{{#gpus-compared}}`.
pub const DIRECTIVE: &str = "gpus-compared";

const TEMPLATE: &str = include_str!("../../templates/gpus-compared.hbs");
const CHART_TEMPLATE: &str = include_str!("../../templates/gpus-chart.hbs");

/// A column per GPU folder of `recordings`, holding its recording of each of `labs` (with the
/// kernels edited since found from `index`). A file that cannot be trusted is left out with a
/// warning, as the book's own recording would be.
pub fn recorded_columns(
    recordings: &Recordings,
    labs: &[&LabSpec],
    index: &BookIndex,
) -> Vec<GpuColumn> {
    recordings
        .folders()
        .into_iter()
        .map(|folder| {
            let store = recordings.folder(Some(&folder));
            let labs = labs
                .iter()
                .filter_map(|lab| match store.get(lab) {
                    Ok(Some(results)) => {
                        let kernels =
                            index.kernels_named(lab.kernel_refs().into_iter().map(|(k, _)| k));
                        let stale = stale_kernels(&results, &kernels);
                        Some((lab.name.clone(), recorded(results, stale)))
                    }
                    Ok(None) => None,
                    Err(distrust) => {
                        eprintln!("kernelbook: warning: {distrust}");
                        None
                    }
                })
                .collect();
            GpuColumn {
                folder,
                live: false,
                labs,
            }
        })
        .collect()
}

fn recorded(results: kernelbook_core::results::LabResults, stale: Vec<String>) -> LabOutcome {
    LabOutcome::Recorded {
        results,
        why: "recorded".into(),
        stale_kernels: stale,
        compile_errors: Vec::new(),
    }
}

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

/// The comparison's template (and the chart's), apart from the lab templates.
#[derive(Debug)]
pub struct Templates {
    handlebars: Handlebars<'static>,
}

impl Templates {
    pub fn new() -> Self {
        let mut handlebars = Handlebars::new();
        handlebars.set_strict_mode(true);
        // The templates are part of the binary; a syntax error in one is a bug the tests catch.
        for (name, text) in [("gpus-compared", TEMPLATE), ("gpus-chart", CHART_TEMPLATE)] {
            if let Err(err) = handlebars.register_template_string(name, text) {
                panic!("templates/{name}.hbs does not parse: {err}");
            }
        }
        Templates { handlebars }
    }

    /// The comparison's HTML, with no blank line (markdown keeps it one HTML block).
    pub fn render(&self, view: &ComparisonView) -> Result<String, handlebars::RenderError> {
        let html = self.handlebars.render("gpus-compared", view)?;
        Ok(html
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
