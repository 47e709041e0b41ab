//! The `kernelbook` binary on the real book and on small broken books, in temp dirs. None of
//! these needs a GPU; the NVRTC test needs libnvrtc (CI installs it; elsewhere it says it is
//! skipped).

use kernelbook_core::results::LabResults;
use kernelbook_runner::backend::cuda;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/charts.rs"]
mod charts;

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

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The folder of the recordings the book shows without a GPU (book.toml's `recorded-gpu`).
const SHOWN: &str = "labs/recorded/nvidia-h200-882b8b4e";

/// A copy of the real book (book.toml, book/, labs/) in a temp dir.
fn real_book() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(repo().join("book.toml"), dir.path().join("book.toml")).expect("book.toml");
    copy_dir(&repo().join("book"), &dir.path().join("book"));
    copy_dir(&repo().join("labs"), &dir.path().join("labs"));
    dir
}

#[test]
fn without_a_gpu_the_real_book_builds_with_the_recorded_tables() {
    let book = real_book();
    let no_driver = !cuda::driver_present();
    let args: &[&str] = if no_driver {
        &["build"]
    } else {
        &["build", "--recorded"]
    };
    let output = kernelbook(book.path(), args);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "build failed: {stderr}");
    if no_driver {
        let notices: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("no CUDA driver found"))
            .collect();
        assert_eq!(notices.len(), 1, "one line says there is no GPU: {stderr}");
    } else {
        eprintln!("this machine has a CUDA driver: checked the recorded path with --recorded");
    }
    for (lab, page) in [
        ("bandwidth", "labs/lab1-bandwidth-ceiling.html"),
        ("transpose", "labs/lab2-transpose.html"),
    ] {
        let html =
            std::fs::read_to_string(book.path().join("target/book").join(page)).expect("page");
        let recorded = std::fs::read_to_string(repo().join(SHOWN).join(format!("{lab}.json")))
            .expect("recorded");
        let results = LabResults::from_json(&recorded).expect("recorded results parse");
        assert!(
            html.contains("kernelbook-recorded"),
            "{page} shows recorded results"
        );
        assert!(html.contains(&results.provenance.device.name));
        for variant in &results.variants {
            let gbs = variant
                .effective_gbs()
                .expect("recorded variants are measured");
            assert!(
                html.contains(&format!("<td>{gbs:.0}</td>")),
                "{page} shows {} at {gbs:.0} GB/s",
                variant.name
            );
        }
        assert!(!html.contains("{{#lab"), "no directive is left");
    }
}

#[test]
fn kernels_folder_matches_the_book() {
    let output = kernelbook(&repo(), &["tangle", "--check"]);
    assert!(
        output.status.success(),
        "kernels/ is out of date; run `cargo run --release -- tangle`:\n{}",
        text(&output.stdout)
    );
}

#[test]
fn a_duplicate_kernel_is_reported_with_file_and_line() {
    let book = real_book();
    let chapter = book.path().join("book/src/labs/lab2-transpose.md");
    let mut content = std::fs::read_to_string(&chapter).expect("chapter");
    content.push_str(
        "\n```cuda kernel=copy_scalar\nextern \"C\" __global__ void copy_scalar() {}\n```\n",
    );
    std::fs::write(&chapter, &content).expect("write");
    let line = content.lines().count() - 2;
    let output = kernelbook(book.path(), &["build"]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("book/src/labs/lab2-transpose.md:{line}: kernel `copy_scalar` is defined twice; the first is at book/src/labs/lab1-bandwidth-ceiling.md:")),
        "{stderr}"
    );
}

#[test]
fn a_lab_naming_a_missing_kernel_is_reported_with_the_lab_file_and_line() {
    let book = real_book();
    let lab = book.path().join("labs/transpose.toml");
    let content = std::fs::read_to_string(&lab).expect("lab").replace(
        "kernel = \"transpose_tiled\"",
        "kernel = \"transpose_tiles\"",
    );
    std::fs::write(&lab, &content).expect("write");
    let line = content
        .lines()
        .position(|l| l.contains("transpose_tiles"))
        .expect("line")
        + 1;
    let output = kernelbook(book.path(), &["build"]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "labs/transpose.toml:{line}: lab `transpose` names kernel `transpose_tiles`"
        )),
        "{stderr}"
    );
}

