//! A state's summaries, as nvbench's cold measurement (`measure_cold.cu`) writes them and in
//! its order, from what a results file holds: its samples, its summary, the lab's clocks, the
//! bytes it moves and its work. Quartiles follow nvbench's rank rule (the sample at rank
//! round(p × (n − 1)) of the sorted samples); the median is the results file's (the mean of the
//! two middle samples for an even count), the book's. Summaries the file cannot give are left
//! out, never made up: no CPU times (kernelbook times with device events only), no walltime
//! for a file of format 1, no clock where the driver reported none.

use super::layout::{NamedValue, Summary};
use kernelbook_core::results::{LabResults, Outcome, VariantResult};

const HIDDEN: &str = "Hidden by default.";

/// nvbench's `min_samples_for_noise_estimate`: fewer samples give no noise figures.
const MIN_SAMPLES_FOR_NOISE: usize = 5;

fn summary(tag: &str, name: &str, hint: &str, description: &str, hide: bool) -> Summary {
    Summary {
        tag: tag.into(),
        name: name.into(),
        description: description.into(),
        hint: hint.into(),
        hide: hide.then_some(HIDDEN),
        data: Vec::new(),
    }
}

/// A summary with one float `value`.
fn float(tag: &str, name: &str, hint: &str, description: &str, hide: bool, value: f64) -> Summary {
    Summary {
        data: vec![NamedValue::float("value", value)],
        ..summary(tag, name, hint, description, hide)
    }
}

