//! The engine against the fake device: verified-then-timed rows, wrong and failing rows that
//! fail alone, host copies, pipelines, counters, and a sticky fault that stops the run.

use super::*;
use crate::backend::fake::{FakeCompiler, FakeDevice};
use crate::plan::{Measurement, Target};
use kernelbook_core::results::FailureStage;
use kernelbook_core::spec::LabSpec;
use kernelbook_core::{KernelSource, SourceLocation};
use std::collections::BTreeMap;
use std::path::Path;

/// NumPy references as a machine without Python has them.
pub(crate) struct NoPython;

impl ExternalReferences for NoPython {
    fn submit(
        &mut self,
        _: &crate::references::python::ReferenceJob<'_>,
    ) -> Result<crate::references::python::JobId, crate::references::python::PythonReferenceError>
    {
        Err(
            crate::references::python::PythonReferenceError::Unavailable(
                "python3 (none here)".into(),
            ),
        )
    }
    fn wait(
        &mut self,
        _: crate::references::python::JobId,
        _: std::time::Instant,
    ) -> Result<Vec<u8>, crate::references::python::PythonReferenceError> {
        Err(
            crate::references::python::PythonReferenceError::Unavailable(
                "python3 (none here)".into(),
            ),
        )
    }
}

/// A transpose lab with a builtin, a good, a wrong and a broken variant.
pub(crate) const LAB: &str = r#"
name = "t"
title = "T"
bytes = "2 * n * n * 4"
ceiling = "memcpy"
[params]
n = 64
[[buffers]]
name = "in"
len = "n * n"
fill = "random"
[[buffers]]
name = "out"
len = "n * n"
fill = "poison"
[check]
reference = "transpose"
input = "in"
output = "out"
rows = "n"
cols = "n"
[[variants]]
name = "memcpy"
builtin = "memcpy"
args = ["out", "in"]
check = { reference = "copy", input = "in", output = "out" }
[[variants]]
name = "good"
kernel = "transpose"
grid = ["n / 32", "n / 32"]
block = [32, 8]
args = ["out", "in", "n"]
[[variants]]
name = "wrong"
kernel = "transpose_skip_last"
grid = ["n / 32", "n / 32"]
block = [32, 8]
args = ["out", "in", "n"]
[[variants]]
name = "broken"
kernel = "broken"
grid = [1]
block = [32]
args = ["out", "in", "n"]
"#;

pub(crate) fn kernel(name: &str, source: &str) -> (String, KernelSource) {
    (
        name.to_string(),
        KernelSource {
            name: name.to_string(),
            source: source.to_string(),
            origin: SourceLocation {
                file: "lab.md".into(),
                line: 1,
            },
            language: Default::default(),
        },
    )
}

fn plan(text: &str, kernels: &BTreeMap<String, KernelSource>) -> LabPlan {
    let lab = LabSpec::parse(text, Path::new("t.toml")).expect("lab");
    let target = Target::of(FakeDevice::new().info());
    crate::plan::compile(&lab, kernels, &target, &Measurement::default()).expect("a plan")
}

fn measure(device: &mut FakeDevice, plan: &LabPlan, seed: u64) -> EngineRun {
    let options = RunOptions {
        seed,
        ..RunOptions::default()
    };
    super::run(
        plan,
        device,
        &Ahead::new(std::sync::Arc::new(FakeCompiler)),
        &options,
        &mut NoPython,
        &mut Quiet,
    )
    .expect("measured")
}

fn transpose_kernels() -> BTreeMap<String, KernelSource> {
    BTreeMap::from([
        kernel("transpose", "ok"),
        kernel("transpose_skip_last", "ok"),
        kernel("broken", "int x;\n#error this does not compile\n"),
    ])
}

fn run_transpose(device: &mut FakeDevice) -> LabResults {
    measure(device, &plan(LAB, &transpose_kernels()), 42).results
}

