//! The comparison of GPUs: each GPU's figures against its own peak and its own ceiling, the
//! marks of a missing, stale or failed row, and the HTML with its chart.

use super::view::{GpuColumn, comparison_view, lab_comparison};
use super::*;
use kernelbook_core::expr::Params;
use kernelbook_core::results::{
    DeviceInfo, FORMAT_VERSION, FailureStage, LabResults, Outcome, Provenance, VariantResult,
};
use kernelbook_core::stats::{StopReason, Summary};
use std::path::Path;

/// The shared copy lab (labs/fixtures/copy.toml): `memcpy` (the ceiling) and `scalar`.
fn copy_lab() -> LabSpec {
    let text = include_str!("../../../labs/fixtures/copy.toml");
    LabSpec::parse(text, Path::new("labs/fixtures/copy.toml")).expect("fixture")
}

/// A GPU whose theoretical peak is `peak_gbs` (memory clock × 2 × bus bytes).
fn device(name: &str, uuid: &str, peak_gbs: u64) -> DeviceInfo {
    DeviceInfo {
        backend: kernelbook_core::results::DeviceApi::Cuda,
        name: name.into(),
        uuid: uuid.into(),
        arch: "sm_90".into(),
        compute_capability: (9, 0),
        sm_count: 132,
        l2_bytes: 50 << 20,
        memory_bytes: 80 << 30,
        // peak = clock_khz × 1000 × 2 × (bus / 8) / 10^9 with a 4096-bit bus: clock = peak / 1.024.
        memory_clock_khz: peak_gbs * 1_000_000 / 1024,
        bus_width_bits: 4096,
        sm_clock_khz: 1_980_000,
        max_threads_per_sm: 2048,
        max_shared_bytes_per_block: 232_448,
        warp_size: 32,
        registers_per_sm: None,
        shared_bytes_per_sm: None,
    }
}

fn measured(name: &str, kernel: Option<&str>, median_ms: f64) -> VariantResult {
    VariantResult {
        name: name.into(),
        kernel: kernel.map(String::from),
        source_hash: kernel.map(|_| "0123456789abcdef".into()),
        compile_flags: vec![],
        bytes_moved: 2_000_000_000,
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
        params: None,
        sampling_seconds: None,
        timeline: None,
        l2: None,
    }
}

/// The copy lab on `device`: 2 GB moved by memcpy in `memcpy_ms` and by the kernel in
/// `scalar_ms`.
fn results(device: DeviceInfo, memcpy_ms: f64, scalar_ms: f64) -> LabResults {
    LabResults {
        format_version: FORMAT_VERSION,
        lab: "copy".into(),
        params: Params::from([("n".into(), 1024)]),
        provenance: Provenance {
            device,
            driver_version: "13.0".into(),
            compiler_version: "NVRTC 13.0".into(),
            runner_version: "0.1.0".into(),
            measured_at: "2026-12-01T12:00:00Z".into(),
            wall_seconds: 1.0,
            input_seed: 7,
            timing_method: "events".into(),
            clocks: None,
        },
        ceiling: Some("memcpy".into()),
        variants: vec![
            measured("memcpy", None, memcpy_ms),
            measured("scalar", Some("copy_scalar"), scalar_ms),
        ],
        profile: None,
    }
}

fn column(folder: &str, outcome: Option<LabOutcome>) -> GpuColumn {
    GpuColumn {
        folder: folder.into(),
        live: false,
        labs: outcome
            .into_iter()
            .map(|outcome| ("copy".to_string(), outcome))
            .collect(),
    }
}

fn recorded_outcome(results: LabResults, stale: &[&str]) -> LabOutcome {
    crate::recorded::recorded_outcome(results, stale.iter().map(|k| k.to_string()).collect())
}

/// A 4000 GB/s GPU and a 2000 GB/s one: each row's GB/s, against each GPU's own peak and own
/// memcpy.
fn two_gpus() -> Vec<GpuColumn> {
    let big = results(device("NVIDIA H200", "GPU-d8d1645c", 4000), 0.625, 1.0);
    let small = results(device("NVIDIA A10", "GPU-0a100000", 2000), 2.0, 4.0);
    vec![
        column("nvidia-h200-882b8b4e", Some(recorded_outcome(big, &[]))),
        column("nvidia-a10-0a100000", Some(recorded_outcome(small, &[]))),
    ]
}

