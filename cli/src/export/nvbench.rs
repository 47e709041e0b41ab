//! Results in the layout of nvbench's JSON output (file version 1.0.0, as NVIDIA/nvbench's
//! `json_printer` writes it and its `nvbench_compare.py` reads it), so that `nvbench-compare
//! a.json b.json` diffs two GPUs' recordings, lab by lab and variant by variant.
//!
//! The mapping: a GPU is a `devices[]` entry; a lab is a benchmark; a variant is a state, with
//! axes `Variant` (a string axis) and the lab's parameters (int64 axes); a state's summaries
//! carry the tags nvbench's cold measurement writes (`nv/cold/time/gpu/mean` in seconds,
//! `nv/cold/time/gpu/stdev/relative`, `nv/cold/sample_size`, `nv/cold/bw/global/...`), each
//! value a string in a `data` list, as nvbench writes them. A variant that gave no time is a
//! skipped state with its reason. What nvbench has no field for (the UUID, the driver, when)
//! is under `meta.kernelbook`.

use super::GpuResults;
use kernelbook_core::expr::Params;
use kernelbook_core::results::{DeviceInfo, LabResults, Outcome, VariantResult};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The nvbench JSON file version this layout follows.
pub const FILE_VERSION: (u32, u32, u32) = (1, 0, 0);

/// The whole document for `gpus` (device ids in their order), `argv` the command that wrote it.
pub fn document(gpus: &[GpuResults], argv: &[String]) -> Value {
    let (major, minor, patch) = FILE_VERSION;
    let version = env!("CARGO_PKG_VERSION");
    json!({
        "meta": {
            "argv": argv,
            "version": {
                "json": {
                    "major": major, "minor": minor, "patch": patch,
                    "string": format!("{major}.{minor}.{patch}"),
                },
                "nvbench": {
                    "major": 0, "minor": 0, "patch": 0,
                    "string": format!("kernelbook {version}"),
                    "git_branch": "", "git_sha": "", "git_version": "", "git_is_dirty": false,
                },
            },
            "kernelbook": gpus.iter().enumerate().map(|(id, gpu)| provenance(id, gpu)).collect::<Vec<_>>(),
        },
        "devices": gpus.iter().enumerate().map(|(id, gpu)| device(id, gpu.device())).collect::<Vec<_>>(),
        "benchmarks": benchmarks(gpus),
    })
}

/// What nvbench knows of a device, from what the driver reported to kernelbook. Board-specific
/// fields (the UUID) are left out, so that two boards of one kind compare as nvbench compares
/// two runs on one machine.
fn device(id: usize, device: Option<&DeviceInfo>) -> Value {
    let Some(d) = device else {
        return json!({ "id": id, "name": "unknown" });
    };
    let (major, minor) = d.compute_capability;
    let sm_version = major * 100 + minor * 10;
    json!({
        "id": id,
        "name": d.name,
        "sm_version": sm_version,
        "ptx_version": sm_version,
        "sm_default_clock_rate": d.sm_clock_khz * 1000,
        "number_of_sms": d.sm_count,
        "max_threads_per_sm": d.max_threads_per_sm,
        "global_memory_size": d.memory_bytes,
        "global_memory_bus_peak_clock_rate": d.memory_clock_khz * 1000,
        "global_memory_bus_width": d.bus_width_bits,
        "global_memory_bus_bandwidth": (d.theoretical_gbs() * 1e9).round() as u64,
        "l2_cache_size": d.l2_bytes,
        "shared_memory_per_block": d.max_shared_bytes_per_block,
    })
}

/// Where device `id`'s numbers come from: its folder, boards, drivers and dates.
fn provenance(id: usize, gpu: &GpuResults) -> Value {
    let labs: BTreeMap<&str, Value> = gpu
        .results
        .iter()
        .map(|r| {
            let p = &r.provenance;
            (
                r.lab.as_str(),
                json!({
                    "uuid": p.device.uuid,
                    "driver": p.driver_version,
                    "compiler": p.compiler_version,
                    "measured_at": p.measured_at,
                    "timing_method": p.timing_method,
                    "input_seed": p.input_seed,
                }),
            )
        })
        .collect();
    json!({ "device": id, "folder": gpu.folder, "labs": labs })
}

/// A benchmark per lab, in name order, with a state per GPU and variant.
fn benchmarks(gpus: &[GpuResults]) -> Vec<Value> {
    let mut labs: BTreeMap<&str, Vec<(usize, &LabResults)>> = BTreeMap::new();
    for (id, gpu) in gpus.iter().enumerate() {
        for results in &gpu.results {
            labs.entry(&results.lab).or_default().push((id, results));
        }
    }
    labs.into_iter()
        .enumerate()
        .map(|(index, (lab, runs))| benchmark(index, lab, &runs))
        .collect()
}

