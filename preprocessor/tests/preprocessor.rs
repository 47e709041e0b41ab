//! The preprocessor from the outside: rendering against golden files, and the stock-mdBook
//! protocol of the `mdbook-kernelbook` binary.
//!
//! Set `KERNELBOOK_BLESS=1` to rewrite the golden files after an intended change.

use kernelbook_core::results::{FailureStage, LabResults, Mismatch, Outcome};
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use mdbook_kernelbook::render::{Templates, lab_view};
use mdbook_preprocessor::PreprocessorContext;
use mdbook_preprocessor::book::{Book, BookItem, Chapter};
use mdbook_preprocessor::config::Config;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn fixture_lab() -> LabSpec {
    LabSpec::load(&fixtures().join("transpose.toml")).expect("fixture lab")
}

fn fixture_results() -> LabResults {
    let text = std::fs::read_to_string(fixtures().join("transpose.results.json"))
        .expect("fixture results");
    LabResults::from_json(&text).expect("fixture results parse")
}

fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("KERNELBOOK_BLESS").is_some() {
        std::fs::write(&path, actual).expect("bless");
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {}", path.display()));
    assert_eq!(
        actual,
        expected,
        "rendering differs from {}; set KERNELBOOK_BLESS=1 if intended",
        path.display()
    );
}

#[test]
fn recorded_results_render_as_the_golden_table() {
    let outcome = LabOutcome::Recorded {
        results: fixture_results(),
        why: "no CUDA driver found".into(),
        stale_kernels: vec![],
        compile_errors: vec![],
    };
    let html = Templates::new()
        .render_lab(&lab_view(&fixture_lab(), &outcome))
        .expect("render");
    check_golden("transpose-recorded.html", &html);
    assert!(
        !html.lines().any(|l| l.trim().is_empty()),
        "no blank line may end the HTML block"
    );
}

#[test]
fn the_table_figures_come_from_the_results() {
    let results = fixture_results();
    let view = lab_view(
        &fixture_lab(),
        &LabOutcome::Measured {
            results: results.clone(),
            cached: false,
        },
    );
    let ceiling = results.ceiling_gbs().expect("ceiling measured");
    for (row, variant) in view.rows.iter().zip(&results.variants) {
        let gbs = variant.effective_gbs().expect("measured");
        assert_eq!(row.gbs, format!("{gbs:.0}"));
        assert_eq!(row.pct_ceiling, format!("{:.1} %", 100.0 * gbs / ceiling));
    }
    assert_eq!(view.origin, "Measured live on this machine");
}

#[test]
fn failures_show_the_reason_and_no_bandwidth_and_everything_is_escaped() {
    let mut results = fixture_results();
    results.variants[2].outcome = Outcome::WrongResult {
        mismatch: Mismatch {
            index: 8191,
            expected: "0.25".into(),
            actual: "NaN".into(),
            count: 3,
        },
    };
    results.variants[3].outcome = Outcome::Failed {
        stage: FailureStage::Compile,
        message: "transpose_tiled.cu(3): error: expected a \";\" near <script>alert(1)</script>"
            .into(),
    };
    results.provenance.device.name = "GPU <b>&</b>".into();
    let html = Templates::new()
        .render_lab(&lab_view(
            &fixture_lab(),
            &LabOutcome::Measured {
                results,
                cached: true,
            },
        ))
        .expect("render");
    assert!(html.contains("<strong>FAIL</strong>: wrong result at index 8191: expected 0.25, got NaN (3 of the elements differ)"));
    assert!(html.contains("<pre>transpose_tiled.cu(3): error: expected a &quot;;&quot; near &lt;script&gt;alert(1)&lt;/script&gt;</pre>"), "{html}");
    assert!(
        html.contains("did not compile: the compiler&#x27;s message is below the table"),
        "{html}"
    );
    assert!(!html.contains("<script>"));
    assert!(html.contains("GPU &lt;b&gt;&amp;&lt;/b&gt;"));
    assert!(html.contains("cached from an earlier build"));
}

#[test]
fn missing_results_say_why() {
    let html = Templates::new()
        .render_lab(&lab_view(
            &fixture_lab(),
            &LabOutcome::Missing {
                why: "no GPU & no recording".into(),
            },
        ))
        .expect("render");
    check_golden("transpose-missing.html", &html);
}

#[test]
fn stale_recordings_are_flagged() {
    let view = lab_view(
        &fixture_lab(),
        &LabOutcome::Recorded {
            results: fixture_results(),
            why: "no CUDA driver found".into(),
            stale_kernels: vec!["transpose_tiled".into()],
            compile_errors: vec![],
        },
    );
    assert!(
        view.notes
            .iter()
            .any(|n| n.contains("predate edits to `transpose_tiled`")),
        "{:?}",
        view.notes
    );
}

