//! GPU tests: they need an NVIDIA GPU with its driver and NVRTC. Without a driver each says it
//! was skipped and passes, so `cargo test` stays green on machines without a GPU; run them on a
//! GPU machine (`cargo test -p kernelbook --test gpu -- --nocapture`).

use kernelbook_core::expr::Params;
use kernelbook_core::results::{FailureStage, Outcome};
use kernelbook_core::spec::LabSpec;
use kernelbook_core::{KernelSource, SourceLocation};
use kernelbook_runner::backend::cuda;
use kernelbook_runner::engine::Quiet;
use kernelbook_runner::{LabOutcome, LabRequest, Mode, Runner, RunnerConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// One GPU test at a time, so that their timings do not disturb each other.
static GPU: Mutex<()> = Mutex::new(());

fn gpu_or_skip(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    if !cuda::driver_present() || cuda::probe().is_err() {
        skipped(&format!(
            "SKIPPED {test}: no CUDA driver or GPU on this machine"
        ));
        return None;
    }
    Some(GPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
}

/// The repository: where this test was built, unless `KERNELBOOK_REPO` says otherwise (a test
/// binary carried to a GPU machine runs in another folder).
fn repo() -> PathBuf {
    match std::env::var_os("KERNELBOOK_REPO") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root")
            .to_path_buf(),
    }
}

fn runner(cache: &Path) -> Runner {
    Runner::new(RunnerConfig {
        cache_dir: cache.to_path_buf(),
        recorded_dir: repo().join("labs/recorded/nvidia-h200-882b8b4e"),
        mode: Mode::Auto,
        measurement: Default::default(),
        isolation: None,
        backend: Default::default(),
    })
}

/// A runner that measures in child processes of the kernelbook binary, as `kernelbook build`
/// does.
fn isolated_runner(cache: &Path) -> Runner {
    let carried = repo().join("target/release/kernelbook");
    let exe = if carried.exists() {
        carried
    } else {
        PathBuf::from(env!("CARGO_BIN_EXE_kernelbook"))
    };
    Runner::new(RunnerConfig {
        isolation: Some(exe),
        ..runner(cache).config().clone()
    })
}

/// Writes a lab file with the given variants (kernel name → extra TOML) over an `n × n`
/// transpose, and returns it loaded, with the kernels.
fn lab_on_disk(
    dir: &Path,
    extra: &str,
    variants: &[(&str, &str)],
) -> (LabSpec, BTreeMap<String, KernelSource>) {
    let mut text = TINY_TRANSPOSE
        .split("[[variants]]")
        .next()
        .unwrap_or_default()
        .to_string();
    text = text.replacen("[params]", &format!("{extra}\n[params]"), 1);
    let mut kernels = BTreeMap::new();
    for (name, source) in variants {
        text.push_str(&format!(
            "[[variants]]\nname = \"{name}\"\nkernel = \"{name}\"\ngrid = [\"n * n / 256\"]\nblock = [256]\nargs = [\"out\", \"in\", \"n\"]\n"
        ));
        kernels.insert(
            name.to_string(),
            KernelSource {
                name: name.to_string(),
                source: source.to_string(),
                origin: SourceLocation {
                    file: "faults.md".into(),
                    line: 1,
                },
                language: Default::default(),
            },
        );
    }
    let path = dir.join("faults.toml");
    std::fs::write(&path, text).expect("lab file");
    (LabSpec::load(&path).expect("lab"), kernels)
}

fn kernel(name: &str, body: &str) -> String {
    format!(
        "extern \"C\" __global__ void {name}(float *out, const float *in, int n) {{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    {body}\n}}\n"
    )
}

const TRANSPOSE_BODY: &str = "if (i < n * n) out[(i % n) * n + i / n] = in[i];";

#[test]
fn a_faulting_kernel_is_contained_and_the_others_still_measure() {
    let Some(_gpu) = gpu_or_skip("a_faulting_kernel_is_contained_and_the_others_still_measure")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let oob = kernel("oob", "out[i + (1ll << 36)] = in[i];");
    let trap = kernel(
        "trap",
        "if (i == 7) __trap(); if (i < n * n) out[(i % n) * n + i / n] = in[i];",
    );
    let misaligned = kernel(
        "misaligned",
        "if (i < n * n) *(float *)((char *)out + 1 + 4 * i) = in[i];",
    );
    let before = kernel("before", TRANSPOSE_BODY);
    let after = kernel("after", TRANSPOSE_BODY);
    let (lab, kernels) = lab_on_disk(
        dir.path(),
        "",
        &[
            ("before", &before),
            ("oob", &oob),
            ("trap", &trap),
            ("misaligned", &misaligned),
            ("after", &after),
        ],
    );
    let results = isolated_runner(dir.path())
        .measure(&lab, &kernels, &mut Quiet)
        .expect("the lab survives");
    for variant in &results.variants {
        eprintln!(
            "{}: {:?}",
            variant.name,
            match &variant.outcome {
                Outcome::Measured { summary, .. } =>
                    format!("measured, median {:.4} ms", summary.median_ms),
                Outcome::Failed { stage, message } => format!("{stage:?}: {message}"),
                Outcome::WrongResult { mismatch } => format!("wrong at {}", mismatch.index),
                Outcome::Unavailable { reason } => format!("unavailable: {reason}"),
            }
        );
    }
    let outcome = |name: &str| &results.variant(name).expect("variant").outcome;
    assert!(matches!(outcome("before"), Outcome::Measured { .. }));
    assert!(
        matches!(outcome("after"), Outcome::Measured { .. }),
        "a fault does not poison the next variant"
    );
    for name in ["oob", "trap", "misaligned"] {
        assert!(
            matches!(outcome(name), Outcome::Failed { .. }),
            "{name} fails, and says why"
        );
    }
}

#[test]
fn a_hanging_kernel_is_stopped_at_the_labs_time_limit() {
    let Some(_gpu) = gpu_or_skip("a_hanging_kernel_is_stopped_at_the_labs_time_limit") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let hang = kernel(
        "hang",
        "volatile int *flag = (volatile int *)out; while (flag[0] == flag[0]) { }",
    );
    let after = kernel("after", TRANSPOSE_BODY);
    let (lab, kernels) = lab_on_disk(
        dir.path(),
        "timeout_s = 5",
        &[("hang", &hang), ("after", &after)],
    );
    let started = Instant::now();
    let results = isolated_runner(dir.path())
        .measure(&lab, &kernels, &mut Quiet)
        .expect("the lab survives");
    let took = started.elapsed();
    eprintln!("hang lab took {took:?}");
    match &results.variant("hang").expect("hang").outcome {
        Outcome::Failed {
            stage: FailureStage::Timeout,
            message,
        } => eprintln!("hang: {message}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(matches!(
        results.variant("after").expect("after").outcome,
        Outcome::Measured { .. }
    ));
    assert!(took.as_secs() < 60, "stopped promptly: {took:?}");
}

#[test]
fn a_lab_larger_than_device_memory_says_so() {
    let Some(_gpu) = gpu_or_skip("a_lab_larger_than_device_memory_says_so") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (lab, kernels) = lab_on_disk(dir.path(), "", &[("fits", &kernel("fits", TRANSPOSE_BODY))]);
    let huge = lab
        .with_params(&Params::from([("n".to_string(), 1i64 << 18)]))
        .expect("params");
    let err = isolated_runner(dir.path())
        .measure(&huge, &kernels, &mut Quiet)
        .expect_err("too big");
    let message = err.to_string();
    eprintln!("{message}");
    // Whichever runs short first, the device or this host (the check's host copies), says so.
    assert!(
        message.contains("lab `tiny`")
            && (message.contains("GiB free of") || message.contains("GiB of host memory")),
        "{message}"
    );
}

fn book_kernels() -> BTreeMap<String, KernelSource> {
    let book = mdbook_driver::MDBook::load(repo()).expect("book");
    mdbook_kernelbook::preprocessor::index_book(&book.book, &book.config.book.src)
        .expect("index")
        .kernels
}

fn real_lab(name: &str, params: &[(&str, i64)]) -> LabSpec {
    let lab = LabSpec::load(&repo().join("labs").join(format!("{name}.toml"))).expect("lab");
    let overrides: Params = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    lab.with_params(&overrides).expect("params")
}

#[test]
fn every_variant_of_the_real_labs_is_verified_and_timed() {
    let Some(_gpu) = gpu_or_skip("every_variant_of_the_real_labs_is_verified_and_timed") else {
        return;
    };
    let cache = tempfile::tempdir().expect("tempdir");
    let runner = runner(cache.path());
    let kernels = book_kernels();
    // Every ready lab of the book, at smaller sizes where its parameters allow (the hierarchy
    // labs' variants name their working sets directly, and the sizing drill compiles its matrix
    // side into the kernel, so those run as written).
    let sizes: &[(&str, &[(&str, i64)])] = &[
        ("bandwidth", &[("n", 1 << 24)]),
        ("transpose", &[("n", 2048)]),
        ("strided", &[("n", 1 << 20)]),
        ("bank_conflicts", &[("blocks", 1024), ("n", 1024)]),
        ("host_device", &[("n", 1 << 20)]),
        ("fusion", &[("rows", 1024), ("cols", 1024)]),
        (
            "memory_wall",
            &[("n", 1 << 20), ("threads", 1 << 18), ("rounds", 256)],
        ),
        ("register_pressure", &[("n", 1 << 18)]),
        ("tile_sweep", &[("n", 2048)]),
        ("drill_coalesce", &[("n", 1 << 20)]),
        ("drill_bank_conflict", &[("n", 2048)]),
        ("drill_race", &[("n", 1 << 20)]),
        ("drill_halo", &[("n", 1 << 20)]),
        ("padded_transpose", &[("n", 2048)]),
        ("profile_transpose", &[("n", 2048)]),
        ("hierarchy", &[]),
        ("hierarchy_bandwidth", &[]),
        ("hierarchy_sizing", &[]),
        ("triton_transpose", &[("n", 2048)]),
        ("bank_strides", &[("blocks", 256)]),
        (
            "sgemm",
            &[
                ("n", 256),
                ("m", 1 << 20),
                ("threads", 1 << 18),
                ("rounds", 256),
            ],
        ),
        ("bulk_copy_sweep", &[("n", 1 << 22)]),
        ("tma_transpose_sweep", &[("n", 1024)]),
        ("bank_strides_wide", &[("blocks", 256)]),
        ("reduction", &[("n", 1 << 22)]),
        ("offset", &[("n", 1 << 22)]),
        ("aos_soa", &[("n", 1 << 20)]),
        ("l2_window", &[("n", 1 << 22)]),
    ];
    let ready: Vec<String> = std::fs::read_dir(repo().join("labs"))
        .expect("labs/")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            match kernelbook_core::spec::LabFile::load(&path).ok()? {
                kernelbook_core::spec::LabFile::Ready(lab) => Some(lab.name.clone()),
                kernelbook_core::spec::LabFile::Planned(_) => None,
            }
        })
        .collect();
    for name in &ready {
        assert!(
            sizes.iter().any(|(lab, _)| lab == name),
            "lab `{name}` is not covered by this test: add it with small sizes"
        );
    }
    for lab in sizes.iter().map(|(name, params)| real_lab(name, params)) {
        let results = runner
            .measure(&lab, &kernels, &mut Quiet)
            .expect("measured");
        for variant in &results.variants {
            match &variant.outcome {
                Outcome::Measured {
                    summary,
                    samples_ms,
                    ..
                } => {
                    assert!(
                        samples_ms.len() >= 10,
                        "{}: {} samples",
                        variant.name,
                        samples_ms.len()
                    );
                    assert!(summary.median_ms > 0.0);
                    eprintln!(
                        "{}/{}: {:.0} GB/s",
                        lab.name,
                        variant.name,
                        variant.effective_gbs().unwrap_or(0.0)
                    );
                }
                Outcome::Unavailable { reason } => {
                    eprintln!("{}/{}: peer not present: {reason}", lab.name, variant.name)
                }
                // A drill's starter with a bug to find may be wrong, as the drill says.
                Outcome::WrongResult { mismatch } if wrong_on_purpose(&lab, &variant.name) => {
                    eprintln!(
                        "{}/{}: wrong on purpose: {mismatch:?}",
                        lab.name, variant.name
                    )
                }
                other => panic!("{}/{}: {other:?}", lab.name, variant.name),
            }
            if variant.kernel.is_some() {
                let resources = variant.resources.expect("resources");
                assert!(resources.registers > 0 && resources.blocks_per_sm > 0);
            }
        }
    }
}

