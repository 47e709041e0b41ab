//! Finds what kernelbook cares about in a chapter's markdown: kernel blocks
//! (` ```cuda kernel=NAME `), lab directives (`{{#lab NAME}}`) and diagram directives
//! (`{{#warp-access ...}}`, `{{#banks ...}}`), with their byte ranges and lines. Parsing goes through pulldown-cmark so that a directive inside a code block or an
//! inline code span is left alone, as the reader expects.

use crate::diagram::{DiagramKind, DiagramSpec, directive};
use crate::figures::{self, FigureDirective};
use kernelbook_core::{KernelSource, Language, SourceLocation};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Info-string languages that mark a block as CUDA source.
const CUDA_LANGUAGES: &[&str] = &["cuda", "cu"];
/// What every directive starts with; the name after it says whose it is.
const DIRECTIVE_START: &str = "{{#";
const LAB_DIRECTIVE: &str = "lab";

/// A kernel block found in a chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelBlock {
    pub kernel: KernelSource,
    /// The whole fenced block, fences included.
    pub range: Range<usize>,
    /// The info string after the opening backticks.
    pub info_range: Range<usize>,
    /// Where the block stands: what a line inserted before its fence must start with.
    pub place: Place,
}

/// Where a kernel block or directive stands in the chapter's block structure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// Inside a block quote, list item, footnote or definition: text inserted there must carry
    /// the container's prefix on every line, and must not add blank lines (which would make a
    /// tight list loose).
    pub in_container: bool,
    /// What a continuation line of the block starts with: the block quotes' `>` and the list
    /// items' indentation (`- ` as two spaces), e.g. `>   ` for a block in a list in a quote.
    pub prefix: String,
}

/// A `{{#lab NAME}}` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub lab: String,
    pub range: Range<usize>,
    pub location: SourceLocation,
    pub place: Place,
}

/// A `{{#warp-access ...}}` or `{{#banks ...}}` directive, its attributes read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagramDirective {
    pub spec: DiagramSpec,
    pub range: Range<usize>,
    pub location: SourceLocation,
    pub place: Place,
}

/// A `{{#gpus-compared}}` directive: every recorded GPU side by side, for the labs it names
/// (every lab where it names none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparisonDirective {
    pub labs: Vec<String>,
    pub range: Range<usize>,
    pub location: SourceLocation,
    pub place: Place,
}

/// What one chapter holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChapterScan {
    pub kernels: Vec<KernelBlock>,
    pub directives: Vec<Directive>,
    /// `{{#value}}` and `{{#ratio}}` figures in the prose, in order.
    pub figures: Vec<FigureDirective>,
    pub diagrams: Vec<DiagramDirective>,
    pub comparisons: Vec<ComparisonDirective>,
}

/// A problem in the book's markdown, with its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {message}")]
pub struct ScanError {
    pub location: SourceLocation,
    pub message: String,
}

/// Scans one chapter. `file` is used for locations (relative to the book's source folder).
pub fn scan_chapter(content: &str, file: &Path) -> Result<ChapterScan, ScanError> {
    scan(&Chapter::new(content, file, None))
}

/// Where the text of a chapter whose `{{#include}}`s were expanded came from.
#[derive(Debug, Clone, Copy)]
pub struct Origins<'a> {
    /// `lines[k]` is where line `k + 1` came from.
    pub lines: &'a [SourceLocation],
    /// Offsets of escaped links (`\{{#lab x}}` as written): shown as text, not expanded.
    pub escaped: &'a [usize],
}

/// Scans a chapter whose lines came from several files (its `{{#include}}`s expanded).
/// Locations name those files.
pub fn scan_chapter_lines(
    content: &str,
    file: &Path,
    origins: Origins<'_>,
) -> Result<ChapterScan, ScanError> {
    scan(&Chapter::new(content, file, Some(origins)))
}

fn scan(chapter: &Chapter<'_>) -> Result<ChapterScan, ScanError> {
    let code = scan_code(chapter)?;
    let found = scan_directives(chapter, &code)?;
    let mut scan = ChapterScan {
        kernels: code.kernels,
        ..ChapterScan::default()
    };
    for directive in found {
        match directive {
            AnyDirective::Lab(lab) => scan.directives.push(lab),
            AnyDirective::Diagram(diagram) => scan.diagrams.push(diagram),
            AnyDirective::Comparison(comparison) => scan.comparisons.push(comparison),
            AnyDirective::Figure(figure) => scan.figures.push(figure),
        }
    }
    Ok(scan)
}