#[test]
fn a_malformed_lab_file_is_reported_with_its_line() {
    let book = real_book();
    let lab = book.path().join("labs/bandwidth.toml");
    let content = std::fs::read_to_string(&lab)
        .expect("lab")
        .replace("n = 67108864", "n = \"lots\"");
    std::fs::write(&lab, &content).expect("write");
    let line = content
        .lines()
        .position(|l| l.contains("lots"))
        .expect("line")
        + 1;
    let output = kernelbook(book.path(), &["list"]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains(&format!("labs/bandwidth.toml:{line}:")),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn nvrtc_compiles_every_kernel_of_the_book_for_hopper() {
    use kernelbook_runner::backend::{CompileRequest, Compiler};
    if !cuda::nvrtc_present() {
        assert!(
            std::env::var_os("KERNELBOOK_REQUIRE_NVRTC").is_none(),
            "KERNELBOOK_REQUIRE_NVRTC is set but libnvrtc.so.13 could not be loaded (not on the library path nor in .venv-nvrtc or a site-packages)"
        );
        skipped(
            "SKIPPED nvrtc_compiles_every_kernel_of_the_book_for_hopper: NVRTC is not installed here",
        );
        return;
    }
    let nvrtc = cuda::Nvrtc::load().expect("nvrtc");
    let book = mdbook_driver::MDBook::load(repo()).expect("book");
    let index = mdbook_kernelbook::preprocessor::index_book(&book.book, &book.config.book.src)
        .expect("index");
    assert!(index.kernels.len() >= 6, "the book's kernels were found");
    let cuda_kernels: Vec<_> = index
        .kernels
        .values()
        .filter(|k| k.language == kernelbook_core::Language::Cuda)
        .collect();
    for kernel in &cuda_kernels {
        let compiled = nvrtc
            .compile(&CompileRequest {
                name: &kernel.name,
                source: &kernel.source,
                arch: "sm_90",
                flags: &[],
            })
            .unwrap_or_else(|err| {
                panic!(
                    "{} ({}) does not compile: {err}",
                    kernel.name, kernel.origin
                )
            });
        assert_eq!(
            &compiled.image[..4],
            b"\x7fELF",
            "{}: NVRTC returned a CUBIN",
            kernel.name
        );
        let report = kernelbook_runner::backend::ptxas::parse_report(&compiled.log, &kernel.name);
        assert!(
            report.is_some_and(|r| r.registers > 0),
            "{}: ptxas reported its resources (with a CUDA driver installed, run with \
             CUDA_CACHE_DISABLE=1: a compute-cache hit skips ptxas and its report):\n{}",
            kernel.name,
            compiled.log
        );
    }
    eprintln!(
        "{}: compiled {} kernels for sm_90",
        nvrtc.version(),
        cuda_kernels.len()
    );
}

/// Says a test was skipped where `cargo test` shows it: writing to stderr directly is not
/// captured by the test harness the way `eprintln!` is.
fn skipped(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
}

#[test]
fn an_edit_that_breaks_a_kernel_shows_the_compiler_message_at_the_markdown_line() {
    if !cuda::nvrtc_present() {
        assert!(
            std::env::var_os("KERNELBOOK_REQUIRE_NVRTC").is_none(),
            "KERNELBOOK_REQUIRE_NVRTC is set but NVRTC could not be loaded"
        );
        skipped(
            "SKIPPED an_edit_that_breaks_a_kernel_shows_the_compiler_message_at_the_markdown_line: NVRTC is not installed here",
        );
        return;
    }
    let book = real_book();
    let chapter = book.path().join("book/src/labs/lab2-transpose.md");
    let content = std::fs::read_to_string(&chapter).expect("chapter");
    // Break the tiled kernel (its first `__syncthreads();`) with an undefined name.
    let broken = content.replacen(
        "    __syncthreads();\n",
        "    __syncthreads(); undefined_name = 1;\n",
        1,
    );
    assert_ne!(broken, content);
    let line = broken
        .lines()
        .position(|l| l.contains("undefined_name"))
        .expect("line")
        + 1;
    std::fs::write(&chapter, &broken).expect("write");

    // Without --strict the book builds, and the chapter shows the message at the markdown line.
    let output = kernelbook(book.path(), &["build", "--recorded"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let html = std::fs::read_to_string(book.path().join("target/book/labs/lab2-transpose.html"))
        .expect("page");
    let location = format!(
        "book/src/labs/lab2-transpose.md:{line}: error: identifier \"undefined_name\" is undefined"
    );
    assert!(html.contains(&location), "the page shows {location}");
    assert!(html.contains("kernelbook-problem"));
    let other = std::fs::read_to_string(
        book.path()
            .join("target/book/labs/lab1-bandwidth-ceiling.html"),
    )
    .expect("page");
    assert!(
        other.contains("kernelbook-results"),
        "the rest of the book still builds"
    );

    // With --strict the build fails with the same message.
    let output = kernelbook(book.path(), &["build", "--recorded", "--strict"]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("book/src/labs/lab2-transpose.md:{line}: error: identifier \"undefined_name\" is undefined")),
        "{stderr}"
    );
}

#[test]
fn without_rocm_an_amd_device_is_reported_unavailable_in_one_line() {
    // Whatever this machine has, pointing the HIP runtime at a missing file is the no-ROCm path.
    let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(repo())
        .args(["--device", "hip", "info"])
        .env("KERNELBOOK_HIP_RUNTIME", "/nonexistent/libamdhip64.so")
        .output()
        .expect("run kernelbook");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert_eq!(
        stdout.trim(),
        "no live results on this machine: no AMD GPU runtime found (libamdhip64.so could not be loaded); `kernelbook build` shows the recorded ones"
    );
}

#[test]
fn a_directive_in_an_included_file_is_expanded() {
    let book = real_book();
    let chapter = book.path().join("book/src/labs/lab2-transpose.md");
    let content = std::fs::read_to_string(&chapter).expect("chapter");
    let fence = "```cuda kernel=transpose_naive\n";
    let start = content.find(fence).expect("the naive kernel");
    let end = start
        + fence.len()
        + content[start + fence.len()..]
            .find("```\n")
            .expect("its end")
        + 4;
    let block = &content[start..end];
    // The kernel block and the directive move to a file the chapter includes, at line 3 and on.
    let part = format!("Included.\n\n{block}\n{{{{#lab transpose}}}}\n");
    std::fs::write(book.path().join("book/src/labs/transpose-parts.md"), &part).expect("write");
    let moved = content.replacen(block, "", 1).replacen(
        "{{#lab transpose}}",
        "{{#include transpose-parts.md}}",
        1,
    );
    std::fs::write(&chapter, &moved).expect("write");

    let output = kernelbook(book.path(), &["build", "--recorded"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let html = std::fs::read_to_string(book.path().join("target/book/labs/lab2-transpose.html"))
        .expect("page");
    assert!(
        html.contains("id=\"lab-transpose\""),
        "the included directive shows the lab"
    );
    assert!(!html.contains("{{#lab") && !html.contains("{{#include"));
    // The kernel is reported where it is written: the included file's line after its fence.
    assert!(
        html.contains("<code>book/src/labs/transpose-parts.md:4</code>"),
        "the caption names the included file's line"
    );
    assert!(
        !html.contains("predate edits"),
        "the kernel found in the included file is the recorded one"
    );
    // The commands that read the book without building it find the included kernel too.
    let output = kernelbook(book.path(), &["list"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("transpose_naive"));
}

#[test]
fn strict_fails_on_a_recording_of_edited_kernels() {
    let book = real_book();
    let chapter = book.path().join("book/src/labs/lab2-transpose.md");
    let content = std::fs::read_to_string(&chapter).expect("chapter");
    let edited = content.replacen(
        "extern \"C\" __global__ void transpose_naive(",
        "// edited since the recording\nextern \"C\" __global__ void transpose_naive(",
        1,
    );
    assert_ne!(edited, content);
    std::fs::write(&chapter, &edited).expect("write");
    // The failure is reported at the first directive showing the lab (chapters in path order).
    let first = "book/src/exercises/padded-transpose.md";
    let line = std::fs::read_to_string(book.path().join(first))
        .expect("chapter")
        .lines()
        .position(|l| l.contains("{{#lab transpose}}"))
        .expect("the directive")
        + 1;

    // Without --strict the page says the numbers predate the edit, as before.
    let output = kernelbook(book.path(), &["build", "--recorded"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let html = std::fs::read_to_string(book.path().join("target/book/labs/lab2-transpose.html"))
        .expect("page");
    assert!(html.contains("predate edits"), "the page says so");

    let output = kernelbook(book.path(), &["build", "--recorded", "--strict"]);
    assert!(!output.status.success(), "a strict build fails");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("{first}:{line}: lab `transpose`: the recorded numbers were measured before edits to `transpose_naive`")),
        "{stderr}"
    );
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    writer
}

/// `/dev/full`, where every write fails with ENOSPC.
fn full_device() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
}

#[test]
fn list_into_a_closed_pipe_exits_quietly() {
    let up_to_date = kernelbook(&repo(), &["tangle", "--check"]).status.success();
    for args in [
        &["list"][..],
        &["info"],
        &["tangle", "--check"],
        &["compile", "no_such_kernel"],
        &["--help"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
            .arg("--root")
            .arg(repo())
            .args(args)
            .stdout(closed_pipe())
            .output()
            .expect("run kernelbook");
        let stderr = text(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        if args == ["compile", "no_such_kernel"] || args == ["tangle", "--check"] && !up_to_date {
            // The command's own failure (or verdict) stands.
            assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        } else {
            assert!(output.status.success(), "{args:?}: {stderr}");
            assert_eq!(stderr, "", "{args:?}: quietly");
        }
    }
}

#[test]
fn a_closed_stdout_does_not_change_a_verdict() {
    // An empty kernels/ folder is out of date: `tangle --check` says so in its exit status,
    // whether or not anyone reads its list.
    let book = real_book();
    let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(book.path())
        .args(["tangle", "--check"])
        .stdout(closed_pipe())
        .output()
        .expect("run kernelbook");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "kernelbook: kernels/ is out of date; run `kernelbook tangle`\n"
    );
}

#[test]
fn a_full_stdout_is_an_error_in_one_line() {
    let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(repo())
        .arg("list")
        .stdout(full_device())
        .output()
        .expect("run kernelbook");
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("kernelbook: cannot write to stdout: ") && stderr.lines().count() == 1,
        "{stderr}"
    );
}

/// `build`, or `build --recorded` where this machine has a CUDA driver.
fn build_args() -> &'static [&'static str] {
    if cuda::driver_present() {
        &["build", "--recorded"]
    } else {
        &["build"]
    }
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> std::collections::BTreeSet<PathBuf> {
    let mut files = std::collections::BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.strip_prefix(dir).expect("under").to_path_buf());
            }
        }
    }
    files
}

#[test]
fn build_with_stderr_closed_still_writes_the_book() {
    for (what, stderr) in [
        ("a closed pipe", std::process::Stdio::from(closed_pipe())),
        ("/dev/full", std::process::Stdio::from(full_device())),
    ] {
        let book = real_book();
        let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
            .arg("--root")
            .arg(book.path())
            .args(build_args())
            .stderr(stderr)
            .output()
            .expect("run kernelbook");
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "stderr {what}: {stdout}");
        assert!(stdout.contains("book written to"), "{stdout}");
        let html =
            std::fs::read_to_string(book.path().join("target/book/labs/lab2-transpose.html"))
                .expect("the lab page");
        assert!(html.contains("kernelbook-recorded"), "stderr {what}");
    }
}