/// Whether `variant` of `lab` is an exercise's starter whose bug is the exercise (its verdicts
/// are timed against the solution).
fn wrong_on_purpose(lab: &kernelbook_core::spec::LabSpec, variant: &str) -> bool {
    lab.exercise.as_ref().is_some_and(|exercise| {
        exercise.baseline == kernelbook_core::exercise::Baseline::Solution
            && exercise.starter == variant
    })
}

const TINY_TRANSPOSE: &str = r#"
name = "tiny"
title = "Tiny"
bytes = "2 * n * n * 4"
[params]
n = 1024
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
name = "v"
kernel = "k"
grid = ["n * n / 256"]
block = [256]
args = ["out", "in", "n"]
"#;

fn tiny(source: &str) -> (LabSpec, BTreeMap<String, KernelSource>) {
    let lab = LabSpec::parse(TINY_TRANSPOSE, Path::new("tiny.toml")).expect("lab");
    let kernel = KernelSource {
        name: "k".into(),
        source: source.into(),
        origin: SourceLocation {
            file: "tiny.md".into(),
            line: 1,
        },
        language: Default::default(),
    };
    (lab, BTreeMap::from([("k".to_string(), kernel)]))
}

const CORRECT: &str = "extern \"C\" __global__ void k(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n * n) out[(i % n) * n + i / n] = in[i];
}
";