/// A chapter's markdown and the file it is reported under.
struct Chapter<'a> {
    content: &'a str,
    file: &'a Path,
    /// Where each line came from, when not all from `file`.
    origins: Option<Origins<'a>>,
    /// The offset of every newline, so that an offset's line is a binary search, not a count
    /// from the start (a chapter of 100,000 figures would otherwise take hours).
    newlines: Vec<usize>,
}

impl<'a> Chapter<'a> {
    fn new(content: &'a str, file: &'a Path, origins: Option<Origins<'a>>) -> Chapter<'a> {
        let newlines = content.match_indices('\n').map(|(at, _)| at).collect();
        Chapter {
            content,
            file,
            origins,
            newlines,
        }
    }

    /// The 1-based line of `offset`, as [`kernelbook_core::line_of_offset`] counts it.
    fn line_of(&self, offset: usize) -> usize {
        self.newlines
            .partition_point(|&at| at < offset.min(self.content.len()))
            + 1
    }

    fn at(&self, offset: usize) -> SourceLocation {
        self.at_line(self.line_of(offset))
    }

    fn at_line(&self, line: usize) -> SourceLocation {
        let mapped = self
            .origins
            .and_then(|origins| origins.lines.get(line.checked_sub(1)?));
        mapped.cloned().unwrap_or_else(|| SourceLocation {
            file: self.file.to_path_buf(),
            line,
        })
    }

    fn error(&self, offset: usize, message: impl Into<String>) -> ScanError {
        ScanError {
            location: self.at(offset),
            message: message.into(),
        }
    }
}

/// A fenced or indented code block whose end has not been reached yet.
struct OpenBlock {
    range: Range<usize>,
    info: String,
    info_range: Range<usize>,
    body: String,
    place: Place,
}

/// What the markdown parser found: kernel blocks, the ranges of all code (blocks, spans and
/// HTML), where a directive is only text, and the places of the chapter's text.
struct Code {
    kernels: Vec<KernelBlock>,
    code_ranges: Vec<Range<usize>>,
    /// `$…$` and `$$…$$`: KaTeX typesets these after us, so a figure's HTML cannot stand there.
    math_ranges: Vec<Range<usize>>,
    texts: Vec<TextPlace>,
}

/// A run of text and where it stands.
struct TextPlace {
    range: Range<usize>,
    place: Place,
    in_table: bool,
}

/// The containers open at a point of the parse, and the start of the block of text there.
#[derive(Default)]
struct Nesting {
    containers: usize,
    tables: usize,
    /// Where the paragraph (heading, table cell, or text of a tight list item) holding the text
    /// began: the text before it on its line is the containers' markers.
    text_start: Option<usize>,
}

impl Nesting {
    /// Follows one event; block-level events end the current run of text.
    fn follow(&mut self, event: &Event<'_>, range: &Range<usize>) {
        match event {
            Event::Start(tag) => match tag {
                Tag::BlockQuote(_)
                | Tag::Item
                | Tag::FootnoteDefinition(_)
                | Tag::DefinitionListDefinition => {
                    self.containers += 1;
                    self.text_start = None;
                }
                Tag::Table(_) => {
                    self.tables += 1;
                    self.text_start = None;
                }
                Tag::Paragraph
                | Tag::Heading { .. }
                | Tag::TableCell
                | Tag::DefinitionListTitle => {
                    self.text_start = Some(range.start);
                }
                Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Superscript
                | Tag::Subscript
                | Tag::Link { .. }
                | Tag::Image { .. } => {
                    if self.text_start.is_none() {
                        self.text_start = Some(range.start);
                    }
                }
                _ => self.text_start = None,
            },
            Event::End(tag) => {
                match tag {
                    TagEnd::BlockQuote(_)
                    | TagEnd::Item
                    | TagEnd::FootnoteDefinition
                    | TagEnd::DefinitionListDefinition => {
                        self.containers = self.containers.saturating_sub(1);
                    }
                    TagEnd::Table => self.tables = self.tables.saturating_sub(1),
                    _ => {}
                }
                if is_block_end(tag) {
                    self.text_start = None;
                }
            }
            Event::Html(_) | Event::Rule | Event::DisplayMath(_) => self.text_start = None,
            _ => {
                if self.text_start.is_none() {
                    self.text_start = Some(range.start);
                }
            }
        }
    }

