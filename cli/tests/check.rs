//! `kernelbook check` on a small book with one exercise, in a temp dir. The tests of what can go
//! wrong before anything is measured need no GPU; those that grade a kernel need a CUDA driver
//! and say they were skipped without one.

use kernelbook_runner::backend::cuda;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BOOK_TOML: &str = r#"[book]
title = "Exercise test book"
src = "book/src"

[build]
build-dir = "target/book"
"#;

const SUMMARY: &str = "# Summary\n\n- [Coalesce](coalesce.md)\n";

/// The chapter: the starter kernel (each thread copies its own run of 32 floats: neighbouring
/// lanes 128 B apart) and the solution (neighbouring lanes on neighbouring floats).
const CHAPTER: &str = r#"# Coalesce a chunked copy

The starter:

```cuda kernel=copy_chunked
#define PER_THREAD 32

extern "C" __global__ void copy_chunked(float *__restrict__ dst,
                                        const float *__restrict__ src, int n) {
    int first = (blockIdx.x * blockDim.x + threadIdx.x) * PER_THREAD;
    for (int k = 0; k < PER_THREAD; ++k) {
        int i = first + k;
        if (i < n) dst[i] = src[i];
    }
}
```

The solution:

```cuda kernel=copy_coalesced
#define PER_THREAD 32

extern "C" __global__ void copy_coalesced(float *__restrict__ dst,
                                          const float *__restrict__ src, int n) {
    int base = blockIdx.x * blockDim.x * PER_THREAD + threadIdx.x;
    for (int k = 0; k < PER_THREAD; ++k) {
        int i = base + k * blockDim.x;
        if (i < n) dst[i] = src[i];
    }
}
```
"#;

/// The exercise: the chapter's two kernels, each thread on 32 floats of 2^24.
const EXERCISE_LAB: &str = include_str!("../../labs/fixtures/coalesce.toml");

/// A lab that is not an exercise: the shared copy lab, renamed `plain`, without its kernel
/// variant (the book has no `copy_scalar`).
fn plain_lab() -> String {
    let copy = include_str!("../../labs/fixtures/copy.toml");
    let (builtin_only, _) = copy
        .split_once("\n[[variants]]\nname = \"scalar\"")
        .expect("the copy lab's kernel variant");
    assert!(builtin_only.contains("name = \"copy\"\n"), "{copy}");
    builtin_only.replace("name = \"copy\"\n", "name = \"plain\"\n")
}

/// A book with the `coalesce` exercise and the `plain` lab, in a temp dir.
fn exercise_book() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("book/src")).expect("mkdir book/src");
    std::fs::create_dir_all(root.join("labs")).expect("mkdir labs");
    let plain = plain_lab();
    for (path, text) in [
        ("book.toml", BOOK_TOML),
        ("book/src/SUMMARY.md", SUMMARY),
        ("book/src/coalesce.md", CHAPTER),
        ("labs/coalesce.toml", EXERCISE_LAB),
        ("labs/plain.toml", plain.as_str()),
    ] {
        std::fs::write(root.join(path), text).expect("write the book");
    }
    dir
}

