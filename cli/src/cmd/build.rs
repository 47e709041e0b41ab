//! `kernelbook build`: renders the book through mdBook's library with the kernelbook, KaTeX and
//! mermaid preprocessors registered in-process (each replaces the book.toml entry of the same
//! name, so no separately installed binary is needed). The book is built beside its folder and
//! swapped in when complete ([`crate::staging`]).

use crate::gpus::{DeviceArgs, SideBySide};
use crate::output::{self, say};
use crate::project::{Context, Project};
use crate::staging::Staging;
use crate::unchanged::Digest;
use anyhow::Context as _;
use kernelbook_core::results::LabResults;
use kernelbook_runner::engine::{Progress, StageLog, Traced};
use kernelbook_runner::{CountersPolicy, Mode, Runner};
use mdbook_driver::MDBook;
use mdbook_html::HtmlHandlebars;
use mdbook_kernelbook::KernelbookPreprocessor;
use mdbook_kernelbook::preprocessor::ResultSource;
use mdbook_renderer::{RenderContext, Renderer as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
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
    /// Collect no Nsight Compute counters: show those cached earlier, else the recording's
    /// where the kernels are unchanged (said so on the page); `kernelbook profile` adds them
    /// later (book.toml: `counters = false` under `[preprocessor.kernelbook]`).
    #[arg(long)]
    no_counters: bool,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let project = load(ctx, &args)?;
    let mode = if args.recorded {
        Mode::RecordedOnly
    } else {
        Mode::Auto
    };
    let counters = if args.no_counters || !counters_wanted(&project)? {
        CountersPolicy::Skip
    } else {
        CountersPolicy::Collect
    };
    // Numbers first: the book is written with every lab's numbers (the counters the cache
    // lacks marked as being collected), then the counters are collected, one Nsight Compute
    // session per lab, and the book is written again with them.
    let results: Arc<dyn ResultSource> = Arc::from(results(&project, &args.gpus, mode, counters));
    let out = render_with(project.book, &results, args.strict)?;
    let numbers = started.elapsed().as_secs_f64();
    let mut progress = Traced::from_env(StageLog);
    let collected = results.collect_counters(&mut progress);
    if collected == 0 {
        say!(
            &mut output::stdout(),
            "kernelbook: book written to {} in {numbers:.1} s",
            out.join("index.html").display(),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        &mut output::stdout(),
        "kernelbook: every number was in the book after {numbers:.1} s; counters of {collected} labs collected"
    )?;
    let out = render_with(load(ctx, &args)?.book, &results, args.strict)?;
    say!(
        &mut output::stdout(),
        "kernelbook: book written to {} in {:.1} s, counters included",
        out.join("index.html").display(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The book, with the folders the command line names.
fn load(ctx: &Context, args: &Args) -> anyhow::Result<Project> {
    let mut project = Project::load(ctx)?;
    if let Some(dir) = &args.recordings {
        project.read_recordings_from(&absolute(dir)?)?;
    }
    if let Some(dir) = &args.dest_dir {
        project.book.config.build.build_dir = project.writable(dir, "--dest-dir")?;
    }
    Ok(project)
}

/// book.toml's `counters` under `[preprocessor.kernelbook]` (true unless it says false).
fn counters_wanted(project: &Project) -> anyhow::Result<bool> {
    let key = format!("preprocessor.{}.counters", mdbook_kernelbook::NAME);
    let wanted: Option<bool> = project
        .book
        .config
        .get(&key)
        .with_context(|| format!("book.toml: `{key}` must be true or false"))?;
    Ok(wanted.unwrap_or(true))
}

/// Renders `book` from `results`.
fn render_with(
    book: MDBook,
    results: &Arc<dyn ResultSource>,
    strict: bool,
) -> anyhow::Result<PathBuf> {
    let progress = Box::new(Traced::from_env(StageLog));
    let kernelbook = KernelbookPreprocessor::with_results(Box::new(Arc::clone(results)), progress)
        .strict(strict);
    render(book, kernelbook)
}

/// Where the labs' results come from: the book's runner, or with `--devices` a runner per GPU
/// measuring side by side (without a GPU to select, the book's runner, which shows the
/// recordings). Numbers only: the counters are collected afterwards.
fn results(
    project: &Project,
    gpus: &DeviceArgs,
    mode: Mode,
    counters: CountersPolicy,
) -> Box<dyn ResultSource> {
    let numbers_first = |runner: Runner| Box::new(NumbersFirst(runner.with_counters(counters)));
    let Some(selection) = gpus.devices.as_ref().filter(|_| mode == Mode::Auto) else {
        return numbers_first(project.runner(mode));
    };
    match crate::gpus::runners(project, selection, mode) {
        Ok(gpus) => Box::new(SideBySide::new(
            gpus.into_iter()
                .map(|gpu| gpu.map_runner(|r| r.with_counters(counters)))
                .collect(),
        )),
        Err(err) => {
            output::notice(&format!("kernelbook: --devices: {err:#}"));
            numbers_first(project.runner(mode))
        }
    }
}

/// The book's runner, numbers first: [`ResultSource::outcomes`] measures every lab's numbers
/// and leaves the counters the cache lacks pending, and
/// [`ResultSource::collect_counters`] collects them.
struct NumbersFirst(Runner);

impl ResultSource for NumbersFirst {
    fn outcomes(
        &self,
        requests: &[kernelbook_runner::LabRequest<'_>],
        progress: &mut dyn Progress,
    ) -> Vec<kernelbook_runner::LabOutcome> {
        self.0.results(requests, progress)
    }

    fn recorded(&self, lab: &kernelbook_core::spec::LabSpec) -> Option<LabResults> {
        ResultSource::recorded(&self.0, lab)
    }

    fn collect_counters(&self, progress: &mut dyn Progress) -> usize {
        self.0.collect_counters(None, progress).len()
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
    let math = book.root.join(".kernelbook/math");
    book.with_preprocessor(crate::math_cache::CachedMath::new(
        mdbook_katex::preprocess::KatexProcessor,
        math,
    ));
    book.with_preprocessor(mdbook_mermaid::Mermaid);
    // Built beside the destination, then swapped in whole (crate::staging): a failed or
    // concurrent build never leaves half a book.
    let dest = book.root.join(&book.config.build.build_dir);
    let html_in_dest = html_dir(&book);
    let out = dest.join(&html_in_dest);
    if !only_html(&book) {
        let staging = Staging::beside(&dest)
            .with_context(|| format!("preparing to write the book to {}", dest.display()))?;
        book.config.build.build_dir = staging.path().to_path_buf();
        book.build().context("building the book")?;
        staging
            .commit()
            .with_context(|| format!("putting the book in {}", dest.display()))?;
        return Ok(out);
    }
    // The HTML renderer alone: run here, so that a book unchanged since the last build (the
    // same preprocessed chapters, configuration, theme and binary) is not rendered again.
    let renderer = HtmlHandlebars::new();
    let (preprocessed, context) = book
        .preprocess_book(&renderer)
        .context("building the book")?;
    let digest = Digest::of(
        &preprocessed,
        &book.config,
        &book.root,
        &book.source_dir(),
        &book.theme_dir(),
    );
    if digest.as_ref().is_ok_and(|d| d.rendered_in(&out)) {
        return Ok(out);
    }
    let staging = Staging::beside(&dest)
        .with_context(|| format!("preparing to write the book to {}", dest.display()))?;
    let staged = staging.path().join(&html_in_dest);
    let mut render = RenderContext::new(
        book.root.clone(),
        preprocessed,
        book.config.clone(),
        staged.clone(),
    );
    render
        .chapter_titles
        .extend(context.chapter_titles.borrow_mut().drain());
    renderer
        .render(&render)
        .context("building the book: rendering failed")?;
    if let Ok(digest) = &digest {
        digest.keep_in(&staged)?;
    }
    staging
        .commit()
        .with_context(|| format!("putting the book in {}", dest.display()))?;
    Ok(out)
}

/// Whether the book's only renderer is mdBook's HTML one (none configured means that too).
fn only_html(book: &MDBook) -> bool {
    book.config
        .outputs::<serde::de::IgnoredAny>()
        .is_ok_and(|outputs| outputs.keys().all(|name| name == "html"))
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