    /// The place of something that starts a line's content at `start` (or whose block does).
    fn place(&self, content: &str, start: usize) -> Place {
        Place {
            in_container: self.containers > 0,
            prefix: continuation_prefix(content, start),
        }
    }
}

fn is_block_end(tag: &TagEnd) -> bool {
    !matches!(
        tag,
        TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::Link
            | TagEnd::Image
    )
}

/// The text before `start` on its line, as a continuation line must begin: block quote markers
/// and whitespace kept, list markers (and anything else) as spaces.
pub fn continuation_prefix(content: &str, start: usize) -> String {
    let start = start.min(content.len());
    let line_start = content[..start].rfind('\n').map_or(0, |i| i + 1);
    content[line_start..start]
        .chars()
        .map(|c| if c == '>' || c == '\t' { c } else { ' ' })
        .collect()
}

/// The chapter's kernel blocks, code ranges and places of text.
fn scan_code(chapter: &Chapter<'_>) -> Result<Code, ScanError> {
    let content = chapter.content;
    let mut code = Code {
        kernels: Vec::new(),
        code_ranges: Vec::new(),
        math_ranges: Vec::new(),
        texts: Vec::new(),
    };
    let mut open_block: Option<OpenBlock> = None;
    let mut nesting = Nesting::default();
    for (event, range) in Parser::new_ext(content, Options::all()).into_offset_iter() {
        match &event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let (info, info_range) = match kind {
                    CodeBlockKind::Fenced(info) => {
                        let info = info.to_string();
                        let info_range = find_info_range(content, &range, &info);
                        (info, info_range)
                    }
                    CodeBlockKind::Indented => (String::new(), range.start..range.start),
                };
                open_block = Some(OpenBlock {
                    range: range.clone(),
                    info,
                    info_range,
                    body: String::new(),
                    place: nesting.place(content, range.start),
                });
            }
            Event::Text(text) => match open_block.as_mut() {
                Some(block) => block.body.push_str(text),
                None => code.texts.push(TextPlace {
                    range: range.clone(),
                    place: nesting.place(content, nesting.text_start.unwrap_or(range.start)),
                    in_table: nesting.tables > 0,
                }),
            },
            Event::End(TagEnd::CodeBlock) => {
                if let Some(block) = open_block.take() {
                    code.code_ranges.push(block.range.clone());
                    code.kernels.extend(kernel_block(chapter, block)?);
                }
            }
            Event::Code(_) | Event::Html(_) | Event::InlineHtml(_) => {
                code.code_ranges.push(range.clone());
            }
            Event::InlineMath(_) | Event::DisplayMath(_) => code.math_ranges.push(range.clone()),
            _ => {}
        }
        nesting.follow(&event, &range);
    }
    Ok(code)
}

/// The kernel a finished code block defines, if its info string names one.
fn kernel_block(chapter: &Chapter<'_>, block: OpenBlock) -> Result<Option<KernelBlock>, ScanError> {
    let Some((name, language)) = parse_info(&block.info)
        .map_err(|error| chapter.error(block.range.start, error.to_string()))?
    else {
        return Ok(None);
    };
    // The source starts on the line after the opening fence (in an included file, that
    // file's line).
    let origin = chapter.at_line(chapter.line_of(block.range.start) + 1);
    Ok(Some(KernelBlock {
        kernel: KernelSource {
            name,
            source: block.body,
            origin,
            language,
        },
        range: block.range,
        info_range: block.info_range,
        place: block.place,
    }))
}

/// A directive found in the text: a lab's, a diagram's or the GPUs' comparison.
/// Every directive of ours, one variant per kind, as the one pass over a chapter finds them.
/// A new directive is a variant here, its parser (called from [`parse_any_directive`]), its
/// view, and its arm in [`scan`].
enum AnyDirective {
    Lab(Directive),
    Diagram(DiagramDirective),
    Comparison(ComparisonDirective),
    /// A figure in the prose: inline, so it may stand in a table and has no place of its own.
    Figure(FigureDirective),
}