#[test]
fn a_correct_kernel_is_verified_then_timed_with_a_flush_before_every_sample() {
    let mut device = FakeDevice::new();
    let results = run_transpose(&mut device);
    let good = results.variant("good").expect("good");
    let Outcome::Measured {
        summary,
        samples_ms,
        ..
    } = &good.outcome
    else {
        panic!("expected a measurement, got {:?}", good.outcome);
    };
    assert!(samples_ms.len() >= 10);
    assert!((summary.median_ms - 1.001).abs() < 0.002);
    assert_eq!(device.flushes, device.timed, "one flush per timed sample");
    assert_eq!(good.bytes_moved, 2 * 64 * 64 * 4);
    let resources = good.resources.expect("resources");
    assert_eq!(
        (resources.spill_store_bytes, resources.blocks_per_sm),
        (Some(4), 8)
    );
    assert_eq!(
        resources.occupancy, 1.0,
        "8 blocks of 8 warps fill 64 warp slots"
    );
    assert_eq!(results.provenance.input_seed, 42);
}

#[test]
fn a_builtin_with_its_own_check_is_measured() {
    let results = run_transpose(&mut FakeDevice::new());
    assert!(matches!(
        results.variant("memcpy").expect("memcpy").outcome,
        Outcome::Measured { .. }
    ));
}

#[test]
fn a_wrong_kernel_reports_the_first_mismatch_and_no_time() {
    let results = run_transpose(&mut FakeDevice::new());
    match &results.variant("wrong").expect("wrong").outcome {
        Outcome::WrongResult { mismatch } => {
            assert_eq!(mismatch.index, 64 * 64 - 1);
            assert_eq!(mismatch.actual, "NaN", "the poison shows through");
            assert_eq!(mismatch.count, 1);
        }
        other => panic!("expected a wrong result, got {other:?}"),
    }
}

#[test]
fn a_compile_error_fails_only_its_own_variant() {
    let results = run_transpose(&mut FakeDevice::new());
    match &results.variant("broken").expect("broken").outcome {
        Outcome::Failed { stage, message } => {
            assert_eq!(*stage, FailureStage::Compile);
            assert_eq!(message, "lab.md:2: error: #error this does not compile");
        }
        other => panic!("expected a compile failure, got {other:?}"),
    }
    assert_eq!(results.variants.len(), 4);
}

#[test]
fn inputs_are_fresh_for_each_seed() {
    let mut a = FakeDevice::new();
    let mut b = FakeDevice::new();
    let plan = plan(LAB, &transpose_kernels());
    measure(&mut a, &plan, 42);
    measure(&mut b, &plan, 43);
    assert_ne!(
        a.buffers[0], b.buffers[0],
        "different seeds, different inputs"
    );
    let mut c = FakeDevice::new();
    measure(&mut c, &plan, 42);
    assert_eq!(a.buffers[0], c.buffers[0], "the same seed, the same input");
}

#[test]
fn only_the_selected_variants_run_in_the_plans_order() {
    let plan = plan(LAB, &transpose_kernels());
    let options = RunOptions {
        seed: 1,
        only: Some(vec!["wrong".into(), "memcpy".into()]),
        ..RunOptions::default()
    };
    let run = super::run(
        &plan,
        &mut FakeDevice::new(),
        &Ahead::new(std::sync::Arc::new(FakeCompiler)),
        &options,
        &mut NoPython,
        &mut Quiet,
    )
    .expect("measured");
    let names: Vec<&str> = run
        .results
        .variants
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(names, ["memcpy", "wrong"]);
}

const FAULTS: &str = r#"
name = "f"
title = "F"
bytes = "2 * n * 4"
[params]
n = 256
[[buffers]]
name = "src"
len = "n"
fill = "random"
[[buffers]]
name = "dst"
len = "n"
fill = "poison"
[check]
reference = "copy"
input = "src"
output = "dst"
[[variants]]
name = "refused"
kernel = "copy_invalid"
grid = [1]
block = [256]
args = ["dst", "src"]
[[variants]]
name = "fine"
kernel = "copy_fine"
grid = [1]
block = [256]
args = ["dst", "src"]
[[variants]]
name = "faults"
kernel = "copy_fault"
grid = [1]
block = [256]
args = ["dst", "src"]
[[variants]]
name = "after"
kernel = "copy_fine"
grid = [1]
block = [256]
args = ["dst", "src"]
"#;

