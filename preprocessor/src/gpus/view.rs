//! The comparison as a view model: each GPU's results of a lab become that GPU's [`LabView`]
//! (the same rows, figures and marks its own table has), and the views are set side by side,
//! a row per variant and a group of cells per GPU. Pure: the GPUs' results come in, a view
//! goes out.

use crate::chart::measure::{Metric, Spread};
use crate::render::{LabView, RowView, lab_view};
use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One GPU's results for the comparison: a folder of recordings, or a GPU of this machine
/// measured in this build.
#[derive(Debug, Clone)]
pub struct GpuColumn {
    /// Its recordings' folder (`nvidia-h200-882b8b4e`), or the folder a GPU measured here
    /// would record into: what tells two boards of one kind apart.
    pub folder: String,
    /// Whether the numbers were measured in this build (else recorded).
    pub live: bool,
    /// Each lab's outcome, by lab name; a lab it lacks is "not recorded".
    pub labs: BTreeMap<String, LabOutcome>,
}

/// The whole comparison: the GPUs, then a table per lab.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonView {
    pub gpus: Vec<GpuHeader>,
    pub labs: Vec<LabComparison>,
    /// Why there is nothing to compare, when there is not.
    pub empty: Option<String>,
}

/// What one GPU is: its name, where its numbers come from, and their provenance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuHeader {
    pub folder: String,
    pub device: String,
    /// "recorded" or "measured in this build".
    pub origin: String,
    pub arch: String,
    pub sm_count: u32,
    /// Its theoretical DRAM bandwidth, e.g. "4814 GB/s".
    pub peak: String,
    /// Every board its numbers come from (a folder may hold recordings of several).
    pub uuids: String,
    pub drivers: String,
    pub compilers: String,
    /// The first and last measurement, e.g. "2026-12-01T12:31:07Z – 2026-12-01T13:18:15Z".
    pub measured: String,
    /// How many of the compared labs it has results for.
    pub labs: usize,
}

/// One lab: a row per variant, a group of cells per GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabComparison {
    pub lab: String,
    pub title: String,
    /// Whether the lab moves bytes: three cells per GPU (GB/s, % of peak, % of ceiling);
    /// otherwise one, [`value_header`](Self::value_header).
    pub bandwidth: bool,
    /// The one figure of a lab that moves no bytes, e.g. "cycles per load" or "median time".
    pub value_header: String,
    /// What the ceiling column is measured against (the lab's ceiling variant).
    pub ceiling_label: String,
    pub columns: Vec<LabColumn>,
    pub rows: Vec<ComparisonRow>,
    /// Cells per GPU (for the template's `colspan`).
    pub span: usize,
    /// GB/s as bars, a series per GPU (a lab that moves bytes).
    pub chart: Option<crate::chart::ChartView>,
}

/// A GPU's header above a lab's cells, with what the reader must know about them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabColumn {
    pub folder: String,
    pub device: String,
    /// Measured in this build (else recorded).
    pub live: bool,
    /// Why there are no numbers for this lab on this GPU.
    pub missing: Option<String>,
    /// Kernels edited since the recording: their rows show older code's numbers.
    pub stale: Option<String>,
    /// Parameters other than the lab's, where the results were measured with those.
    pub params: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonRow {
    pub label: String,
    pub is_ceiling: bool,
    pub cells: Vec<Cell>,
}

/// One GPU's figures for one variant, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub gbs: String,
    /// The GB/s the chart draws, with the range of its samples.
    #[serde(skip)]
    pub gbs_spread: Option<Spread>,
    pub pct_peak: String,
    pub pct_ceiling: String,
    /// The figure of a lab that moves no bytes.
    pub value: String,
    /// "FAIL: …", "not measured: …" or "not recorded" instead of figures.
    pub problem: Option<String>,
    /// The variant's kernel was edited since this recording.
    pub stale: bool,
}

impl Cell {
    fn problem(text: String) -> Cell {
        Cell {
            gbs: String::new(),
            gbs_spread: None,
            pct_peak: String::new(),
            pct_ceiling: String::new(),
            value: String::new(),
            problem: Some(text),
            stale: false,
        }
    }
}

/// The comparison of `labs` (in the order given) across `gpus` (in the order given). A lab no
/// GPU has results for is left out.
pub fn comparison_view(labs: &[&LabSpec], gpus: &[GpuColumn]) -> ComparisonView {
    let compared: Vec<LabComparison> = labs
        .iter()
        .filter_map(|lab| lab_comparison(lab, gpus))
        .collect();
    let empty = compared.is_empty().then(|| {
        if gpus.is_empty() {
            "no GPU's recordings were found, and none was measured in this build".to_string()
        } else {
            "none of the GPUs has results for these labs".to_string()
        }
    });
    let names: BTreeSet<&str> = compared.iter().map(|l| l.lab.as_str()).collect();
    ComparisonView {
        gpus: gpus.iter().map(|gpu| gpu_header(gpu, &names)).collect(),
        labs: compared,
        empty,
    }
}

