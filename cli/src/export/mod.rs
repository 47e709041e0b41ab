//! The recordings in other tools' formats (`kernelbook export`): nvbench's JSON ([`nvbench`]),
//! so that `nvbench-compare-robust` and `nvbench-compare-legacy` diff two GPUs; kernelbook's
//! own CSV ([`csv_rows`]), a row per GPU, lab and variant, for a spreadsheet or pandas; and a
//! sweep's results as a wide CSV along its axis ([`sweep`]), what a plot reads. Pure: results
//! in, text out.

pub mod nvbench;
pub mod sweep;

use kernelbook_core::bandwidth::{effective_gbs, percent_of};
use kernelbook_core::expr::Params;
use kernelbook_core::results::{DeviceInfo, LabResults, Outcome, VariantResult};
use std::collections::BTreeSet;

/// One GPU's results: a folder of recordings.
#[derive(Debug, Clone)]
pub struct GpuResults {
    /// Its folder (`nvidia-h200-882b8b4e`).
    pub folder: String,
    /// Its labs' results, by lab name.
    pub results: Vec<LabResults>,
}

impl GpuResults {
    /// The device its first recording was measured on.
    pub fn device(&self) -> Option<&DeviceInfo> {
        self.results.first().map(|r| &r.provenance.device)
    }
}

/// The CSV's first columns; a column `param_NAME` per parameter any exported variant has
/// follows them ([`csv_header`]). Bandwidths are at the median (`gbs_median`, what the book
/// shows, and the percentages) and at the mean (`gbs_mean`, what nvbench's JSON calls
/// `GlobalMem BW`).
pub const CSV_HEADER: &[&str] = &[
    "gpu",
    "device",
    "uuid",
    "lab",
    "variant",
    "kernel",
    "status",
    "sweep",
    "lab_params",
    "params",
    "bytes_moved",
    "samples",
    "median_ms",
    "mean_ms",
    "min_ms",
    "max_ms",
    "rel_spread",
    "gbs_median",
    "gbs_mean",
    "pct_of_peak",
    "pct_of_ceiling",
    "counter_unit",
    "counter_median",
    "measured_at",
    "driver",
    "compiler",
];

/// Every parameter name of the exported variants, in name order: a column each.
fn param_names(gpus: &[GpuResults]) -> Vec<String> {
    let names: BTreeSet<&String> = gpus
        .iter()
        .flat_map(|gpu| &gpu.results)
        .flat_map(|results| {
            results.params.keys().chain(
                results
                    .variants
                    .iter()
                    .filter_map(|v| v.params.as_ref())
                    .flat_map(|p| p.own.keys()),
            )
        })
        .collect();
    names.into_iter().cloned().collect()
}

/// The CSV's header for `gpus`: [`CSV_HEADER`], then `param_NAME` per parameter.
pub fn csv_header(gpus: &[GpuResults]) -> Vec<String> {
    CSV_HEADER
        .iter()
        .map(|h| h.to_string())
        .chain(param_names(gpus).iter().map(|name| format!("param_{name}")))
        .collect()
}

/// `name=value` pairs, space-separated.
fn params_text(params: &Params) -> String {
    params
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The CSV of `gpus`: the header, then a row per GPU, lab and variant. A variant without a
/// time has its status and empty figures; a variant of a results file that did not record its
/// own parameters (format 1) has empty `params` and `param_NAME` cells, never the lab's values.
pub fn csv_text(gpus: &[GpuResults]) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(csv_header(gpus))?;
    let names = param_names(gpus);
    for gpu in gpus {
        for results in &gpu.results {
            for v in &results.variants {
                let all = v.all_params(&results.params);
                let params = names.iter().map(|name| {
                    all.as_ref()
                        .and_then(|all| all.get(name))
                        .map(i64::to_string)
                        .unwrap_or_default()
                });
                writer.write_record(csv_row(gpu, results, v).into_iter().chain(params))?;
            }
        }
    }
    let bytes = writer
        .into_inner()
        .map_err(|err| csv::Error::from(err.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The status column: what became of the variant.
fn status(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Measured { .. } => "measured",
        Outcome::WrongResult { .. } => "wrong",
        Outcome::Failed { .. } => "failed",
        Outcome::Unavailable { .. } => "unavailable",
    }
}

/// One variant's [`CSV_HEADER`] cells.
fn csv_row(gpu: &GpuResults, results: &LabResults, v: &VariantResult) -> Vec<String> {
    let p = &results.provenance;
    let peak = p.device.theoretical_gbs();
    let ceiling = results.ceiling_gbs();
    let number = |x: Option<f64>| x.map(|x| x.to_string()).unwrap_or_default();
    let summary = match &v.outcome {
        Outcome::Measured { summary, .. } => Some(summary),
        _ => None,
    };
    let moves_bytes = v.bytes_moved > 0;
    let gbs = v.effective_gbs().filter(|_| moves_bytes);
    let gbs_mean = summary
        .filter(|s| moves_bytes && s.mean_ms > 0.0)
        .map(|s| effective_gbs(v.bytes_moved, s.mean_ms));
    vec![
        gpu.folder.clone(),
        p.device.name.clone(),
        p.device.uuid.clone(),
        results.lab.clone(),
        v.name.clone(),
        v.kernel.clone().unwrap_or_default(),
        status(&v.outcome).to_string(),
        v.params
            .as_ref()
            .and_then(|p| p.sweep.as_ref())
            .map(|sweep| sweep.entry.clone())
            .unwrap_or_default(),
        params_text(&results.params),
        v.all_params(&results.params)
            .map(|all| params_text(&all))
            .unwrap_or_default(),
        v.bytes_moved.to_string(),
        summary.map(|s| s.samples.to_string()).unwrap_or_default(),
        number(summary.map(|s| s.median_ms)),
        number(summary.map(|s| s.mean_ms)),
        number(summary.map(|s| s.min_ms)),
        number(summary.map(|s| s.max_ms)),
        number(summary.map(|s| s.rel_spread)),
        number(gbs),
        number(gbs_mean),
        number(gbs.and_then(|g| percent_of(g, peak))),
        number(gbs.and_then(|g| ceiling.and_then(|c| percent_of(g, c)))),
        v.counter
            .as_ref()
            .map(|c| c.unit.clone())
            .unwrap_or_default(),
        number(v.counter.as_ref().and_then(|c| c.median())),
        p.measured_at.clone(),
        p.driver_version.clone(),
        p.compiler_version.clone(),
    ]
}

#[cfg(test)]
mod tests;