#[test]
fn a_wrong_kernel_on_the_gpu_shows_the_first_mismatch() {
    let Some(_gpu) = gpu_or_skip("a_wrong_kernel_on_the_gpu_shows_the_first_mismatch") else {
        return;
    };
    // A copy, not a transpose: element 0 is right, element 1 is not.
    let (lab, kernels) = tiny(&CORRECT.replace("out[(i % n) * n + i / n]", "out[i]"));
    let cache = tempfile::tempdir().expect("tempdir");
    let results = runner(cache.path())
        .measure(&lab, &kernels, &mut Quiet)
        .expect("ran");
    match &results.variants[0].outcome {
        Outcome::WrongResult { mismatch } => {
            assert_eq!(mismatch.index, 1);
            eprintln!("wrong kernel: {mismatch:?}");
        }
        other => panic!("expected a wrong result, got {other:?}"),
    }
}

#[test]
fn a_kernel_that_does_not_compile_fails_alone_with_nvrtcs_message() {
    let Some(_gpu) = gpu_or_skip("a_kernel_that_does_not_compile_fails_alone_with_nvrtcs_message")
    else {
        return;
    };
    let (lab, kernels) = tiny(&CORRECT.replace("int i =", "int i = undefined_thing +"));
    let cache = tempfile::tempdir().expect("tempdir");
    let results = runner(cache.path())
        .measure(&lab, &kernels, &mut Quiet)
        .expect("ran");
    match &results.variants[0].outcome {
        Outcome::Failed {
            stage: FailureStage::Compile,
            message,
        } => {
            assert!(
                message
                    .starts_with("tiny.md:2: error: identifier \"undefined_thing\" is undefined"),
                "{message}"
            );
        }
        other => panic!("expected a compile failure, got {other:?}"),
    }
}

