//! The mdBook preprocessor: scans the book, loads the labs, gets each lab's results from the
//! runner and replaces every `{{#lab NAME}}` with the rendered results.

use crate::render::{Templates, lab_view, planned_view};
use crate::scan::{BookIndex, ChapterScan, ScanError};
use anyhow::{Context, bail};
use kernelbook_core::KernelSource;
use kernelbook_core::spec::{LabFile, LabSpec, PlannedLab};
use kernelbook_runner::engine::Progress;
use kernelbook_runner::{LabOutcome, LabRequest, Runner};
use mdbook_preprocessor::book::{Book, BookItem};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The name book.toml uses: `[preprocessor.kernelbook]`.
pub const NAME: &str = "kernelbook";

/// Runs kernelbook inside an mdBook build.
pub struct KernelbookPreprocessor {
    runner: Runner,
    templates: Templates,
    progress: Mutex<Box<dyn Progress + Send>>,
    strict: bool,
}

impl std::fmt::Debug for KernelbookPreprocessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelbookPreprocessor")
            .field("runner", &self.runner)
            .finish_non_exhaustive()
    }
}

impl KernelbookPreprocessor {
    pub fn new(runner: Runner, progress: Box<dyn Progress + Send>) -> Self {
        KernelbookPreprocessor {
            runner,
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

/// The labs folder named in book.toml (`[preprocessor.kernelbook] labs = "labs"`), from the
/// book's root.
pub fn labs_dir(
    ctx_root: &Path,
    config: &mdbook_preprocessor::config::Config,
) -> anyhow::Result<PathBuf> {
    let dir: Option<String> = config.get(&format!("preprocessor.{NAME}.labs"))?;
    Ok(ctx_root.join(dir.unwrap_or_else(|| "labs".into())))
}

/// The labs of a book, by name: those that run and those only planned so far.
#[derive(Debug, Clone, Default)]
pub struct Labs {
    pub ready: BTreeMap<String, LabSpec>,
    pub planned: BTreeMap<String, PlannedLab>,
}

impl Labs {
    pub fn contains(&self, name: &str) -> bool {
        self.ready.contains_key(name) || self.planned.contains_key(name)
    }

    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .ready
            .keys()
            .chain(self.planned.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names
    }
}

/// Loads every `*.toml` lab under `dir`, by name.
pub fn load_labs(dir: &Path) -> anyhow::Result<Labs> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the labs folder {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    let mut labs = Labs::default();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut errors = Vec::new();
    for path in paths {
        match LabFile::load(&path) {
            Ok(lab) => {
                if let Some(first) = seen.get(lab.name()) {
                    errors.push(format!(
                        "{}:1: lab `{}` is also defined in {}",
                        path.display(),
                        lab.name(),
                        first.display()
                    ));
                    continue;
                }
                seen.insert(lab.name().to_string(), path.clone());
                match lab {
                    LabFile::Ready(lab) => labs.ready.insert(lab.name.clone(), *lab).map(drop),
                    LabFile::Planned(lab) => labs.planned.insert(lab.name.clone(), lab).map(drop),
                };
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    Ok(labs)
}

/// Checks that every lab the book shows names only kernels the book defines.
pub fn check_kernel_refs(labs: &BTreeMap<String, LabSpec>, index: &BookIndex) -> Vec<String> {
    labs.values()
        .flat_map(|lab| {
            lab.kernel_refs()
                .into_iter()
                .filter(|(kernel, _)| !index.kernels.contains_key(*kernel))
                .map(|(kernel, line)| {
                    format!(
                        "{}:{line}: lab `{}` names kernel `{kernel}`, which no ```cuda kernel=... block in the book defines",
                        lab.file.display(),
                        lab.name
                    )
                })
        })
        .collect()
}

/// Everything the book defines, checked: its kernels (scanned from `book`'s chapters, shown
/// under `src_dir`) and its labs (from `labs_dir`), with every lab naming only kernels the book
/// has. Every problem found is reported, each with its file and line.
pub fn load_book_parts(
    book: &Book,
    src_dir: &Path,
    labs_dir: &Path,
) -> anyhow::Result<(BookIndex, Labs)> {
    let index = index_book(book, src_dir).map_err(|errors| {
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

/// Scans the chapters of `book` (paths shown under the book's source folder).
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
            self.runner.results(&requests, progress.as_mut())
        };
        let outcomes = labs
            .iter()
            .map(|(lab, _)| lab.name.as_str())
            .zip(measured)
            .collect();
        Ok(outcomes)
    }

    /// The HTML of every lab the book shows, by name, and the problems `--strict` fails on (each
    /// at the first directive that shows the lab).
    fn render_labs(
        &self,
        index: &BookIndex,
        labs: &Labs,
        outcomes: &BTreeMap<&str, LabOutcome>,
    ) -> anyhow::Result<(BTreeMap<String, String>, Vec<String>)> {
        let mut failures = Vec::new();
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
                    let html = self.templates.render_lab(&planned_view(planned))?;
                    rendered.insert(directive.lab.clone(), html);
                }
                continue;
            };
            let view = lab_view(lab, outcome);
            failures.extend(
                view.failures()
                    .into_iter()
                    .map(|f| format!("{}: {f}", directive.location)),
            );
            let html = self
                .templates
                .render_lab(&view)
                .with_context(|| format!("rendering lab `{}`", lab.name))?;
            rendered.insert(directive.lab.clone(), html);
        }
        Ok((rendered, failures))
    }
}

/// Fails on every `{{#lab NAME}}` that names no lab, listing the labs there are.
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
        .collect();
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    Ok(())
}

/// The ready labs the book shows, each once however often it is shown (in the order first
/// shown), with the kernels each one names.
fn shown_labs<'a>(
    index: &BookIndex,
    labs: &'a Labs,
) -> Vec<(&'a LabSpec, BTreeMap<String, KernelSource>)> {
    let mut shown: Vec<&str> = Vec::new();
    for directive in index.chapters.values().flat_map(|scan| &scan.directives) {
        if !shown.contains(&directive.lab.as_str()) {
            shown.push(&directive.lab);
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

/// Replaces each chapter's directives with their lab's HTML and captions its kernel blocks.
fn edit_chapters(
    book: &mut Book,
    index: &BookIndex,
    src_dir: &Path,
    rendered: &BTreeMap<String, String>,
) {
    book.for_each_mut(|item| {
        let BookItem::Chapter(chapter) = item else {
            return;
        };
        let Some(path) = chapter.source_path.as_ref().or(chapter.path.as_ref()) else {
            return;
        };
        let Some(scan) = index.chapters.get(&src_dir.join(path)) else {
            return;
        };
        chapter.content = apply_edits(&chapter.content, chapter_edits(scan, rendered));
    });
}

/// The edits of one chapter: each directive's lab HTML, and each kernel block highlighted as
/// C++ (the highlighter knows no CUDA) under a caption saying where the kernel lives.
fn chapter_edits(
    scan: &ChapterScan,
    rendered: &BTreeMap<String, String>,
) -> Vec<(Range<usize>, String)> {
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    for directive in &scan.directives {
        if let Some(html) = rendered.get(&directive.lab) {
            edits.push((directive.range.clone(), format!("\n\n{html}\n\n")));
        }
    }
    for block in &scan.kernels {
        edits.push((block.info_range.clone(), "cpp".into()));
        let caption = format!(
            "<p class=\"kernelbook-kernel\">Kernel <code>{}</code> · <code>{}</code> · also in <code>kernels/{}.cu</code></p>\n\n",
            block.kernel.name,
            escape_html(&block.kernel.origin.to_string()),
            block.kernel.name
        );
        edits.push((block.range.start..block.range.start, caption));
    }
    edits
}

impl Preprocessor for KernelbookPreprocessor {
    fn name(&self) -> &str {
        NAME
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> anyhow::Result<Book> {
        let src_dir = ctx.config.book.src.clone();
        let (index, labs) = load_book_parts(&book, &src_dir, &labs_dir(&ctx.root, &ctx.config)?)?;
        check_directives(&index, &labs)?;
        let strict = self.is_strict(ctx)?;
        let shown = shown_labs(&index, &labs);
        let pairs: Vec<(&LabSpec, &BTreeMap<String, KernelSource>)> =
            shown.iter().map(|(lab, k)| (*lab, k)).collect();
        let outcomes = self.lab_outcomes(&pairs)?;
        let (rendered, failures) = self.render_labs(&index, &labs, &outcomes)?;
        if strict && !failures.is_empty() {
            bail!(
                "strict mode: {} problem(s)\n{}",
                failures.len(),
                failures.join("\n")
            );
        }
        edit_chapters(&mut book, &index, &src_dir, &rendered);
        Ok(book)
    }

    fn supports_renderer(&self, renderer: &str) -> anyhow::Result<bool> {
        Ok(supports_renderer(renderer))
    }
}

/// The renderers whose output can hold the HTML the labs render to.
pub fn supports_renderer(renderer: &str) -> bool {
    renderer == "html" || renderer == "markdown"
}

/// Applies non-overlapping edits; later edits first so earlier offsets stay valid.
pub fn apply_edits(content: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
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