#[test]
fn each_gpu_is_measured_against_its_own_peak_and_ceiling() {
    let lab = copy_lab();
    let compared = lab_comparison(&lab, &two_gpus()).expect("a comparison");
    assert!(compared.bandwidth);
    assert_eq!(compared.span, 3);
    let scalar = &compared.rows[1];
    assert_eq!(scalar.label, "scalar copy");
    let (h200, a10) = (&scalar.cells[0], &scalar.cells[1]);
    // 2 GB in 1 ms: 2000 GB/s, half of the H200's 4000 and 62.5 % of its 3200 GB/s memcpy.
    assert_eq!(
        (
            h200.gbs.as_str(),
            h200.pct_peak.as_str(),
            h200.pct_ceiling.as_str()
        ),
        ("2000", "50.0 %", "62.5 %")
    );
    // 2 GB in 4 ms: 500 GB/s, a quarter of the A10's 2000 and half of its 1000 GB/s memcpy.
    assert_eq!(
        (
            a10.gbs.as_str(),
            a10.pct_peak.as_str(),
            a10.pct_ceiling.as_str()
        ),
        ("500", "25.0 %", "50.0 %")
    );
    assert!(compared.rows[0].is_ceiling);
    assert_eq!(compared.columns[1].device, "NVIDIA A10");
}

#[test]
fn a_gpu_without_the_lab_a_stale_kernel_and_a_failed_row_are_marked() {
    let lab = copy_lab();
    let mut failed = results(device("NVIDIA L4", "GPU-14000000", 300), 10.0, 20.0);
    failed.variants[1].outcome = Outcome::Failed {
        stage: FailureStage::Launch,
        message: "an illegal address".into(),
    };
    let stale = results(device("NVIDIA H100", "GPU-1d000000", 3350), 0.7, 1.0);
    let gpus = vec![
        column("nvidia-a100-00000000", None),
        column(
            "nvidia-h100-1d000000",
            Some(recorded_outcome(stale, &["copy_scalar"])),
        ),
        column("nvidia-l4-14000000", Some(recorded_outcome(failed, &[]))),
    ];
    let compared = lab_comparison(&lab, &gpus).expect("a comparison");
    assert_eq!(compared.columns[0].missing.as_deref(), Some("not recorded"));
    assert_eq!(compared.rows[1].cells[0].problem.as_deref(), Some("–"));
    assert_eq!(
        compared.columns[1].stale.as_deref(),
        Some("recorded before edits to `copy_scalar`")
    );
    assert!(compared.rows[1].cells[1].stale, "the edited kernel's row");
    assert!(
        !compared.rows[0].cells[1].stale,
        "memcpy is no kernel of the book"
    );
    let problem = compared.rows[1].cells[2]
        .problem
        .as_deref()
        .unwrap_or_default();
    assert!(problem.contains("an illegal address"), "{problem}");
}

#[test]
fn a_lab_no_gpu_has_is_left_out_and_nothing_says_so() {
    let lab = copy_lab();
    let other = column("nvidia-h200-882b8b4e", None);
    assert!(lab_comparison(&lab, std::slice::from_ref(&other)).is_none());
    let view = comparison_view(&[&lab], &[other]);
    assert!(view.labs.is_empty());
    assert_eq!(
        view.empty.as_deref(),
        Some("none of the GPUs has results for these labs")
    );
    assert!(comparison_view(&[&lab], &[]).empty.is_some());
}

#[test]
fn the_html_has_a_column_group_and_a_series_per_gpu() {
    let lab = copy_lab();
    let view = comparison_view(&[&lab], &two_gpus());
    assert_eq!(view.gpus[0].peak, "4000 GB/s");
    assert_eq!(view.gpus[1].uuids, "GPU-0a100000");
    let html = crate::templates::Templates::new()
        .render_comparison(&view)
        .expect("renders");
    assert!(!html.lines().any(|l| l.trim().is_empty()), "no blank line");
    for needle in [
        "<code>nvidia-h200-882b8b4e</code>",
        "<code>nvidia-a10-0a100000</code>",
        "colspan=\"3\"",
        "data-series=\"nvidia-h200-882b8b4e\"",
        "data-series=\"nvidia-a10-0a100000\"",
        "fill=\"#c2410c\"",
        "fill=\"currentColor\">NVIDIA A10 (nvidia-a10-0a100000)</text>",
        ", NVIDIA A10 (nvidia-a10-0a100000): 500 GB/s (samples",
    ] {
        assert!(html.contains(needle), "{needle} in {html}");
    }
}

#[test]
fn a_column_measured_in_this_build_takes_only_measured_labs() {
    let lab = copy_lab();
    let outcomes = BTreeMap::from([
        (
            "copy",
            LabOutcome::Measured {
                results: results(device("Fake GPU", "GPU-fake", 64), 1.0, 1.0),
                cached: false,
            },
        ),
        (
            "other",
            LabOutcome::Missing {
                why: "no GPU".into(),
            },
        ),
    ]);
    let live = live_column(outcomes.iter().map(|(l, o)| (*l, o))).expect("a column");
    assert!(live.live);
    assert_eq!(live.folder, "fake-gpu-fake");
    assert_eq!(live.labs.keys().collect::<Vec<_>>(), ["copy"]);
    let view = comparison_view(&[&lab], &[live]);
    assert_eq!(view.gpus[0].origin, "measured in this build");
    let missing = LabOutcome::Missing { why: "x".into() };
    assert!(live_column([("other", &missing)]).is_none());
}
