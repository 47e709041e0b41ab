//! The plan: what changes the cache key and what does not, compile errors at the lab file's
//! line, and a plan's round trip through JSON.

use super::*;
use kernelbook_core::SourceLocation;
use kernelbook_core::spec::LabSpec;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

/// The shared copy lab with only its kernel variant: without `memcpy` (and so without the
/// ceiling that names it).
static LAB: LazyLock<String> = LazyLock::new(|| {
    let copy = include_str!("../../../labs/fixtures/copy.toml");
    let memcpy =
        "[[variants]]\nname = \"memcpy\"\nbuiltin = \"memcpy\"\nargs = [\"dst\", \"src\"]\n\n";
    let ceiling = "ceiling = \"memcpy\"\n";
    assert!(copy.contains(memcpy) && copy.contains(ceiling), "{copy}");
    copy.replace(memcpy, "").replace(ceiling, "")
});

/// An H200 as the CUDA backend describes it.
pub(crate) fn h200() -> DeviceInfo {
    DeviceInfo {
        backend: kernelbook_core::results::DeviceApi::Cuda,
        name: "NVIDIA H200".into(),
        uuid: "GPU-1".into(),
        arch: "sm_90".into(),
        compute_capability: (9, 0),
        sm_count: 132,
        l2_bytes: 62914560,
        memory_bytes: 1 << 37,
        memory_clock_khz: 3_201_000,
        bus_width_bits: 6016,
        sm_clock_khz: 1_980_000,
        max_threads_per_sm: 2048,
        max_shared_bytes_per_block: 232448,
        warp_size: 32,
        registers_per_sm: Some(65_536),
        shared_bytes_per_sm: Some(233_472),
    }
}

fn toolchain() -> Toolchain {
    Toolchain {
        device: h200(),
        driver_version: "13.0".into(),
        compiler_version: "NVRTC 13.0".into(),
    }
}

fn kernels_at(source: &str, line: usize) -> BTreeMap<String, KernelSource> {
    BTreeMap::from([(
        "copy_scalar".to_string(),
        KernelSource {
            name: "copy_scalar".into(),
            source: source.into(),
            origin: SourceLocation {
                file: "a.md".into(),
                line,
            },
            language: Default::default(),
        },
    )])
}

fn plan_of(text: &str, kernels: &BTreeMap<String, KernelSource>) -> Result<LabPlan, LabError> {
    let lab = LabSpec::parse(text, Path::new("labs/copy.toml"))?;
    compile(&lab, kernels, &Target::of(&h200()), &Measurement::default())
}

use kernelbook_core::spec::LabError;

fn key(text: &str, source: &str, toolchain: &Toolchain) -> String {
    plan_of(text, &kernels_at(source, 3))
        .expect("a plan")
        .key(toolchain)
}

#[test]
fn the_key_is_stable_and_ignores_presentation_and_where_the_kernel_is_written() {
    let base = key(&LAB, "a", &toolchain());
    assert_eq!(base, key(&LAB, "a", &toolchain()));
    let reworded = LAB
        .replace("title = \"Copy\"", "title = \"A copy\"")
        .replace("label = \"scalar copy\"", "label = \"the scalar copy\"")
        .replace("access = \"coalesced\"", "access = \"fully coalesced\"");
    assert_eq!(base, key(&reworded, "a", &toolchain()), "a label does not");
    let moved = plan_of(&LAB, &kernels_at("a", 40)).expect("plan");
    assert_eq!(
        base,
        moved.key(&toolchain()),
        "moving the block down does not"
    );
}

