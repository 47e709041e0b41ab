//! nvbench's JSON output as types, each struct's fields in the order NVIDIA/nvbench's
//! `json_printer.cu` writes its keys (it uses an ordered JSON object), so that a file
//! kernelbook writes reads like one nvbench writes, key for key.

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Serialize)]
pub struct Document {
    pub meta: Meta,
    pub devices: Vec<Device>,
    pub benchmarks: Vec<Benchmark>,
}

#[derive(Debug, Serialize)]
pub struct Meta {
    pub argv: Vec<String>,
    pub version: Versions,
    /// What nvbench has no field for: each GPU's folder, boards, drivers and dates.
    pub kernelbook: Vec<Value>,
}

#[derive(Debug, Serialize)]
pub struct Versions {
    pub json: JsonVersion,
    pub nvbench: NvbenchVersion,
}

#[derive(Debug, Serialize)]
pub struct JsonVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub string: String,
}

#[derive(Debug, Serialize)]
pub struct NvbenchVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub string: String,
    pub git_branch: String,
    pub git_sha: String,
    pub git_version: String,
    pub git_is_dirty: bool,
}

/// A device as `add_devices_section` writes it; `None` (JSON `null`) where the results file
/// does not say.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    pub id: usize,
    pub name: String,
    pub sm_version: Option<u32>,
    pub ptx_version: Option<u32>,
    pub sm_default_clock_rate: Option<u64>,
    pub number_of_sms: Option<u32>,
    pub max_blocks_per_sm: Option<u32>,
    pub max_threads_per_sm: Option<u32>,
    pub max_threads_per_block: Option<u32>,
    pub registers_per_sm: Option<u32>,
    pub registers_per_block: Option<u32>,
    pub global_memory_size: Option<u64>,
    pub global_memory_bus_peak_clock_rate: Option<u64>,
    pub global_memory_bus_width: Option<u64>,
    pub global_memory_bus_bandwidth: Option<u64>,
    pub l2_cache_size: Option<u64>,
    pub shared_memory_per_sm: Option<u64>,
    pub shared_memory_per_block: Option<u64>,
    pub ecc_state: Option<bool>,
}

/// A benchmark's settings as nvbench writes them, once for the benchmark and once per state;
/// `None` where the results file does not hold them in numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    pub min_samples: Option<u64>,
    pub cold_warmup_runs: Option<u64>,
    pub cold_max_warmup_walltime: Option<f64>,
    pub batch_target_time: Option<f64>,
    pub skip_time: f64,
    pub timeout: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Benchmark {
    pub name: String,
    pub index: usize,
    #[serde(flatten)]
    pub settings: Settings,
    pub devices: Vec<usize>,
    pub axes: Vec<Axis>,
    pub states: Vec<State>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Axis {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub flags: &'static str,
    pub values: Vec<AxisValue>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AxisValue {
    pub input_string: String,
    pub description: String,
    pub value: Value,
}

#[derive(Debug, Clone, Serialize)]
pub struct State {
    pub name: String,
    #[serde(flatten)]
    pub settings: Settings,
    pub device: usize,
    pub type_config_index: usize,
    pub axis_values: Vec<NamedValue>,
    pub summaries: Vec<Summary>,
    pub is_skipped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
}

/// One of nvbench's named values: every number written as a string, as nvbench does (a JSON
/// number would lose an int64's low digits).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedValue {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub value: String,
}

impl NamedValue {
    pub fn int(name: &str, value: i64) -> NamedValue {
        NamedValue {
            name: name.into(),
            kind: "int64",
            value: value.to_string(),
        }
    }

    pub fn float(name: &str, value: f64) -> NamedValue {
        NamedValue {
            name: name.into(),
            kind: "float64",
            value: float_text(value),
        }
    }

    pub fn string(name: &str, value: &str) -> NamedValue {
        NamedValue {
            name: name.into(),
            kind: "string",
            value: value.into(),
        }
    }
}

/// A float as nvbench's `fmt::to_string` writes it: the shortest text that reads back the
/// same, `inf` for infinity.
fn float_text(value: f64) -> String {
    if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if value.is_nan() {
        "nan".to_string()
    } else {
        value.to_string()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub tag: String,
    pub name: String,
    pub description: String,
    pub hint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hide: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<NamedValue>,
}