impl AnyDirective {
    fn range(&self) -> &Range<usize> {
        match self {
            AnyDirective::Lab(d) => &d.range,
            AnyDirective::Diagram(d) => &d.range,
            AnyDirective::Comparison(d) => &d.range,
            AnyDirective::Figure(d) => &d.range,
        }
    }

    /// Sets where a block directive stands (a figure is inline: it has no place).
    fn set_place(&mut self, place: Place) {
        match self {
            AnyDirective::Lab(d) => d.place = place,
            AnyDirective::Diagram(d) => d.place = place,
            AnyDirective::Comparison(d) => d.place = place,
            AnyDirective::Figure(_) => {}
        }
    }
}

/// Every directive of ours outside code, in one pass; another preprocessor's `{{#...}}`
/// (`{{#include}}`, `{{#labels}}`) is skipped.
fn scan_directives(chapter: &Chapter<'_>, code: &Code) -> Result<Vec<AnyDirective>, ScanError> {
    let code_ranges = &code.code_ranges;
    let content = chapter.content;
    let mut found_all = Vec::new();
    let mut search_from = 0;
    while let Some(found) = content[search_from..].find(DIRECTIVE_START) {
        let start = search_from + found;
        search_from = start + DIRECTIVE_START.len();
        let escaped = chapter
            .origins
            .is_some_and(|origins| origins.escaped.contains(&start));
        if escaped || code_ranges.iter().any(|r| r.contains(&start)) {
            continue;
        }
        if figures::OPENINGS
            .iter()
            .any(|open| content[start..].starts_with(open))
        {
            let figure = parse_figure(chapter, code, start)?;
            search_from = figure.range.end;
            found_all.push(AnyDirective::Figure(figure));
            continue;
        }
        let Some(mut directive) = parse_any_directive(chapter, start)? else {
            continue;
        };
        search_from = directive.range().end;
        if let Some(text) = code.texts.iter().find(|t| t.range.contains(&start)) {
            if text.in_table {
                return Err(chapter.error(
                    start,
                    "a `{{#lab}}` or diagram directive cannot stand in a table (its HTML is a block); put it on a line of its own",
                ));
            }
            directive.set_place(text.place.clone());
        }
        found_all.push(directive);
    }
    Ok(found_all)
}

/// The figure directive (`{{#value ...}}`, `{{#ratio ...}}`, …) that opens at `start`, outside
/// code; a malformed one, or one inside `$…$` math, is an error at its line.
fn parse_figure(
    chapter: &Chapter<'_>,
    code: &Code,
    start: usize,
) -> Result<FigureDirective, ScanError> {
    let content = chapter.content;
    if code.math_ranges.iter().any(|r| r.contains(&start)) {
        return Err(chapter.error(
            start,
            "a figure directive cannot stand inside `$…$` math (KaTeX would typeset its HTML): put the figure in the sentence, and keep the math symbolic",
        ));
    }
    let Some(close) = closing_on_line(content, start) else {
        return Err(chapter.error(
            start,
            "a figure directive is not closed with `}}` on its line",
        ));
    };
    let range = start..start + close + 2;
    let query = figures::Query::parse(&content[range.clone()])
        .map_err(|error| chapter.error(start, error.to_string()))?;
    Ok(FigureDirective {
        query,
        range,
        location: chapter.at(start),
    })
}

/// The directive of ours that opens at `start` (`{{#lab ...}}`, `{{#warp-access ...}}`,
/// `{{#banks ...}}`), or `None` for another preprocessor's.
fn parse_any_directive(
    chapter: &Chapter<'_>,
    start: usize,
) -> Result<Option<AnyDirective>, ScanError> {
    let after = &chapter.content[start + DIRECTIVE_START.len()..];
    let name_len = after
        .find(|c: char| c.is_whitespace() || c == '}')
        .unwrap_or(after.len());
    let name = &after[..name_len];
    if name == LAB_DIRECTIVE {
        return Ok(parse_directive(chapter, start)?.map(AnyDirective::Lab));
    }
    if name == crate::gpus::DIRECTIVE {
        return parse_comparison(chapter, start).map(|d| Some(AnyDirective::Comparison(d)));
    }
    match DiagramKind::ALL.into_iter().find(|k| k.directive() == name) {
        Some(kind) => parse_diagram(chapter, start, kind).map(|d| Some(AnyDirective::Diagram(d))),
        None => Ok(None),
    }
}

