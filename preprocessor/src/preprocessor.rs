//! The mdBook preprocessor: scans the book, loads the labs, gets each lab's results from the
//! runner and replaces every `{{#lab NAME}}` with the rendered results, and every
//! `{{#warp-access ...}}` and `{{#banks ...}}` with its diagram ([`crate::diagram`]).

use crate::figures::{self, FigureDirective};
use crate::include::{self, Annotated};
use crate::markdown::Output;
use crate::render::{LabView, Templates, lab_view_beside, planned_view};
use crate::scan::{BookIndex, ChapterScan, Origins, Place, ScanError, continuation_prefix};
use anyhow::{Context, bail};
use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_core::textfile::{MOST_BYTES, read_text};
use kernelbook_core::{KernelSource, Language};
use kernelbook_runner::engine::Progress;
use kernelbook_runner::{LabOutcome, LabRequest, Runner};
use mdbook_preprocessor::book::{Book, BookItem};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::config::{NAME, labs_dir};
pub use crate::labs::{Labs, load_labs};

/// Where the preprocessor gets the results of the labs a build shows: the [`Runner`] (cache,
/// GPU, recording) by default. `kernelbook serve` gives its own, which never waits for a
/// measurement during a build: it shows what is known and measures the rest afterwards.
pub trait ResultSource: Send + Sync {
    /// One outcome per request, in the same order.
    fn outcomes(&self, requests: &[LabRequest<'_>], progress: &mut dyn Progress)
    -> Vec<LabOutcome>;

    /// The book's recording of `lab`, shown beside a live measurement on another GPU; `None`
    /// where there is none (or it cannot be trusted).
    fn recorded(&self, _lab: &LabSpec) -> Option<LabResults> {
        None
    }

    /// The other GPUs of this machine measured in this build (`kernelbook build --devices`),
    /// after [`outcomes`](Self::outcomes): columns of the `{{#gpus-compared}}` chapter beside
    /// the recorded GPUs and the GPU whose outcomes the chapters show.
    fn other_gpus(&self) -> Vec<crate::gpus::view::GpuColumn> {
        Vec::new()
    }

    /// Collects the counters that [`outcomes`](Self::outcomes) left pending (a source that
    /// gives numbers first); returns how many labs got counters, so that the caller knows to
    /// build the book again.
    fn collect_counters(&self, _progress: &mut dyn Progress) -> usize {
        0
    }
}

/// The runner as a stock `mdbook build` uses it, in one pass: every lab's numbers, then the
/// counters the cache lacks, then the outcomes with both. (`kernelbook build` writes the book
/// once with the numbers, and again when the counters are in.)
impl ResultSource for Runner {
    fn outcomes(
        &self,
        requests: &[LabRequest<'_>],
        progress: &mut dyn Progress,
    ) -> Vec<LabOutcome> {
        let outcomes = self.results(requests, progress);
        if self.pending_counters().is_empty() {
            return outcomes;
        }
        self.collect_counters(None, progress);
        self.results(requests, progress)
    }

    fn recorded(&self, lab: &LabSpec) -> Option<LabResults> {
        match Runner::recorded(self).get(lab) {
            Ok(results) => results,
            Err(distrust) => {
                eprintln!("kernelbook: warning: {distrust}");
                None
            }
        }
    }
}

impl<T: ResultSource + ?Sized> ResultSource for std::sync::Arc<T> {
    fn outcomes(
        &self,
        requests: &[LabRequest<'_>],
        progress: &mut dyn Progress,
    ) -> Vec<LabOutcome> {
        (**self).outcomes(requests, progress)
    }

    fn recorded(&self, lab: &LabSpec) -> Option<LabResults> {
        (**self).recorded(lab)
    }

    fn other_gpus(&self) -> Vec<crate::gpus::view::GpuColumn> {
        (**self).other_gpus()
    }

    fn collect_counters(&self, progress: &mut dyn Progress) -> usize {
        (**self).collect_counters(progress)
    }
}

/// Runs kernelbook inside an mdBook build.
pub struct KernelbookPreprocessor {
    results: Box<dyn ResultSource>,
    templates: Templates,
    progress: Mutex<Box<dyn Progress + Send>>,
    strict: bool,
}

impl std::fmt::Debug for KernelbookPreprocessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelbookPreprocessor")
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

impl KernelbookPreprocessor {
    pub fn new(runner: Runner, progress: Box<dyn Progress + Send>) -> Self {
        Self::with_results(Box::new(runner), progress)
    }

    /// A preprocessor that asks `results` for the labs' outcomes.
    pub fn with_results(
        results: Box<dyn ResultSource>,
        progress: Box<dyn Progress + Send>,
    ) -> Self {
        KernelbookPreprocessor {
            results,
            templates: Templates::new(),
            progress: Mutex::new(progress),
            strict: false,
        }
    }

    /// Fails the build on any kernel that did not compile, run or verify, instead of showing
    /// the problem in the chapter (also `strict = true` in book.toml).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// Checks that every lab the book shows names only kernels the book defines.
pub fn check_kernel_refs(labs: &BTreeMap<String, LabSpec>, index: &BookIndex) -> Vec<String> {
    labs.values()
        .flat_map(|lab| {
            lab.kernel_refs()
                .into_iter()
                .filter(|(kernel, _)| !index.kernels.contains_key(*kernel))
                .map(|(kernel, line)| {
                    let checks = std::iter::once(&lab.check)
                        .chain(lab.variants.iter().filter_map(|v| v.check.as_ref()));
                    let block = if checks.filter_map(|c| c.python_block()).any(|b| b == kernel) {
                        format!(
                            "the NumPy reference `{kernel}`, which no ```python reference={kernel}"
                        )
                    } else {
                        format!("kernel `{kernel}`, which no ```cuda kernel=...")
                    };
                    format!(
                        "{}:{line}: lab `{}` names {block} block in the book defines",
                        lab.file.display(),
                        lab.name
                    )
                })
        })
        .collect()
}

/// Whether a book's chapters still hold their `{{#include}}`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Includes {
    /// As written (`MDBook::load`): they are expanded here, as mdBook's `links` will.
    Unexpanded,
    /// Expanded by mdBook's `links` already (the preprocessor runs after it).
    Expanded,
}

/// Everything the book defines, checked: its kernels (scanned from `book`'s chapters, shown
/// under `src_dir`, read from `root`) and its labs (from `labs_dir`), with every lab naming only
/// kernels the book has. Every problem found is reported, each with its file and line.
pub fn load_book_parts(
    book: &Book,
    root: &Path,
    src_dir: &Path,
    labs_dir: &Path,
    includes: Includes,
) -> anyhow::Result<(BookIndex, Labs)> {
    if book.chapters().next().is_none() {
        bail!(
            "{}: it lists no chapter; list them as `- [Title](file.md)`, one a line",
            src_dir.join("SUMMARY.md").display()
        );
    }
    let index = index_book_at(book, root, src_dir, includes).map_err(|errors| {
        anyhow::anyhow!(
            "{}",
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    })?;
    let labs = load_labs(labs_dir)?;
    let errors = check_kernel_refs(&labs.ready, &index);
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    Ok((index, labs))
}

/// Scans the chapters of `book` as they are (paths shown under the book's source folder),
/// without looking at `{{#include}}`s.
pub fn index_book(book: &Book, src_dir: &Path) -> Result<BookIndex, Vec<ScanError>> {
    let chapters: Vec<(PathBuf, &str)> = book
        .chapters()
        .filter_map(|ch| {
            let path = ch.source_path.as_ref().or(ch.path.as_ref())?;
            Some((src_dir.join(path), ch.content.as_str()))
        })
        .collect();
    BookIndex::build(chapters.iter().map(|(p, c)| (p.as_path(), *c)))
}

/// A chapter to scan: the path it is shown under, the text to scan, and where that text came
/// from (`None`: all from the chapter, line for line).
type ChapterText = (PathBuf, String, Option<Annotated>);

/// Scans the chapters of `book` with their `{{#include}}`s expanded, each kernel block and
/// directive located in the file it was written in (an included file's own line). Where the
/// expansion mdBook made cannot be repeated line for line, locations are lines of the expanded
/// chapter, and a warning says so.
pub fn index_book_at(
    book: &Book,
    root: &Path,
    src_dir: &Path,
    includes: Includes,
) -> Result<BookIndex, Vec<ScanError>> {
    let chapters: Vec<ChapterText> = book
        .chapters()
        .filter_map(|ch| {
            let path = ch.source_path.as_ref().or(ch.path.as_ref())?;
            Some(chapter_text(
                &root.join(src_dir).join(path),
                &src_dir.join(path),
                &ch.content,
                includes,
            ))
        })
        .collect();
    let unreadable = unreadable_includes(book, root, src_dir, includes);
    let index = BookIndex::build_lines(chapters.iter().map(|(p, c, expanded)| {
        let origins = expanded.as_ref().map(|x| Origins {
            lines: &x.lines,
            escaped: &x.escaped,
        });
        (p.as_path(), c.as_str(), origins)
    }));
    match (index, unreadable.is_empty()) {
        (Ok(index), true) => Ok(index),
        (Ok(_), false) => Err(unreadable),
        (Err(errors), _) => Err(unreadable.into_iter().chain(errors).collect()),
    }
}

/// Every `{{#include}}` of the book's chapters, as written, that names no readable text file
/// ([`include::unreadable_includes`]).
fn unreadable_includes(
    book: &Book,
    root: &Path,
    src_dir: &Path,
    includes: Includes,
) -> Vec<ScanError> {
    let parent = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut errors = Vec::new();
    for ch in book.chapters() {
        let Some(path) = ch.source_path.as_ref().or(ch.path.as_ref()) else {
            continue;
        };
        let disk = root.join(src_dir).join(path);
        let written = match includes {
            Includes::Unexpanded => ch.content.clone(),
            Includes::Expanded => match read_text(&disk, MOST_BYTES) {
                Ok(text) => text,
                Err(_) => continue,
            },
        };
        let found = include::unreadable_includes(&written, &src_dir.join(path), &parent(&disk));
        errors.extend(
            found
                .into_iter()
                .map(|(location, message)| ScanError { location, message }),
        );
    }
    errors
}

/// What to scan of one chapter whose file is `disk` (shown as `shown`) and whose content is
/// `content`.
fn chapter_text(disk: &Path, shown: &Path, content: &str, includes: Includes) -> ChapterText {
    let parent = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
    let expand = |written: &str| {
        include::expand(
            &Annotated::of_file(written, shown),
            &parent(disk),
            &parent(shown),
        )
    };
    match includes {
        Includes::Unexpanded => match expand(content) {
            Some(expanded) => (shown.to_path_buf(), expanded.text.clone(), Some(expanded)),
            None => (shown.to_path_buf(), content.to_string(), None),
        },
        Includes::Expanded => {
            let written = read_text(disk, MOST_BYTES).ok();
            let lines = match written.as_deref() {
                None => None,
                Some(written) if written == content => None,
                Some(written) => match expand(written) {
                    Some(expanded) if expanded.text == content => Some(expanded),
                    _ => {
                        eprintln!(
                            "kernelbook: warning: {}: the chapter's {{{{#include}}}}s could not be followed line for line; \
                             places in it are given as lines of the chapter with its includes expanded",
                            shown.display()
                        );
                        None
                    }
                },
            };
            (shown.to_path_buf(), content.to_string(), lines)
        }
    }
}

impl KernelbookPreprocessor {
    /// Whether problems fail the build: `strict(true)` or `strict = true` in book.toml.
    fn is_strict(&self, ctx: &PreprocessorContext) -> anyhow::Result<bool> {
        Ok(self.strict
            || ctx
                .config
                .get::<bool>(&format!("preprocessor.{NAME}.strict"))?
                .unwrap_or(false))
    }

    /// Asks the runner for the results of `labs` (each with the kernels it names): it prepares
    /// them all at once, then gives each lab's outcome.
    fn lab_outcomes<'a>(
        &self,
        labs: &[(&'a LabSpec, &BTreeMap<String, KernelSource>)],
    ) -> anyhow::Result<BTreeMap<&'a str, LabOutcome>> {
        // One batch: the runner decides the order (labs with Python rows last, so the Python
        // process has imported torch by then) and which process measures what.
        let requests: Vec<LabRequest<'_>> = labs
            .iter()
            .map(|(lab, kernels)| LabRequest { lab, kernels })
            .collect();
        let measured = {
            let mut progress = self
                .progress
                .lock()
                .map_err(|_| anyhow::anyhow!("progress reporter poisoned"))?;
            self.results.outcomes(&requests, progress.as_mut())
        };
        let outcomes = labs
            .iter()
            .map(|(lab, _)| lab.name.as_str())
            .zip(measured)
            .collect();
        Ok(outcomes)
    }

    /// The HTML of every lab the book shows, by name, the problems `--strict` fails on (each
    /// at the first directive that shows the lab), and of those the kernels that do not
    /// compile, which the terminal hears of even without `--strict`.
    fn render_labs(
        &self,
        (index, labs): (&BookIndex, &Labs),
        outcomes: &BTreeMap<&str, LabOutcome>,
        output: Output,
    ) -> anyhow::Result<RenderedLabs> {
        let mut failures = Vec::new();
        let mut compile = Vec::new();
        let mut rendered: BTreeMap<String, String> = BTreeMap::new();
        for directive in index.chapters.values().flat_map(|scan| &scan.directives) {
            if rendered.contains_key(&directive.lab) {
                continue;
            }
            let (Some(lab), Some(outcome)) = (
                labs.ready.get(&directive.lab),
                outcomes.get(directive.lab.as_str()),
            ) else {
                if let Some(planned) = labs.planned.get(&directive.lab) {
                    let html = self.render_lab(&planned_view(planned), output)?;
                    rendered.insert(directive.lab.clone(), html);
                }
                continue;
            };
            // Live on this GPU: the GPU the book was recorded on, beside it.
            let recorded = match outcome {
                LabOutcome::Measured { .. } => self.results.recorded(lab),
                _ => None,
            };
            let view = lab_view_beside(lab, outcome, recorded.as_ref());
            compile.extend(view.problems.iter().map(|problem| {
                format!(
                    "{}: lab `{}`: {}\n{}",
                    directive.location, lab.name, problem.title, problem.detail
                )
            }));
            failures.extend(
                view.failures()
                    .into_iter()
                    .map(|f| format!("{}: {f}", directive.location)),
            );
            let html = self
                .render_lab(&view, output)
                .with_context(|| format!("rendering lab `{}`", lab.name))?;
            rendered.insert(directive.lab.clone(), html);
        }
        Ok((rendered, failures, compile))
    }

    /// A lab's section as `output` wants it: the HTML template, or markdown from the same view.
    fn render_lab(&self, view: &LabView, output: Output) -> anyhow::Result<String> {
        Ok(match output {
            Output::Html => self.templates.render_lab(view)?,
            Output::Markdown => crate::markdown::lab(view),
        })
    }
}

/// What [`KernelbookPreprocessor::render_labs`] gives: the HTML by lab, the problems, the
/// compile errors.
type RenderedLabs = (BTreeMap<String, String>, Vec<String>, Vec<String>);

impl KernelbookPreprocessor {
    /// The HTML of every diagram, by chapter. A diagram whose lab was measured here without
    /// counters (no Nsight Compute) is set beside the lab's recorded counters.
    fn render_diagrams(
        &self,
        index: &BookIndex,
        labs: &Labs,
        outcomes: &BTreeMap<&str, LabOutcome>,
        output: Output,
    ) -> anyhow::Result<BTreeMap<PathBuf, Vec<crate::diagram::Rendered>>> {
        let mut recorded = BTreeMap::new();
        for name in crate::book::profiled_labs(index) {
            let live = !matches!(outcomes.get(name), Some(LabOutcome::Recorded { .. }));
            let Some(lab) = labs.ready.get(name).filter(|_| live) else {
                continue;
            };
            if let Some(results) = self.results.recorded(lab) {
                recorded.insert(name.to_string(), results);
            }
        }
        let results = crate::diagram::Results {
            outcomes,
            recorded: &recorded,
        };
        if output == Output::Html {
            return crate::book::render_diagrams(index, labs, results, &self.templates);
        }
        let mut rendered: BTreeMap<PathBuf, Vec<crate::diagram::Rendered>> = BTreeMap::new();
        for (path, _, drawn) in crate::book::draw_book(index, labs, results)? {
            rendered
                .entry(path.to_path_buf())
                .or_default()
                .push(crate::diagram::Rendered {
                    html: crate::markdown::diagram(&drawn.view),
                    failures: drawn.failures,
                });
        }
        Ok(rendered)
    }
}

impl KernelbookPreprocessor {
    /// The HTML of every `{{#gpus-compared}}`, by chapter (in the order of `scan.comparisons`):
    /// the GPU folders of the book's recordings, the GPU this build measured on, and the other
    /// GPUs it measured on, side by side.
    fn render_comparisons(
        &self,
        ctx: &PreprocessorContext,
        (index, labs): (&BookIndex, &Labs),
        (shown, outcomes): (&[&LabSpec], &BTreeMap<&str, LabOutcome>),
        output: Output,
    ) -> anyhow::Result<BTreeMap<PathBuf, Vec<String>>> {
        let mut rendered = BTreeMap::new();
        if index
            .chapters
            .values()
            .all(|scan| scan.comparisons.is_empty())
        {
            return Ok(rendered);
        }
        let recordings = crate::recorded::recordings(&ctx.root, &ctx.config)?;
        let every_lab = crate::gpus::compared_labs(&[], shown, &labs.ready);
        let mut columns = crate::recorded::recorded_columns(&recordings, &every_lab, index);
        columns.extend(crate::gpus::live_column(
            outcomes.iter().map(|(lab, outcome)| (*lab, outcome)),
        ));
        columns.extend(self.results.other_gpus());
        for (path, scan) in &index.chapters {
            let mut htmls = Vec::new();
            for directive in &scan.comparisons {
                let compared = crate::gpus::compared_labs(&directive.labs, shown, &labs.ready);
                let view = crate::gpus::view::comparison_view(&compared, &columns);
                htmls.push(match output {
                    Output::Html => self.templates.render_comparison(&view).with_context(|| {
                        format!("{}: rendering the GPUs' comparison", directive.location)
                    })?,
                    Output::Markdown => crate::markdown::comparison(&view),
                });
            }
            rendered.insert(path.clone(), htmls);
        }
        Ok(rendered)
    }
}

/// Fails on every `{{#lab NAME}}` that names no lab, listing the labs there are, and on every
/// diagram the model cannot draw or whose lab row cannot give counters.
fn check_directives(index: &BookIndex, labs: &Labs) -> anyhow::Result<()> {
    let errors: Vec<String> = index
        .chapters
        .values()
        .flat_map(|scan| &scan.directives)
        .filter(|directive| !labs.contains(&directive.lab))
        .map(|directive| {
            format!(
                "{}: there is no lab `{}` (labs: {})",
                directive.location,
                directive.lab,
                labs.names().join(", ")
            )
        })
        .chain(crate::book::check_diagrams(index, labs))
        .chain(
            index
                .chapters
                .values()
                .flat_map(|scan| &scan.comparisons)
                .flat_map(|directive| {
                    directive
                        .labs
                        .iter()
                        .filter(|lab| !labs.ready.contains_key(*lab))
                        .map(move |lab| {
                            format!(
                                "{}: `{{{{#gpus-compared}}}}` names no lab `{lab}` that runs (labs: {})",
                                directive.location,
                                labs.names().join(", ")
                            )
                        })
                }),
        )
        .collect();
    let errors: Vec<String> = errors
        .into_iter()
        .chain(
            index
                .chapters
                .values()
                .flat_map(|scan| &scan.figures)
                .filter_map(|figure| figure_problem(figure, labs)),
        )
        .collect();
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    Ok(())
}

/// What is wrong with a figure's lab or rows, if anything: it must read rows of a ready lab.
fn figure_problem(figure: &FigureDirective, labs: &Labs) -> Option<String> {
    let name = figure.query.lab();
    let Some(lab) = labs.ready.get(name) else {
        return Some(format!(
            "{}: there is no lab `{name}` to take a figure from (labs: {})",
            figure.location,
            labs.names().join(", ")
        ));
    };
    let missing = figure
        .query
        .variants()
        .into_iter()
        .find(|v| lab.variant(v).is_none())?;
    let variants: Vec<&str> = lab.variants.iter().map(|v| v.name.as_str()).collect();
    Some(format!(
        "{}: lab `{name}` has no variant `{missing}` (variants: {})",
        figure.location,
        variants.join(", ")
    ))
}

/// The text of a figure: its number from its lab's results (live, cached or recorded), or a
/// marked gap where the row has none, or only a recording of an older kernel.
fn figure_text(figure: &FigureDirective, outcomes: &BTreeMap<&str, LabOutcome>) -> String {
    let outcome = outcomes.get(figure.query.lab());
    let (results, source, stale): (Option<&LabResults>, String, &[String]) = match outcome {
        Some(LabOutcome::Measured { results, .. }) => (
            Some(results),
            format!("measured on {}", results.provenance.device.name),
            &[],
        ),
        Some(LabOutcome::Recorded {
            results,
            stale_kernels,
            ..
        }) => (
            Some(results),
            format!(
                "recorded on {} ({})",
                results.provenance.device.name, results.provenance.measured_at
            ),
            stale_kernels,
        ),
        Some(LabOutcome::Missing { .. }) | None => (None, String::new(), &[]),
    };
    let edited = results.and_then(|r| {
        figure.query.variants().into_iter().find(|v| {
            r.variant(v)
                .and_then(|row| row.kernel.as_ref())
                .is_some_and(|kernel| stale.contains(kernel))
        })
    });
    if let Some(variant) = edited {
        return format!(
            "<span class=\"kernelbook-gap\" title=\"`{variant}`'s kernel was edited since it was recorded\">[no result]</span>"
        );
    }
    figures::render(&figure.query, results, &source)
}

/// The ready labs the book shows, each once however often it is shown (in the order a reader
/// meets them: the chapters in `chapter_order`, the book's own, then any other; then the labs
/// only diagrams take counters from), with the kernels each one names.
pub fn shown_labs<'a>(
    index: &BookIndex,
    labs: &'a Labs,
    chapter_order: &[PathBuf],
) -> Vec<(&'a LabSpec, BTreeMap<String, KernelSource>)> {
    let mut shown: Vec<&str> = Vec::new();
    let in_order = chapter_order
        .iter()
        .filter_map(|path| index.chapters.get(path))
        .chain(
            index
                .chapters
                .iter()
                .filter(|(path, _)| !chapter_order.contains(path))
                .map(|(_, scan)| scan),
        );
    let named = in_order
        .flat_map(|scan| &scan.directives)
        .map(|directive| directive.lab.as_str())
        .chain(crate::book::profiled_labs(index));
    for name in named {
        if !shown.contains(&name) {
            shown.push(name);
        }
    }
    // A lab the prose takes a figure from is measured (or its recording read) too.
    for figure in index.chapters.values().flat_map(|scan| &scan.figures) {
        if !shown.contains(&figure.query.lab()) {
            shown.push(figure.query.lab());
        }
    }
    shown
        .iter()
        .filter_map(|name| labs.ready.get(*name))
        .map(|lab| {
            let kernels = index.kernels_named(lab.kernel_refs().into_iter().map(|(k, _)| k));
            (lab, kernels)
        })
        .collect()
}

/// Each chapter's rendered diagrams or comparisons, in the order of its scan's lists.
type ByChapter = BTreeMap<PathBuf, Vec<String>>;

/// Replaces each chapter's directives with their lab's or diagram's HTML and captions its
/// kernel blocks.
fn edit_chapters(
    book: &mut Book,
    (index, src_dir): (&BookIndex, &Path),
    rendered: &BTreeMap<String, String>,
    outcomes: &BTreeMap<&str, LabOutcome>,
    (diagrams, comparisons): (&ByChapter, &ByChapter),
    output: Output,
) {
    book.for_each_mut(|item| {
        let BookItem::Chapter(chapter) = item else {
            return;
        };
        let Some(path) = chapter.source_path.as_ref().or(chapter.path.as_ref()) else {
            return;
        };
        let key = src_dir.join(path);
        let Some(scan) = index.chapters.get(&key) else {
            return;
        };
        let figures: Vec<String> = scan
            .figures
            .iter()
            .map(|figure| figure_text(figure, outcomes))
            .map(|text| match output {
                Output::Html => text,
                Output::Markdown => crate::markdown::inline_figure(&text),
            })
            .collect();
        let html = ChapterHtml {
            labs: rendered,
            diagrams: diagrams.get(&key).map_or(&[][..], Vec::as_slice),
            comparisons: comparisons.get(&key).map_or(&[][..], Vec::as_slice),
            figures: &figures,
        };
        let edits = chapter_edits_as(&chapter.content, scan, &html, output);
        chapter.content = apply_edits(&chapter.content, edits);
    });
}

/// The HTML of one chapter's directives: each lab's (by lab), and each diagram's, comparison's
/// and figure's in the order of the scan's lists.
#[derive(Debug, Clone, Copy)]
pub struct ChapterHtml<'a> {
    pub labs: &'a BTreeMap<String, String>,
    pub diagrams: &'a [String],
    pub comparisons: &'a [String],
    pub figures: &'a [String],
}

/// The edits of one chapter, the one splice of rendered text into it: each directive replaced
/// by its HTML ([`ChapterHtml`]), and each kernel block highlighted
/// as C++ (the highlighter knows no CUDA) under a caption saying where the kernel lives (and, in
/// `data-kernel`, which kernel it is: `kernelbook serve` finds an exercise's starter by it). Inside a
/// block quote or list item, every inserted line carries the container's prefix and no blank
/// line is added, so the container (and a tight list's tightness) stays as written.
pub fn chapter_edits(
    content: &str,
    scan: &ChapterScan,
    html: &ChapterHtml<'_>,
) -> Vec<(Range<usize>, String)> {
    chapter_edits_as(content, scan, html, Output::Html)
}

/// [`chapter_edits`] for `output`: with [`Output::Markdown`], `html` holds each directive's
/// markdown, which keeps its lines (a pipe table cannot be put on one), and each kernel block's
/// caption is a line of emphasis instead of a `<p>`.
pub fn chapter_edits_as(
    content: &str,
    scan: &ChapterScan,
    html: &ChapterHtml<'_>,
    output: Output,
) -> Vec<(Range<usize>, String)> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    // Every block directive in the order written, with its HTML where there is some.
    let mut placed: Vec<(&Range<usize>, &Place, Option<&str>)> = scan
        .directives
        .iter()
        .map(|d| {
            (
                &d.range,
                &d.place,
                html.labs.get(&d.lab).map(String::as_str),
            )
        })
        .chain(
            scan.diagrams
                .iter()
                .enumerate()
                .map(|(i, d)| (&d.range, &d.place, html.diagrams.get(i).map(String::as_str))),
        )
        .chain(scan.comparisons.iter().enumerate().map(|(i, d)| {
            (
                &d.range,
                &d.place,
                html.comparisons.get(i).map(String::as_str),
            )
        }))
        .collect();
    placed.sort_by_key(|(range, _, _)| range.start);
    for (i, (range, place, html)) in placed.iter().enumerate() {
        if let Some(html) = html {
            // Directives side by side on one line share the line of HTML.
            let neighbours = (
                i.checked_sub(1)
                    .and_then(|p| placed.get(p))
                    .map(|(r, _, _)| r.end),
                placed.get(i + 1).map(|(r, _, _)| r.start),
            );
            let edit = directive_edit(content, (range, place), (html, output), neighbours);
            edits.push(edit);
        }
    }
    // A figure is inline: its text replaces it where it stands.
    edits.extend(
        scan.figures
            .iter()
            .zip(html.figures)
            .map(|(figure, text)| (figure.range.clone(), text.clone())),
    );
    for block in &scan.kernels {
        let (highlight, what) = match block.kernel.language {
            Language::Cuda => ("cpp", "Kernel"),
            Language::Python => ("python", "Kernel"),
            Language::PythonReference => ("python", "NumPy reference"),
        };
        edits.push((block.info_range.clone(), highlight.into()));
        let caption = match output {
            Output::Html => format!(
                "<p class=\"kernelbook-kernel\" data-kernel=\"{}\">{what} <code>{}</code> · <code>{}</code> · also in <code>kernels/{}.{}</code></p>",
                escape_html(&block.kernel.name),
                block.kernel.name,
                escape_html(&block.kernel.origin.to_string()).replace(['\n', '\r'], " "),
                block.kernel.name,
                block.kernel.language.extension(),
            ),
            Output::Markdown => crate::markdown::kernel_caption(
                what,
                &block.kernel.name,
                &block.kernel.origin.to_string(),
                block.kernel.language.extension(),
            ),
        };
        let prefix = &block.place.prefix;
        let inserted = if block.place.in_container && output == Output::Markdown {
            // A fenced code block may follow a paragraph's last line directly.
            format!("{caption}\n{prefix}")
        } else if block.place.in_container {
            // An HTML comment opens a block that ends on its own line: no blank line needed.
            format!("<!-- kernelbook -->{caption}\n{prefix}")
        } else {
            format!("{caption}\n{}\n{prefix}", prefix.trim_end())
        };
        edits.push((block.range.start..block.range.start, inserted));
    }
    edits
}

/// The edit that replaces a directive (its range and place) with its `html`; `neighbours` are
/// where the directives before and after it end and start.
///
/// Inside a container, the HTML is one line led by a comment (a block that ends with its line,
/// so no blank line is needed); text after the directive starts a new paragraph. Known limit,
/// as at the top level: lines of the same paragraph after the directive are read afresh, so a
/// lazy continuation line that looks like a table or an indented block becomes one.
fn directive_edit(
    content: &str,
    (range, place): (&Range<usize>, &Place),
    (html, output): (&str, Output),
    neighbours: (Option<usize>, Option<usize>),
) -> (Range<usize>, String) {
    let range = range.clone();
    if !place.in_container {
        return (range, format!("\n\n{html}\n\n"));
    }
    let prefix = &place.prefix;
    let line_start = content[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = content[range.end..]
        .find('\n')
        .map_or(content.len(), |i| range.end + i);
    let after_prev = neighbours
        .0
        .filter(|&end| end >= line_start && end <= range.start);
    let until_next = neighbours
        .1
        .filter(|&start| start >= range.end && start <= line_end)
        .unwrap_or(line_end);
    let before = &content[line_start..range.start];
    let (start, mut out) =
        if after_prev.is_some_and(|end| content[end..range.start].trim().is_empty()) {
            // Right after another lab on this line: on the same line of HTML.
            (range.start, String::new())
        } else if continuation_prefix(content, range.start) == *prefix {
            // Only the containers' markers stand before it (`- `, `> `): the HTML takes its place.
            (range.start, String::new())
        } else if before.chars().all(|c| c == '>' || c.is_whitespace()) {
            // A continuation line (or a lazy one): rewrite its markers as the container's.
            (line_start, prefix.clone())
        } else {
            (range.start, format!("\n{prefix}"))
        };
    let one_line = match output {
        Output::Html => one_line(html),
        Output::Markdown => None,
    };
    match one_line {
        Some(line) => {
            out.push_str("<!-- kernelbook -->");
            out.push_str(&line);
        }
        None => {
            // HTML that cannot be put on one line ends at a blank line (the list turns loose).
            let blank = prefix.trim_end();
            let body: Vec<&str> = html.lines().collect();
            out = format!(
                "{out}\n{blank}\n{prefix}{}\n{blank}",
                body.join(&format!("\n{prefix}"))
            );
        }
    }
    if !content[range.end..until_next].trim().is_empty() {
        out.push('\n');
        out.push_str(prefix);
    }
    (start..range.end, out)
}

/// Whether lower-case `html` holds an element whose text is raw (a script, a style). Inside an
/// `<svg>` a `<title>` is an ordinary element of foreign content, the tooltip of a chart's mark.
fn has_raw_text(html: &str) -> bool {
    const RAW: &[&str] = &[
        "<script",
        "<style",
        "<textarea",
        "<title",
        "<xmp",
        "<plaintext",
        "<noscript",
        "<iframe",
        "<noembed",
        "<noframes",
    ];
    let raw_in = |text: &str, svg: bool| {
        RAW.iter()
            .filter(|tag| !(svg && **tag == "<title"))
            .any(|tag| text.contains(tag))
    };
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let Some(len) = rest[start..].find("</svg>") else {
            break;
        };
        if raw_in(&rest[..start], false) || raw_in(&rest[start..start + len], true) {
            return true;
        }
        rest = &rest[start + len..];
    }
    raw_in(rest, false)
}

/// `html` on one line, the same document: a line break inside a tag becomes a space, any other
/// `&#10;` (text and attribute values read that as the line break it was). `None` where an
/// element whose text is raw (a script, a style) would read `&#10;` literally.
pub fn one_line(html: &str) -> Option<String> {
    if has_raw_text(&html.to_ascii_lowercase()) {
        return None;
    }
    let html = html.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    let mut quote: Option<char> = None;
    for c in html.chars() {
        match c {
            '\n' if in_tag && quote.is_none() => out.push(' '),
            '\n' => out.push_str("&#10;"),
            '<' if !in_tag => in_tag = true,
            '>' if in_tag && quote.is_none() => in_tag = false,
            '"' | '\'' if in_tag => match quote {
                None => quote = Some(c),
                Some(q) if q == c => quote = None,
                Some(_) => {}
            },
            _ => {}
        }
        if c != '\n' {
            out.push(c);
        }
    }
    Some(out)
}

impl Preprocessor for KernelbookPreprocessor {
    fn name(&self) -> &str {
        NAME
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> anyhow::Result<Book> {
        let src_dir = ctx.config.book.src.clone();
        // After mdBook's `links` (book.toml: `after = ["links"]`), so kernel blocks and
        // directives in `{{#include}}`d files are found, each at its own file's line.
        let (index, labs) = load_book_parts(
            &book,
            &ctx.root,
            &src_dir,
            &labs_dir(&ctx.root, &ctx.config)?,
            Includes::Expanded,
        )?;
        check_directives(&index, &labs)?;
        let strict = self.is_strict(ctx)?;
        let chapter_order: Vec<PathBuf> = book
            .chapters()
            .filter_map(|ch| ch.source_path.as_ref().or(ch.path.as_ref()))
            .map(|path| src_dir.join(path))
            .collect();
        let shown = shown_labs(&index, &labs, &chapter_order);
        let pairs: Vec<(&LabSpec, &BTreeMap<String, KernelSource>)> =
            shown.iter().map(|(lab, k)| (*lab, k)).collect();
        let outcomes = self.lab_outcomes(&pairs)?;
        let shown_specs: Vec<&LabSpec> = pairs.iter().map(|(lab, _)| *lab).collect();
        // Only mdBook's HTML renderer shows HTML; any other gets the directives as markdown.
        let output = Output::for_renderer(&ctx.renderer);
        let comparisons =
            self.render_comparisons(ctx, (&index, &labs), (&shown_specs, &outcomes), output)?;
        let (rendered, mut failures, compile) =
            self.render_labs((&index, &labs), &outcomes, output)?;
        if !strict {
            for error in &compile {
                eprintln!(
                    "kernelbook: warning: {error}\n(the page shows this; `build --strict` fails on it)"
                );
            }
        }
        let diagrams = self.render_diagrams(&index, &labs, &outcomes, output)?;
        failures.extend(diagrams.values().flatten().flat_map(|d| d.failures.clone()));
        let diagrams: BTreeMap<PathBuf, Vec<String>> = diagrams
            .into_iter()
            .map(|(path, rendered)| (path, rendered.into_iter().map(|d| d.html).collect()))
            .collect();
        if strict && !failures.is_empty() {
            bail!(
                "strict mode: {} problem(s)\n{}",
                failures.len(),
                failures.join("\n")
            );
        }
        edit_chapters(
            &mut book,
            (&index, &src_dir),
            &rendered,
            &outcomes,
            (&diagrams, &comparisons),
            output,
        );
        Ok(book)
    }

    fn supports_renderer(&self, renderer: &str) -> anyhow::Result<bool> {
        Ok(supports_renderer(renderer))
    }
}

/// Every renderer: mdBook's HTML one gets the directives as HTML, any other as markdown
/// ([`Output::for_renderer`]), so that none shows a directive raw.
pub fn supports_renderer(_renderer: &str) -> bool {
    true
}

/// The warning to give when the mdBook that runs the preprocessor (`running`,
/// `PreprocessorContext::mdbook_version`) is not the one it was built against
/// ([`mdbook_preprocessor::MDBOOK_VERSION`]): the book it is handed may not read the same.
pub fn version_warning(running: &str) -> Option<String> {
    let built = mdbook_preprocessor::MDBOOK_VERSION;
    (running != built).then(|| {
        format!(
            "warning: {NAME} was built against mdBook {built}, but is being run by mdBook {running}"
        )
    })
}

/// Applies non-overlapping edits; later edits first so earlier offsets stay valid.
pub fn apply_edits(content: &str, edits: Vec<(Range<usize>, String)>) -> String {
    // In one pass where no two edits overlap (each replacement would otherwise move the rest
    // of the chapter: 100,000 figures, hours). Edits at the same place keep the order the
    // replacements from the end give them: the later one first.
    let mut ordered: Vec<(usize, Range<usize>, String)> = edits
        .into_iter()
        .enumerate()
        .map(|(i, (range, text))| (i, range, text))
        .collect();
    ordered.sort_by(|a, b| {
        (a.1.start, a.1.end, std::cmp::Reverse(a.0)).cmp(&(
            b.1.start,
            b.1.end,
            std::cmp::Reverse(b.0),
        ))
    });
    let disjoint = ordered.windows(2).all(|w| w[0].1.end <= w[1].1.start)
        && ordered
            .iter()
            .all(|(_, r, _)| r.start <= r.end && r.end <= content.len());
    let disjoint = disjoint
        && ordered
            .iter()
            .all(|(_, r, _)| content.is_char_boundary(r.start) && content.is_char_boundary(r.end));
    if disjoint {
        let mut out = String::with_capacity(content.len());
        let mut copied = 0;
        for (_, range, text) in &ordered {
            out.push_str(&content[copied..range.start]);
            out.push_str(text);
            copied = range.end;
        }
        out.push_str(&content[copied..]);
        return out;
    }
    ordered.sort_by_key(|(i, _, _)| *i);
    let mut edits: Vec<(Range<usize>, String)> = ordered
        .into_iter()
        .map(|(_, range, text)| (range, text))
        .collect();
    edits.sort_by(|a, b| b.0.start.cmp(&a.0.start).then(b.0.end.cmp(&a.0.end)));
    let mut out = content.to_string();
    for (range, text) in edits {
        if range.end <= out.len() && range.start <= range.end {
            out.replace_range(range, &text);
        }
    }
    out
}

/// Escapes text for HTML (for the few strings built outside handlebars).
pub fn escape_html(text: &str) -> String {
    handlebars::html_escape(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_svg_title_does_not_keep_html_off_one_line() {
        let chart =
            "<figure>\n<svg><title>a\nb</title>\n<rect><title>c</title></rect></svg>\n</figure>";
        let line = one_line(chart).expect("an svg's titles are not raw text");
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(
            one_line("<title>x</title>"),
            None,
            "an HTML title's text is raw"
        );
        assert_eq!(one_line("<svg></svg><title>x</title>"), None);
        assert_eq!(one_line("<svg><style>x</style></svg>"), None);
        assert_eq!(
            one_line("<svg><title>x</title>"),
            None,
            "an svg never closed"
        );
    }

    #[test]
    fn a_different_mdbook_is_warned_of() {
        let built = mdbook_preprocessor::MDBOOK_VERSION;
        assert_eq!(version_warning(built), None);
        let warning = version_warning("0.4.40").expect("another version");
        assert!(
            warning.contains(built) && warning.contains("0.4.40"),
            "{warning}"
        );
    }

    #[test]
    fn every_renderer_is_supported() {
        for renderer in ["html", "markdown", "epub", "linkcheck"] {
            assert!(supports_renderer(renderer), "{renderer}");
        }
    }

    #[test]
    fn edits_apply_back_to_front() {
        let out = apply_edits(
            "abcdef",
            vec![(1..2, "X".into()), (4..4, "Y".into()), (0..0, "<".into())],
        );
        assert_eq!(out, "<aXcdYef");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape_html("<a href=\"x\">&</a>"),
            "&lt;a href&#x3D;&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
    }
}
