//! The recordings in other tools' formats (`kernelbook export`): nvbench's JSON ([`nvbench`]),
//! so that `nvbench-compare` diffs two GPUs, and CSV ([`csv_rows`]), a row per GPU, lab and
//! variant, for a spreadsheet or pandas. Pure: results in, text out.

pub mod nvbench;

use kernelbook_core::results::figures::RowFigures;
use kernelbook_core::results::{DeviceInfo, LabResults, Outcome};

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

/// The CSV's columns.
pub const CSV_HEADER: &[&str] = &[
    "gpu",
    "device",
    "uuid",
    "lab",
    "variant",
    "kernel",
    "status",
    "params",
    "bytes_moved",
    "samples",
    "median_ms",
    "mean_ms",
    "min_ms",
    "max_ms",
    "rel_spread",
    "gbs",
    "pct_of_peak",
    "pct_of_ceiling",
    "counter_unit",
    "counter_median",
    "measured_at",
    "driver",
    "compiler",
];

/// The CSV of `gpus`: the header, then a row per GPU, lab and variant. A variant without a
/// time has its status and empty figures.
pub fn csv_text(gpus: &[GpuResults]) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(CSV_HEADER)?;
    for row in gpus.iter().flat_map(csv_rows) {
        writer.write_record(&row)?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|err| csv::Error::from(err.into_error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The rows of one GPU, in the order of its results and their variants.
pub fn csv_rows(gpu: &GpuResults) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for results in &gpu.results {
        let p = &results.provenance;
        let params = results
            .params
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join(" ");
        for v in &results.variants {
            let number = |x: Option<f64>| x.map(|x| x.to_string()).unwrap_or_default();
            let summary = match &v.outcome {
                Outcome::Measured { summary, .. } => Some(summary),
                _ => None,
            };
            // The table's figures; a row that moves no bytes has no bandwidth to show.
            let figures = RowFigures::of(results, v).filter(|_| v.bytes_moved > 0);
            let status = match &v.outcome {
                Outcome::Measured { .. } => "measured",
                Outcome::WrongResult { .. } => "wrong",
                Outcome::Failed { .. } => "failed",
                Outcome::Unavailable { .. } => "unavailable",
            };
            rows.push(vec![
                gpu.folder.clone(),
                p.device.name.clone(),
                p.device.uuid.clone(),
                results.lab.clone(),
                v.name.clone(),
                v.kernel.clone().unwrap_or_default(),
                status.to_string(),
                params.clone(),
                v.bytes_moved.to_string(),
                summary.map(|s| s.samples.to_string()).unwrap_or_default(),
                number(summary.map(|s| s.median_ms)),
                number(summary.map(|s| s.mean_ms)),
                number(summary.map(|s| s.min_ms)),
                number(summary.map(|s| s.max_ms)),
                number(summary.map(|s| s.rel_spread)),
                number(figures.as_ref().map(|f| f.gbs)),
                number(figures.as_ref().and_then(|f| f.pct_peak)),
                number(figures.as_ref().and_then(|f| f.pct_ceiling)),
                v.counter
                    .as_ref()
                    .map(|c| c.unit.clone())
                    .unwrap_or_default(),
                number(v.counter.as_ref().and_then(|c| c.median())),
                p.measured_at.clone(),
                p.driver_version.clone(),
                p.compiler_version.clone(),
            ]);
        }
    }
    rows
}

#[cfg(test)]
mod tests;