/// Where the `}}` closing a directive that opens at `start` stands, relative to `start`: on the
/// same line, or nowhere.
fn closing_on_line(content: &str, start: usize) -> Option<usize> {
    // The first `}}` from `start`, then no newline before it: never a walk to the line's end,
    // which for many directives on one long line would be quadratic.
    let rest = &content[start..];
    let close = rest.find("}}")?;
    (!rest[..close].contains('\n')).then_some(close)
}

/// The `kind` diagram directive that opens at `start`.
fn parse_diagram(
    chapter: &Chapter<'_>,
    start: usize,
    kind: DiagramKind,
) -> Result<DiagramDirective, ScanError> {
    let content = chapter.content;
    let Some(close) = closing_on_line(content, start) else {
        return Err(chapter.error(
            start,
            format!(
                "`{{{{#{}` is not closed with `}}}}` on the same line",
                kind.directive()
            ),
        ));
    };
    let open = DIRECTIVE_START.len() + kind.directive().len();
    let inner = &content[start + open..start + close];
    let spec = directive::attributes(inner)
        .and_then(|attributes| DiagramSpec::from_attributes(kind, &attributes))
        .map_err(|why| chapter.error(start, format!("`{{{{#{}}}}}`: {why}", kind.directive())))?;
    Ok(DiagramDirective {
        spec,
        range: start..start + close + 2,
        location: chapter.at(start),
        place: Place::default(),
    })
}

/// The `{{#gpus-compared [LAB …]}}` directive that opens at `start`.
fn parse_comparison(chapter: &Chapter<'_>, start: usize) -> Result<ComparisonDirective, ScanError> {
    let content = chapter.content;
    let directive = crate::gpus::DIRECTIVE;
    let Some(close) = closing_on_line(content, start) else {
        return Err(chapter.error(
            start,
            format!("`{{{{#{directive}` is not closed with `}}}}` on the same line"),
        ));
    };
    let inner = &content[start + DIRECTIVE_START.len() + directive.len()..start + close];
    let labs: Vec<String> = inner.split_whitespace().map(String::from).collect();
    if let Some(bad) = labs.iter().find(|lab| !is_lab_name(lab)) {
        return Err(chapter.error(
            start,
            format!(
                "`{{{{#{directive}}}}}`: `{bad}` is not a lab name (letters, digits, `_` or `-`); write `{{{{#{directive}}}}}` for every lab, or name labs"
            ),
        ));
    }
    Ok(ComparisonDirective {
        labs,
        range: start..start + close + 2,
        location: chapter.at(start),
        place: Place::default(),
    })
}

/// The `{{#lab NAME}}` directive that opens at `start`.
fn parse_directive(chapter: &Chapter<'_>, start: usize) -> Result<Option<Directive>, ScanError> {
    let content = chapter.content;
    let line_end = content[start..]
        .find('\n')
        .map_or(content.len(), |i| start + i);
    let Some(close) = content[start..line_end].find("}}") else {
        return Err(chapter.error(start, "`{{#lab` is not closed with `}}` on the same line"));
    };
    let end = start + close + 2;
    let inner = &content[start + DIRECTIVE_START.len() + LAB_DIRECTIVE.len()..start + close];
    if !inner.is_empty() && !inner.starts_with(char::is_whitespace) {
        return Ok(None);
    }
    let words: Vec<&str> = inner.split_whitespace().collect();
    let lab = match words.as_slice() {
        [name] if is_lab_name(name) => name.to_string(),
        [] => {
            return Err(chapter.error(
                start,
                "`{{#lab}}` needs a lab name, e.g. `{{#lab transpose}}`",
            ));
        }
        _ => {
            return Err(chapter.error(
                start,
                format!(
                    "malformed directive `{}`: expected `{{{{#lab NAME}}}}` with one name of letters, digits, `_` or `-`",
                    &content[start..end]
                ),
            ));
        }
    };
    Ok(Some(Directive {
        lab,
        range: start..end,
        location: chapter.at(start),
        place: Place::default(),
    }))
}

