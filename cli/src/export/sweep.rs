//! A sweep's results as a wide CSV along its axis, what a plot reads (the layout of Triton's
//! `perf_report` tables): a row per value of the axis, then a column per series, where a series
//! is one swept `[[variants]]` entry (`ws_{size}m`) or one variant of its own, on one GPU.
//!
//! The axis is a swept parameter, or an expression over a variant's parameters
//! (`--axis "size * unit"` puts the hierarchy's working sets of KiB and MiB on one axis). A
//! variant joins where its parameters give the axis a value; a results file that did not
//! record its variants' parameters (format 1) has no sweep to export, and says so.

use super::GpuResults;
use kernelbook_core::expr::Expr;
use kernelbook_core::results::{LabResults, Outcome, VariantResult};
use std::collections::{BTreeMap, BTreeSet};

/// The figure in each cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Metric {
    /// GB/s at the median time (what the book's tables show).
    Gbs,
    /// The median time, milliseconds.
    MedianMs,
    /// The median of the value the kernel measured itself (its `counter`).
    Counter,
}

impl Metric {
    fn column(self) -> &'static str {
        match self {
            Metric::Gbs => "gbs_median",
            Metric::MedianMs => "median_ms",
            Metric::Counter => "counter_median",
        }
    }

    fn of(self, variant: &VariantResult) -> Option<f64> {
        match self {
            Metric::Gbs => variant.effective_gbs().filter(|_| variant.bytes_moved > 0),
            Metric::MedianMs => variant.median_ms(),
            Metric::Counter => match &variant.outcome {
                Outcome::Measured { .. } => variant.counter.as_ref().and_then(|c| c.median()),
                _ => None,
            },
        }
    }

    /// GB/s for a lab whose variants move bytes, else the kernel's own counter where it has
    /// one, else the median time.
    fn default_for(results: &LabResults) -> Metric {
        if results.variants.iter().all(|v| v.bytes_moved > 0) {
            Metric::Gbs
        } else if results.variants.iter().any(|v| v.counter.is_some()) {
            Metric::Counter
        } else {
            Metric::MedianMs
        }
    }
}

/// What the wide CSV of a lab is asked for.
#[derive(Debug, Clone)]
pub struct SweepRequest {
    pub lab: String,
    /// The axis: a parameter's name or an expression over a variant's parameters; the lab's
    /// one swept parameter where `None`.
    pub axis: Option<String>,
    /// The figure in each cell; see [`Metric::default_for`] where `None`.
    pub metric: Option<Metric>,
}

/// Why a lab's sweep cannot be exported.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SweepError {
    #[error("no exported GPU folder has a recording of lab `{0}`")]
    NoLab(String),
    #[error(
        "the recordings of lab `{0}` are of results format 1, which did not record each \
         variant's parameters: record the lab again to export its sweep"
    )]
    NoParams(String),
    #[error("lab `{0}` has no sweep")]
    NoSweep(String),
    #[error(
        "lab `{lab}` sweeps {axes}: name the axis with --axis (a parameter, or an expression \
         such as \"size * unit\")"
    )]
    AmbiguousAxis { lab: String, axes: String },
    #[error("no variant of lab `{lab}` gives the axis `{axis}` a value")]
    EmptyAxis { lab: String, axis: String },
}

/// The lab's one swept parameter, if every swept entry sweeps that one alone.
fn default_axis(lab: &str, runs: &[(&str, &LabResults)]) -> Result<String, SweepError> {
    let swept: BTreeSet<&str> = runs
        .iter()
        .flat_map(|(_, results)| &results.variants)
        .filter_map(|v| v.params.as_ref()?.sweep.as_ref())
        .flat_map(|sweep| sweep.axes.iter().map(|axis| axis.name.as_str()))
        .collect();
    match swept.len() {
        0 => Err(SweepError::NoSweep(lab.to_string())),
        1 => Ok(swept.into_iter().collect()),
        _ => Err(SweepError::AmbiguousAxis {
            lab: lab.to_string(),
            axes: swept
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(" and "),
        }),
    }
}

/// The series a variant belongs to: its sweep's entry, else its own name.
fn series_of(variant: &VariantResult) -> String {
    variant
        .params
        .as_ref()
        .and_then(|p| p.sweep.as_ref())
        .map_or_else(|| variant.name.clone(), |sweep| sweep.entry.clone())
}

/// The wide CSV of `request.lab` over the GPUs that recorded it.
pub fn wide_csv(gpus: &[GpuResults], request: &SweepRequest) -> anyhow::Result<String> {
    let lab = request.lab.as_str();
    let runs: Vec<(&str, &LabResults)> = gpus
        .iter()
        .flat_map(|gpu| {
            gpu.results
                .iter()
                .filter(|r| r.lab == lab)
                .map(|r| (gpu.folder.as_str(), r))
        })
        .collect();
    let Some((_, first)) = runs.first() else {
        return Err(SweepError::NoLab(lab.to_string()).into());
    };
    if runs
        .iter()
        .flat_map(|(_, r)| &r.variants)
        .any(|v| v.params.is_none())
    {
        return Err(SweepError::NoParams(lab.to_string()).into());
    }
    let axis = match &request.axis {
        Some(axis) => axis.clone(),
        None => default_axis(lab, &runs)?,
    };
    let metric = request.metric.unwrap_or_else(|| Metric::default_for(first));
    let expr = Expr::new(axis.as_str());
    let several = runs.len() > 1;
    // Series in the order they first appear; rows by the axis's value.
    let mut series: Vec<String> = Vec::new();
    let mut cells: BTreeMap<i64, BTreeMap<String, Option<f64>>> = BTreeMap::new();
    for (folder, results) in &runs {
        for v in &results.variants {
            let Some(params) = v.all_params(&results.params) else {
                continue;
            };
            let Ok(x) = expr.eval(&params) else {
                continue;
            };
            let name = match several {
                true => format!("{folder}/{}", series_of(v)),
                false => series_of(v),
            };
            if !series.contains(&name) {
                series.push(name.clone());
            }
            cells.entry(x).or_default().insert(name, metric.of(v));
        }
    }
    if cells.is_empty() {
        return Err(SweepError::EmptyAxis {
            lab: lab.to_string(),
            axis,
        }
        .into());
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    let header = std::iter::once(axis.clone()).chain(
        series
            .iter()
            .map(|name| format!("{name} ({})", metric.column())),
    );
    writer.write_record(header)?;
    for (x, row) in &cells {
        let values = series.iter().map(|name| {
            row.get(name)
                .copied()
                .flatten()
                .map(|value| value.to_string())
                .unwrap_or_default()
        });
        writer.write_record(std::iter::once(x.to_string()).chain(values))?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|err| csv::Error::from(err.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