#[test]
fn two_concurrent_builds_both_write_a_complete_book() {
    let book = real_book();
    let start = || {
        Command::new(env!("CARGO_BIN_EXE_kernelbook"))
            .arg("--root")
            .arg(book.path())
            .args(build_args())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run kernelbook")
    };
    let mut complete = None;
    for _ in 0..3 {
        let (first, second) = (start(), start());
        for child in [first, second] {
            let output = child.wait_with_output().expect("wait");
            assert!(output.status.success(), "{}", text(&output.stderr));
        }
        let files = files_under(&book.path().join("target/book"));
        assert!(files.contains(Path::new("labs/lab2-transpose.html")));
        let expected = complete.get_or_insert_with(|| files.clone());
        assert_eq!(
            &files, expected,
            "every build leaves the same, complete book"
        );
    }
    let left: Vec<_> = std::fs::read_dir(book.path().join("target"))
        .expect("target")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, ["book"], "no staging folder is left behind");
}

#[test]
fn a_bad_kernelbook_device_is_reported_in_one_line() {
    for value in ["nvidia", "CUDA "] {
        let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
            .arg("--root")
            .arg(repo())
            .arg("list")
            .env("KERNELBOOK_DEVICE", value)
            .output()
            .expect("run kernelbook");
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(
            text(&output.stderr),
            format!(
                "kernelbook: KERNELBOOK_DEVICE: unknown device `{value}` (use auto, cuda or hip)\n"
            )
        );
        assert!(output.stdout.is_empty());
    }
    let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(repo())
        .args(["--device", "hip", "list"])
        .env("KERNELBOOK_DEVICE", "nvidia")
        .output()
        .expect("run kernelbook");
    assert!(output.status.success(), "--device wins over the variable");
}