#[test]
fn the_key_changes_with_everything_that_changes_a_measurement() {
    let base = key(&LAB, "a", &toolchain());
    assert_ne!(
        base,
        key(&LAB, "a // edited", &toolchain()),
        "kernel source"
    );
    let n = LAB.replace("n = 1024", "n = 2048");
    assert_ne!(base, key(&n, "a", &toolchain()), "params");
    let block = LAB.replace("block = [256]", "block = [128]");
    assert_ne!(base, key(&block, "a", &toolchain()), "launch shape");
    let grid = LAB.replace("grid = [\"n / 256\"]", "grid = [\"n / 128\"]");
    assert_ne!(base, key(&grid, "a", &toolchain()), "a grid does");
    let flags = LAB.replace("bytes = ", "compile_flags = [\"-DX=1\"]\nbytes = ");
    assert_ne!(base, key(&flags, "a", &toolchain()), "compile flags");
    let with_timing = |timing: &str| {
        let text = LAB.replace("[params]", &format!("[timing]\n{timing}\n\n[params]"));
        key(&text, "a", &toolchain())
    };
    assert_ne!(
        base,
        with_timing("max_wall_s = 3"),
        "the lab's stopping rule"
    );
    assert_eq!(
        base,
        with_timing("max_wall_s = 10"),
        "a [timing] table that repeats the defaults changes nothing"
    );
    let mut other = toolchain();
    other.device.uuid = "GPU-2".into();
    assert_ne!(base, key(&LAB, "a", &other), "device");
    let mut other = toolchain();
    other.driver_version = "13.1".into();
    assert_ne!(base, key(&LAB, "a", &other), "driver");
    let mut other = toolchain();
    other.compiler_version = "NVRTC 13.1".into();
    assert_ne!(base, key(&LAB, "a", &other), "compiler");
}

#[test]
fn kernels_the_lab_does_not_run_do_not_change_its_key() {
    let mut more = kernels_at("a", 3);
    let base = plan_of(&LAB, &more).expect("plan").key(&toolchain());
    more.insert("unrelated".into(), more["copy_scalar"].clone());
    assert_eq!(base, plan_of(&LAB, &more).expect("plan").key(&toolchain()));
}

#[test]
fn a_plan_round_trips_through_json() {
    let plan = plan_of(&LAB, &kernels_at("a", 3)).expect("plan");
    let json = serde_json::to_string(&plan).expect("serialise");
    let back: LabPlan = serde_json::from_str(&json).expect("deserialise");
    assert_eq!(back, plan);
    assert_eq!(back.key(&toolchain()), plan.key(&toolchain()));
}

#[test]
fn every_number_is_evaluated_in_the_plan() {
    let plan = plan_of(&LAB, &kernels_at("a", 3)).expect("plan");
    assert_eq!(plan.buffers[0].bytes, 4096);
    let variant = &plan.variants[0];
    assert_eq!(variant.bytes_moved, 8192);
    let OpPlan::Kernel(op) = &variant.op else {
        panic!("a kernel variant");
    };
    assert_eq!(op.main.grid, [4, 1, 1]);
    assert_eq!(op.main.block, [256, 1, 1]);
    assert_eq!(
        op.main.args,
        [ArgPlan::Buffer(1), ArgPlan::Buffer(0), ArgPlan::I32(1024)]
    );
    assert!(matches!(
        &plan.checks[variant.check].reference,
        ReferencePlan::Builtin { name, .. } if name == "copy"
    ));
    assert_eq!(plan.timeout_s, 120);
}

fn compile_error(text: &str) -> LabError {
    plan_of(text, &kernels_at("a", 3)).expect_err("a compile error")
}

#[test]
fn an_expression_that_overflows_names_the_file_and_line() {
    let err = compile_error(&LAB.replace(
        "len = \"n\"\nfill = \"random\"",
        "len = \"n * 9223372036854775807\"\nfill = \"random\"",
    ));
    assert_eq!(err.file, Path::new("labs/copy.toml"));
    assert_eq!(err.line, 11, "{err}");
    assert!(err.message.contains("overflow"), "{err}");
}

#[test]
fn a_division_by_zero_names_its_line() {
    let err = compile_error(&LAB.replace("grid = [\"n / 256\"]", "grid = [\"n / (n - n)\"]"));
    assert!(err.message.contains("division by zero"), "{err}");
    assert_eq!(err.line, 25, "at the variant: {err}");
}

#[test]
fn a_grid_over_the_devices_limit_is_refused_at_the_variant() {
    let text = LAB.replace("block = [256]", "block = [256, 1, 65]");
    let err = compile_error(&text);
    assert!(err.message.contains("the device allows 1 to 64"), "{err}");
    assert_eq!(err.line, 25, "{err}");
    let err = compile_error(&LAB.replace("block = [256]", "block = [2048]"));
    assert!(err.message.contains("1024"), "{err}");
}