/// The value at nvbench's rank for percentile `p` of `sorted` (not empty).
fn percentile(sorted: &[f64], p: u32) -> f64 {
    let rank = (f64::from(p) / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The first and third quartiles of `samples` by nvbench's rank rule.
pub fn quartiles(samples: &[f64]) -> Option<(f64, f64)> {
    let mut sorted: Vec<f64> = samples.to_vec();
    if sorted.is_empty() || sorted.iter().any(|s| s.is_nan()) {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    Some((percentile(&sorted, 25), percentile(&sorted, 75)))
}

/// The sidecar file of a state's samples, as nvbench's JSON printer names it in the state.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleFile {
    /// Relative to the JSON file's folder: `NAME.json-bin/K.bin`.
    pub path: String,
    /// The samples in seconds, as little-endian float32.
    pub bytes: Vec<u8>,
    pub count: usize,
}

impl SampleFile {
    /// The file of `samples_ms`, named `path`.
    pub fn of(path: String, samples_ms: &[f64]) -> SampleFile {
        let bytes = samples_ms
            .iter()
            .flat_map(|ms| ((ms / 1000.0) as f32).to_le_bytes())
            .collect();
        SampleFile {
            path,
            bytes,
            count: samples_ms.len(),
        }
    }

    /// The summary that points at it (`nv/json/bin:nv/cold/sample_times`).
    pub fn summary(&self) -> Summary {
        Summary {
            hide: Some("Not needed in table."),
            data: vec![
                NamedValue::string("filename", &self.path),
                NamedValue::int("size", self.count as i64),
            ],
            ..summary(
                "nv/json/bin:nv/cold/sample_times",
                "Sample Times File",
                "file/sample_times",
                "Binary file containing sample times as little-endian float32.",
                false,
            )
        }
    }
}

/// The GPU-time summaries of a measured variant, in nvbench's order, times in seconds.
fn gpu_times(summary_ms: &kernelbook_core::stats::Summary, samples_ms: &[f64]) -> Vec<Summary> {
    let s = |ms: f64| ms / 1000.0;
    let mean = s(summary_ms.mean_ms);
    let mut list = vec![
        float(
            "nv/cold/time/gpu/min",
            "Min GPU Time",
            "duration",
            "Fastest isolated kernel execution time (measured with device events)",
            true,
            s(summary_ms.min_ms),
        ),
        float(
            "nv/cold/time/gpu/max",
            "Max GPU Time",
            "duration",
            "Slowest isolated kernel execution time (measured with device events)",
            true,
            s(summary_ms.max_ms),
        ),
        float(
            "nv/cold/time/gpu/mean",
            "GPU Time",
            "duration",
            "Mean isolated kernel execution time (measured with device events)",
            false,
            mean,
        ),
        float(
            "nv/cold/time/gpu/stdev/absolute",
            "Noise",
            "duration",
            "Standard deviation of isolated kernel execution GPU times",
            true,
            summary_ms.rel_spread * mean,
        ),
        float(
            "nv/cold/time/gpu/stdev/relative",
            "Noise",
            "percentage",
            "Relative standard deviation of isolated kernel execution GPU times",
            false,
            summary_ms.rel_spread,
        ),
    ];
    let median = s(summary_ms.median_ms);
    let Some((q1, q3)) = quartiles(samples_ms) else {
        return list;
    };
    let (q1, q3) = (s(q1), s(q3));
    list.extend([
        float(
            "nv/cold/time/gpu/q1",
            "Q1 GPU Time",
            "duration",
            "First quartile of isolated kernel execution GPU times",
            true,
            q1,
        ),
        float(
            "nv/cold/time/gpu/median",
            "Median GPU Time",
            "duration",
            "Median of isolated kernel execution GPU times",
            true,
            median,
        ),
        float(
            "nv/cold/time/gpu/q3",
            "Q3 GPU Time",
            "duration",
            "Third quartile of isolated kernel execution GPU times",
            true,
            q3,
        ),
        float(
            "nv/cold/time/gpu/iqr/absolute",
            "IQR",
            "duration",
            "Interquartile range of isolated kernel execution GPU times",
            true,
            q3 - q1,
        ),
    ]);
    if summary_ms.samples >= MIN_SAMPLES_FOR_NOISE && median > 0.0 {
        list.push(float(
            "nv/cold/time/gpu/iqr/relative",
            "Rel IQR",
            "percentage",
            "Relative interquartile range of isolated kernel execution GPU times",
            true,
            (q3 - q1) / median,
        ));
    }
    list
}

/// Rates at the mean time, as nvbench computes them: work per second, bytes per second and
/// the fraction of the device's peak.
fn rates(results: &LabResults, variant: &VariantResult, mean_s: f64) -> Vec<Summary> {
    let mut list = Vec::new();
    if mean_s <= 0.0 {
        return list;
    }
    if let Some(work) = &variant.work {
        list.push(float(
            "nv/cold/bw/item_rate",
            "Elem/s",
            "item_rate",
            &format!("Number of {} per second", work.unit),
            false,
            work.count as f64 / mean_s,
        ));
    }
    if variant.bytes_moved > 0 {
        let bytes_per_second = variant.bytes_moved as f64 / mean_s;
        list.push(float(
            "nv/cold/bw/global/bytes_per_second",
            "GlobalMem BW",
            "byte_rate",
            "Number of bytes the variant must read and write, per second",
            false,
            bytes_per_second,
        ));
        let peak = results.provenance.device.theoretical_gbs() * 1e9;
        if peak > 0.0 {
            list.push(float(
                "nv/cold/bw/global/utilization",
                "BWUtil",
                "percentage",
                "Global device memory utilization as a percentage of the device's peak bandwidth",
                false,
                bytes_per_second / peak,
            ));
        }
    }
    list
}

/// The SM clock the driver reported right after the lab's last sample (kernelbook reads it
/// once per lab, not per sample), and its ratio to the default clock.
fn clock(results: &LabResults) -> Vec<Summary> {
    let Some(clocks) = results.provenance.clocks else {
        return Vec::new();
    };
    let hz = f64::from(clocks.sm_mhz) * 1e6;
    let mut list = vec![float(
        "nv/cold/sm_clock_rate/mean",
        "Clock Rate",
        "frequency",
        "SM clock rate read after the lab's last sample",
        true,
        hz,
    )];
    let default_hz = results.provenance.device.sm_clock_khz as f64 * 1000.0;
    if default_hz > 0.0 {
        list.push(float(
            "nv/cold/sm_clock_rate/scaling/percent",
            "Clock Scaling",
            "percentage",
            "SM clock rate as a percentage of default clock rate.",
            true,
            hz / default_hz,
        ));
    }
    list
}

/// Every summary of `variant`, with `samples` (its sidecar file) last, as nvbench's JSON
/// printer adds it; none for a variant without a time.
pub fn of(
    results: &LabResults,
    variant: &VariantResult,
    samples: Option<&SampleFile>,
) -> Vec<Summary> {
    let Outcome::Measured {
        summary: s,
        samples_ms,
        ..
    } = &variant.outcome
    else {
        return Vec::new();
    };
    let mut list = vec![Summary {
        data: vec![NamedValue::int("value", s.samples as i64)],
        ..summary(
            "nv/cold/sample_size",
            "Samples",
            "sample_size",
            "Number of isolated kernel executions",
            false,
        )
    }];
    if let Some(wall) = variant.sampling_seconds {
        list.push(float(
            "nv/cold/walltime",
            "Walltime",
            "duration",
            "Walltime used for isolated measurements",
            true,
            wall,
        ));
    }
    list.extend(gpu_times(s, samples_ms));
    list.extend(rates(results, variant, s.mean_ms / 1000.0));
    list.extend(clock(results));
    list.extend(samples.map(SampleFile::summary));
    list
}
