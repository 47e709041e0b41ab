//! The results file: what one measurement of one lab produced, with raw samples and the
//! provenance needed to judge it. The runner writes it; the preprocessor renders it; the cache
//! and `labs/recorded/` store it. Versioned: a file of another format version is not trusted.

use crate::bandwidth;
use crate::expr::Params;
pub use crate::spec::{SweepOrigin, SweptAxis};
use crate::stats::{StopReason, Summary};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub mod figures;
mod l2;
pub mod timeline;
pub use l2::{L2Result, L2Settings, L2Window};
mod validate;
pub use validate::{
    InvalidResults, LabMismatch, MAX_BYTES, MAX_COUNTER, MAX_GBS, MAX_TIME_MS, MAX_WORK_PER_SECOND,
    MIN_TIME_MS, MissingVariants, Place,
};

/// Bump when the meaning or shape of a results file changes. Format 2 added each variant's own
/// parameters and the sweep it comes from ([`VariantResult::params`]).
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format this kernelbook still reads: format 1 files lack each variant's own
/// parameters, which then read as absent ([`VariantResult::params`] is `None`), never guessed.
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// A short hex fingerprint (first 16 hex digits of SHA-256).
pub fn fingerprint(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabResults {
    pub format_version: u32,
    pub lab: String,
    pub params: Params,
    pub provenance: Provenance,
    /// The variant whose bandwidth is 100 % in the "% of ceiling" column.
    pub ceiling: Option<String>,
    pub variants: Vec<VariantResult>,
    /// Hardware counters from a profiler run of the lab's kernels, for labs that ask for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileRun>,
}

/// What Nsight Compute said about the lab's kernels (`profile = true` in the lab file), or why
/// it could not say.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileRun {
    /// e.g. "Nsight Compute (ncu) 2025.3.0".
    pub tool: String,
    /// One entry per profiled variant, in the lab's order.
    pub kernels: Vec<ProfiledVariant>,
    /// Why some or all kernels have no counters (no ncu, no permission...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Where and when the counters were taken (the newest of them, where they were taken at
    /// several times): counters are collected apart from the run that timed the lab, and kept
    /// apart, by kernel, so that a lab re-timed with unchanged kernels keeps its counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<ProfileProvenance>,
    /// Variants whose counters are being collected now: the page says so, and shows them when
    /// they land.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// The counters are the recording's, shown beside this machine's timings because this build
    /// collected none (`--no-counters`, or no Nsight Compute here) and the kernels are unchanged
    /// since the recording; `provenance` says which GPU took them, and when.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_recording: bool,
}

/// The GPU and the time of a profile taken apart from the lab's timings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileProvenance {
    /// The GPU's name, e.g. "NVIDIA H200".
    pub device: String,
    pub uuid: String,
    /// RFC 3339, UTC.
    pub measured_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledVariant {
    pub variant: String,
    pub counters: KernelProfile,
}