#[test]
fn an_argument_of_the_wrong_type_is_refused() {
    let err =
        compile_error(&LAB.replace("\"dst\", \"src\", \"n\"", "\"dst\", \"src\", \"-n:u32\""));
    assert!(err.message.contains("out of range"), "{err}");
    assert_eq!(err.line, 29, "{err}");
}

#[test]
fn a_time_limit_out_of_range_is_refused() {
    let text = LAB.replace("bytes = ", "timeout_s = 9223372036854775807\nbytes = ");
    let err = compile_error(&text);
    assert!(err.message.contains("between 1 and 86400"), "{err}");
    let err = compile_error(&LAB.replace("bytes = ", "timeout_s = 0\nbytes = "));
    assert_eq!(err.line, 4, "{err}");
}

#[test]
fn a_learner_kernel_is_the_starters_launch_with_another_build() {
    let plan = plan_of(&LAB, &kernels_at("a", 3)).expect("plan");
    let mut learner = kernels_at("b", 1)["copy_scalar"].clone();
    learner.origin.file = "exercises/copy.cu".into();
    let extended = plan
        .with_learner_kernel("scalar", "yours", "yours:copy_scalar", learner)
        .expect("extended");
    assert_eq!(extended.variants.len(), 2);
    let (OpPlan::Kernel(starter), OpPlan::Kernel(yours)) =
        (&extended.variants[0].op, &extended.variants[1].op)
    else {
        panic!("kernel variants");
    };
    assert_eq!(starter.main.grid, yours.main.grid);
    assert_ne!(starter.main.build, yours.main.build);
    assert_eq!(extended.builds[yours.main.build].source.source, "b");
    assert_eq!(extended.builds[yours.main.build].key, "yours:copy_scalar");
}

/// A target like the H200 but with another SM count and warp size.
fn other_gpu() -> Target {
    Target {
        sm_count: 108,
        warp_size: 64,
        ..Target::of(&h200())
    }
}

fn plan_for(text: &str, target: &Target) -> Result<LabPlan, LabError> {
    let lab = LabSpec::parse(text, Path::new("labs/copy.toml"))?;
    compile(&lab, &kernels_at("a", 3), target, &Measurement::default())
}

fn main_launch(plan: &LabPlan, variant: usize) -> &LaunchPlan {
    match &plan.variants[variant].op {
        OpPlan::Kernel(op) => &op.main,
        other => panic!("a kernel variant, got {other:?}"),
    }
}

#[test]
fn device_properties_come_from_the_target_and_so_enter_the_key() {
    let text = LAB.replace(
        "grid = [\"n / 256\"]",
        "grid = [\"2 * sm_count\"]\nshared_bytes = \"warp_size * 4\"",
    );
    let on_h200 = plan_for(&text, &Target::of(&h200())).expect("plan");
    assert_eq!(main_launch(&on_h200, 0).grid, [264, 1, 1]);
    assert_eq!(main_launch(&on_h200, 0).shared_bytes, 128);
    let other = plan_for(&text, &other_gpu()).expect("plan");
    assert_eq!(main_launch(&other, 0).grid, [216, 1, 1]);
    assert_eq!(main_launch(&other, 0).shared_bytes, 256);
    assert_ne!(on_h200.key(&toolchain()), other.key(&toolchain()));
    // The load-time placeholders are an H200's, but what runs is the target's own: a launch
    // that fits the placeholders and not the target is refused when the plan is compiled.
    let text = LAB.replace(
        "grid = [\"n / 256\"]",
        "grid = [1]\nshared_bytes = \"max_shared_bytes_per_block\"",
    );
    let small = Target {
        max_shared_bytes_per_block: 65536,
        ..Target::of(&h200())
    };
    let plan = plan_for(&text, &small).expect("its own limit fits");
    assert_eq!(main_launch(&plan, 0).shared_bytes, 65536);
}

