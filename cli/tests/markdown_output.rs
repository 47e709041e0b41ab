//! The real book built by `kernelbook build` with mdBook's markdown renderer beside the HTML
//! one (`[output.markdown]`): the markdown chapters hold every lab as a pipe table, and no
//! directive, HTML table or SVG. No GPU is needed: the recorded results are shown.

use kernelbook_core::results::LabResults;
use kernelbook_runner::backend::cuda;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository (see `book.rs`).
fn repo() -> PathBuf {
    match std::env::var_os("KERNELBOOK_REPO") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root")
            .to_path_buf(),
    }
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

/// Every `.md` file under `dir`, with its text.
fn markdown_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            found.extend(markdown_files(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).expect("chapter");
            found.push((path, text));
        }
    }
    found
}

#[test]
fn the_markdown_renderer_gets_the_labs_as_pipe_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let book_toml = std::fs::read_to_string(repo().join("book.toml")).expect("book.toml");
    std::fs::write(
        dir.path().join("book.toml"),
        format!("{book_toml}\n[output.markdown]\n"),
    )
    .expect("book.toml");
    copy_dir(&repo().join("book"), &dir.path().join("book"));
    copy_dir(&repo().join("labs"), &dir.path().join("labs"));
    let mut args = vec![
        "--root",
        dir.path().to_str().expect("utf-8 temp dir"),
        "build",
    ];
    if cuda::driver_present() {
        args.push("--recorded");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .args(&args)
        .output()
        .expect("run kernelbook");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "build failed: {stderr}");
    let out = dir.path().join("target/book/markdown");
    let chapters = markdown_files(&out);
    assert!(
        chapters.len() > 5,
        "the markdown chapters under {}",
        out.display()
    );
    for (path, text) in &chapters {
        for raw in ["{{#", "<table", "<svg"] {
            assert!(!text.contains(raw), "{}: `{raw}`", path.display());
        }
    }
    let page = std::fs::read_to_string(out.join("labs/lab2-transpose.md")).expect("lab 2");
    let recorded =
        std::fs::read_to_string(repo().join("labs/recorded/nvidia-h200-882b8b4e/transpose.json"))
            .expect("recorded");
    let results = LabResults::from_json(&recorded).expect("recorded results parse");
    assert!(
        page.contains("| Variant | Access pattern | Effective GB/s |"),
        "{page}"
    );
    for variant in &results.variants {
        let gbs = variant
            .effective_gbs()
            .expect("recorded variants are measured");
        assert!(
            page.contains(&format!(" | {gbs:.0} | ")),
            "lab 2 shows {} at {gbs:.0} GB/s:\n{page}",
            variant.name
        );
    }
    assert!(page.contains(&results.provenance.device.name));
}