/// The figures the book shows for one launch, derived from its [`KernelCounters`]. A figure is
/// `None` where a metric it needs is missing, or where it would divide by zero (sectors per
/// request of a kernel that makes no such request).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelProfile {
    pub kernel: String,
    pub launch_id: u64,
    #[serde(default)]
    pub duration_ns: Option<f64>,
    #[serde(default)]
    pub shared_load_bank_conflicts: Option<f64>,
    #[serde(default)]
    pub shared_store_bank_conflicts: Option<f64>,
    #[serde(default)]
    pub shared_load_instructions: Option<f64>,
    /// Bank conflicts per shared load (warp) instruction: 31 for a 32-way conflict, ≈ 0 without.
    #[serde(default)]
    pub conflicts_per_shared_load: Option<f64>,
    /// Shared-memory wavefronts per shared load instruction: 1 is ideal for 4-byte accesses.
    #[serde(default)]
    pub wavefronts_per_shared_load: Option<f64>,
    /// Shared store (warp) instructions, where the profiler was asked for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_store_instructions: Option<f64>,
    /// Bank conflicts per shared store instruction: what a store's bank diagram predicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts_per_shared_store: Option<f64>,
    /// Shared-memory wavefronts per shared store instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wavefronts_per_shared_store: Option<f64>,
    /// 4 for 32 consecutive 4-byte words, 32 when every lane needs its own sector.
    #[serde(default)]
    pub global_load_sectors_per_request: Option<f64>,
    #[serde(default)]
    pub global_store_sectors_per_request: Option<f64>,
    #[serde(default)]
    pub dram_read_bytes: Option<f64>,
    #[serde(default)]
    pub dram_write_bytes: Option<f64>,
    /// Read plus written, where both are known.
    #[serde(default)]
    pub dram_bytes: Option<f64>,
    /// Bytes L1 wrote to L2 (write sectors × 32 B): where an uncoalesced store's waste shows.
    #[serde(default)]
    pub l2_write_bytes_from_l1: Option<f64>,
    /// Achieved occupancy, per cent of the SMs' warp slots, where the profiler was asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_occupancy_pct: Option<f64>,
    /// Warp instructions executed (every kind), where the profiler was asked for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp_instructions: Option<f64>,
    /// The grid's size in rounds of resident blocks per SM (Nsight Compute's launch statistic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waves_per_sm: Option<f64>,
    /// DRAM throughput over the kernel's duration, per cent of the peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_throughput_pct: Option<f64>,
    /// The L2's hit rate over the sectors looked up in it, per cent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_hit_rate_pct: Option<f64>,
}

/// Where and how the numbers were obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub device: DeviceInfo,
    /// e.g. "13.0" (from cuDriverGetVersion) plus the kernel driver's own version where known.
    pub driver_version: String,
    /// e.g. "13.0".
    pub compiler_version: String,
    pub runner_version: String,
    /// RFC 3339, UTC.
    pub measured_at: String,
    /// Seconds the whole lab took, compile and verification included.
    pub wall_seconds: f64,
    /// Seed of the random input this run was verified on.
    pub input_seed: u64,
    /// How samples were timed, in words.
    pub timing_method: String,
    /// GPU clocks read right after the last sample, where the driver reports them (the book
    /// never changes clocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocks: Option<Clocks>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clocks {
    pub sm_mhz: u32,
    pub memory_mhz: u32,
}

/// The API a device was driven through: in a results file the backend's name, "cuda" or
/// "hip" ("fake": the CPU stand-in of kernelbook's own tests), as the schema lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceApi {
    Cuda,
    Hip,
    Fake,
}

impl DeviceApi {
    /// The name a results file and a message give it.
    pub fn name(self) -> &'static str {
        match self {
            DeviceApi::Cuda => "cuda",
            DeviceApi::Hip => "hip",
            DeviceApi::Fake => "fake",
        }
    }
}

impl std::fmt::Display for DeviceApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub backend: DeviceApi,
    pub name: String,
    pub uuid: String,
    /// e.g. "sm_90" or "gfx90a": what kernels are compiled for.
    pub arch: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    pub l2_bytes: u64,
    pub memory_bytes: u64,
    pub memory_clock_khz: u64,
    pub bus_width_bits: u64,
    pub sm_clock_khz: u64,
    pub max_threads_per_sm: u32,
    pub max_shared_bytes_per_block: u64,
    /// Threads per warp (wavefront). Results files written before it was recorded lack it;
    /// they were all measured on NVIDIA GPUs, whose warps are 32 threads.
    #[serde(default = "default_warp_size")]
    pub warp_size: u32,
    /// 32-bit registers per SM (the register file the resident threads share). Recorded since
    /// the book's reference tables show it; absent in older files (a gap on the page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers_per_sm: Option<u32>,
    /// Shared memory per SM, bytes (what all resident blocks together may use). Absent in older
    /// files and where the runtime does not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_bytes_per_sm: Option<u64>,
}

fn default_warp_size() -> u32 {
    32
}