#[test]
fn a_variants_params_reach_its_launch_bytes_and_check() {
    let text = LAB
        .replace(
            "grid = [\"n / 256\"]",
            "params = { n = 512, tile = 128 }\ngrid = [\"n / tile\"]",
        )
        .replace(
            "[check]\nreference = \"copy\"\ninput = \"src\"\noutput = \"dst\"",
            "[check]\nreference = \"strided_gather\"\ninput = \"src\"\noutput = \"dst\"\ncount = \"n\"\nstride = \"1\"",
        );
    let plan = plan_for(&text, &Target::of(&h200())).expect("plan");
    assert_eq!(
        plan.params["n"], 1024,
        "the lab's own parameters are the plan's"
    );
    assert_eq!(plan.buffers[0].len, 1024, "buffers are the lab's");
    assert_eq!(main_launch(&plan, 0).grid, [4, 1, 1]);
    assert_eq!(
        main_launch(&plan, 0).args,
        [ArgPlan::Buffer(1), ArgPlan::Buffer(0), ArgPlan::I32(512)]
    );
    let variant = &plan.variants[0];
    assert_eq!(
        variant.bytes_moved,
        2 * 512 * 4,
        "the lab's bytes, over n = 512"
    );
    let ReferencePlan::Builtin { args, .. } = &plan.checks[variant.check].reference else {
        panic!("a built-in check");
    };
    assert_eq!(args["count"], 512);
}

#[test]
fn float_arguments_are_passed_as_written() {
    let with_args = |args: &str| {
        let text = LAB.replace("\"dst\", \"src\", \"n\"", args);
        plan_for(&text, &Target::of(&h200()))
    };
    let plan = with_args("\"0.1:f32\", \"-1.25e-3:f64\", \"n:f64\", \"3:f32\"").expect("plan");
    assert_eq!(
        main_launch(&plan, 0).args,
        [
            ArgPlan::F32(0.1),
            ArgPlan::F64(-1.25e-3),
            ArgPlan::F64(1024.0),
            ArgPlan::F32(3.0)
        ]
    );
    let err = with_args("\"9007199254740993:f64\"").expect_err("not exact");
    assert!(err.message.contains("not exact as an f64"), "{err}");
    let err = with_args("\"16777217:f32\"").expect_err("not exact");
    assert!(err.message.contains("not exact as an f32"), "{err}");
    assert_eq!(err.line, 29, "{err}");
}

#[test]
fn bytes_follow_from_reads_and_writes_and_writes_are_recorded() {
    let lab = LAB.replace("bytes = \"2 * n * 4\"\n", "");
    let plan_with = |lab_lines: &str, variant_lines: &str| {
        let text = format!(
            "{}{variant_lines}",
            lab.replace("[params]", &format!("{lab_lines}[params]"))
        );
        plan_for(&text, &Target::of(&h200()))
    };
    // Whole buffers: 1024 floats read, 1024 written.
    let plan = plan_with("reads = [\"src\"]\nwrites = [\"dst\"]\n", "").expect("plan");
    assert_eq!(plan.variants[0].bytes_moved, 8192);
    assert_eq!(plan.variants[0].writes, [1]);
    // Element counts, in the variant's own reads and writes, over its own parameters.
    let plan = plan_with(
        "reads = [\"src\"]\nwrites = [\"dst\"]\n",
        "params = { half = 512 }\nreads = { src = \"half\", dst = \"1\" }\n",
    )
    .expect("plan");
    assert_eq!(plan.variants[0].bytes_moved, 513 * 4);
    assert!(plan.variants[0].writes.is_empty(), "it declares no writes");
    // A `bytes` of the variant's comes before any of these.
    let plan = plan_with("writes = [\"dst\"]\n", "bytes = 7\n").expect("plan");
    assert_eq!(plan.variants[0].bytes_moved, 7);
    assert_eq!(plan.variants[0].writes, [1], "the lab's writes");
    // Without any: no writes in the plan, and the serialised plan does not mention them.
    let plan = plan_for(&LAB, &Target::of(&h200())).expect("plan");
    assert!(plan.variants[0].writes.is_empty());
    let json = serde_json::to_string(&plan).expect("serialise");
    assert!(!json.contains("writes"), "{json}");

    let err = plan_with("reads = { src = \"n * 4611686018427387903\" }\n", "")
        .expect_err("too many bytes");
    assert!(err.message.contains("overflow"), "{err}");
    let err = plan_with("reads = { src = \"-1\" }\n", "").expect_err("negative");
    assert!(err.message.contains("out of range"), "{err}");
}

