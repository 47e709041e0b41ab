//! Against a real `python3` with NumPy (the one [`PythonReferences::new`] would run). Where there
//! is none, a test that needs it prints `SKIPPED (needs python3 with NumPy): NAME` and passes,
//! unless `KERNELBOOK_REQUIRE_NUMPY=1`.

use super::*;
use kernelbook_core::Language;
use std::sync::OnceLock;

/// What the tests need of the interpreter.
#[derive(Clone, Copy, PartialEq)]
enum Needs {
    Python,
    NumPy,
}

/// The interpreter, if it has what `test` needs; otherwise says the test is skipped (or fails
/// it, under `KERNELBOOK_REQUIRE_NUMPY=1`).
fn python(test: &str, needs: Needs) -> Option<String> {
    static FOUND: OnceLock<(String, bool, bool)> = OnceLock::new();
    let (program, runs, has_numpy) = FOUND.get_or_init(|| {
        let program = PythonReferences::new().python;
        let ok = |code: &str| {
            Command::new(&program)
                .args(["-c", code])
                .output()
                .is_ok_and(|out| out.status.success())
        };
        let (runs, has_numpy) = (ok("pass"), ok("import numpy"));
        (program, runs, has_numpy)
    });
    if *runs && (*has_numpy || needs == Needs::Python) {
        return Some(program.clone());
    }
    assert!(
        std::env::var("KERNELBOOK_REQUIRE_NUMPY").as_deref() != Ok("1"),
        "KERNELBOOK_REQUIRE_NUMPY=1, but `{program}` {}",
        if *runs {
            "has no numpy"
        } else {
            "does not run"
        }
    );
    // Past the test harness's capture, so that a skip is seen.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED (needs python3 with NumPy): {test}"
    );
    None
}

fn block(name: &str, line: usize, source: &str) -> KernelSource {
    KernelSource {
        name: name.into(),
        source: source.into(),
        origin: SourceLocation {
            file: "chapter.md".into(),
            line,
        },
        language: Language::Python,
    }
}

fn origin(line: usize) -> SourceLocation {
    SourceLocation {
        file: "chapter.md".into(),
        line,
    }
}

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect()
}

const AXPY: &str = "import numpy as np
def axpy(x, y, a):
    return (np.float32(a) * x + y).astype(np.float32)
";

/// The inputs and parameters of an `axpy` job: x = 0, 1, 2 …, y = 1, 1, 1 ….
struct Axpy {
    x: Vec<u8>,
    y: Vec<u8>,
    params: BTreeMap<String, f64>,
    block: KernelSource,
}

impl Axpy {
    fn new(a: f64, source: &str) -> Self {
        Axpy {
            x: f32_bytes((0..1000).map(|i| i as f32 * 0.25)),
            y: f32_bytes((0..1000).map(|_| 1.0)),
            params: BTreeMap::from([("a".into(), a), ("n".into(), 1000.0)]),
            block: block("axpy", 12, source),
        }
    }

    fn job(&self) -> ReferenceJob<'_> {
        ReferenceJob {
            block: &self.block,
            inputs: vec![
                HostBuffer {
                    name: "x",
                    elem: ElemType::F32,
                    bytes: &self.x,
                },
                HostBuffer {
                    name: "y",
                    elem: ElemType::F32,
                    bytes: &self.y,
                },
            ],
            params: &self.params,
            output: "y",
            output_elem: ElemType::F32,
            output_len: 1000,
        }
    }

    /// What the block must give, computed here.
    fn expected(&self) -> Vec<f32> {
        let a = self.params["a"] as f32;
        f32s(&self.x)
            .iter()
            .zip(f32s(&self.y))
            .map(|(x, y)| a * x + y)
            .collect()
    }
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(60)
}

fn run_one(
    references: &mut PythonReferences,
    job: &ReferenceJob<'_>,
) -> Result<Vec<u8>, PythonReferenceError> {
    let id = references.submit(job)?;
    references.wait(id, soon())
}

fn files_left(references: &PythonReferences) -> usize {
    references
        .dir
        .as_ref()
        .and_then(|dir| std::fs::read_dir(dir.path()).ok())
        .map_or(0, |entries| entries.count())
}