/// Why a kernel-language block's info string is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InfoError {
    #[error("unknown attribute `{word}` in the info string `{info}` (these blocks take {takes})")]
    UnknownAttribute {
        word: String,
        info: String,
        takes: &'static str,
    },
    #[error(
        "{attribute} name `{value}` must be an identifier (a kernel's is its `extern \"C\"` entry point, a reference's its Python function)"
    )]
    NotAnIdentifier { attribute: String, value: String },
    #[error("the info string names a block twice (one `kernel=` or `reference=` per block)")]
    NamedTwice,
}

/// Reads a fenced block's info string: `Ok(Some((name, language)))` for a kernel block
/// (` ```cuda kernel=NAME ` or ` ```python kernel=NAME `) or a NumPy reference
/// (` ```python reference=NAME `), `Ok(None)` for any other block, `Err` for a kernel-language
/// block whose attributes are malformed. A Python block with neither is ordinary code to read.
pub fn parse_info(info: &str) -> Result<Option<(String, Language)>, InfoError> {
    let mut words = info.split_whitespace();
    let Some(language) = words.next() else {
        return Ok(None);
    };
    let cuda = CUDA_LANGUAGES.contains(&language);
    if !cuda && (language != "python" || !(info.contains("kernel=") || info.contains("reference=")))
    {
        return Ok(None);
    }
    let mut named: Option<(String, Language)> = None;
    for word in words {
        let (attribute, value) = word.split_once('=').unwrap_or((word, ""));
        let language = match attribute {
            "kernel" if cuda => Language::Cuda,
            "kernel" => Language::Python,
            "reference" if !cuda => Language::PythonReference,
            _ => {
                return Err(InfoError::UnknownAttribute {
                    word: word.to_string(),
                    info: info.to_string(),
                    takes: if cuda {
                        "`kernel=NAME`"
                    } else {
                        "`kernel=NAME` or `reference=NAME`"
                    },
                });
            }
        };
        if !is_c_identifier(value) {
            return Err(InfoError::NotAnIdentifier {
                attribute: attribute.to_string(),
                value: value.to_string(),
            });
        }
        if named.replace((value.to_string(), language)).is_some() {
            return Err(InfoError::NamedTwice);
        }
    }
    Ok(named)
}

