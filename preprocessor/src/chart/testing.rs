//! Results to draw charts of in tests.

use kernelbook_core::expr::Params;
use kernelbook_core::results::{
    DeviceInfo, FORMAT_VERSION, LabResults, Outcome, Provenance, VariantResult,
};
use kernelbook_core::stats::{StopReason, Summary};

/// A measured row that moved `bytes` in each of `samples` (milliseconds).
pub fn sampled(name: &str, bytes: u64, samples: &[f64]) -> VariantResult {
    VariantResult {
        name: name.into(),
        kernel: Some("k".into()),
        source_hash: None,
        compile_flags: vec![],
        bytes_moved: bytes,
        launch: None,
        resources: None,
        outcome: Outcome::Measured {
            summary: Summary::of(samples).expect("summary"),
            stop_reason: StopReason::Converged,
            noisy: false,
            samples_ms: samples.to_vec(),
        },
        implementation: None,
        work: None,
        counter: None,
        checked: None,
        other_kernels: Default::default(),
        params: None,
        sampling_seconds: None,
        timeline: None,
        l2: None,
    }
}

/// `variants` as measured on a GPU with a 1 MiB L2 and a 1000 GB/s theoretical bandwidth.
pub fn results(lab: &str, ceiling: Option<&str>, variants: Vec<VariantResult>) -> LabResults {
    LabResults {
        format_version: FORMAT_VERSION,
        lab: lab.into(),
        params: Params::from([("n".into(), 1024)]),
        provenance: Provenance {
            device: DeviceInfo {
                backend: kernelbook_core::results::DeviceApi::Cuda,
                name: "GPU".into(),
                uuid: "GPU-0".into(),
                arch: "sm_90".into(),
                compute_capability: (9, 0),
                sm_count: 1,
                l2_bytes: 1 << 20,
                memory_bytes: 1 << 30,
                // 2 × 1 GHz × 4000 bits / 8 = 1000 GB/s.
                memory_clock_khz: 1_000_000,
                bus_width_bits: 4000,
                sm_clock_khz: 1,
                max_threads_per_sm: 2048,
                max_shared_bytes_per_block: 1,
                warp_size: 32,
                registers_per_sm: None,
                shared_bytes_per_sm: None,
            },
            driver_version: "13.0".into(),
            compiler_version: "NVRTC 13.0".into(),
            runner_version: "0".into(),
            measured_at: "2026-11-29T00:00:00Z".into(),
            wall_seconds: 1.0,
            input_seed: 1,
            timing_method: "events".into(),
            clocks: None,
        },
        ceiling: ceiling.map(str::to_string),
        variants,
        profile: None,
    }
}