impl DeviceInfo {
    /// Theoretical DRAM bandwidth in GB/s (memory clock × bus width × 2).
    pub fn theoretical_gbs(&self) -> f64 {
        bandwidth::theoretical_gbs(self.memory_clock_khz, self.bus_width_bits)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantResult {
    pub name: String,
    /// The kernel of the book, or `None` for a builtin.
    pub kernel: Option<String>,
    /// Fingerprint of the kernel source that ran.
    pub source_hash: Option<String>,
    /// Every option the compiler was given (empty for a builtin).
    pub compile_flags: Vec<String>,
    pub bytes_moved: u64,
    pub launch: Option<LaunchShape>,
    pub resources: Option<KernelResources>,
    pub outcome: Outcome,
    /// What a peer was, where it ran (e.g. "cuBLAS 13.0 geam", "torch 2.11.0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    /// Work besides moving bytes, for a rate column (e.g. FLOP, dependent loads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<Work>,
    /// A value the kernel measured itself, one per timed sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter: Option<CounterResult>,
    /// How its output was checked, in words ("bit for bit against the NumPy reference `axpy`");
    /// absent in files written before checks said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<String>,
    /// Fingerprints of the other kernels the variant launches (setup and later stages).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub other_kernels: std::collections::BTreeMap<String, String>,
    /// The variant's own parameters and the sweep it comes from; `None` in files of format 1,
    /// which did not record them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<VariantParams>,
    /// Wall-clock seconds its timed samples took, first to last (format 2; nvbench's cold
    /// walltime); absent where it was not timed, and in format 1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_seconds: Option<f64>,
    /// A pipelined row's copies and kernels per stream, from its events (the sample nearest
    /// the median); absent for every other row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<timeline::Timeline>,
    /// The L2 controls it ran under (`[l2]`), asked and read back; absent where it set none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<L2Result>,
}

/// What a variant adds to the lab's parameters: the values it sets itself and those its sweep
/// binds, and for a variant of a sweep, the sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantParams {
    /// The variant's own `params` and its swept values; the lab's `params` apply beneath them.
    pub own: Params,
    /// The `[[variants]]` entry it was expanded from, where it comes from a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepOrigin>,
}

/// Units of work one run of a variant does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    pub count: u64,
    pub unit: String,
}

/// What a kernel measured itself, already divided by `per`, one value per timed sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterResult {
    pub unit: String,
    pub per: u64,
    pub values: Vec<f64>,
}