#[test]
fn a_lab_title_with_escape_sequences_is_printed_escaped() {
    let book = real_book();
    let lab = book.path().join("labs/bandwidth.toml");
    let content = std::fs::read_to_string(&lab).expect("lab");
    let title = content
        .lines()
        .find(|l| l.starts_with("title = "))
        .expect("a title")
        .to_string();
    std::fs::write(
        &lab,
        content.replace(
            &title,
            "title = \"\\u001b[2J\\u001b]0;owned\\u0007Bandwidth\\u009b1m\"",
        ),
    )
    .expect("write");
    let output = kernelbook(book.path(), &["list"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(!stdout.contains('\u{1b}') && !stdout.contains('\u{9b}') && !stdout.contains('\u{7}'));
    assert!(
        stdout.contains("\\x1b[2J\\x1b]0;owned\\x07Bandwidth\\u{9b}1m"),
        "{stdout}"
    );
}

/// Every `kernelbook-figure` of the built book, page by page in order: (page, field, text).
fn figures_of(book: &Path) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let mut pages: Vec<PathBuf> = files_under(&book.join("target/book"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    pages.sort();
    for page in pages {
        let html = std::fs::read_to_string(book.join("target/book").join(&page)).expect("page");
        for piece in html
            .split("<span class=\"kernelbook-figure\" data-field=\"")
            .skip(1)
        {
            let (field, rest) = piece.split_once('"').expect("a field");
            let text = rest
                .split_once('>')
                .and_then(|(_, t)| t.split_once("</span>"))
                .map(|(t, _)| t.to_string())
                .expect("a figure's text");
            found.push((page.display().to_string(), field.to_string(), text));
        }
    }
    found
}

/// The number at the start of a figure's text, in microseconds for a time.
fn number_of(field: &str, text: &str) -> f64 {
    let digits: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
        .collect();
    let value: f64 = digits.parse().unwrap_or(f64::NAN);
    if field == "time" && text.ends_with("ms") {
        value * 1000.0
    } else {
        value
    }
}

#[test]
fn doubling_every_recorded_time_changes_every_figure_in_the_prose_accordingly() {
    let (original, doubled) = (real_book(), real_book());
    for entry in std::fs::read_dir(doubled.path().join(SHOWN)).expect("recorded") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let mut results =
            LabResults::from_json(&std::fs::read_to_string(&path).expect("read")).expect("valid");
        for row in &mut results.variants {
            if let kernelbook_core::results::Outcome::Measured {
                summary,
                samples_ms,
                ..
            } = &mut row.outcome
            {
                samples_ms.iter_mut().for_each(|s| *s *= 2.0);
                *summary = kernelbook_core::stats::Summary::of(samples_ms).expect("samples");
            }
        }
        std::fs::write(&path, results.to_json()).expect("write");
    }
    for book in [&original, &doubled] {
        let output = kernelbook(book.path(), &["build", "--recorded"]);
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let (before, after) = (figures_of(original.path()), figures_of(doubled.path()));
    assert!(
        before.len() >= 20,
        "only {} figures in the book",
        before.len()
    );
    assert_eq!(before.len(), after.len());
    for ((page, field, was), (_, _, now)) in before.iter().zip(&after) {
        let (was_n, now_n) = (number_of(field, was), number_of(field, now));
        // Bandwidths and rates halve, times double, and so does a ridge over the theoretical
        // bandwidth; shares of a ceiling measured in the same run, ratios, spreads, ridges over
        // a measured bandwidth, the kernels' own and the profiler's counters and the device stay.
        let (expected, slack) = match field.as_str() {
            "gbs" | "rate" | "pct_peak" | "ridge_peak" => (was_n / 2.0, 1.0),
            "time" | "us" => (was_n * 2.0, was_n * 0.02),
            _ => (was_n, 0.0),
        };
        let agrees = if field == "device" {
            was == now
        } else {
            (now_n - expected).abs() <= slack.max(expected.abs() * 0.01)
        };
        assert!(
            agrees,
            "{page}: {field} was {was}, now {now}, expected about {expected}"
        );
    }
    every_chart_follows_the_doubled_times(original.path(), doubled.path());
}

/// The built pages of a book, in order.
fn html_pages(book: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = files_under(&book.join("target/book"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    pages.sort();
    pages
}

/// Every lab section with results has its chart, and each chart's marks moved with the times:
/// each figure is what doubling makes of it, and is drawn where that figure puts it.
fn every_chart_follows_the_doubled_times(original: &Path, doubled: &Path) {
    let pages = html_pages(original);
    let (before, after) = (
        charts::charts_of(&original.join("target/book"), &pages),
        charts::charts_of(&doubled.join("target/book"), &html_pages(doubled)),
    );
    let sections: usize = pages
        .iter()
        .map(|page| {
            let html =
                std::fs::read_to_string(original.join("target/book").join(page)).expect("page");
            html.matches("<div class=\"kernelbook-lab kernelbook-recorded\"")
                .count()
        })
        .sum();
    assert!(sections >= 17, "only {sections} lab sections with results");
    // The GPUs compared chapter's charts stand beside no lab section; their bars of the GPU whose
    // recordings were doubled double, those of the other GPUs stay.
    let lab_charts = before
        .iter()
        .filter(|chart| !chart.id.starts_with("gpus-chart-"))
        .count();
    assert_eq!(lab_charts, sections, "a chart for every lab section");
    assert!(
        before.len() > lab_charts,
        "the GPUs compared chapter draws its charts"
    );
    assert_eq!(before.len(), after.len());
    for (was, now) in before.iter().zip(&after) {
        let place = format!("{} #{}", was.page, was.id);
        assert_eq!((&was.page, &was.id), (&now.page, &now.id));
        assert!(was.width > 0.0 && was.height > 0.0, "{place}: drawn empty");
        assert!(!was.marks.is_empty(), "{place}: no marks");
        assert_eq!(was.marks.len(), now.marks.len(), "{place}");
        let shown = SHOWN.rsplit('/').next().unwrap_or(SHOWN);
        for (a, b) in was.marks.iter().zip(&now.marks) {
            let other_gpu = was.id.starts_with("gpus-chart-") && a.series != shown;
            let expected = if other_gpu {
                a.value
            } else {
                charts::doubled(&a.field, a.value)
            };
            assert!(
                (b.value - expected).abs() <= expected.abs() * 1e-6,
                "{place}: a {} mark was {}, now {}, expected {expected}",
                a.field,
                a.value,
                b.value
            );
        }
        for (chart, mark) in [was, now]
            .into_iter()
            .flat_map(|c| c.marks.iter().map(move |m| (c, m)))
        {
            assert!(
                charts::drawn_where_it_says(chart, mark),
                "{place}: {} drawn at {}",
                mark.value,
                mark.drawn
            );
        }
    }
}

#[test]
fn a_figure_naming_no_lab_row_or_field_is_reported_with_file_and_line() {
    let chapter = "book/src/labs/lab2-transpose.md";
    let original = std::fs::read_to_string(repo().join(chapter)).expect("chapter");
    let directive = "{{#value transpose.naive.gbs}}";
    let line = original
        .lines()
        .position(|l| l.contains(directive))
        .expect("Lab 2 quotes the naive kernel's bandwidth")
        + 1;
    for (replacement, message) in [
        (
            "{{#value transposes.naive.gbs}}",
            "there is no lab `transposes` to take a figure from",
        ),
        (
            "{{#value transpose.naiv.gbs}}",
            "lab `transpose` has no variant `naiv`",
        ),
        ("{{#value transpose.naive.speed}}", "unknown field `speed`"),
        (
            "{{#value transpose.naive.gbs",
            "a figure directive is not closed with `}}` on its line",
        ),
    ] {
        let book = real_book();
        std::fs::write(
            book.path().join(chapter),
            original.replacen(directive, replacement, 1),
        )
        .expect("write");
        let output = kernelbook(book.path(), &["build", "--recorded"]);
        assert!(!output.status.success(), "{replacement}");
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(&format!("labs/lab2-transpose.md:{line}: {message}")),
            "{replacement}: {stderr}"
        );
    }
}

/// `kernelbook diagrams` lists every diagram with the model's numbers and, from the recordings,
/// the counters a diagram claims; `--check` fails where a claimed counter is missing.
#[test]
fn diagrams_lists_each_prediction_beside_the_recorded_counters() {
    let book = real_book();
    let output = kernelbook(book.path(), &["diagrams"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let naive = stdout
        .split("book/src/")
        .find(|entry| entry.contains("transpose_naive's store"))
        .unwrap_or_else(|| panic!("the naive transpose's store is listed: {stdout}"));
    assert!(
        naive.contains("model: 32 sectors per request (1024 B written) in 32 lines"),
        "{naive}"
    );
    assert!(
        naive.contains("global store sectors per request: model 32, Nsight Compute 32.00"),
        "{naive}"
    );
    assert!(
        naive.contains("The counters agree with the model"),
        "{naive}"
    );
    assert!(
        naive.contains("the L2 merged the partial-sector writes"),
        "{naive}"
    );
    assert!(stdout.contains("  warp-access  stride = 8\n    model: 32 sectors per request"));
    assert!(stdout.contains(
        "model: 2-way conflict: 2 wavefronts per request, 1 conflict; 16 of 32 banks used."
    ));

    // Lab 3's recording without its counters: the diagrams that claim them have none.
    let recorded = book.path().join(SHOWN).join("profile_transpose.json");
    let mut results =
        LabResults::from_json(&std::fs::read_to_string(&recorded).expect("read")).expect("parse");
    results.profile = None;
    std::fs::write(&recorded, results.to_json()).expect("write");
    let output = kernelbook(book.path(), &["diagrams", "--check"]);
    assert!(!output.status.success(), "--check fails");
    assert!(
        text(&output.stdout).contains("no counters: lab `profile_transpose` was recorded without Nsight Compute counters; on a GPU with Nsight Compute, `kernelbook profile profile_transpose` adds them to its recording"),
        "{}",
        text(&output.stdout)
    );
    assert!(text(&output.stderr).contains("claim counters that the recordings do not hold"));
}

/// `kernelbook profile` adds counters to a profiled lab's recording on a GPU; a lab without
/// `profile = true` is refused anywhere, and without a GPU the recording is left as it was.
#[test]
fn profile_refuses_an_unprofiled_lab_and_needs_a_gpu() {
    let book = real_book();
    let output = kernelbook(book.path(), &["profile", "hierarchy"]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("lab `hierarchy` is not profiled: set `profile = true`"),
        "{}",
        text(&output.stderr)
    );
    if cuda::driver_present() {
        skipped("SKIPPED profile without a GPU: this machine has a CUDA driver");
        return;
    }
    let recorded = book.path().join(SHOWN).join("drill_coalesce.json");
    let before = std::fs::read(&recorded).expect("read");
    let output = kernelbook(book.path(), &["profile", "drill_coalesce"]);
    assert!(!output.status.success());
    let stdout = text(&output.stdout);
    assert!(stdout.contains("not profiled: drill_coalesce:"), "{stdout}");
    assert!(stdout.contains("no CUDA driver found"), "{stdout}");
    assert_eq!(
        std::fs::read(&recorded).expect("read"),
        before,
        "the recording is untouched"
    );
}
