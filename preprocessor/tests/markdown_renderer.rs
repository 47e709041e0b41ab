//! A book built for a renderer other than HTML (mdBook's `markdown`, epub, pdf, linkcheck): the
//! `mdbook-kernelbook` binary gives every directive as plain markdown, no directive left raw and
//! no HTML table or SVG, the lab's rows a pipe table of the same figures as the HTML's.

use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use mdbook_kernelbook::render::lab_view;
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

/// A one-chapter book in a temp dir: the transpose fixture lab with its recorded results, shown
/// at the top level and in a block quote, a figure in the prose, a diagram and the GPUs compared.
fn book_for(renderer: &str) -> (tempfile::TempDir, PreprocessorContext, Book) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("labs/recorded/nvidia-h200-test")).expect("labs");
    std::fs::copy(
        fixtures().join("transpose.toml"),
        dir.path().join("labs/transpose.toml"),
    )
    .expect("lab");
    std::fs::copy(
        fixtures().join("transpose.results.json"),
        dir.path()
            .join("labs/recorded/nvidia-h200-test/transpose.json"),
    )
    .expect("results");
    let config =
        Config::from_str("[book]\nsrc = \"src\"\n[preprocessor.kernelbook]\nlabs = \"labs\"\n")
            .expect("config");
    let ctx = PreprocessorContext::new(dir.path().to_path_buf(), config, renderer.into());
    let mut text = String::from("# Transpose\n\n");
    for name in [
        "copy_tile",
        "transpose_naive",
        "transpose_tiled",
        "transpose_padded",
    ] {
        text.push_str(&format!(
            "```cuda kernel={name}\nextern \"C\" __global__ void {name}() {{}}\n```\n\n"
        ));
    }
    text.push_str("{{#lab transpose}}\n\n");
    text.push_str("The tiled kernel is {{#ratio transpose.naive transpose.tiled}} faster.\n\n");
    text.push_str("> Quoted:\n> {{#lab transpose}}\n\n");
    text.push_str("{{#warp-access index=\"t * stride\" stride=[1, 2]}}\n\n");
    text.push_str("{{#gpus-compared transpose}}\n");
    let chapter = Chapter::new("Transpose", text, "transpose.md", vec![]);
    (
        dir,
        ctx,
        Book::new_with_items(vec![BookItem::Chapter(chapter)]),
    )
}

/// The chapter as the binary gives it back, and what it said on stderr.
fn preprocess(ctx: &PreprocessorContext, book: &Book) -> (String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mdbook-kernelbook"))
        .env("KERNELBOOK_RECORDED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let input = serde_json::to_vec(&(ctx, book)).expect("json");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write");
    let output = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "stderr: {stderr}");
    let book: Book = serde_json::from_slice(&output.stdout).expect("a book comes back");
    let content = book.chapters().next().expect("chapter").content.clone();
    (content, stderr)
}

#[test]
fn the_markdown_renderer_gets_pipe_tables_and_no_html() {
    let (_dir, ctx, book) = book_for("markdown");
    let (content, _) = preprocess(&ctx, &book);
    for raw in ["{{#", "<table", "<svg", "<figure", "<span", "<p ", "<div"] {
        assert!(!content.contains(raw), "`{raw}` in:\n{content}");
    }
    // The rows of the HTML table's view, each a row of a pipe table (twice: the quoted one too).
    let text = std::fs::read_to_string(fixtures().join("transpose.results.json")).expect("read");
    let results = LabResults::from_json(&text).expect("parse");
    let lab = LabSpec::load(&fixtures().join("transpose.toml")).expect("lab");
    let view = lab_view(
        &lab,
        &LabOutcome::Recorded {
            results,
            why: String::new(),
            stale_kernels: vec![],
            compile_errors: vec![],
        },
    );
    assert!(view.rows.len() >= 4);
    for row in &view.rows {
        let line = format!(
            "| {} | {} | {} | {} | {} |",
            row.label, row.access, row.gbs, row.pct_ceiling, row.pct_peak
        );
        assert!(!row.gbs.is_empty(), "{row:?}");
        assert_eq!(content.matches(&line).count(), 2, "`{line}` in:\n{content}");
        assert_eq!(
            content.matches(&format!("> {line}")).count(),
            1,
            "{content}"
        );
    }
    assert!(
        content.contains("| Variant | Access pattern | Effective GB/s |"),
        "{content}"
    );
    assert!(
        content.contains("The HTML book draws a chart here:"),
        "{content}"
    );
    assert!(
        content.contains("The HTML book draws a diagram here:"),
        "{content}"
    );
    assert!(
        content.contains("*Recorded* on **NVIDIA H200** (sm_90, 132 SMs"),
        "the provenance line: {content}"
    );
    assert!(
        content.contains(
            "| Variant | NVIDIA H200 (`nvidia-h200-test`) GB/s | % of peak | % of ceiling |"
        ),
        "the GPUs compared: {content}"
    );
    assert!(
        content.contains("*Kernel `copy_tile` · "),
        "the kernel's caption: {content}"
    );
    assert!(content.contains("```cpp\nextern"), "{content}");
}

#[test]
fn the_html_renderer_still_gets_html() {
    let (_dir, ctx, book) = book_for("html");
    let (content, _) = preprocess(&ctx, &book);
    assert!(content.contains("<table class=\"kernelbook-results\">"));
    assert!(content.contains("<svg"));
    assert!(!content.contains("{{#"));
}

#[test]
fn a_different_mdbook_is_warned_of_on_stderr_once() {
    let (_dir, mut ctx, book) = book_for("markdown");
    let (_, quiet) = preprocess(&ctx, &book);
    assert!(!quiet.contains("was built against mdBook"), "{quiet}");
    ctx.mdbook_version = "0.4.0".into();
    let (_, stderr) = preprocess(&ctx, &book);
    assert_eq!(
        stderr.matches("was built against mdBook").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("run by mdBook 0.4.0"), "{stderr}");
}
