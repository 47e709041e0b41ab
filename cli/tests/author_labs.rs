//! The fixture book `tests/author-labs`: three labs of kinds the course has no built-in reference
//! for, each written only in markdown and TOML (an elementwise kernel checked by a NumPy
//! reference within a tolerance, a reduction checked against a naive kernel, an in-place
//! kernel). Here they are planned from the book and run on the fake device, whose stand-ins for
//! the fixture's kernels do on the CPU what the CUDA does; `tests/gpu.rs` runs the real kernels.
//! The NumPy references run in a real `python3`: where it or NumPy is missing, the tests that
//! need it say so and pass, unless `KERNELBOOK_REQUIRE_NUMPY=1` (CI) makes that a failure.

use kernelbook_core::KernelSource;
use kernelbook_core::results::{LabResults, Outcome};
use kernelbook_core::spec::LabSpec;
use kernelbook_core::stats::StoppingRule;
use kernelbook_runner::backend::KernelArg;
use kernelbook_runner::backend::fake::{FakeCompiler, FakeDevice};
use kernelbook_runner::engine::{self, ExternalReferences, Quiet, RunOptions};
use kernelbook_runner::plan::{self, Measurement, Target};
use kernelbook_runner::references::python::PythonReferences;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/author-labs")
}

/// The blocks (kernels and NumPy references) and the labs of the book at `root`.
fn book_at(root: &Path) -> (BTreeMap<String, KernelSource>, BTreeMap<String, LabSpec>) {
    let book = mdbook_driver::MDBook::load(root).expect("the fixture book loads");
    let src = root.join(&book.config.book.src);
    let index = mdbook_kernelbook::preprocessor::index_book(&book.book, &src).expect("indexed");
    let labs = mdbook_kernelbook::preprocessor::load_labs(&root.join("labs")).expect("labs");
    (index.kernels, labs.ready)
}