fn kernelbook(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .expect("run kernelbook")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The source of `kernel` as the book's chapter holds it.
fn book_kernel(root: &Path, kernel: &str) -> String {
    let book = mdbook_driver::MDBook::load(root).expect("load the book");
    let index = mdbook_kernelbook::preprocessor::index_book(&book.book, &book.config.book.src)
        .expect("index the book");
    index.kernels[kernel].source.clone()
}

fn default_file(root: &Path) -> PathBuf {
    root.join("exercises/coalesce.cu")
}

#[test]
fn a_lab_without_an_exercise_section_is_named() {
    let book = exercise_book();
    let output = kernelbook(book.path(), &["check", "plain"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = text(&output.stderr);
    let lab_file = book.path().join("labs/plain.toml");
    assert!(
        stderr.contains(&format!(
            "lab `plain` ({}) is not an exercise: it has no [exercise] section (exercises: coalesce)",
            lab_file.display()
        )),
        "{stderr}"
    );
    assert!(!book.path().join("exercises").exists(), "nothing written");
}

#[test]
fn an_unknown_exercise_lists_the_exercises() {
    let book = exercise_book();
    let output = kernelbook(book.path(), &["check", "coalesc"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        text(&output.stderr).trim(),
        "kernelbook: there is no exercise `coalesc` (exercises: coalesce)"
    );
}

#[test]
fn without_a_file_the_starter_is_written_out_once() {
    let book = exercise_book();
    let output = kernelbook(book.path(), &["check", "coalesce"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let file = default_file(book.path());
    let written = std::fs::read_to_string(&file).expect("the starter was written");
    assert_eq!(written, book_kernel(book.path(), "copy_chunked"));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "wrote the starter kernel `copy_chunked` (from {}:6) to {}",
            Path::new("book/src/coalesce.md").display(),
            file.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("edit it, then run `kernelbook check coalesce` again"),
        "{stdout}"
    );

    // Run again, the learner's edit is kept and graded, not overwritten.
    let edited = written.replace("dst[i] = src[i];", "dst[i] = src[i]; // edited");
    std::fs::write(&file, &edited).expect("edit");
    if cuda::driver_present() {
        skipped("this machine has a CUDA driver: the no-GPU message was not checked");
    } else {
        let output = kernelbook(book.path(), &["--device", "cuda", "check", "coalesce"]);
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = text(&output.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.starts_with(
                "kernelbook: cannot check `coalesce` on this machine: no CUDA driver found"
            ),
            "{stderr}"
        );
        assert!(text(&output.stdout).is_empty());
    }
    assert_eq!(std::fs::read_to_string(&file).expect("still there"), edited);
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let book = exercise_book();
    let missing = book.path().join("mine.cu");
    let output = kernelbook(
        book.path(),
        &["check", "coalesce", missing.to_str().expect("utf-8 path")],
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert_eq!(
        text(&output.stderr).trim(),
        format!(
            "kernelbook: {}: no such file (run `kernelbook check coalesce` without a file to get \
             the starter kernel in exercises/coalesce.cu)",
            missing.display()
        )
    );
    assert!(!book.path().join("exercises").exists(), "nothing written");
}

/// Says a test was skipped where `cargo test` shows it.
fn skipped(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Whether kernels can be graded here: a CUDA driver and NVRTC.
fn can_grade() -> bool {
    cuda::driver_present() && cuda::nvrtc_present()
}

/// Grades `source` as the learner's kernel on this machine's GPU; `None` without one.
fn grade(book: &Path, source: &str) -> Option<(Option<i32>, String)> {
    if !can_grade() {
        return None;
    }
    let file = book.join("mine.cu");
    std::fs::write(&file, source).expect("write the learner's kernel");
    let output = kernelbook(
        book,
        &[
            "--device",
            "cuda",
            "check",
            "coalesce",
            file.to_str().expect("utf-8 path"),
        ],
    );
    Some((output.status.code(), text(&output.stdout)))
}

/// The solution under the starter's name: what a learner who solved the exercise submits.
fn solved(book: &Path) -> String {
    book_kernel(book, "copy_coalesced").replace("copy_coalesced", "copy_chunked")
}

#[test]
fn on_a_gpu_each_verdict_is_reached() {
    let book = exercise_book();
    let root = book.path();
    let starter = book_kernel(root, "copy_chunked");
    let Some((code, stdout)) = grade(root, &solved(root)) else {
        skipped("SKIPPED on_a_gpu_each_verdict_is_reached: no CUDA driver and NVRTC here");
        return;
    };
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("PASS: correct, and "), "{stdout}");
    assert!(
        stdout.contains("│ yours"),
        "the table has the learner's row: {stdout}"
    );

    let (code, stdout) = grade(root, &starter).expect("a GPU");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL: correct, but ") && stdout.contains("this exercise needs 1.5×"),
        "{stdout}"
    );

    let broken = starter.replace("int first", "int first = undefined_name; int unused");
    let line = broken
        .lines()
        .position(|l| l.contains("undefined_name"))
        .expect("line")
        + 1;
    let (code, stdout) = grade(root, &broken).expect("a GPU");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{}:{line}: error: identifier \"undefined_name\" is undefined",
            root.join("mine.cu").display()
        )),
        "the compiler's message points into the learner's file: {stdout}"
    );

    // The last element is never written: it stays NaN.
    let wrong = starter.replace("if (i < n)", "if (i < n - 1)");
    let (code, stdout) = grade(root, &wrong).expect("a GPU");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("the first mismatch is at index 16777215, which should be ")
            && stdout.contains("no thread wrote that element"),
        "{stdout}"
    );

    let renamed = starter.replace("copy_chunked", "copy_renamed");
    let (code, stdout) = grade(root, &renamed).expect("a GPU");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL: your kernel compiled, but failed at loading the kernel"),
        "{stdout}"
    );
}