fn is_c_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_lab_name(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn find_info_range(content: &str, block: &Range<usize>, info: &str) -> Range<usize> {
    let first_line_end = content[block.clone()]
        .find('\n')
        .map_or(block.end, |i| block.start + i);
    let line = &content[block.start..first_line_end];
    match line.find(info.trim()) {
        Some(i) if !info.trim().is_empty() => block.start + i..block.start + i + info.trim().len(),
        _ => first_line_end..first_line_end,
    }
}

/// Every kernel of the book by name, and every directive by chapter.
#[derive(Debug, Clone, Default)]
pub struct BookIndex {
    pub kernels: BTreeMap<String, KernelSource>,
    pub chapters: BTreeMap<PathBuf, ChapterScan>,
}

impl BookIndex {
    /// Scans chapters given as (path, content); collects every error rather than the first.
    pub fn build<'a>(
        chapters: impl IntoIterator<Item = (&'a Path, &'a str)>,
    ) -> Result<BookIndex, Vec<ScanError>> {
        BookIndex::build_lines(chapters.into_iter().map(|(p, c)| (p, c, None)))
    }

    /// Like [`build`](Self::build), with where each line of a chapter came from where its
    /// `{{#include}}`s were expanded ([`scan_chapter_lines`]).
    pub fn build_lines<'a>(
        chapters: impl IntoIterator<Item = (&'a Path, &'a str, Option<Origins<'a>>)>,
    ) -> Result<BookIndex, Vec<ScanError>> {
        let mut index = BookIndex::default();
        let mut errors = Vec::new();
        for (path, content, origins) in chapters {
            let scanned = match origins {
                Some(origins) => scan_chapter_lines(content, path, origins),
                None => scan_chapter(content, path),
            };
            match scanned {
                Ok(scan) => {
                    index.add_kernels(&scan, &mut errors);
                    index.chapters.insert(path.to_path_buf(), scan);
                }
                Err(err) => errors.push(err),
            }
        }
        if errors.is_empty() {
            Ok(index)
        } else {
            Err(errors)
        }
    }

    fn add_kernels(&mut self, scan: &ChapterScan, errors: &mut Vec<ScanError>) {
        for block in &scan.kernels {
            let kernel = &block.kernel;
            if let Some(first) = self.kernels.get(&kernel.name) {
                errors.push(ScanError {
                    location: SourceLocation {
                        file: kernel.origin.file.clone(),
                        line: kernel.origin.line.saturating_sub(1),
                    },
                    message: format!(
                        "{} `{}` is defined twice; the first is at {}:{}",
                        match (kernel.language, first.language) {
                            (Language::PythonReference, Language::PythonReference) => {
                                "the NumPy reference"
                            }
                            (Language::PythonReference, _) | (_, Language::PythonReference) => {
                                "the name (of a kernel and a NumPy reference)"
                            }
                            _ => "kernel",
                        },
                        kernel.name,
                        first.origin.file.display(),
                        first.origin.line.saturating_sub(1)
                    ),
                });
            } else {
                self.kernels.insert(kernel.name.clone(), kernel.clone());
            }
        }
    }

    /// The kernels `names` refer to, for handing to the runner.
    pub fn kernels_named<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> BTreeMap<String, KernelSource> {
        names
            .into_iter()
            .filter_map(|n| self.kernels.get(n).map(|k| (n.to_string(), k.clone())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAPTER: &str = "# Transpose

Some text with `{{#lab not_this_one}}` in code.

```cuda kernel=transpose_naive
extern \"C\" __global__ void transpose_naive(float *out, const float *in, int n) {
    out[0] = in[0];
}
```

```cuda
// shown, not run
```

```text
{{#lab not_in_a_code_block_either}}
```

{{#lab transpose}}
";

    fn path() -> &'static Path {
        Path::new("transpose.md")
    }

    #[test]
    fn finds_kernel_blocks_with_source_and_line() {
        let scan = scan_chapter(CHAPTER, path()).expect("scan");
        assert_eq!(scan.kernels.len(), 1);
        let kernel = &scan.kernels[0].kernel;
        assert_eq!(kernel.name, "transpose_naive");
        assert_eq!(
            kernel.origin.line, 6,
            "the first source line, after the fence"
        );
        assert!(
            kernel
                .source
                .starts_with("extern \"C\" __global__ void transpose_naive(")
        );
        assert!(kernel.source.ends_with("}\n"));
        assert_eq!(
            &CHAPTER[scan.kernels[0].info_range.clone()],
            "cuda kernel=transpose_naive"
        );
    }

    #[test]
    fn finds_directives_outside_code_only() {
        let scan = scan_chapter(CHAPTER, path()).expect("scan");
        assert_eq!(scan.directives.len(), 1);
        let directive = &scan.directives[0];
        assert_eq!(directive.lab, "transpose");
        assert_eq!(directive.location.line, 19);
        assert_eq!(&CHAPTER[directive.range.clone()], "{{#lab transpose}}");
    }

    #[test]
    fn malformed_directives_are_errors_with_lines() {
        let err = scan_chapter("text\n\n{{#lab}}\n", path()).expect_err("no name");
        assert_eq!(err.location.line, 3);
        assert!(err.message.contains("needs a lab name"));
        let err = scan_chapter("{{#lab a b}}\n", path()).expect_err("two names");
        assert!(err.message.contains("malformed"), "{}", err.message);
        let err = scan_chapter("a\n{{#lab transpose\n}}", path()).expect_err("unclosed");
        assert_eq!(err.location.line, 2);
        assert!(
            scan_chapter("{{#labels x}}", path())
                .expect("not ours")
                .directives
                .is_empty()
        );
    }

    #[test]
    fn the_gpus_comparison_is_found_with_the_labs_it_names() {
        let scan = scan_chapter(
            "# GPUs\n\n{{#gpus-compared}}\n\n{{#gpus-compared copy big_copy}}\n\n`{{#gpus-compared}}`\n",
            path(),
        )
        .expect("scans");
        let labs: Vec<&[String]> = scan.comparisons.iter().map(|c| &c.labs[..]).collect();
        assert_eq!(
            labs,
            [&[][..], &["copy".to_string(), "big_copy".into()][..]]
        );
        assert_eq!(scan.comparisons[1].location.line, 5);
        let err = scan_chapter("{{#gpus-compared a/b}}\n", path()).expect_err("a bad name");
        assert!(err.message.contains("`a/b` is not a lab name"), "{err}");
        let err = scan_chapter("{{#gpus-compared\n}}", path()).expect_err("unclosed");
        assert!(err.message.contains("is not closed"), "{err}");
    }

    #[test]
    fn info_strings() {
        assert_eq!(
            parse_info("cuda kernel=copy_f4").map(|k| k.map(|(name, _)| name)),
            Ok(Some("copy_f4".into()))
        );
        assert_eq!(parse_info("cuda"), Ok(None));
        assert_eq!(
            parse_info("python kernel=triton_transpose"),
            Ok(Some(("triton_transpose".into(), Language::Python)))
        );
        assert_eq!(
            parse_info("python"),
            Ok(None),
            "a Python sketch is ordinary code"
        );
        assert_eq!(parse_info("rust kernel=x"), Ok(None));
        assert!(parse_info("cuda kernel=").is_err());
        assert!(parse_info("cuda kernel=1abc").is_err());
        assert!(parse_info("cuda kernel=a kernel=b").is_err());
        assert!(
            parse_info("cuda kernal=a")
                .expect_err("typo")
                .to_string()
                .contains("kernal")
        );
    }

    #[test]
    fn a_malformed_info_string_names_the_fence_line() {
        let err = scan_chapter("# A\n\n```cuda kernel=bad-name\n```\n", path()).expect_err("bad");
        assert_eq!(err.location.line, 3);
    }

    #[test]
    fn duplicate_kernel_names_across_chapters_are_reported_with_both_places() {
        let one = "```cuda kernel=copy\nx\n```\n";
        let two = "# B\n\n```cuda kernel=copy\ny\n```\n";
        let errors = BookIndex::build([(Path::new("a.md"), one), (Path::new("b.md"), two)])
            .expect_err("dup");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            "b.md:3: kernel `copy` is defined twice; the first is at a.md:1"
        );
    }

    #[test]
    fn figures_are_found_in_prose_tables_and_lists_but_not_in_code() {
        let chapter = "# T\n\nNaive: {{#value transpose.naive.gbs}} GB/s, {{#ratio transpose.tiled transpose.naive}}.\n\n| a | {{#value t.x.time}} |\n| - | - |\n\n- on {{#device t}}\n\n`{{#value t.x.gbs}}`\n\n```text\n{{#value t.y.gbs}}\n```\n";
        let scan = scan_chapter(chapter, path()).expect("well-formed");
        let texts: Vec<&str> = scan
            .figures
            .iter()
            .map(|f| &chapter[f.range.clone()])
            .collect();
        assert_eq!(
            texts,
            [
                "{{#value transpose.naive.gbs}}",
                "{{#ratio transpose.tiled transpose.naive}}",
                "{{#value t.x.time}}",
                "{{#device t}}",
            ]
        );
        assert_eq!(scan.figures[2].location.line, 5);
        let err = scan_chapter("text\n\n{{#ratio a.b}}\n", path()).expect_err("one row");
        assert_eq!(err.location.line, 3);
        assert!(err.message.contains("takes two rows"), "{}", err.message);
    }

    #[test]
    fn a_figure_inside_math_is_an_error_at_its_line() {
        for chapter in [
            "text\n\n$x = {{#value t.a.gbs}}$\n",
            "text\n\n$$\nx = {{#value t.a.gbs}}\n$$\n",
        ] {
            let err = scan_chapter(chapter, path()).expect_err("inside math");
            assert!(err.message.contains("inside `$…$` math"), "{}", err.message);
            assert!(err.location.line >= 3, "{chapter}");
        }
        // Beside the math, it is a figure like any other.
        let scan = scan_chapter("$x$ is {{#value t.a.gbs}} GB/s\n", path()).expect("beside math");
        assert_eq!(scan.figures.len(), 1);
    }
}