/// A copy of the fixture book with `edit` applied to one of its files (`(file, from, to)`).
fn edited(edits: &[(&str, &str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["src", "labs"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        for entry in std::fs::read_dir(fixture().join(sub)).expect("fixture") {
            let path = entry.expect("entry").path();
            if path.is_file() {
                let to = dir.path().join(sub).join(path.file_name().expect("a name"));
                std::fs::copy(&path, to).expect("copy");
            }
        }
    }
    std::fs::copy(fixture().join("book.toml"), dir.path().join("book.toml")).expect("copy");
    for (file, from, to) in edits {
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(from), "{file} has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
    }
    dir
}

/// What `kernelbook build` prints to stderr for a book that must not build.
fn build_error(root: &Path) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .args(["--root".as_ref(), root.as_os_str(), "build".as_ref()])
        .env("KERNELBOOK_DEVICE", "cuda")
        .output()
        .expect("kernelbook runs");
    assert!(!output.status.success(), "the book built");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Whether NumPy references can run here; if not, says so (or fails, where CI requires NumPy).
fn numpy_or_skip(test: &str) -> bool {
    // The interpreter the runner uses: KERNELBOOK_PYTHON where set (CI's venv), else python3.
    let python = std::env::var("KERNELBOOK_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    let found = std::process::Command::new(python)
        .args(["-c", "import numpy"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        assert!(
            std::env::var_os("KERNELBOOK_REQUIRE_NUMPY").is_none_or(|v| v != "1"),
            "{test}: KERNELBOOK_REQUIRE_NUMPY=1 and python3 has no NumPy"
        );
        eprintln!("SKIPPED (needs python3 with NumPy): {test}");
    }
    found
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn put_f32s(bytes: &mut [u8], values: impl IntoIterator<Item = f32>) {
    for (chunk, value) in bytes.chunks_exact_mut(4).zip(values) {
        chunk.copy_from_slice(&value.to_le_bytes());
    }
}

fn buffer(args: &[KernelArg], i: usize) -> Result<usize, String> {
    match args.get(i) {
        Some(KernelArg::Buffer(id)) => Ok(id.0),
        other => Err(format!("argument {i} is {other:?}, not a buffer")),
    }
}

fn int(args: &[KernelArg], i: usize) -> Result<usize, String> {
    match args.get(i) {
        Some(KernelArg::I32(v)) => usize::try_from(*v).map_err(|e| e.to_string()),
        other => Err(format!("argument {i} is {other:?}, not an int")),
    }
}

fn float(args: &[KernelArg], i: usize) -> Result<f32, String> {
    match args.get(i) {
        Some(KernelArg::F32(v)) => Ok(*v),
        other => Err(format!("argument {i} is {other:?}, not a float")),
    }
}

/// `out[i] = log1p(exp(sign · x[i]))`, as the fixture's `softplus` (sign 1) and
/// `softplus_wrong` (sign −1) compute it.
fn softplus_with(buffers: &mut [Vec<u8>], args: &[KernelArg], sign: f32) -> Result<(), String> {
    let (out, x) = (buffer(args, 0)?, buffer(args, 1)?);
    let x = f32s(&buffers[x]);
    put_f32s(
        &mut buffers[out],
        x.iter().map(|v| (sign * v).exp().ln_1p()),
    );
    Ok(())
}

/// The fixture's row sums: in row order (`naive`), in 32 strided partial sums added pairwise
/// (`warp`), or with the first shuffle step missing (`warp_wrong`, half of each row).
fn row_sums_with(buffers: &mut [Vec<u8>], args: &[KernelArg], lanes: usize) -> Result<(), String> {
    let (sums, m) = (buffer(args, 0)?, buffer(args, 1)?);
    let (rows, cols) = (int(args, 2)?, int(args, 3)?);
    let m = f32s(&buffers[m]);
    let row_sum = |r: usize| -> f32 {
        let row = &m[r * cols..(r + 1) * cols];
        if lanes == 0 {
            return row.iter().sum();
        }
        let mut partial: Vec<f32> = (0..32)
            .map(|lane| row.iter().skip(lane).step_by(32).sum())
            .collect();
        let mut offset = lanes / 2;
        while offset > 0 {
            for lane in 0..offset {
                partial[lane] += partial[lane + offset];
            }
            offset /= 2;
        }
        partial[0]
    };
    put_f32s(&mut buffers[sums], (0..rows).map(row_sum));
    Ok(())
}

/// `y = a·x + y` once (`axpy`), or once per block of the grid (`axpy_wrong`: 2 × 4 SMs of the
/// fake device).
fn axpy_times(buffers: &mut [Vec<u8>], args: &[KernelArg], times: usize) -> Result<(), String> {
    let (y, x, a) = (buffer(args, 0)?, buffer(args, 1)?, float(args, 2)?);
    let x = f32s(&buffers[x]);
    let mut values = f32s(&buffers[y]);
    for _ in 0..times {
        for (v, x) in values.iter_mut().zip(&x) {
            *v = a.mul_add(*x, *v);
        }
    }
    put_f32s(&mut buffers[y], values);
    Ok(())
}

/// A fake device that runs the fixture's kernels.
fn device() -> FakeDevice {
    let mut device = FakeDevice::new();
    device.define("softplus", |b, a| softplus_with(b, a, 1.0));
    device.define("softplus_wrong", |b, a| softplus_with(b, a, -1.0));
    device.define("row_sums_naive", |b, a| row_sums_with(b, a, 0));
    device.define("row_sums_warp", |b, a| row_sums_with(b, a, 32));
    device.define("row_sums_warp_wrong", |b, a| row_sums_with(b, a, 16));
    device.define("axpy", |b, a| axpy_times(b, a, 1));
    device.define("axpy_wrong", |b, a| axpy_times(b, a, 8));
    device
}

/// A few samples per row: these tests are about checks, not timing.
fn quick() -> Measurement {
    Measurement {
        rule: StoppingRule {
            min_samples: 3,
            max_samples: 5,
            min_gpu_ms: 0.0,
            ..StoppingRule::default()
        },
        warmup_runs: 1,
    }
}

/// Plans lab `name` of the fixture book for the fake device and runs it.
fn run(name: &str, external: &mut dyn ExternalReferences) -> LabResults {
    run_on(&mut device(), name, external)
}

fn run_on(
    device: &mut FakeDevice,
    name: &str,
    external: &mut dyn ExternalReferences,
) -> LabResults {
    run_book(&fixture(), device, name, external)
}

fn run_book(
    root: &Path,
    device: &mut FakeDevice,
    name: &str,
    external: &mut dyn ExternalReferences,
) -> LabResults {
    let (kernels, labs) = book_at(root);
    let lab = &labs[name];
    let target = Target::of(&device.info);
    let plan = plan::compile(lab, &kernels, &target, &quick()).expect("the lab plans");
    let options = RunOptions {
        seed: 7,
        ..RunOptions::default()
    };
    let ahead = engine::Ahead::new(std::sync::Arc::new(FakeCompiler));
    engine::run(&plan, device, &ahead, &options, external, &mut Quiet)
        .expect("the lab runs")
        .results
}

/// Each row's outcome in one word, by name.
fn verdicts(results: &LabResults) -> BTreeMap<&str, String> {
    results
        .variants
        .iter()
        .map(|row| {
            let verdict = match &row.outcome {
                Outcome::Measured { .. } => "measured".to_string(),
                Outcome::WrongResult { mismatch } => format!("FAIL at {}", mismatch.index),
                Outcome::Unavailable { reason } => format!("n/a: {reason}"),
                Outcome::Failed { message, .. } => format!("ERROR: {message}"),
            };
            (row.name.as_str(), verdict)
        })
        .collect()
}

#[test]
fn the_elementwise_lab_is_checked_by_its_numpy_reference_within_a_tolerance() {
    if !numpy_or_skip("the_elementwise_lab_is_checked_by_its_numpy_reference_within_a_tolerance") {
        return;
    }
    let results = run("softplus", &mut PythonReferences::new());
    let verdicts = verdicts(&results);
    assert_eq!(verdicts["softplus"], "measured", "{verdicts:?}");
    assert!(
        verdicts["softplus_wrong"].starts_with("FAIL at 0"),
        "{verdicts:?}"
    );
    let checked = results.variants[0].checked.as_deref().unwrap_or_default();
    assert!(
        checked.contains("NumPy reference `softplus_ref`") && checked.contains("rtol 1e-5"),
        "{checked}"
    );
}

#[test]
fn the_reduction_is_checked_against_its_naive_kernel() {
    let results = run(
        "row_sums",
        &mut PythonReferences::with_python("/nonexistent/python3"),
    );
    let verdicts = verdicts(&results);
    assert_eq!(verdicts["naive"], "measured", "{verdicts:?}");
    assert_eq!(verdicts["warp"], "measured", "{verdicts:?}");
    assert!(verdicts["warp_wrong"].starts_with("FAIL"), "{verdicts:?}");
    let by_name = |name: &str| results.variants.iter().find(|r| r.name == name);
    let naive = by_name("naive").and_then(|r| r.checked.clone());
    assert!(naive.is_some_and(|c| c.contains("not checked itself")));
    let warp = by_name("warp").and_then(|r| r.checked.clone());
    assert!(warp.is_some_and(|c| c.contains("against variant `naive`")));
}

#[test]
fn the_in_place_kernel_sees_its_input_restored_before_every_run() {
    if !numpy_or_skip("the_in_place_kernel_sees_its_input_restored_before_every_run") {
        return;
    }
    let mut device = device();
    let results = run_on(&mut device, "axpy", &mut PythonReferences::new());
    let verdicts = verdicts(&results);
    // The wrong kernel runs first: without the restore, the right one's check would see the `y`
    // the wrong one left, and fail too.
    assert_eq!(verdicts["axpy"], "measured", "{verdicts:?}");
    assert!(verdicts["axpy_wrong"].starts_with("FAIL"), "{verdicts:?}");
    // After warm-up runs and timed samples, `y` holds one application of the last kernel: each
    // run started from the original `y` (kept in the device copy beside it).
    let ids: Vec<usize> = (0..device.buffers.len()).collect();
    let [x, y, pristine] = [ids[0], ids[1], ids[2]].map(|i| f32s(&device.buffers[i]));
    assert!(
        y.iter()
            .zip(&x)
            .zip(&pristine)
            .all(|((y, x), y0)| *y == 2.5f32.mul_add(*x, *y0)),
        "y is not a·x + y₀"
    );
}

#[test]
fn without_numpy_a_row_says_so_in_one_line_and_shows_no_number() {
    let results = run(
        "softplus",
        &mut PythonReferences::with_python("/nonexistent/python3"),
    );
    for row in &results.variants {
        let Outcome::Unavailable { reason } = &row.outcome else {
            panic!("{}: {:?}", row.name, row.outcome);
        };
        assert!(
            reason.starts_with("not checked: the NumPy reference `softplus_ref` cannot run here: "),
            "{reason}"
        );
        assert_eq!(reason.lines().count(), 1, "{reason}");
    }
}

#[test]
fn a_missing_or_twice_defined_reference_stops_the_build_at_its_line() {
    let missing = edited(&[(
        "labs/softplus.toml",
        "python = \"softplus_ref\"",
        "python = \"softplus_reference\"",
    )]);
    let message = build_error(missing.path());
    assert!(
        message.contains("labs/softplus.toml:19: lab `softplus` names the NumPy reference `softplus_reference`, which no ```python reference=softplus_reference block in the book defines"),
        "{message}"
    );
    let twice = edited(&[(
        "src/axpy.md",
        "```python reference=axpy_ref",
        "```python reference=softplus_ref",
    )]);
    let message = build_error(twice.path());
    assert!(
        message.contains("src/axpy.md:13: the NumPy reference `softplus_ref` is defined twice; the first is at src/softplus.md:16"),
        "{message}"
    );
    let no_variant = edited(&[(
        "labs/row_sums.toml",
        "against = \"naive\"",
        "against = \"simple\"",
    )]);
    let message = build_error(no_variant.path());
    assert!(
        message.contains(
            "row_sums.toml:22: the check is against variant `simple`, which the lab does not have"
        ),
        "{message}"
    );
    let negative = edited(&[("labs/softplus.toml", "rtol = 1e-5", "rtol = -1e-5")]);
    let message = build_error(negative.path());
    assert!(
        message.contains("softplus.toml:22: a tolerance must be finite and not negative"),
        "{message}"
    );
}

#[test]
fn a_reference_that_raises_or_returns_the_wrong_thing_fails_its_rows_naming_the_chapter_line() {
    if !numpy_or_skip(
        "a_reference_that_raises_or_returns_the_wrong_thing_fails_its_rows_naming_the_chapter_line",
    ) {
        return;
    }
    let cases = [
        (
            "    return np.log1p(np.exp(x.astype(np.float64))).astype(np.float32)",
            "    raise ValueError(\"no softplus today\")",
            "line 20",
        ),
        (
            ".astype(np.float32)\n```",
            "\n```",
            "returns float64; output buffer `out` is f32",
        ),
        (
            "    return np.log1p(np.exp(x.astype(np.float64))).astype(np.float32)",
            "    return np.zeros(3, dtype=np.float32)",
            "holds 1048576",
        ),
    ];
    for (from, to, wanted) in cases {
        let book = edited(&[("src/softplus.md", from, to)]);
        let results = run_book(
            book.path(),
            &mut device(),
            "softplus",
            &mut PythonReferences::new(),
        );
        for row in &results.variants {
            let Outcome::Failed { message, .. } = &row.outcome else {
                panic!("{wanted}: {}: {:?}", row.name, row.outcome);
            };
            assert!(message.contains(wanted), "{wanted}: {message}");
            assert!(message.contains("softplus.md"), "{message}");
        }
    }
}

#[test]
fn a_reference_past_the_labs_time_limit_is_stopped() {
    if !numpy_or_skip("a_reference_past_the_labs_time_limit_is_stopped") {
        return;
    }
    let book = edited(&[
        (
            "src/softplus.md",
            "def softplus_ref(x):\n",
            "def softplus_ref(x):\n    import time; time.sleep(60)\n",
        ),
        ("labs/softplus.toml", "bytes = ", "timeout_s = 3\nbytes = "),
    ]);
    let started = std::time::Instant::now();
    let results = run_book(
        book.path(),
        &mut device(),
        "softplus",
        &mut PythonReferences::new(),
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    for row in &results.variants {
        let Outcome::Failed { message, .. } = &row.outcome else {
            panic!("{}: {:?}", row.name, row.outcome);
        };
        assert!(message.contains("softplus_ref"), "{message}");
    }
}
