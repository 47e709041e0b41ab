//! The results file: what one measurement of one lab produced, with raw samples and the
//! provenance needed to judge it. The runner writes it; the preprocessor renders it; the cache
//! and `labs/recorded/` store it. Versioned: a file of another format version is not trusted.

use crate::bandwidth;
use crate::expr::Params;
use crate::stats::{StopReason, Summary};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bump when the meaning or shape of a results file changes.
pub const FORMAT_VERSION: u32 = 1;

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

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// "cuda" or "hip".
    pub backend: String,
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
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("not a kernelbook results file: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("results file format {found}, this kernelbook reads format {expected}")]
    Version { found: u32, expected: u32 },
}

impl LabResults {
    /// Parses a results file, refusing other format versions.
    pub fn from_json(text: &str) -> Result<LabResults, ResultsError> {
        #[derive(Deserialize)]
        struct VersionOnly {
            format_version: u32,
        }
        let version: VersionOnly = serde_json::from_str(text)?;
        if version.format_version != FORMAT_VERSION {
            return Err(ResultsError::Version {
                found: version.format_version,
                expected: FORMAT_VERSION,
            });
        }
        Ok(serde_json::from_str(text)?)
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
    /// Effective GB/s at the median, for a verified and timed variant.
    pub fn effective_gbs(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Measured { summary, .. } => Some(bandwidth::effective_gbs(
                self.bytes_moved,
                summary.median_ms,
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn h200() -> DeviceInfo {
        DeviceInfo {
            backend: "cuda".into(),
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
        }
    }

    fn measured(name: &str, bytes: u64, median_ms: f64) -> VariantResult {
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
        }
    }

    fn results() -> LabResults {
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
        }
    }

    #[test]
    fn round_trips_through_json() {
        let r = results();
        assert_eq!(LabResults::from_json(&r.to_json()).expect("parse"), r);
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