#[test]
fn axpy_gives_the_expected_bytes_and_leaves_no_file() {
    let Some(python) = python(
        "axpy_gives_the_expected_bytes_and_leaves_no_file",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let axpy = Axpy::new(2.5, AXPY);
    let bytes = run_one(&mut references, &axpy.job()).expect("axpy");
    assert_eq!(f32s(&bytes), axpy.expected());
    assert_eq!(files_left(&references), 0, "the job's files are removed");
    let numpy = references.implementation().unwrap_or_default();
    assert!(numpy.starts_with("numpy "), "{numpy}");
}

#[test]
fn arguments_are_bound_by_name_and_kwargs_take_the_rest() {
    let Some(python) = python(
        "arguments_are_bound_by_name_and_kwargs_take_the_rest",
        Needs::NumPy,
    ) else {
        return;
    };
    let source = r#"import numpy as np
print("a print without a newline goes to stderr", end="")
def binds(idx, n, scale, unused=7, **rest):
    assert idx.dtype == np.int32 and idx.ndim == 1 and not idx.flags.writeable, idx.flags
    assert isinstance(n, int) and isinstance(scale, float), (n, scale)
    assert unused == 7
    assert sorted(rest) == ["big", "ratio"], sorted(rest)  # what no parameter names
    assert rest["big"].dtype == np.uint64 and isinstance(rest["ratio"], float)
    assert np.isnan(rest["ratio"])
    print("printed")
    grid = np.arange(n, dtype=np.float64).reshape(2, n // 2)
    return grid * scale + idx.sum() + int(rest["big"][0])
"#;
    let block = block("binds", 40, source);
    let idx: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let big: Vec<u8> = 10u64.to_le_bytes().to_vec();
    let params = BTreeMap::from([
        ("n".to_string(), 4.0),
        ("scale".to_string(), 0.5),
        ("ratio".to_string(), f64::NAN),
    ]);
    let job = ReferenceJob {
        block: &block,
        inputs: vec![
            HostBuffer {
                name: "idx",
                elem: ElemType::I32,
                bytes: &idx,
            },
            HostBuffer {
                name: "big",
                elem: ElemType::U64,
                bytes: &big,
            },
        ],
        params: &params,
        output: "out",
        output_elem: ElemType::F64,
        output_len: 4,
    };
    let mut references = PythonReferences::with_python(&python);
    let bytes = run_one(&mut references, &job).expect("binds");
    // The (2, 2) result in C order.
    assert_eq!(f64s(&bytes), [16.0, 16.5, 17.0, 17.5]);
}

#[test]
fn a_block_without_its_function_is_reported() {
    let Some(python) = python("a_block_without_its_function_is_reported", Needs::NumPy) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let axpy = Axpy::new(
        1.0,
        "import numpy as np\ndef other(x):\n    return x\naxpy = 3\n",
    );
    let error = run_one(&mut references, &axpy.job()).expect_err("no function");
    assert_eq!(
        error,
        PythonReferenceError::NoFunction {
            name: "axpy".into(),
            origin: origin(12)
        }
    );
    assert_eq!(
        error.to_string(),
        "the block `axpy` (chapter.md:12) defines no function `axpy`"
    );
}

#[test]
fn a_parameter_nothing_names_is_reported_with_what_there_is() {
    let Some(python) = python(
        "a_parameter_nothing_names_is_reported_with_what_there_is",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let axpy = Axpy::new(1.0, "def axpy(x, y, alpha, beta=2):\n    return x\n");
    let error = run_one(&mut references, &axpy.job()).expect_err("unknown argument");
    assert_eq!(
        error,
        PythonReferenceError::UnknownArgument {
            name: "axpy".into(),
            origin: origin(12),
            argument: "alpha".into(),
            inputs: ["x".into(), "y".into()].into(),
            params: ["a".into(), "n".into()].into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "the block `axpy` (chapter.md:12): `axpy` asks for `alpha`, which is neither an input \
         buffer nor a parameter of the check (inputs: x, y; parameters: a, n)"
    );
    let positional = Axpy::new(1.0, "def axpy(x, /, y):\n    return x\n");
    match run_one(&mut references, &positional.job()) {
        Err(PythonReferenceError::BadSignature { reason, .. }) => {
            assert!(reason.contains("`x` is positional-only"), "{reason}")
        }
        other => panic!("expected a bad signature, got {other:?}"),
    }
}

#[test]
fn a_name_that_is_both_an_input_and_a_parameter_is_refused_before_python_runs() {
    // No interpreter is needed: the job is refused before one would start.
    let mut references = PythonReferences::with_python("/nonexistent/python3");
    let mut axpy = Axpy::new(1.0, AXPY);
    axpy.params.insert("x".into(), 3.0);
    let error = references.submit(&axpy.job()).expect_err("ambiguous");
    assert_eq!(
        error,
        PythonReferenceError::AmbiguousName {
            name: "axpy".into(),
            origin: origin(12),
            argument: "x".into()
        }
    );
    assert!(references.server.is_none());
}

#[test]
fn a_result_of_another_dtype_or_size_is_reported() {
    let Some(python) = python(
        "a_result_of_another_dtype_or_size_is_reported",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let wide = Axpy::new(
        1.0,
        "import numpy as np\ndef axpy(x, y):\n    return x.astype(np.float64)\n",
    );
    let error = run_one(&mut references, &wide.job()).expect_err("wrong dtype");
    assert_eq!(
        error.to_string(),
        "the block `axpy` (chapter.md:12): `axpy` returns float64; output buffer `y` is f32 \
         (float32) — add .astype(np.float32)"
    );
    let boxed = Axpy::new(
        1.0,
        "import numpy as np\ndef axpy(x):\n    return np.zeros((3, 4), np.float32)\n",
    );
    let error = run_one(&mut references, &boxed.job()).expect_err("wrong size");
    assert_eq!(
        error,
        PythonReferenceError::WrongSize {
            name: "axpy".into(),
            origin: origin(12),
            shape: vec![3, 4],
            output: "y".into(),
            expected: 1000,
        }
    );
    assert_eq!(
        error.to_string(),
        "the block `axpy` (chapter.md:12): `axpy` returns shape (3, 4), 12 element(s); output \
         buffer `y` holds 1000"
    );
    assert_eq!(files_left(&references), 0);
}

#[test]
fn an_exception_is_reported_at_the_chapters_lines() {
    let Some(python) = python(
        "an_exception_is_reported_at_the_chapters_lines",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let source = "import numpy as np\ndef axpy(x, y):\n    raise ValueError(\"no axpy today\")\n";
    let raising = Axpy::new(1.0, source);
    match run_one(&mut references, &raising.job()) {
        Err(PythonReferenceError::Raised {
            name,
            origin: at,
            traceback,
        }) => {
            assert_eq!((name.as_str(), at), ("axpy", origin(12)));
            // The block's third line is the chapter's line 12 + 2.
            assert!(
                traceback.contains("File \"chapter.md\", line 14, in axpy"),
                "{traceback}"
            );
            assert!(
                traceback.contains("raise ValueError(\"no axpy today\")"),
                "{traceback}"
            );
            assert!(
                traceback.ends_with("ValueError: no axpy today\n"),
                "{traceback}"
            );
            assert!(
                !traceback.contains("<string>"),
                "no server frame: {traceback}"
            );
        }
        other => panic!("expected an exception, got {other:?}"),
    }
    let mut broken = Axpy::new(1.0, "import numpy as np\ndef axpy(x, y:\n    return x\n");
    broken.block.origin.line = 30;
    match run_one(&mut references, &broken.job()) {
        Err(PythonReferenceError::Raised { traceback, .. }) => {
            assert!(
                traceback.contains("File \"chapter.md\", line 31"),
                "{traceback}"
            );
            assert!(traceback.contains("SyntaxError"), "{traceback}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn a_block_is_executed_once_per_process() {
    let Some(python) = python("a_block_is_executed_once_per_process", Needs::NumPy) else {
        return;
    };
    let source = "import builtins, numpy as np
builtins.kernelbook_runs = getattr(builtins, 'kernelbook_runs', 0) + 1
def axpy(x):
    return np.full(1000, builtins.kernelbook_runs, np.float32)
";
    let mut references = PythonReferences::with_python(&python);
    let axpy = Axpy::new(1.0, source);
    for _ in 0..2 {
        let bytes = run_one(&mut references, &axpy.job()).expect("counts");
        assert_eq!(f32s(&bytes)[0], 1.0);
    }
}

#[test]
fn a_job_past_its_deadline_stops_the_process_and_the_next_starts_a_fresh_one() {
    let Some(python) = python(
        "a_job_past_its_deadline_stops_the_process_and_the_next_starts_a_fresh_one",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let slow = Axpy::new(
        1.0,
        "import time\ndef axpy(x):\n    time.sleep(60)\n    return x\n",
    );
    let behind = Axpy::new(2.0, AXPY);
    let started = Instant::now();
    let slow_id = references.submit(&slow.job()).expect("submit the slow one");
    let behind_id = references
        .submit(&behind.job())
        .expect("submit one behind it");
    let pid = references.server.as_ref().map(|s| s.process.id());
    match references.wait(slow_id, Instant::now() + Duration::from_secs(1)) {
        Err(PythonReferenceError::Timeout {
            name, ran, earlier, ..
        }) => {
            assert_eq!((name.as_str(), earlier), ("axpy", 0));
            assert!(ran >= Duration::from_secs(1), "{ran:?}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not waited out"
    );
    if let Some(pid) = pid {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "killed and reaped"
        );
    }
    match references.wait(behind_id, soon()) {
        Err(PythonReferenceError::Crashed { detail, .. }) => {
            assert!(detail.contains("ran past its deadline"), "{detail}")
        }
        other => panic!("expected the job behind it to fail, got {other:?}"),
    }
    let bytes = run_one(&mut references, &behind.job()).expect("a fresh process");
    assert_eq!(f32s(&bytes), behind.expected());
    assert_eq!(files_left(&references), 0);
}

#[test]
fn a_process_that_dies_is_reported_with_its_last_words_and_replaced() {
    let Some(python) = python(
        "a_process_that_dies_is_reported_with_its_last_words_and_replaced",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let source = "import os, sys
def axpy(x):
    print('last words', file=sys.stderr, flush=True)
    os._exit(3)
";
    let dies = Axpy::new(1.0, source);
    match run_one(&mut references, &dies.job()) {
        Err(PythonReferenceError::Crashed { detail, .. }) => {
            assert!(detail.contains("exit status: 3"), "{detail}");
            assert!(detail.ends_with("last words"), "{detail}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    let axpy = Axpy::new(3.0, AXPY);
    let bytes = run_one(&mut references, &axpy.job()).expect("a fresh process");
    assert_eq!(f32s(&bytes), axpy.expected());

    // A job answered before the process died keeps its answer, though it is waited for after
    // the next submit has replaced the process.
    let answered = references.submit(&axpy.job()).expect("answered");
    let lost = references.submit(&dies.job()).expect("dies");
    let deadline = soon();
    while references
        .server
        .as_mut()
        .is_some_and(|s| s.process.is_running())
    {
        assert!(Instant::now() < deadline, "the process did not die");
        std::thread::sleep(Duration::from_millis(10));
    }
    let after = references.submit(&axpy.job()).expect("after");
    let bytes = references.wait(after, soon()).expect("after");
    assert_eq!(f32s(&bytes), axpy.expected());
    assert!(matches!(
        references.wait(lost, soon()),
        Err(PythonReferenceError::Crashed { .. })
    ));
    let bytes = references.wait(answered, soon()).expect("answered");
    assert_eq!(f32s(&bytes), axpy.expected());
}

#[test]
fn jobs_waited_in_reverse_order_keep_their_answers() {
    let Some(python) = python(
        "jobs_waited_in_reverse_order_keep_their_answers",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let (first, second) = (Axpy::new(2.0, AXPY), Axpy::new(-3.0, AXPY));
    let first_id = references.submit(&first.job()).expect("first");
    let second_id = references.submit(&second.job()).expect("second");
    let second_bytes = references.wait(second_id, soon()).expect("second");
    let first_bytes = references.wait(first_id, soon()).expect("first");
    assert_eq!(f32s(&second_bytes), second.expected());
    assert_eq!(f32s(&first_bytes), first.expected());
    assert_eq!(
        references.wait(first_id, soon()),
        Err(PythonReferenceError::NotPending(first_id.0))
    );
}

#[test]
fn an_input_of_256_mib_works() {
    let Some(python) = python("an_input_of_256_mib_works", Needs::NumPy) else {
        return;
    };
    let len = 64 << 20;
    // 0, 1 … 4095, over and over (`repeat` copies whole blocks: quick in a debug build too).
    let x = f32_bytes((0..4096).map(|i| i as f32)).repeat(len / 4096);
    let params = BTreeMap::new();
    let block = block(
        "every_1024th",
        5,
        "def every_1024th(x):\n    return x[::1024] * 2\n",
    );
    let job = ReferenceJob {
        block: &block,
        inputs: vec![HostBuffer {
            name: "x",
            elem: ElemType::F32,
            bytes: &x,
        }],
        params: &params,
        output: "y",
        output_elem: ElemType::F32,
        output_len: len / 1024,
    };
    let mut references = PythonReferences::with_python(&python);
    let bytes = run_one(&mut references, &job).expect("256 MiB");
    let y = f32s(&bytes);
    assert_eq!(y.len(), len / 1024);
    assert!(
        y.iter()
            .enumerate()
            .all(|(i, &v)| v == ((i * 1024 % 4096) * 2) as f32)
    );
}

#[test]
fn a_missing_interpreter_is_unavailable() {
    let mut references = PythonReferences::with_python("/nonexistent/python3");
    let axpy = Axpy::new(1.0, AXPY);
    match references.submit(&axpy.job()) {
        Err(PythonReferenceError::Unavailable(why)) => {
            assert!(why.starts_with("no /nonexistent/python3 ("), "{why}")
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    let mut references = PythonReferences::with_python("kernelbook-no-such-python3");
    match references.submit(&axpy.job()) {
        Err(PythonReferenceError::Unavailable(why)) => {
            assert!(
                why.starts_with("no kernelbook-no-such-python3 on the PATH ("),
                "{why}"
            );
            assert!(!why.contains('\n'), "one line: {why}");
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
}

#[test]
fn a_block_importing_a_missing_module_is_unavailable() {
    let Some(python) = python(
        "a_block_importing_a_missing_module_is_unavailable",
        Needs::NumPy,
    ) else {
        return;
    };
    let mut references = PythonReferences::with_python(&python);
    let axpy = Axpy::new(
        1.0,
        "import kernelbook_no_such_module\ndef axpy(x):\n    return x\n",
    );
    let error = run_one(&mut references, &axpy.job()).expect_err("unavailable");
    assert_eq!(
        error,
        PythonReferenceError::Unavailable(format!(
            "{python} has no module `kernelbook_no_such_module`, which the block `axpy` \
             (chapter.md:12) imports"
        ))
    );
}

/// An interpreter whose `import numpy` fails: `python` with a `numpy.py` first on its path.
#[cfg(unix)]
fn python_without_numpy(dir: &Path, python: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let hidden = dir.join("hidden");
    std::fs::create_dir(&hidden).expect("mkdir");
    std::fs::write(
        hidden.join("numpy.py"),
        "raise ImportError('numpy is hidden from this test')\n",
    )
    .expect("write numpy.py");
    let wrapper = dir.join("python3");
    let script = format!(
        "#!/bin/sh\nPYTHONPATH='{}' exec '{python}' \"$@\"\n",
        hidden.display()
    );
    std::fs::write(&wrapper, script).expect("write the wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    wrapper.to_string_lossy().into_owned()
}

#[cfg(unix)]
#[test]
fn an_interpreter_without_numpy_is_unavailable_for_every_job() {
    let Some(python) = python(
        "an_interpreter_without_numpy_is_unavailable_for_every_job",
        Needs::Python,
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let without = python_without_numpy(dir.path(), &python);
    let mut references = PythonReferences::with_python(&without);
    let axpy = Axpy::new(1.0, AXPY);
    for _ in 0..2 {
        match run_one(&mut references, &axpy.job()) {
            Err(PythonReferenceError::Unavailable(why)) => {
                assert_eq!(
                    why,
                    format!(
                        "{without} has no numpy (ImportError: numpy is hidden from this test): \
                         `{without} -m pip install numpy`"
                    )
                )
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
    }
}

#[test]
fn parameters_travel_as_ints_floats_and_named_specials() {
    let encode = |v: f64| serde_json::to_string(&WireParam::from(v)).unwrap_or_default();
    assert_eq!(encode(4.0), "4");
    assert_eq!(encode(-0.0), "0");
    assert_eq!(encode(0.5), "0.5");
    assert_eq!(encode(1e300), "1e+300");
    assert_eq!(encode(f64::NAN), "\"nan\"");
    assert_eq!(encode(f64::NEG_INFINITY), "\"-inf\"");
}

#[test]
fn replies_are_read_with_their_job() {
    let read = |line: &str| serde_json::from_str::<Message>(line).map(|m| (m.id, m.reply));
    assert_eq!(
        read(r#"{"reply": "ready", "numpy": "2.4.6"}"#).ok(),
        Some((
            None,
            Reply::Ready {
                numpy: "2.4.6".into()
            }
        ))
    );
    assert_eq!(
        read(r#"{"reply": "done", "id": 3}"#).ok(),
        Some((Some(3), Reply::Done))
    );
    assert_eq!(
        read(r#"{"reply": "wrong_size", "shape": [3, 4], "id": 4}"#).ok(),
        Some((Some(4), Reply::WrongSize { shape: vec![3, 4] }))
    );
}