impl CounterResult {
    /// The median of the per-sample values.
    pub fn median(&self) -> Option<f64> {
        let mut sorted: Vec<f64> = self
            .values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        Some(if sorted.len().is_multiple_of(2) {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        } else {
            sorted[mid]
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchShape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

impl LaunchShape {
    pub fn threads_per_block(&self) -> u32 {
        self.block.iter().product()
    }
}

/// What the compiler and the occupancy calculator say about a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KernelResources {
    pub registers: u32,
    /// Bytes per thread of local memory ("stack frame" plus spills).
    pub local_bytes: u32,
    /// Spilled bytes per thread from ptxas' report; `None` when the compiler gave no report.
    pub spill_store_bytes: Option<u32>,
    pub spill_load_bytes: Option<u32>,
    /// Static shared memory per block.
    pub shared_bytes: u32,
    pub blocks_per_sm: u32,
    /// Resident warps over the most the SM can hold, 0..=1.
    pub occupancy: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Verified against the CPU reference, then timed.
    Measured {
        summary: Summary,
        stop_reason: StopReason,
        noisy: bool,
        /// Every kernel time in milliseconds, in the order taken.
        samples_ms: Vec<f64>,
    },
    /// The output differed from the CPU reference: no time is reported.
    WrongResult { mismatch: Mismatch },
    /// It could not be compiled, launched or timed.
    Failed {
        stage: FailureStage,
        message: String,
    },
    /// A peer (a vendor library, PyTorch) that is not installed on this machine.
    Unavailable { reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    pub index: u64,
    pub expected: String,
    pub actual: String,
    /// How many elements differ in all.
    pub count: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureStage {
    Compile,
    Load,
    Launch,
    Timing,
    /// The process running the variant died (a fault the driver could not report).
    Crash,
    /// The variant ran past the lab's time limit and was stopped.
    Timeout,
    /// The check's reference gave no expected output (a NumPy reference raised, or the
    /// variant it is checked against failed).
    Reference,
}

impl FailureStage {
    /// The stage in words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FailureStage::Compile => "compiling",
            FailureStage::Load => "loading the kernel",
            FailureStage::Launch => "the launch",
            FailureStage::Timing => "timing",
            FailureStage::Crash => "the process running it",
            FailureStage::Timeout => "the time limit",
            FailureStage::Reference => "the check's reference",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("not a kernelbook results file: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("results file format {found}, this kernelbook reads format {expected}")]
    Version { found: u32, expected: u32 },
    /// It parses, but holds a figure no measurement could give ([`LabResults::validate`]).
    #[error("implausible results: {0}")]
    Invalid(#[from] InvalidResults),
}

impl LabResults {
    /// Parses a results file, refusing other format versions and contents that do not pass
    /// [`validate`](Self::validate).
    pub fn from_json(text: &str) -> Result<LabResults, ResultsError> {
        #[derive(Deserialize)]
        struct VersionOnly {
            format_version: u32,
        }
        let version: VersionOnly = serde_json::from_str(text)?;
        if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version.format_version) {
            return Err(ResultsError::Version {
                found: version.format_version,
                expected: FORMAT_VERSION,
            });
        }
        let results: LabResults = serde_json::from_str(text)?;
        results.validate()?;
        Ok(results)
    }

    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn variant(&self, name: &str) -> Option<&VariantResult> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// Bandwidth of the ceiling variant, if it was measured.
    pub fn ceiling_gbs(&self) -> Option<f64> {
        self.ceiling
            .as_deref()
            .and_then(|name| self.variant(name))
            .and_then(VariantResult::effective_gbs)
    }
}

impl VariantResult {
    /// Every parameter the variant ran with: `lab`'s (the results file's `params`) with its own
    /// over them; `None` for a file that did not record a variant's own parameters.
    pub fn all_params(&self, lab: &Params) -> Option<Params> {
        let own = &self.params.as_ref()?.own;
        let mut all = lab.clone();
        all.extend(own.iter().map(|(name, value)| (name.clone(), *value)));
        Some(all)
    }

    /// The median time of a verified and timed variant.
    pub fn median_ms(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Measured { summary, .. } => Some(summary.median_ms),
            _ => None,
        }
    }

    /// Effective GB/s at the median, for a verified and timed variant.
    pub fn effective_gbs(&self) -> Option<f64> {
        self.median_ms()
            .map(|ms| bandwidth::effective_gbs(self.bytes_moved, ms))
    }

    /// Units of its declared work per second at the median (FLOP/s, loads/s).
    pub fn work_per_second(&self) -> Option<f64> {
        let work = self.work.as_ref()?;
        let ms = self.median_ms().filter(|ms| *ms > 0.0)?;
        Some(figures::per_second(work.count as f64, ms))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn h200() -> DeviceInfo {
        DeviceInfo {
            backend: DeviceApi::Cuda,
            name: "NVIDIA H200".into(),
            uuid: "GPU-00000000-0000-0000-0000-000000000000".into(),
            arch: "sm_90".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            l2_bytes: 60 * 1024 * 1024,
            memory_bytes: 150_000_000_000,
            memory_clock_khz: 3_201_000,
            bus_width_bits: 6016,
            sm_clock_khz: 1_980_000,
            max_threads_per_sm: 2048,
            max_shared_bytes_per_block: 232_448,
            warp_size: 32,
            registers_per_sm: Some(65_536),
            shared_bytes_per_sm: Some(233_472),
        }
    }

    pub fn measured(name: &str, bytes: u64, median_ms: f64) -> VariantResult {
        VariantResult {
            name: name.into(),
            kernel: None,
            source_hash: None,
            compile_flags: vec![],
            bytes_moved: bytes,
            launch: None,
            resources: None,
            outcome: Outcome::Measured {
                summary: Summary::of(&[median_ms]).expect("summary"),
                stop_reason: StopReason::Converged,
                noisy: false,
                samples_ms: vec![median_ms],
            },
            implementation: None,
            work: None,
            counter: None,
            checked: None,
            other_kernels: Default::default(),
            params: Some(VariantParams::default()),
            sampling_seconds: None,
            timeline: None,
            l2: None,
        }
    }

    pub fn results() -> LabResults {
        LabResults {
            format_version: FORMAT_VERSION,
            lab: "copy".into(),
            params: Params::from([("n".into(), 1 << 20)]),
            provenance: Provenance {
                device: h200(),
                driver_version: "13.0".into(),
                compiler_version: "13.0".into(),
                runner_version: "0.1.0".into(),
                measured_at: "2026-11-29T12:00:00Z".into(),
                wall_seconds: 1.0,
                input_seed: 7,
                timing_method: "events".into(),
                clocks: None,
            },
            ceiling: Some("memcpy".into()),
            variants: vec![
                measured("memcpy", 4_000_000_000, 1.0),
                measured("copy", 3_000_000_000, 1.0),
            ],
            profile: None,
        }
    }

    #[test]
    fn round_trips_through_json() {
        let r = results();
        assert_eq!(LabResults::from_json(&r.to_json()).expect("parse"), r);
    }

    #[test]
    fn a_file_from_before_the_warp_size_was_recorded_reads_warps_of_32() {
        let mut r = results();
        r.provenance.device.warp_size = 64;
        let mut json: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
        let device = json["provenance"]["device"]
            .as_object_mut()
            .expect("a device");
        assert_eq!(device.remove("warp_size"), Some(64.into()));
        let back = LabResults::from_json(&json.to_string()).expect("parse");
        assert_eq!(back.provenance.device.warp_size, 32);
    }

    #[test]
    fn a_file_from_before_the_per_sm_limits_were_recorded_has_gaps_there() {
        let r = results();
        let mut json: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
        let device = json["provenance"]["device"]
            .as_object_mut()
            .expect("a device");
        assert_eq!(device.remove("registers_per_sm"), Some(65_536.into()));
        assert_eq!(device.remove("shared_bytes_per_sm"), Some(233_472.into()));
        let back = LabResults::from_json(&json.to_string()).expect("parse");
        assert_eq!(back.provenance.device.registers_per_sm, None);
        assert_eq!(back.provenance.device.shared_bytes_per_sm, None);
    }

    #[test]
    fn a_format_1_file_reads_with_no_variant_parameters() {
        let mut r = results();
        r.variants[1].params = Some(VariantParams {
            own: Params::from([("stride".into(), 4)]),
            sweep: Some(SweepOrigin {
                entry: "s{stride}".into(),
                axes: vec![SweptAxis {
                    name: "stride".into(),
                    pow2: true,
                }],
            }),
        });
        let back = LabResults::from_json(&r.to_json()).expect("parse");
        assert_eq!(back, r, "a sweep's values round-trip");
        assert_eq!(
            back.variants[1].all_params(&back.params),
            Some(Params::from([("n".into(), 1 << 20), ("stride".into(), 4)]))
        );
        let mut json: serde_json::Value = serde_json::from_str(&r.to_json()).expect("json");
        json["format_version"] = 1.into();
        for variant in json["variants"].as_array_mut().expect("variants") {
            variant.as_object_mut().expect("a variant").remove("params");
        }
        let old = LabResults::from_json(&json.to_string()).expect("a format 1 file reads");
        assert_eq!(old.format_version, 1);
        assert!(old.variants.iter().all(|v| v.params.is_none()));
        assert_eq!(old.variants[1].all_params(&old.params), None);
    }

    #[test]
    fn refuses_other_format_versions_and_garbage() {
        let mut r = results();
        r.format_version = FORMAT_VERSION + 1;
        assert!(matches!(
            LabResults::from_json(&r.to_json()),
            Err(ResultsError::Version { .. })
        ));
        assert!(matches!(
            LabResults::from_json("{\"format_version\": 1, \"lab\": "),
            Err(ResultsError::Malformed(_))
        ));
    }

    #[test]
    fn ceiling_and_bandwidth_come_from_the_median() {
        let r = results();
        assert_eq!(r.ceiling_gbs(), Some(4000.0));
        assert_eq!(
            r.variant("copy").and_then(VariantResult::effective_gbs),
            Some(3000.0)
        );
        assert!((h200().theoretical_gbs() - 4814.3).abs() < 0.5);
    }

    #[test]
    fn fingerprints_are_short_and_stable() {
        assert_eq!(fingerprint(b"abc"), "ba7816bf8f01cfea");
    }
}