/// The repository: where this test was built, unless `KERNELBOOK_REPO` says otherwise.
fn repo() -> PathBuf {
    match std::env::var_os("KERNELBOOK_REPO") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root")
            .to_path_buf(),
    }
}

#[test]
fn on_a_gpu_the_books_reference_solutions_pass() {
    if !can_grade() {
        skipped(
            "SKIPPED on_a_gpu_the_books_reference_solutions_pass: no CUDA driver and NVRTC here",
        );
        return;
    }
    let labs = mdbook_kernelbook::preprocessor::load_labs(&repo().join("labs")).expect("labs");
    let book = mdbook_driver::MDBook::load(repo()).expect("the book");
    let index = mdbook_kernelbook::preprocessor::index_book(&book.book, &book.config.book.src)
        .expect("index the book");
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut checked = 0;
    for lab in labs.ready.values() {
        let Some(exercise) = &lab.exercise else {
            continue;
        };
        let kernel_of = |variant: &str| {
            lab.variant(variant)
                .and_then(|v| v.kernel_name())
                .expect("validated: a kernel variant")
        };
        let (starter, solution) = (kernel_of(&exercise.starter), kernel_of(&exercise.solution));
        // The learner's kernel keeps the starter's name: submit the solution under it.
        let source = rename_identifier(&index.kernels[solution].source, solution, starter);
        let file = scratch.path().join(format!("{}.cu", lab.name));
        std::fs::write(&file, source).expect("write");
        let output = kernelbook(
            &repo(),
            &[
                "--device",
                "cuda",
                "check",
                &lab.name,
                file.to_str().expect("utf-8 path"),
            ],
        );
        let stdout = text(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "the solution of `{}` passes:\n{stdout}\n{}",
            lab.name,
            text(&output.stderr)
        );
        assert!(stdout.contains("PASS:"), "{stdout}");
        checked += 1;
    }
    eprintln!("{checked} exercises' solutions passed");
}

/// `text` with every whole-word `from` replaced by `to`.
fn rename_identifier(text: &str, from: &str, to: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(is_word) || after.is_some_and(is_word) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

#[test]
fn renaming_touches_whole_identifiers_only() {
    assert_eq!(
        rename_identifier(
            "void scale_fast(); scale_fast_x; a_scale_fast",
            "scale_fast",
            "scale"
        ),
        "void scale(); scale_fast_x; a_scale_fast"
    );
}

/// A stand-in for compute-sanitizer, in its command-line shape (`--tool T --log-file F … --
/// PROGRAM ARGS`): it runs the program as the tool would (its stdin and stdout passed through),
/// then writes a report to the log file: for memcheck, one out-of-bounds write by thread 255
/// of block 3 at line 8 of the learner's kernel, one float past the end of `dst` (the fake
/// device gives `src`, 64 MiB, the base address 0x7f0000000000, and `dst` the next); the other
/// tools find nothing. Each run appends its tool to `runs.txt` beside it.
const STAND_IN_SANITIZER: &str = r#"#!/bin/sh
tool= log=
while [ $# -gt 0 ]; do
    case "$1" in
        --tool) tool=$2; shift 2 ;;
        --log-file) log=$2; shift 2 ;;
        --) shift; break ;;
        *) shift ;;
    esac