#[test]
fn a_sticky_fault_stops_the_run_and_a_refused_launch_does_not() {
    let kernels = BTreeMap::from([
        kernel("copy_invalid", "ok"),
        kernel("copy_fine", "ok"),
        kernel("copy_fault", "ok"),
    ]);
    let run = measure(&mut FakeDevice::new(), &plan(FAULTS, &kernels), 1);
    assert_eq!(run.faulted.as_deref(), Some("faults"));
    let names: Vec<&str> = run
        .results
        .variants
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["refused", "fine", "faults"],
        "`after` is left for a fresh process"
    );
    assert!(matches!(
        run.results.variants[0].outcome,
        Outcome::Failed { .. }
    ));
    assert!(matches!(
        run.results.variants[1].outcome,
        Outcome::Measured { .. }
    ));
}

/// A copy lab sized for the memory and shared-memory limits, not the shared fixture
/// (labs/fixtures/copy.toml): `n` and the kernel are the test's, one block with dynamic shared
/// memory.
fn copy_lab(n: i64, kernel: &str) -> String {
    format!(
        r#"
name = "big"
title = "Big"
bytes = "2 * n * 4"
[params]
n = {n}
[[buffers]]
name = "src"
len = "n"
fill = "random"
[[buffers]]
name = "dst"
len = "n"
fill = "poison"
[check]
reference = "copy"
input = "src"
output = "dst"
[[variants]]
name = "copy"
kernel = "{kernel}"
grid = [1]
block = [256]
shared_bytes = 24576
args = ["dst", "src", "n"]
"#
    )
}

#[test]
fn a_lab_larger_than_free_memory_names_the_lab_and_the_limit() {
    // 2 buffers of 2^28 floats: 2 GiB on a fake GPU with 1 GiB.
    let kernels = BTreeMap::from([kernel("copy", "ok")]);
    let plan = plan(&copy_lab(1 << 28, "copy"), &kernels);
    let options = RunOptions::default();
    let err = super::run(
        &plan,
        &mut FakeDevice::new(),
        &Ahead::new(std::sync::Arc::new(FakeCompiler)),
        &options,
        &mut NoPython,
        &mut Quiet,
    )
    .expect_err("too big");
    let message = err.to_string();
    assert!(
        message.starts_with("lab `big`: its buffers need 2.00 GiB"),
        "{message}"
    );
    assert!(
        message.contains("Fake GPU has 1.00 GiB free of 1.00 GiB"),
        "{message}"
    );
}

#[test]
fn a_lab_whose_check_needs_more_host_memory_than_is_available_says_so_first() {
    let kernels = BTreeMap::from([kernel("copy", "ok")]);
    // 2^20 floats: a 4 MiB input and a 4 MiB output, checked: 12 MiB on the host.
    let plan = plan(&copy_lab(1 << 20, "copy"), &kernels);
    assert_eq!(buffers::host_bytes_needed(&plan), 12 << 20);
    assert!(buffers::check_host_memory(&plan, Some(12 << 20)).is_ok());
    assert!(
        buffers::check_host_memory(&plan, None).is_ok(),
        "unknown: go on"
    );
    let message = buffers::check_host_memory(&plan, Some(8 << 20))
        .expect_err("short of host memory")
        .to_string();
    assert!(
        message.starts_with("lab `big`: its inputs and checks need 0.01 GiB of host memory"),
        "{message}"
    );
    assert!(message.contains("--set"), "{message}");
}