/// One lab across the GPUs, or `None` where no GPU has results for it.
pub fn lab_comparison(lab: &LabSpec, gpus: &[GpuColumn]) -> Option<LabComparison> {
    let views: Vec<Option<LabView>> = gpus
        .iter()
        .map(|gpu| match gpu.labs.get(&lab.name) {
            Some(outcome @ (LabOutcome::Measured { .. } | LabOutcome::Recorded { .. })) => {
                Some(lab_view(lab, outcome))
            }
            _ => None,
        })
        .collect();
    let first = views.iter().flatten().next()?;
    let bandwidth = views.iter().flatten().any(|v| v.show_bandwidth);
    let value_header = first
        .counter_header
        .clone()
        .unwrap_or_else(|| "median time".into());
    let ceiling_label = first.ceiling_label.clone();
    let columns = gpus
        .iter()
        .zip(&views)
        .map(|(gpu, view)| lab_column(lab, gpu, view.as_ref()))
        .collect();
    let rows = lab
        .variants
        .iter()
        .map(|variant| ComparisonRow {
            label: variant.label().to_string(),
            is_ceiling: lab.ceiling.as_deref() == Some(variant.name.as_str()),
            cells: views
                .iter()
                .zip(gpus)
                .map(|(view, gpu)| {
                    let results = gpu.labs.get(&lab.name).and_then(results_of);
                    cell(view.as_ref(), results, &variant.name, bandwidth)
                })
                .collect(),
        })
        .collect();
    let mut comparison = LabComparison {
        lab: lab.name.clone(),
        title: lab.title.clone(),
        bandwidth,
        value_header,
        ceiling_label,
        columns,
        rows,
        span: if bandwidth { 3 } else { 1 },
        chart: None,
    };
    comparison.chart = super::chart::chart(&comparison);
    Some(comparison)
}

/// A GPU's header above one lab, with its marks.
fn lab_column(lab: &LabSpec, gpu: &GpuColumn, view: Option<&LabView>) -> LabColumn {
    let outcome = gpu.labs.get(&lab.name);
    let results = outcome.and_then(results_of);
    let device = results.map_or_else(String::new, |r| r.provenance.device.name.clone());
    let missing = match (view, outcome) {
        (Some(_), _) => None,
        (None, Some(LabOutcome::Missing { why })) => Some(why.clone()),
        (None, _) if gpu.live => Some("not measured".into()),
        (None, _) => Some("not recorded".into()),
    };
    let stale = view.filter(|v| !v.stale_kernels.is_empty()).map(|v| {
        format!(
            "recorded before edits to {}",
            v.stale_kernels
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    let params = results
        .filter(|r| r.params != lab.params)
        .map(|r| format!("measured with {}", crate::format::format_params(&r.params)));
    LabColumn {
        folder: gpu.folder.clone(),
        device,
        live: gpu.live,
        missing,
        stale,
        params,
    }
}

/// The cell of variant `name` from a GPU's view of the lab (its figures as that GPU's table
/// shows them; the chart's GB/s from its results).
fn cell(view: Option<&LabView>, results: Option<&LabResults>, name: &str, bandwidth: bool) -> Cell {
    let Some(view) = view else {
        return Cell::problem("–".into());
    };
    let Some(row) = view.rows.iter().find(|r| r.name == name) else {
        return Cell::problem("not recorded".into());
    };
    if let Some(problem) = row_problem(row) {
        return Cell::problem(problem);
    }
    let stale = row
        .kernel
        .as_ref()
        .is_some_and(|kernel| view.stale_kernels.contains(kernel));
    Cell {
        gbs: if bandwidth {
            row.gbs.clone()
        } else {
            String::new()
        },
        gbs_spread: results
            .filter(|_| bandwidth)
            .and_then(|r| Metric::Gbs.spread(r.variant(name)?)),
        pct_peak: row.pct_peak.clone(),
        pct_ceiling: row.pct_ceiling.clone(),
        value: if view.counter_header.is_some() {
            row.counter.clone()
        } else {
            row.median.clone()
        },
        problem: None,
        stale,
    }
}

/// Why a row has no figures, as its own table says it.
fn row_problem(row: &RowView) -> Option<String> {
    match (&row.unavailable, &row.problem) {
        (Some(reason), _) => Some(format!("not measured: {reason}")),
        (None, Some(problem)) => Some(format!("{}: {problem}", row.status)),
        (None, None) => None,
    }
}

fn results_of(outcome: &LabOutcome) -> Option<&LabResults> {
    match outcome {
        LabOutcome::Measured { results, .. } | LabOutcome::Recorded { results, .. } => {
            Some(results)
        }
        LabOutcome::Missing { .. } => None,
    }
}

/// The GPU's header: its device and toolchain as its results (of the labs compared) give them.
fn gpu_header(gpu: &GpuColumn, compared: &BTreeSet<&str>) -> GpuHeader {
    let results: Vec<&LabResults> = gpu
        .labs
        .iter()
        .filter(|(lab, _)| compared.contains(lab.as_str()))
        .filter_map(|(_, outcome)| results_of(outcome))
        .collect();
    let distinct = |field: &dyn Fn(&LabResults) -> String| {
        results
            .iter()
            .map(|r| field(r))
            .collect::<BTreeSet<String>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", ")
    };
    let dates: BTreeSet<&str> = results
        .iter()
        .map(|r| r.provenance.measured_at.as_str())
        .collect();
    let measured = match (dates.first(), dates.last()) {
        (Some(first), Some(last)) if first != last => format!("{first} – {last}"),
        (Some(first), _) => first.to_string(),
        _ => String::new(),
    };
    let device = results.first().map(|r| &r.provenance.device);
    GpuHeader {
        folder: gpu.folder.clone(),
        device: device.map_or_else(|| gpu.folder.clone(), |d| d.name.clone()),
        origin: if gpu.live {
            "measured in this build"
        } else {
            "recorded"
        }
        .into(),
        arch: device.map_or_else(String::new, |d| d.arch.clone()),
        sm_count: device.map_or(0, |d| d.sm_count),
        peak: device.map_or_else(String::new, |d| format!("{:.0} GB/s", d.theoretical_gbs())),
        uuids: distinct(&|r| r.provenance.device.uuid.clone()),
        drivers: distinct(&|r| r.provenance.driver_version.clone()),
        compilers: distinct(&|r| r.provenance.compiler_version.clone()),
        measured,
        labs: results.len(),
    }
}