done
echo "$tool" >> "$(dirname "$0")/runs.txt"
"$@"
{
    echo "========= COMPUTE-SANITIZER"
    if [ "$tool" = memcheck ]; then
        echo "========= Invalid __global__ write of size 4 bytes"
        echo "=========     at copy_chunked+0x90 in copy_chunked.cu:8"
        echo "=========     by thread (255,0,0) in block (3,0,0)"
        echo "=========     Access to 0x7f0008000000 is out of bounds"
        echo "=========     and is 1 bytes after the nearest allocation at 0x7f0004000000 of size 67,108,864 bytes"
        echo "========="
        echo "========= ERROR SUMMARY: 1 error"
    else
        echo "========= ERROR SUMMARY: 0 errors"
    fi
} > "$log"
"#;

/// `kernelbook check` of a learner's kernel on the fake device (a test build's), with
/// `KERNELBOOK_SANITIZER` set to `sanitizer`: its exit code and stdout.
fn check_on_fake_device(book: &Path, source: &str, sanitizer: &Path) -> (Option<i32>, String) {
    let file = book.join("mine.cu");
    std::fs::write(&file, source).expect("write the learner's kernel");
    let file = file.to_str().expect("utf-8 path");
    let output = on_fake_device(book, &["check", "coalesce", file], sanitizer);
    (output.status.code(), text(&output.stdout))
}

/// `kernelbook ARGS` on the book `book`, on the fake device (a test build's), with
/// `KERNELBOOK_SANITIZER` set to `sanitizer`.
fn on_fake_device(book: &Path, args: &[&str], sanitizer: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(book)
        .args(args)
        .env("KERNELBOOK_DEVICE", "fake")
        .env("KERNELBOOK_SANITIZER", sanitizer)
        .output()
        .expect("run kernelbook")
}

/// [`STAND_IN_SANITIZER`] written into `dir` as an executable `compute-sanitizer`.
fn stand_in_sanitizer(dir: &Path) -> PathBuf {
    let sanitizer = dir.join("compute-sanitizer");
    std::fs::write(&sanitizer, STAND_IN_SANITIZER).expect("write the stand-in");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&sanitizer, std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    sanitizer
}

#[test]
fn a_wrong_kernel_is_explained_by_the_sanitizer_at_the_learners_line() {
    let book = exercise_book();
    let tools = tempfile::tempdir().expect("tempdir");
    let sanitizer = stand_in_sanitizer(tools.path());
    // The fake device leaves the last element of `dst` unwritten for this source: still the
    // poison, so memcheck is asked first.
    let wrong = format!(
        "{}// {}\n",
        book_kernel(book.path(), "copy_chunked"),
        kernelbook_runner::backend::fake::FAKE_SKIP_LAST
    );
    let (code, stdout) = check_on_fake_device(book.path(), &wrong, &sanitizer);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    let mine = book.path().join("mine.cu");
    let at = format!("memcheck: out-of-bounds write at {}:8", mine.display());
    assert!(stdout.contains(&at), "{at} in:\n{stdout}");
    assert!(stdout.contains("if (i < n) dst[i] = src[i];"), "{stdout}");
    assert!(stdout.contains("`dst`"), "the buffer is named:\n{stdout}");
    assert!(stdout.contains("(compute-sanitizer: memcheck"), "{stdout}");
    let runs = std::fs::read_to_string(tools.path().join("runs.txt")).expect("runs");
    assert_eq!(
        runs.lines().collect::<Vec<_>>(),
        ["memcheck"],
        "it stops at the finding"
    );

    // Without the tool, the FAIL stands, with one line that says why nothing more is known.
    let (code, stdout) = check_on_fake_device(book.path(), &wrong, Path::new("/nonexistent"));
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("No sanitizer check: compute-sanitizer was not found"),
        "{stdout}"
    );

    // A correct kernel is not run under the tool.
    std::fs::remove_file(tools.path().join("runs.txt")).expect("rm runs.txt");
    let (_, stdout) = check_on_fake_device(book.path(), &solved(book.path()), &sanitizer);
    assert!(!stdout.contains("compute-sanitizer"), "{stdout}");
    assert!(!tools.path().join("runs.txt").exists());
}