fn benchmark(index: usize, lab: &str, runs: &[(usize, &LabResults)]) -> Value {
    let devices: Vec<usize> = runs.iter().map(|(id, _)| *id).collect();
    let pow2: BTreeSet<String> = int_axes(runs)
        .into_iter()
        .filter(|(_, axis)| axis.pow2())
        .map(|(name, _)| name)
        .collect();
    let states: Vec<Value> = runs
        .iter()
        .flat_map(|(id, results)| {
            let pow2 = &pow2;
            results
                .variants
                .iter()
                .map(move |v| state(*id, results, v, pow2))
        })
        .collect();
    json!({
        "name": lab,
        "index": index,
        "min_samples": 10,
        "skip_time": -1.0,
        "devices": devices,
        "axes": axes(runs),
        "states": states,
    })
}

/// The parameters `variant` ran with: the lab's with its own over them, or only the lab's for a
/// results file that did not record a variant's own (format 1), whose swept values are unknown.
fn state_params(results: &LabResults, variant: &VariantResult) -> Params {
    variant
        .all_params(&results.params)
        .unwrap_or_else(|| results.params.clone())
}

/// An int64 axis: its values in order, and whether nvbench would write it as powers of two.
#[derive(Debug, Default)]
struct IntAxis {
    values: BTreeSet<i64>,
    /// Some variant sweeps it as `{ pow2 = [...] }`.
    swept_pow2: bool,
}

impl IntAxis {
    /// `pow2` where a sweep of it is `pow2` and every value is a power of two (nvbench names a
    /// state's value of such an axis `2^E`).
    fn pow2(&self) -> bool {
        self.swept_pow2 && self.values.iter().all(|&v| v > 0 && v.count_ones() == 1)
    }
}

/// The int64 axes of a benchmark: every parameter any variant on any GPU ran with.
fn int_axes(runs: &[(usize, &LabResults)]) -> BTreeMap<String, IntAxis> {
    let mut axes: BTreeMap<String, IntAxis> = BTreeMap::new();
    for (_, results) in runs {
        for v in &results.variants {
            for (name, value) in state_params(results, v) {
                axes.entry(name).or_default().values.insert(value);
            }
            let swept = v.params.iter().filter_map(|p| p.sweep.as_ref());
            for axis in swept.flat_map(|sweep| &sweep.axes).filter(|a| a.pow2) {
                axes.entry(axis.name.clone()).or_default().swept_pow2 = true;
            }
        }
    }
    axes
}

/// The `Variant` string axis and an int64 axis per parameter, with every value any GPU used.
fn axes(runs: &[(usize, &LabResults)]) -> Vec<Value> {
    let mut variants: Vec<&str> = Vec::new();
    for (_, results) in runs {
        for v in &results.variants {
            if !variants.contains(&v.name.as_str()) {
                variants.push(&v.name);
            }
        }
    }
    let variant_axis = json!({
        "name": "Variant",
        "type": "string",
        "flags": "",
        "values": variants.iter().map(|v| json!({
            "input_string": v, "description": "", "value": v,
        })).collect::<Vec<_>>(),
    });
    std::iter::once(variant_axis)
        .chain(int_axes(runs).into_iter().map(|(name, axis)| {
            let pow2 = axis.pow2();
            json!({
                "name": name,
                "type": "int64",
                "flags": if pow2 { "pow2" } else { "" },
                "values": axis.values.iter().map(|&v| {
                    let exponent = v.trailing_zeros();
                    if pow2 {
                        json!({
                            "input_string": exponent.to_string(),
                            "description": format!("2^{exponent} = {v}"),
                            "value": v,
                        })
                    } else {
                        json!({"input_string": v.to_string(), "description": "", "value": v})
                    }
                }).collect::<Vec<_>>(),
            })
        }))
        .collect()
}