#[test]
fn a_sweep_compiles_to_one_variant_per_value_and_its_errors_name_the_entry() {
    let text = LAB
        .replace("name = \"scalar\"", "name = \"scalar_{kb}k\"")
        .replace(
            "grid = [\"n / 256\"]",
            "sweep = { kb = [16, 32] }\ngrid = [\"kb\"]\nshared_bytes = \"kb * 1024\"",
        );
    let plan = plan_for(&text, &Target::of(&h200())).expect("plan");
    let names: Vec<_> = plan.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["scalar_16k", "scalar_32k"]);
    assert_eq!(main_launch(&plan, 1).grid, [32, 1, 1]);
    assert_eq!(main_launch(&plan, 1).shared_bytes, 32768);
    // Each variant keeps its swept value and its entry, and the results row takes them.
    let second = &plan.variants[1];
    assert_eq!(second.params.own, Params::from([("kb".into(), 32)]));
    let sweep = second.params.sweep.as_ref().expect("a variant of a sweep");
    assert_eq!(sweep.entry, "scalar_{kb}k");
    assert_eq!(sweep.axes.len(), 1);
    assert!(!sweep.axes[0].pow2);
    let row = crate::engine::result_template(
        &plan,
        second,
        kernelbook_core::results::Outcome::Unavailable { reason: "-".into() },
    );
    assert_eq!(row.params.as_ref(), Some(&second.params));
    assert_eq!(
        row.all_params(&plan.params).map(|all| all["kb"]),
        Some(32),
        "the swept value, not the lab's"
    );
    let pow2 = plan_for(
        &text.replace("kb = [16, 32]", "kb = { pow2 = [16, 32] }"),
        &Target::of(&h200()),
    )
    .expect("plan");
    assert_ne!(
        pow2.key(&toolchain()),
        plan.key(&toolchain()),
        "how a sweep is written is in the key's provenance"
    );
    // 512 KiB of shared memory passes at load (an expression, well formed) and not against the
    // device's limit: the error is at the entry's name.
    let err = plan_for(
        &text.replace("kb = [16, 32]", "kb = [16, 512]"),
        &Target::of(&h200()),
    )
    .expect_err("too much shared memory");
    assert!(err.message.contains("variant `scalar_512k`"), "{err}");
    assert!(err.message.contains("at most 232448"), "{err}");
    assert_eq!(err.line, 25, "{err}");
}

#[test]
fn a_pipelined_row_plans_one_launch_per_chunk_over_the_checks_buffers() {
    let lab = r#"name = "pipe"
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
name = "piped"
kernel = "copy_scalar"
pipeline = { chunks = 4, streams = 3 }
grid = ["n / chunks / 256"]
block = [256]
args = ["out", "in", "chunk * (n / chunks):i64", "n / chunks"]
"#;
    let plan = plan_of(lab, &kernels_at("ok", 3)).expect("a plan");
    let OpPlan::Kernel(op) = &plan.variants[0].op else {
        panic!("a kernel row");
    };
    let pipeline = op.pipeline.as_ref().expect("a pipeline");
    assert_eq!(pipeline.streams, 3);
    assert_eq!((pipeline.input, pipeline.output), (0, 1));
    assert_eq!(pipeline.chunk_bytes, 1024);
    let firsts: Vec<ArgPlan> = pipeline.chunk_args.iter().map(|args| args[2]).collect();
    assert_eq!(
        firsts,
        [0, 256, 512, 768].map(ArgPlan::I64),
        "each chunk's first element"
    );
    assert_eq!(op.main.grid, [1, 1, 1]);
    assert_eq!(op.main.args, pipeline.chunk_args[0]);
    // Chunks that do not divide the buffers are refused at the variant.
    let uneven = lab.replace("chunks = 4, streams = 3", "chunks = 3, streams = 3");
    let err = plan_of(&uneven, &kernels_at("ok", 3)).expect_err("uneven");
    assert!(err.message.contains("3 chunks divide"), "{err}");
}