#[test]
fn check_json_carries_the_verdict_and_the_sanitizers_finding_at_the_learners_line() {
    let book = exercise_book();
    let tools = tempfile::tempdir().expect("tempdir");
    let sanitizer = stand_in_sanitizer(tools.path());
    let wrong = format!(
        "{}// {}\n",
        book_kernel(book.path(), "copy_chunked"),
        kernelbook_runner::backend::fake::FAKE_SKIP_LAST
    );
    let file = book.path().join("mine.cu");
    std::fs::write(&file, wrong).expect("write the learner's kernel");
    let file = file.to_str().expect("utf-8 path");
    let output = on_fake_device(
        book.path(),
        &["check", "coalesce", file, "--json"],
        &sanitizer,
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the report is JSON");
    assert_eq!(report["verdict"], "fail", "{report:#}");
    assert_eq!(
        report["rows"].as_array().map(Vec::len),
        Some(3),
        "{report:#}"
    );
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["line"], 8, "{report:#}");
    let lines = report["sanitizer"]
        .as_array()
        .expect("the sanitizer's lines");
    assert!(
        lines.iter().any(|l| l
            .as_str()
            .is_some_and(|l| l.starts_with("memcheck: out-of-bounds write"))),
        "{report:#}"
    );
}

/// `kernelbook run coalesce` on the fake device with the stand-in sanitizer, the starter's
/// kernel in the chapter marked to leave its last element unwritten: exit code, stdout, and
/// the tools the stand-in ran.
fn run_with_a_failing_variant(lab_prefix: &str) -> (Option<i32>, String, String) {
    let book = exercise_book();
    let chapter = book.path().join("book/src/coalesce.md");
    let marked = CHAPTER.replacen(
        "#define PER_THREAD 32\n",
        &format!(
            "#define PER_THREAD 32\n// {}\n",
            kernelbook_runner::backend::fake::FAKE_SKIP_LAST
        ),
        1,
    );
    std::fs::write(&chapter, marked).expect("write the chapter");
    let lab = book.path().join("labs/coalesce.toml");
    std::fs::write(&lab, format!("{lab_prefix}{EXERCISE_LAB}")).expect("write the lab");
    let tools = tempfile::tempdir().expect("tempdir");
    let sanitizer = stand_in_sanitizer(tools.path());
    let output = on_fake_device(book.path(), &["run", "coalesce"], &sanitizer);
    let runs = std::fs::read_to_string(tools.path().join("runs.txt")).unwrap_or_default();
    (output.status.code(), text(&output.stdout), runs)
}

#[test]
fn a_lab_variant_that_fails_is_run_under_the_sanitizer_by_run() {
    let (code, stdout, runs) = run_with_a_failing_variant("");
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout.contains("`starter` under compute-sanitizer:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("memcheck: out-of-bounds write at"),
        "{stdout}"
    );
    assert!(
        stdout.contains("coalesce.md:"),
        "at the chapter's line:\n{stdout}"
    );
    assert!(
        !stdout.contains("`solution` under"),
        "a passing variant is not run:\n{stdout}"
    );
    assert_eq!(runs.lines().collect::<Vec<_>>(), ["memcheck"], "{stdout}");
}

#[test]
fn a_lab_that_asks_runs_every_variant_under_the_sanitizer() {
    let (code, stdout, runs) = run_with_a_failing_variant("sanitize = true\n");
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout.contains("`starter` under compute-sanitizer:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`solution` under compute-sanitizer:"),
        "{stdout}"
    );
    assert!(runs.lines().count() >= 2, "{runs}");
}

#[test]
fn the_sanitizer_runs_of_run_use_the_labs_small_sizes_and_say_so() {
    let (code, stdout, _) = run_with_a_failing_variant("sanitize_params = { n = 65536 }\n");
    assert_eq!(code, Some(2), "{stdout}");
    assert!(
        stdout.contains("`starter` under compute-sanitizer at n = 65536:"),
        "{stdout}"
    );
}
