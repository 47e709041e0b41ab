//! `kernelbook build`: renders the book through mdBook's library with the kernelbook, KaTeX and
//! mermaid preprocessors registered in-process (each replaces the book.toml entry of the same
//! name, so no separately installed binary is needed). The book is built beside its folder and
//! swapped in when complete ([`crate::staging`]).

use crate::output::{self, say};
use crate::project::{Context, Project};
use crate::staging::Staging;
use anyhow::Context as _;
use kernelbook_runner::Mode;
use kernelbook_runner::engine::StageLog;
use mdbook_driver::MDBook;
use mdbook_kernelbook::KernelbookPreprocessor;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show the recorded results even if this machine has a GPU.
    #[arg(long)]
    recorded: bool,
    /// Fail the build when a kernel does not compile, run or verify, instead of showing the
    /// problem in the chapter (book.toml: `strict = true` under `[preprocessor.kernelbook]`).
    #[arg(long)]
    strict: bool,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let project = Project::load(ctx)?;
    let mode = if args.recorded {
        Mode::RecordedOnly
    } else {
        Mode::Auto
    };
    let runner = project.runner(mode);
    let kernelbook = KernelbookPreprocessor::new(runner, Box::new(StageLog)).strict(args.strict);
    let out = render(project.book, kernelbook)?;
    say!(
        &mut output::stdout(),
        "kernelbook: book written to {} in {:.1} s",
        out.join("index.html").display(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Renders `book` with kernelbook's preprocessor (`kernelbook`), KaTeX and mermaid into its
/// build folder, swapped in whole; returns the folder of the HTML (where index.html is).
pub fn render(mut book: MDBook, kernelbook: KernelbookPreprocessor) -> anyhow::Result<PathBuf> {
    book.with_preprocessor(kernelbook);
    // Math is rendered to HTML at build time and diagrams by the vendored mermaid script, so the
    // book needs no network; book.toml configures both.
    book.with_preprocessor(mdbook_katex::preprocess::KatexProcessor);
    book.with_preprocessor(mdbook_mermaid::Mermaid);
    // Built beside the destination, then swapped in whole (crate::staging): a failed or
    // concurrent build never leaves half a book.
    let dest = book.root.join(&book.config.build.build_dir);
    let staging = Staging::beside(&dest)
        .with_context(|| format!("preparing to write the book to {}", dest.display()))?;
    let html_in_dest = html_dir(&book);
    book.config.build.build_dir = staging.path().to_path_buf();
    book.build().context("building the book")?;
    let out = staging.dest().join(html_in_dest);
    staging
        .commit()
        .with_context(|| format!("putting the book in {}", dest.display()))?;
    Ok(out)
}

/// Where in the build folder the HTML renderer writes: the folder itself, or `html/` when the
/// book has several renderers.
pub fn html_dir(book: &MDBook) -> PathBuf {
    let dest = book.root.join(&book.config.build.build_dir);
    book.build_dir_for("html")
        .strip_prefix(&dest)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}