#[test]
fn the_host_device_labs_pipelined_rows_plan_sixteen_chunks_on_one_to_four_streams() {
    let text = include_str!("../../../labs/host_device.toml");
    let lab = LabSpec::parse(text, Path::new("labs/host_device.toml")).expect("the lab");
    let source = KernelSource {
        name: "pipeline_work".into(),
        source: include_str!("../../../kernels/pipeline_work.cu").into(),
        origin: SourceLocation {
            file: "book/src/labs/host-device.md".into(),
            line: 1,
        },
        language: Default::default(),
    };
    let kernels = BTreeMap::from([("pipeline_work".to_string(), source)]);
    let plan = compile(
        &lab,
        &kernels,
        &Target::of(&h200()),
        &Measurement::default(),
    )
    .expect("a plan");
    for streams in 1..=4u32 {
        let variant = plan
            .variant(&format!("pipeline_{streams}"))
            .expect("the row");
        let OpPlan::Kernel(op) = &variant.op else {
            panic!("a kernel row");
        };
        let pipeline = op.pipeline.as_ref().expect("pipelined");
        assert_eq!(pipeline.streams, streams);
        assert_eq!(pipeline.chunk_args.len(), 16);
        assert_eq!(pipeline.chunk_bytes, 16 << 20);
        assert_eq!(op.main.grid, [16384, 1, 1]);
        assert_eq!(pipeline.chunk_args[15][4], ArgPlan::I64(15 << 22));
    }
}

/// The copy lab with L2 controls on its kernel variant.
fn with_l2(l2: &str) -> String {
    LAB.replace(
        "access = \"coalesced\"",
        &format!("access = \"coalesced\"\nl2 = {l2}"),
    )
}

#[test]
fn the_plan_carries_a_variants_l2_controls_evaluated_and_keys_them() {
    let text = with_l2(
        "{ fetch_granularity = 32, persisting_bytes = \"n * 2\", window = { buffer = \"src\", \
         bytes = \"n * 2\", hit_ratio = 0.5 } }",
    );
    let plan = plan_of(&text, &kernels_at("a", 3)).expect("plan");
    let scalar = plan
        .variants
        .iter()
        .find(|v| v.name == "scalar")
        .expect("scalar");
    assert_eq!(
        scalar.l2,
        Some(L2Plan {
            fetch_granularity: Some(32),
            persisting_bytes: Some(2048),
            window: Some(WindowPlan {
                buffer: 0,
                bytes: 2048,
                hit_ratio: 0.5,
            }),
        })
    );
    let json = serde_json::to_string(&plan).expect("json");
    assert_eq!(serde_json::from_str::<LabPlan>(&json).expect("back"), plan);
    let plain = plan_of(&LAB, &kernels_at("a", 3)).expect("plan");
    assert!(plain.variants.iter().all(|v| v.l2.is_none()));
    assert!(
        !serde_json::to_string(&plain)
            .expect("json")
            .contains("\"l2\""),
        "a plan without L2 controls serialises as before (other labs' keys unchanged)"
    );
    assert_ne!(
        plain.key(&toolchain()),
        plan.key(&toolchain()),
        "the cache key"
    );
    let counters = |plan: &LabPlan| {
        let v = plan
            .variants
            .iter()
            .find(|v| v.name == "scalar")
            .expect("scalar");
        plan.counter_key(v, "NVIDIA H200", "ncu", &["m"])
    };
    assert_ne!(counters(&plain), counters(&plan), "the counters' key");
}

#[test]
fn a_window_past_its_buffer_is_an_error_at_the_variant() {
    let text = with_l2(
        "{ persisting_bytes = \"n\", window = { buffer = \"src\", bytes = \"n * 8\", hit_ratio = 1.0 } }",
    );
    let err = plan_of(&text, &kernels_at("a", 3)).expect_err("too long");
    assert!(
        err.message
            .contains("spans 8192 bytes of `src`, which has 4096"),
        "{err}"
    );
    let line = text
        .lines()
        .position(|l| l == "name = \"scalar\"")
        .expect("written")
        + 1;
    assert_eq!(err.line, line, "{err}");
}