/// A one-chapter book in a temp dir whose lab is the fixture, with the fixture's results
/// recorded.
fn fixture_book() -> (tempfile::TempDir, PreprocessorContext, Book) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("labs/recorded")).expect("labs");
    std::fs::copy(
        fixtures().join("transpose.toml"),
        dir.path().join("labs/transpose.toml"),
    )
    .expect("lab");
    std::fs::copy(
        fixtures().join("transpose.results.json"),
        dir.path().join("labs/recorded/transpose.json"),
    )
    .expect("results");
    let config =
        Config::from_str("[book]\nsrc = \"src\"\n[preprocessor.kernelbook]\nlabs = \"labs\"\n")
            .expect("config");
    let ctx = PreprocessorContext::new(dir.path().to_path_buf(), config, "html".into());
    let mut kernels = String::new();
    for name in [
        "copy_tile",
        "transpose_naive",
        "transpose_tiled",
        "transpose_padded",
    ] {
        kernels.push_str(&format!(
            "```cuda kernel={name}\nextern \"C\" __global__ void {name}() {{}}\n```\n\n"
        ));
    }
    let chapter = Chapter::new(
        "Transpose",
        format!("# Transpose\n\n{kernels}{{{{#lab transpose}}}}\n"),
        "transpose.md",
        vec![],
    );
    (
        dir,
        ctx,
        Book::new_with_items(vec![BookItem::Chapter(chapter)]),
    )
}

fn run_binary(input: &[u8]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mdbook-kernelbook"))
        .env("KERNELBOOK_RECORDED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    child.wait_with_output().expect("wait")
}

#[test]
fn the_binary_speaks_mdbooks_preprocessor_protocol() {
    let status = |renderer: &str| {
        Command::new(env!("CARGO_BIN_EXE_mdbook-kernelbook"))
            .args(["supports", renderer])
            .status()
            .expect("run")
            .success()
    };
    assert!(status("html"));
    assert!(status("latex"), "any other renderer gets markdown");

    let (_dir, ctx, book) = fixture_book();
    let input = serde_json::to_vec(&(&ctx, &book)).expect("json");
    let output = run_binary(&input);
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let book: Book = serde_json::from_slice(&output.stdout).expect("a book comes back");
    let content = &book.chapters().next().expect("chapter").content;
    assert!(
        content.contains("class=\"kernelbook-results\""),
        "{content}"
    );
    assert!(!content.contains("{{#lab"));
    assert!(
        content.contains("```cpp\nextern \"C\" __global__ void copy_tile"),
        "kernel blocks are highlighted as C++"
    );
}

#[test]
fn the_binary_reports_a_bad_directive_with_file_and_line() {
    let (_dir, ctx, mut book) = fixture_book();
    book.for_each_chapter_mut(|ch| ch.content.push_str("\n{{#lab nonesuch}}\n"));
    let output = run_binary(&serde_json::to_vec(&(&ctx, &book)).expect("json"));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("src/transpose.md:21: there is no lab `nonesuch`"),
        "{stderr}"
    );
}

#[test]
fn a_noisy_measurement_is_marked_in_the_table_and_explained() {
    let mut results = fixture_results();
    if let Outcome::Measured { noisy, .. } = &mut results.variants[1].outcome {
        *noisy = true;
    }
    let view = lab_view(
        &fixture_lab(),
        &LabOutcome::Measured {
            results,
            cached: false,
        },
    );
    assert!(view.rows[1].noisy && !view.rows[0].noisy);
    let html = Templates::new().render_lab(&view).expect("render");
    assert_eq!(
        html.matches("title=\"relative spread above the noise threshold\">noisy</strong>")
            .count(),
        1
    );
    assert!(
        view.notes.iter().any(|n| n.contains("noisy")),
        "{:?}",
        view.notes
    );
}

/// Runs the binary with `args` and `env`, stdin a pipe that stays open and is never written
/// to: returns its output if it ends within 20 s by itself, or fails the test.
fn run_with_stdin_open(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mdbook-kernelbook"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("spawn");
    let stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("mdbook-kernelbook {args:?} is still waiting for stdin after 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(stdin);
    child.wait_with_output().expect("output")
}

#[test]
fn help_and_version_are_answered_without_reading_stdin() {
    for flag in ["--help", "-h"] {
        let output = run_with_stdin_open(&[flag], &[]);
        assert!(output.status.success(), "{flag}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("mdbook-kernelbook supports RENDERER"),
            "{stdout}"
        );
    }
    let output = run_with_stdin_open(&["--version"], &[]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("mdbook-kernelbook {}", env!("CARGO_PKG_VERSION"))
    );
    for bad in [&["--frobnicate"][..], &["supports"], &["build", "now"]] {
        let output = run_with_stdin_open(bad, &[]);
        assert_eq!(output.status.code(), Some(2), "{bad:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.contains("see `mdbook-kernelbook --help`"),
            "{stderr}"
        );
    }
}

#[test]
fn a_bad_kernelbook_device_is_reported_in_one_line() {
    let output = run_with_stdin_open(&[], &[("KERNELBOOK_DEVICE", "nvidia")]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim_end(),
        "mdbook-kernelbook: KERNELBOOK_DEVICE: unknown device `nvidia` (use auto, cuda or hip)"
    );
}
