//! `kernelbook build`: renders the book through mdBook's library with the kernelbook, KaTeX and
//! mermaid preprocessors registered in-process (each replaces the book.toml entry of the same
//! name, so no separately installed binary is needed). The book is built beside its folder and
//! swapped in when complete ([`crate::staging`]).

use crate::gpus::{DeviceArgs, SideBySide};
use crate::output::{self, say};
use crate::project::{Context, Project};
use crate::staging::Staging;
use anyhow::Context as _;
use kernelbook_runner::Mode;
use kernelbook_runner::engine::StageLog;
use mdbook_driver::MDBook;
use mdbook_kernelbook::KernelbookPreprocessor;
use mdbook_kernelbook::preprocessor::ResultSource;
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
    #[command(flatten)]
    gpus: DeviceArgs,
    /// Read the recordings (a folder per GPU) from DIR instead of book.toml's `recordings`:
    /// what the Slurm merge job builds from.
    #[arg(long, value_name = "DIR")]
    recordings: Option<PathBuf>,
    /// Write the book to DIR instead of book.toml's `build-dir`.
    #[arg(long, value_name = "DIR")]
    dest_dir: Option<PathBuf>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut project = Project::load(ctx)?;
    if let Some(dir) = &args.recordings {
        project.read_recordings_from(&absolute(dir)?)?;
    }
    if let Some(dir) = &args.dest_dir {
        project.book.config.build.build_dir = absolute(dir)?;
    }
    let mode = if args.recorded {
        Mode::RecordedOnly
    } else {
        Mode::Auto
    };
    let results = results(&project, &args.gpus, mode);
    let kernelbook =
        KernelbookPreprocessor::with_results(results, Box::new(StageLog)).strict(args.strict);
    let out = render(project.book, kernelbook)?;
    say!(
        &mut output::stdout(),
        "kernelbook: book written to {} in {:.1} s",
        out.join("index.html").display(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Where the labs' results come from: the book's runner, or with `--devices` a runner per GPU
/// measuring side by side (without a GPU to select, the book's runner, which shows the
/// recordings).
fn results(project: &Project, gpus: &DeviceArgs, mode: Mode) -> Box<dyn ResultSource> {
    let Some(selection) = gpus.devices.as_ref().filter(|_| mode == Mode::Auto) else {
        return Box::new(project.runner(mode));
    };
    match crate::gpus::runners(project, selection, mode) {
        Ok(gpus) => Box::new(SideBySide::new(gpus)),
        Err(err) => {
            output::notice(&format!("kernelbook: --devices: {err:#}"));
            Box::new(project.runner(mode))
        }
    }
}

/// `path` from the current folder, as the book's settings need (they are read from its root).
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot find {}", path.display()))
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