#[test]
fn the_cache_serves_a_rebuild_and_an_edit_re_measures() {
    let Some(_gpu) = gpu_or_skip("the_cache_serves_a_rebuild_and_an_edit_re_measures") else {
        return;
    };
    let cache = tempfile::tempdir().expect("tempdir");
    let runner = runner(cache.path());
    let (lab, kernels) = tiny(CORRECT);
    let first = results_for(&runner, &lab, &kernels);
    assert!(
        matches!(first, LabOutcome::Measured { cached: false, .. }),
        "{first:?}"
    );
    let started = Instant::now();
    let second = results_for(&runner, &lab, &kernels);
    assert!(
        matches!(second, LabOutcome::Measured { cached: true, .. }),
        "{second:?}"
    );
    eprintln!("cached lookup took {:?}", started.elapsed());
    let (lab, edited) = tiny(&CORRECT.replace("int i", "const int i"));
    let third = results_for(&runner, &lab, &edited);
    assert!(
        matches!(third, LabOutcome::Measured { cached: false, .. }),
        "an edited kernel is measured again"
    );
}

/// Says a test was skipped where `cargo test` shows it: writing to stderr directly is not
/// captured by the test harness the way `eprintln!` is.
fn skipped(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// The book's view of one lab: cached, measured now, or recorded.
fn results_for(
    runner: &Runner,
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
) -> LabOutcome {
    let request = LabRequest { lab, kernels };
    match runner.results(&[request], &mut Quiet).pop() {
        Some(outcome) => outcome,
        None => panic!("one outcome per request"),
    }
}

// ---- Every child dies with its parent: the measuring child, the Python process and ncu. ----

/// Which stand-in parent `role_a_parent_that_is_killed` plays.
const ROLE: &str = "KERNELBOOK_TEST_ROLE";
/// Where the stand-in parent keeps its lab file and cache.
const ROLE_DIR: &str = "KERNELBOOK_TEST_ROLE_DIR";

/// A lab whose only row spins until its time limit (120 s), and, `with_torch`, a PyTorch row,
/// so that the build's Python process is started (and importing torch) while the kernel spins.
fn spinning_lab(dir: &Path, with_torch: bool) -> (LabSpec, BTreeMap<String, KernelSource>) {
    let hang = kernel(
        "hang",
        "volatile int *flag = (volatile int *)out; while (flag[0] == flag[0]) { }",
    );
    let (lab, kernels) = lab_on_disk(dir, "timeout_s = 120", &[("hang", &hang)]);
    if !with_torch {
        return (lab, kernels);
    }
    let mut text = std::fs::read_to_string(&lab.file).expect("lab file");
    text.push_str(
        "[[variants]]\nname = \"torch\"\nbuiltin = \"torch_transpose\"\nargs = [\"out\", \"in\"]\n",
    );
    std::fs::write(&lab.file, text).expect("lab file");
    (LabSpec::load(&lab.file).expect("lab"), kernels)
}

/// Not a test on its own: the orphan tests run this test binary again with [`ROLE`] set, as a
/// parent that measures (and so starts children) until it is killed.
#[test]
#[ignore = "a stand-in parent that the orphan tests start and then kill"]
fn role_a_parent_that_is_killed() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    kernelbook_runner::process::end_children_on_signal().expect("signal handling");
    let dir = PathBuf::from(std::env::var_os(ROLE_DIR).expect("the role's folder"));
    let runner = isolated_runner(&dir);
    loop {
        let (lab, kernels) = match role.as_str() {
            "spin" => spinning_lab(&dir, false),
            "python" => spinning_lab(&dir, true),
            _ => (real_lab("profile_transpose", &[]), book_kernels()),
        };
        let _ = runner.measure(&lab, &kernels, &mut Quiet);
    }
}