/// One variant on one GPU: "Device=0 Variant=naive n=8192", as nvbench names a state (a
/// `pow2` axis's value as `2^E`).
fn state(
    device: usize,
    results: &LabResults,
    variant: &VariantResult,
    pow2: &BTreeSet<String>,
) -> Value {
    let mut axis_values = vec![json!({"name": "Variant", "type": "string", "value": variant.name})];
    let mut name = format!("Device={device} Variant={}", variant.name);
    for (param, value) in state_params(results, variant) {
        axis_values.push(json!({"name": param, "type": "int64", "value": value.to_string()}));
        if pow2.contains(&param) {
            name.push_str(&format!(" {param}=2^{}", value.trailing_zeros()));
        } else {
            name.push_str(&format!(" {param}={value}"));
        }
    }
    let mut state = json!({
        "name": name,
        "min_samples": 10,
        "skip_time": -1.0,
        "device": device,
        "type_config_index": 0,
        "axis_values": axis_values,
        "summaries": summaries(results, variant),
        "is_skipped": false,
    });
    if let Some(reason) = skip_reason(&variant.outcome) {
        state["is_skipped"] = json!(true);
        state["skip_reason"] = json!(reason);
    }
    state
}

/// Why a variant has no time, if it has none.
fn skip_reason(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Measured { .. } => None,
        Outcome::WrongResult { mismatch } => Some(format!(
            "wrong result: element {} is {}, expected {}",
            mismatch.index, mismatch.actual, mismatch.expected
        )),
        Outcome::Failed { stage, message } => {
            Some(format!("failed at {}: {message}", stage.describe()))
        }
        Outcome::Unavailable { reason } => Some(format!("not measured: {reason}")),
    }
}

/// The cold measurement's summaries, as nvbench tags them.
fn summaries(results: &LabResults, variant: &VariantResult) -> Vec<Value> {
    let Outcome::Measured { summary, .. } = &variant.outcome else {
        return Vec::new();
    };
    let seconds = |ms: f64| ms / 1000.0;
    let mut list = vec![
        summary_of(
            "nv/cold/sample_size",
            "Samples",
            "sample_size",
            "Number of isolated kernel executions",
            None,
            Data::Int(summary.samples as i64),
        ),
        summary_of(
            "nv/cold/time/gpu/mean",
            "GPU Time",
            "duration",
            "Mean isolated kernel execution time (measured with device events, L2 flushed before each)",
            None,
            Data::Float(seconds(summary.mean_ms)),
        ),
        summary_of(
            "nv/cold/time/gpu/stdev/relative",
            "Noise",
            "percentage",
            "Relative standard deviation of isolated kernel execution GPU times",
            None,
            Data::Float(summary.rel_spread),
        ),
        summary_of(
            "nv/cold/time/gpu/median",
            "Median GPU Time",
            "duration",
            "Median of isolated kernel execution GPU times",
            Some(HIDDEN),
            Data::Float(seconds(summary.median_ms)),
        ),
        summary_of(
            "nv/cold/time/gpu/min",
            "Min GPU Time",
            "duration",
            "Fastest isolated kernel execution time",
            Some(HIDDEN),
            Data::Float(seconds(summary.min_ms)),
        ),
        summary_of(
            "nv/cold/time/gpu/max",
            "Max GPU Time",
            "duration",
            "Slowest isolated kernel execution time",
            Some(HIDDEN),
            Data::Float(seconds(summary.max_ms)),
        ),
    ];
    if variant.bytes_moved > 0 && summary.mean_ms > 0.0 {
        let bytes_per_second = variant.bytes_moved as f64 / seconds(summary.mean_ms);
        list.push(summary_of(
            "nv/cold/bw/global/bytes_per_second",
            "GlobalMem BW",
            "byte_rate",
            "Number of bytes the variant must read and write, per second",
            None,
            Data::Float(bytes_per_second),
        ));
        let peak = results.provenance.device.theoretical_gbs() * 1e9;
        if peak > 0.0 {
            list.push(summary_of(
                "nv/cold/bw/global/utilization",
                "BWUtil",
                "percentage",
                "Global device memory utilization as a percentage of the device's peak bandwidth",
                None,
                Data::Float(bytes_per_second / peak),
            ));
        }
    }
    list
}

const HIDDEN: &str = "Hidden by default.";

/// A summary's one value; nvbench writes every number as a string.
enum Data {
    Int(i64),
    Float(f64),
}

fn summary_of(
    tag: &str,
    name: &str,
    hint: &str,
    description: &str,
    hide: Option<&str>,
    data: Data,
) -> Value {
    let (kind, value) = match data {
        Data::Int(v) => ("int64", v.to_string()),
        Data::Float(v) => ("float64", v.to_string()),
    };
    let mut summary = json!({
        "tag": tag,
        "name": name,
        "description": description,
        "hint": hint,
        "data": [{"name": "value", "type": kind, "value": value}],
    });
    if let Some(hide) = hide {
        summary["hide"] = json!(hide);
    }
    summary
}