#[test]
fn more_shared_memory_than_a_block_may_have_is_refused_with_the_limit() {
    let kernels = BTreeMap::from([kernel("copy_shared", "ok")]);
    let plan = plan(&copy_lab(1024, "copy_shared"), &kernels);
    let results = measure(&mut FakeDevice::new(), &plan, 1).results;
    match &results.variants[0].outcome {
        Outcome::Failed {
            stage: FailureStage::Launch,
            message,
        } => assert_eq!(
            message,
            "the kernel needs 57344 bytes of shared memory per block (32768 static + 24576 dynamic); \
             Fake GPU allows at most 49152 per block"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A lab of copies that exercises the multi-launch, host-copy, counter and no-flush paths.
const PIPELINE: &str = r#"
name = "p"
title = "P"
bytes = "2 * n * 4"
flush_l2 = false
[params]
n = 256
[counter]
buffer = "count"
per = "4"
unit = "ticks per step"
[[buffers]]
name = "in"
len = "n"
fill = "random"
[[buffers]]
name = "mid"
len = "n"
fill = "poison"
[[buffers]]
name = "out"
len = "n"
fill = "poison"
[[buffers]]
name = "count"
elem = "u64"
len = "1"
fill = "random"
[check]
reference = "copy"
input = "in"
output = "out"
[[variants]]
name = "two_stages"
kernel = "copy_first"
grid = [1]
block = [256]
args = ["mid", "in"]
then = [{ kernel = "copy_second", grid = [1], block = [256], args = ["out", "mid"] }]
[[variants]]
name = "first_stage_only"
kernel = "copy_first"
grid = [1]
block = [256]
args = ["mid", "in"]
[[variants]]
name = "h2d"
builtin = "host_to_device_pinned"
args = ["out", "in"]
[[variants]]
name = "d2h"
builtin = "device_to_host_pageable"
args = ["out", "in"]
"#;

fn pipeline_kernels() -> BTreeMap<String, KernelSource> {
    BTreeMap::from([kernel("copy_first", "ok"), kernel("copy_second", "ok")])
}

fn run_pipeline(device: &mut FakeDevice) -> LabResults {
    measure(device, &plan(PIPELINE, &pipeline_kernels()), 7).results
}

#[test]
fn later_stages_run_with_the_variant_and_without_them_the_check_fails() {
    let results = run_pipeline(&mut FakeDevice::new());
    assert!(matches!(
        results.variant("two_stages").expect("variant").outcome,
        Outcome::Measured { .. }
    ));
    // Only `then` writes `out`: without it the poisoned output cannot pass.
    assert!(matches!(
        results
            .variant("first_stage_only")
            .expect("variant")
            .outcome,
        Outcome::WrongResult { .. }
    ));
    let two = results.variant("two_stages").expect("variant");
    assert_eq!(
        two.other_kernels.keys().collect::<Vec<_>>(),
        ["copy_second"],
        "the later stage's fingerprint is kept for staleness checks"
    );
}

#[test]
fn host_copies_are_checked_through_the_staging_buffer() {
    let results = run_pipeline(&mut FakeDevice::new());
    for name in ["h2d", "d2h"] {
        match &results.variant(name).expect("variant").outcome {
            Outcome::Measured { .. } => {}
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn a_lab_that_keeps_its_caches_is_never_flushed_and_reads_its_counter_per_sample() {
    let mut device = FakeDevice::new();
    let results = run_pipeline(&mut device);
    assert_eq!(device.flushes, 0, "flush_l2 = false");
    let raw = u64::from_le_bytes(device.buffers[3][..8].try_into().expect("8 bytes"));
    let two = results.variant("two_stages").expect("variant");
    let counter = two.counter.as_ref().expect("counter");
    let Outcome::Measured { samples_ms, .. } = &two.outcome else {
        panic!("not measured");
    };
    assert_eq!(counter.values.len(), samples_ms.len());
    assert!(counter.values.iter().all(|v| *v == raw as f64 / 4.0));
    assert_eq!(counter.unit, "ticks per step");
}

#[test]
fn each_kernel_and_option_set_is_compiled_and_loaded_once_per_lab() {
    let mut device = FakeDevice::new();
    run_pipeline(&mut device);
    let mut loaded = device.kernels.clone();
    loaded.sort_unstable();
    assert_eq!(loaded, ["copy_first", "copy_second"]);
}

/// The transpose lab with a row through tensor maps that needs a Hopper-class GPU.
fn tensor_map_lab() -> String {
    let maps = r#"
[[tensor_maps]]
name = "in_tiles"
buffer = "in"
dims = ["n", "n"]
box = [32, 32]
swizzle = "128B"
[[tensor_maps]]
name = "out_tiles"
buffer = "out"
dims = ["n", "n"]
box = [32, 32]
swizzle = "128B"
[check]"#;
    let tma = r#"
[[variants]]
name = "tma"
kernel = "transpose_tma"
requires = "sm_90"
grid = ["n / 32", "n / 32"]
block = [64]
args = ["out_tiles", "in_tiles", "n"]
"#;
    format!("{}{tma}", LAB.replacen("[check]", maps, 1))
}

fn tensor_map_kernels() -> BTreeMap<String, KernelSource> {
    let mut kernels = transpose_kernels();
    kernels.extend([kernel("transpose_tma", "ok")]);
    kernels
}

#[test]
fn a_variant_through_tensor_maps_runs_where_the_architecture_allows() {
    let mut device = FakeDevice::new();
    let plan = plan(&tensor_map_lab(), &tensor_map_kernels());
    assert_eq!(plan.tensor_maps.len(), 2);
    assert_eq!(plan.tensor_maps[0].strides(), vec![64 * 4]);
    let results = measure(&mut device, &plan, 42).results;
    let tma = results.variant("tma").expect("the row");
    assert!(
        matches!(tma.outcome, Outcome::Measured { .. }),
        "{:?}",
        tma.outcome
    );
    // The fake transposes through the buffers the two maps view, in its own order.
    assert_eq!(device.tensor_maps.len(), 2);
}

#[test]
fn an_older_gpu_says_what_the_variant_needs_and_compiles_nothing_for_it() {
    let mut device = FakeDevice::new();
    device.info.arch = "sm_80".into();
    device.info.compute_capability = (8, 0);
    let lab = LabSpec::parse(&tensor_map_lab(), Path::new("t.toml")).expect("lab");
    let target = Target::of(device.info());
    let kernels = tensor_map_kernels();
    let plan =
        crate::plan::compile(&lab, &kernels, &target, &Measurement::default()).expect("a plan");
    let results = measure(&mut device, &plan, 42).results;
    let tma = results.variant("tma").expect("the row");
    let Outcome::Unavailable { reason } = &tma.outcome else {
        panic!("{:?}", tma.outcome);
    };
    assert_eq!(
        reason,
        "needs a Hopper-class GPU (compute capability 9.0); this GPU is compute capability 8.0"
    );
    assert!(
        !device.kernels.iter().any(|k| k == "transpose_tma"),
        "loaded {:?}",
        device.kernels
    );
    assert!(device.tensor_maps.is_empty());
    let good = results.variant("good").expect("the row");
    assert!(matches!(good.outcome, Outcome::Measured { .. }));
}

/// `c = a · b` for 8 × 8 floats by a stand-in kernel written here, element by element.
fn host_matmul(buffers: &mut [Vec<u8>], args: &[crate::backend::KernelArg]) -> Result<(), String> {
    let index = |i: usize| match args.get(i) {
        Some(crate::backend::KernelArg::Buffer(id)) => Ok(id.0),
        _ => Err(format!("argument {i} is not a buffer")),
    };
    let (c, a, b) = (index(0)?, index(1)?, index(2)?);
    let float = |buffer: &[u8], i: usize| {
        f32::from_le_bytes(buffer[4 * i..4 * i + 4].try_into().expect("four bytes"))
    };
    for row in 0..8 {
        for col in 0..8 {
            let mut sum = 0.0f32;
            for i in 0..8 {
                sum += float(&buffers[a], row * 8 + i) * float(&buffers[b], i * 8 + col);
            }
            buffers[c][4 * (row * 8 + col)..][..4].copy_from_slice(&sum.to_le_bytes());
        }
    }
    Ok(())
}

const SGEMM_LAB: &str = r#"
name = "mm"
title = "MM"
bytes = "3 * n * n * 4"
[params]
n = 8
[[buffers]]
name = "a"
len = "n * n"
fill = "random"
[[buffers]]
name = "b"
len = "n * n"
fill = "random"
[[buffers]]
name = "c"
len = "n * n"
fill = "poison"
[check]
against = "host"
output = "c"
compare = { rtol = 1e-5, atol = 1e-5 }
[[variants]]
name = "host"
kernel = "matmul"
grid = [1]
block = [64]
args = ["c", "a", "b"]
[[variants]]
name = "blas"
builtin = "library_sgemm"
args = ["c", "a", "b", "n", "n", "n"]
"#;

#[test]
fn the_library_product_is_checked_like_a_kernel() {
    let mut device = FakeDevice::new();
    device.define("matmul", host_matmul);
    let plan = plan(SGEMM_LAB, &BTreeMap::from([kernel("matmul", "ok")]));
    let results = measure(&mut device, &plan, 42).results;
    let blas = results.variant("blas").expect("the row");
    assert!(
        matches!(blas.outcome, Outcome::Measured { .. }),
        "{:?}",
        blas.outcome
    );
    assert_eq!(blas.implementation.as_deref(), Some("fake BLAS sgemm"));
    let wrong_size = SGEMM_LAB.replace(r#""n", "n", "n"]"#, r#""n", "n", "2 * n"]"#);
    let lab = LabSpec::parse(&wrong_size, Path::new("mm.toml")).expect("lab");
    let target = Target::of(FakeDevice::new().info());
    let kernels = BTreeMap::from([kernel("matmul", "ok")]);
    let err = crate::plan::compile(&lab, &kernels, &target, &Measurement::default())
        .expect_err("a is 8 × 8, not 8 × 16");
    assert!(err.message.contains("must hold 128 f32 elements"), "{err}");
}

/// The BF16 peer multiplies the lab's f32 inputs rounded to BF16: within a BF16 tolerance of the
/// fp32 product it passes, and within the fp32 one it fails (the rounding is really there).
#[test]
fn the_bf16_product_rounds_its_inputs_and_is_checked_within_its_own_tolerance() {
    let bf16 = |compare: &str| {
        SGEMM_LAB.replace(
            "[[variants]]\nname = \"blas\"\nbuiltin = \"library_sgemm\"",
            &format!(
                "[[variants]]\nname = \"blas\"\nbuiltin = \"library_gemm_bf16\"\n\
                 check = {{ against = \"host\", output = \"c\", compare = {compare} }}"
            ),
        )
    };
    let outcome = |lab: &str| {
        let mut device = FakeDevice::new();
        device.define("matmul", host_matmul);
        let plan = plan(lab, &BTreeMap::from([kernel("matmul", "ok")]));
        let results = measure(&mut device, &plan, 42).results;
        let blas = results.variant("blas").expect("the row").clone();
        assert_eq!(blas.implementation.as_deref(), Some("fake BLAS gemm bf16"));
        blas.outcome
    };
    let loose = outcome(&bf16("{ rtol = 1e-2, atol = 0.05 }"));
    assert!(matches!(loose, Outcome::Measured { .. }), "{loose:?}");
    let tight = outcome(&bf16("{ rtol = 1e-7, atol = 1e-7 }"));
    assert!(matches!(tight, Outcome::WrongResult { .. }), "{tight:?}");
}

/// A lab prepared ahead (inputs drawn, references computed on the preparing thread) measures
/// exactly as one prepared when it comes up, and is taken once: a second run prepares anew.
#[test]
fn a_lab_prepared_ahead_measures_as_one_prepared_on_the_spot() {
    let kernels: BTreeMap<String, KernelSource> = ["transpose", "transpose_skip_last", "broken"]
        .into_iter()
        .map(|name| kernel(name, "ok"))
        .collect();
    let lab = plan(LAB, &kernels);
    let ahead = Ahead::new(std::sync::Arc::new(FakeCompiler));
    let external: SharedReferences = std::sync::Arc::new(std::sync::Mutex::new(NoPython));
    ahead.compile(std::slice::from_ref(&lab));
    ahead.prepare(vec![(lab.clone(), 5)], external);
    let options = RunOptions {
        seed: 5,
        ..RunOptions::default()
    };
    let run = |ahead: &Ahead| {
        super::run(
            &lab,
            &mut FakeDevice::new(),
            ahead,
            &options,
            &mut NoPython,
            &mut Quiet,
        )
        .expect("measured")
    };
    let ahead_run = run(&ahead);
    assert!(ahead.take(&lab, 5).is_none(), "taken by the run");
    let on_the_spot = run(&Ahead::new(std::sync::Arc::new(FakeCompiler)));
    let outcomes = |r: &EngineRun| -> Vec<String> {
        r.results
            .variants
            .iter()
            .map(|v| format!("{}: {:?}", v.name, std::mem::discriminant(&v.outcome)))
            .collect()
    };
    assert_eq!(outcomes(&ahead_run), outcomes(&on_the_spot));
    assert_eq!(ahead_run.results.variants.len(), 4);
}

/// A run that only launches (for a profiler) checks and times nothing, and says which kernels
/// each variant launched, in order.
#[test]
fn a_launch_once_run_reports_each_variants_launches() {
    let kernels: BTreeMap<String, KernelSource> = ["transpose", "transpose_skip_last", "broken"]
        .into_iter()
        .map(|name| kernel(name, "ok"))
        .collect();
    let lab = plan(LAB, &kernels);
    let mut device = FakeDevice::new();
    let options = RunOptions {
        seed: 1,
        only: Some(vec!["good".into(), "wrong".into()]),
        purpose: Purpose::LaunchOnce,
    };
    let run = super::run(
        &lab,
        &mut device,
        &Ahead::new(std::sync::Arc::new(FakeCompiler)),
        &options,
        &mut NoPython,
        &mut Quiet,
    )
    .expect("ran");
    assert!(run.results.variants.is_empty());
    assert_eq!(device.timed, 0, "nothing timed");
    let launched: Vec<(&str, Vec<&str>)> = run
        .launches
        .iter()
        .map(|l| {
            (
                l.variant.as_str(),
                l.functions.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        launched,
        [
            ("good", vec!["transpose"]),
            ("wrong", vec!["transpose_skip_last"])
        ]
    );
}

use crate::backend::KernelArg;

/// Pipelined rows: 1024 floats in four chunks, negated chunk by chunk (`chunk` picks the
/// chunk's first element), on one stream and on two; and one whose kernel writes nothing.
const PIPELINED: &str = r#"
name = "pipe"
title = "Pipe"
bytes = "2 * n * 4"
[params]
n = 1024
[[buffers]]
name = "in"
len = "n"
fill = "random"
[[buffers]]
name = "out"
len = "n"
fill = "poison"
[check]
reference = "scale"
input = "in"
output = "out"
factor = "-1"
[[variants]]
name = "one_stream"
kernel = "negate_chunk"
pipeline = { chunks = 4, streams = 1 }
grid = ["n / chunks / 256"]
block = [256]
args = ["out", "in", "chunk * (n / chunks):i64", "n / chunks"]
[[variants]]
name = "two_streams"
kernel = "negate_chunk"
pipeline = { chunks = 4, streams = 2 }
grid = ["n / chunks / 256"]
block = [256]
args = ["out", "in", "chunk * (n / chunks):i64", "n / chunks"]
[[variants]]
name = "no_kernel"
kernel = "idle_chunk"
pipeline = { chunks = 4, streams = 2 }
grid = ["n / chunks / 256"]
block = [256]
args = ["out", "in", "chunk * (n / chunks):i64", "n / chunks"]
"#;

/// `out[first .. first + count] = -in[...]` for the arguments `(out, in, first, count)`.
fn negate_chunk(buffers: &mut [Vec<u8>], args: &[KernelArg]) -> Result<(), String> {
    let [
        KernelArg::Buffer(out),
        KernelArg::Buffer(input),
        KernelArg::I64(first),
        KernelArg::I32(count),
    ] = args
    else {
        return Err(format!("unexpected arguments {args:?}"));
    };
    let range = *first as usize * 4..(*first as usize + *count as usize) * 4;
    let negated: Vec<u8> = buffers[input.0][range.clone()]
        .chunks_exact(4)
        .flat_map(|b| (-f32::from_le_bytes([b[0], b[1], b[2], b[3]])).to_le_bytes())
        .collect();
    buffers[out.0][range].copy_from_slice(&negated);
    Ok(())
}

fn pipelined_results() -> LabResults {
    let kernels = BTreeMap::from([kernel("negate_chunk", "ok"), kernel("idle_chunk", "ok")]);
    let mut device = FakeDevice::new();
    device.define("negate_chunk", negate_chunk);
    device.define("idle_chunk", |_, _| Ok(()));
    measure(&mut device, &plan(PIPELINED, &kernels), 3).results
}

#[test]
fn a_pipelined_row_is_checked_through_host_memory_and_keeps_its_timeline() {
    use kernelbook_core::results::timeline::Part;
    let results = pipelined_results();
    let one = results.variant("one_stream").expect("variant");
    let two = results.variant("two_streams").expect("variant");
    for row in [one, two] {
        assert!(
            matches!(row.outcome, Outcome::Measured { .. }),
            "{}: {:?}",
            row.name,
            row.outcome
        );
    }
    let serial = one.timeline.as_ref().expect("a timeline");
    let overlapped = two.timeline.as_ref().expect("a timeline");
    assert_eq!((serial.streams, serial.chunks), (1, 4));
    assert_eq!(overlapped.spans.len(), 12);
    // The fake's parts take 1 ms each: twelve back to back on one stream.
    assert_eq!(serial.total_ms, 12.0);
    assert_eq!(serial.overlap(), Some(1.0));
    assert_eq!(overlapped.serial_ms(), 12.0);
    assert!(overlapped.total_ms < serial.total_ms);
    assert!(overlapped.overlap().expect("overlap") > 1.0);
    // Chunk 1 runs on the second stream, its copy in beside chunk 0's kernel.
    let span = |chunk, part| {
        overlapped
            .spans
            .iter()
            .find(|s| s.chunk == chunk && s.part == part)
            .expect("span")
    };
    assert_eq!(span(1, Part::HostToDevice).stream, 1);
    assert_eq!(
        span(1, Part::HostToDevice).start_ms,
        span(0, Part::Kernel).start_ms
    );
    // The median sample's time is the timeline's.
    let Outcome::Measured { summary, .. } = &two.outcome else {
        unreachable!()
    };
    assert_eq!(summary.median_ms, overlapped.total_ms);
    assert!(results.validate().is_ok(), "{:?}", results.validate());
}

#[test]
fn a_pipelined_row_whose_kernel_writes_nothing_fails_its_check() {
    let results = pipelined_results();
    let row = results.variant("no_kernel").expect("variant");
    assert!(
        matches!(row.outcome, Outcome::WrongResult { .. }),
        "{:?}",
        row.outcome
    );
    assert_eq!(row.timeline, None);
}

/// The transpose lab with L2 controls on its good variant: a fetch granularity, a set-aside
/// larger than the fake GPU allows and a window over the input.
fn l2_lab() -> String {
    LAB.replace(
        "kernel = \"transpose\"\n",
        "kernel = \"transpose\"\nl2 = { fetch_granularity = 32, persisting_bytes = \"16777216\", \
         window = { buffer = \"in\", hit_ratio = 0.5 } }\n",
    )
}

#[test]
fn a_variants_l2_controls_are_set_around_it_read_back_and_undone() {
    let mut device = FakeDevice::new();
    let results = measure(&mut device, &plan(&l2_lab(), &transpose_kernels()), 42).results;
    let good = results.variant("good").expect("good");
    assert!(
        matches!(good.outcome, Outcome::Measured { .. }),
        "{:?}",
        good.outcome
    );
    let l2 = good.l2.as_ref().expect("the row keeps its L2 controls");
    assert_eq!(
        l2.before.fetch_granularity_bytes,
        Some(64),
        "the driver's before"
    );
    assert_eq!(l2.requested.fetch_granularity_bytes, Some(32));
    assert_eq!(l2.reported.fetch_granularity_bytes, Some(32));
    assert_eq!(l2.requested.persisting_bytes, Some(1 << 24));
    assert_eq!(
        l2.reported.persisting_bytes,
        Some(512 << 10),
        "clamped by the device, and the results say so"
    );
    let window = l2.reported.window.as_ref().expect("window");
    assert_eq!(
        (window.buffer.as_str(), window.bytes, window.hit_ratio),
        ("in", 64 * 64 * 4, 0.5)
    );
    assert_eq!(l2.max_persisting_bytes, Some(512 << 10));
    // Read, set, undo: only around the one variant that asks.
    assert_eq!(device.l2_requests.len(), 3, "{:?}", device.l2_requests);
    assert!(device.l2_requests[1].reset_persisting_lines);
    assert_eq!(device.l2, crate::backend::fake::FAKE_L2_DEFAULTS, "undone");
    assert!(results.variant("memcpy").expect("memcpy").l2.is_none());
}

#[test]
fn a_backend_without_l2_controls_marks_the_row_unavailable_and_runs_the_others() {
    let mut device = FakeDevice::new();
    device.no_l2_controls = true;
    let results = measure(&mut device, &plan(&l2_lab(), &transpose_kernels()), 42).results;
    let good = results.variant("good").expect("good");
    let Outcome::Unavailable { reason } = &good.outcome else {
        panic!("expected unavailable, got {:?}", good.outcome);
    };
    assert!(reason.contains("sets no L2 controls"), "{reason}");
    assert!(matches!(
        results.variant("memcpy").expect("memcpy").outcome,
        Outcome::Measured { .. }
    ));
}