/// One process of the process table.
#[derive(Debug, Clone)]
struct Proc {
    pid: u32,
    ppid: u32,
    /// R, S, Z...: a zombie has ended and holds nothing but its table entry.
    state: char,
    cmdline: String,
}

fn process_table() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command name is in parentheses and may hold spaces: read after the last ')'.
            let rest = &stat[stat.rfind(')')? + 2..];
            let mut fields = rest.split_whitespace();
            let state = fields.next()?.chars().next()?;
            let ppid = fields.next()?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
                .unwrap_or_default();
            Some(Proc {
                pid,
                ppid,
                state,
                cmdline,
            })
        })
        .collect()
}

/// Every live descendant of `root`.
fn descendants(root: u32) -> Vec<Proc> {
    let table = process_table();
    let mut found: Vec<Proc> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for proc in table.iter().filter(|p| p.ppid == parent && p.state != 'Z') {
            frontier.push(proc.pid);
            found.push(proc.clone());
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = &stat[stat.rfind(')')? + 2..];
            rest.chars().next()
        })
        .is_some_and(|state| state != 'Z')
}

/// Starts a stand-in parent in `role`, waits until one of its descendants matches `wanted`,
/// sends the parent `signal`, and asserts that every descendant it had is gone within a second.
fn children_die_with_their_parent(role: &str, signal: &str, wanted: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut parent = std::process::Command::new(std::env::current_exe().expect("this test"))
        .args([
            "role_a_parent_that_is_killed",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(ROLE_DIR, dir.path())
        .env("KERNELBOOK_REPO", repo())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the stand-in parent starts");
    let pid = parent.id();
    let started = Instant::now();
    let family = loop {
        let family = descendants(pid);
        if family.iter().any(|p| p.cmdline.contains(wanted)) {
            break family;
        }
        if started.elapsed().as_secs() > 180 {
            let _ = parent.kill();
            panic!("no `{wanted}` below the parent after 180 s: {family:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // Let the children settle into their work (the kernel spinning, torch importing).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let family: Vec<Proc> = descendants(pid).into_iter().chain(family).collect();
    eprintln!(
        "{role}: killing the parent ({signal}) with {} descendants: {}",
        family.len(),
        family
            .iter()
            .map(|p| format!(
                "{} {}",
                p.pid,
                p.cmdline.chars().take(60).collect::<String>()
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let status = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let _ = parent.wait();
    let killed = Instant::now();
    loop {
        let left: Vec<&Proc> = family.iter().filter(|p| alive(p.pid)).collect();
        if left.is_empty() {
            eprintln!(
                "{role}/{signal}: every descendant gone {:?} after the parent",
                killed.elapsed()
            );
            return;
        }
        assert!(
            killed.elapsed().as_millis() < 1000,
            "{role}/{signal}: still alive a second after the parent's death: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_measuring_child_dies_with_its_parent() {
    let Some(_gpu) = gpu_or_skip("a_measuring_child_dies_with_its_parent") else {
        return;
    };
    for signal in ["KILL", "TERM", "INT"] {
        children_die_with_their_parent("spin", signal, "__measure-lab");
    }
}

#[test]
fn the_python_process_dies_with_its_parent() {
    let Some(_gpu) = gpu_or_skip("the_python_process_dies_with_its_parent") else {
        return;
    };
    for signal in ["KILL", "TERM", "INT"] {
        children_die_with_their_parent("python", signal, "python3");
    }
}

#[test]
fn ncu_dies_with_its_parent() {
    let Some(_gpu) = gpu_or_skip("ncu_dies_with_its_parent") else {
        return;
    };
    if kernelbook_runner::profile::find_ncu().is_none() {
        skipped("SKIPPED ncu_dies_with_its_parent: no ncu on this machine");
        return;
    }
    for signal in ["KILL", "TERM", "INT"] {
        children_die_with_their_parent("ncu", signal, "ncu");
    }
}

#[test]
fn a_kernels_printf_does_not_corrupt_the_protocol_on_the_gpu() {
    let Some(_gpu) = gpu_or_skip("a_kernels_printf_does_not_corrupt_the_protocol_on_the_gpu")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    // Device printf goes to the measuring child's stdout, unterminated and from every launch.
    let chatty = kernel(
        "chatty",
        "if (i == 0) printf(\"{\\\"event\\\": \\\"half a line\"); if (i < n * n) out[(i % n) * n + i / n] = in[i];",
    );
    let (lab, kernels) = lab_on_disk(dir.path(), "", &[("chatty", &chatty)]);
    let results = isolated_runner(dir.path())
        .measure(&lab, &kernels, &mut Quiet)
        .expect("the lab is measured");
    match &results.variant("chatty").expect("chatty").outcome {
        Outcome::Measured { summary, .. } => {
            eprintln!("chatty: measured, median {:.4} ms", summary.median_ms)
        }
        other => panic!("expected a measurement, got {other:?}"),
    }
}

// ---- The fixture book of labs an author wrote (tests/author-labs), on the GPU. ----

#[test]
fn the_author_written_labs_check_on_the_gpu() {
    let Some(_gpu) = gpu_or_skip("the_author_written_labs_check_on_the_gpu") else {
        return;
    };
    let root = repo().join("tests/author-labs");
    let book = mdbook_driver::MDBook::load(&root).expect("the fixture book");
    let kernels =
        mdbook_kernelbook::preprocessor::index_book(&book.book, &root.join(&book.config.book.src))
            .expect("index")
            .kernels;
    let labs = mdbook_kernelbook::preprocessor::load_labs(&root.join("labs")).expect("labs");
    let cache = tempfile::tempdir().expect("tempdir");
    let runner = isolated_runner(cache.path());
    for (name, right, wrong) in [
        ("softplus", &["softplus"][..], &["softplus_wrong"][..]),
        ("row_sums", &["naive", "warp"][..], &["warp_wrong"][..]),
        ("axpy", &["axpy"][..], &["axpy_wrong"][..]),
    ] {
        let LabOutcome::Measured { results, .. } =
            results_for(&runner, &labs.ready[name], &kernels)
        else {
            panic!("{name}: not measured on the GPU");
        };
        for row in &results.variants {
            eprintln!(
                "{name}/{}: {} ({})",
                row.name,
                match &row.outcome {
                    Outcome::Measured { summary, .. } => format!(
                        "{:.1} GB/s, median {:.4} ms",
                        row.effective_gbs().unwrap_or(0.0),
                        summary.median_ms
                    ),
                    other => format!("{other:?}"),
                },
                row.checked.as_deref().unwrap_or("?")
            );
            let expected_right = right.contains(&row.name.as_str());
            let measured = matches!(row.outcome, Outcome::Measured { .. });
            let failed = matches!(row.outcome, Outcome::WrongResult { .. });
            assert!(
                if expected_right { measured } else { failed },
                "{name}/{}: {:?}",
                row.name,
                row.outcome
            );
            assert!(expected_right || wrong.contains(&row.name.as_str()));
        }
    }
}
