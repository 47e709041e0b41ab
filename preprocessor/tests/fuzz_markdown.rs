//! Property tests: no markdown, however malformed, makes the chapter scanner panic, and every
//! error it reports points at a line of the chapter; the chapter the preprocessor edits
//! re-parses to the structure it was written with (kernel blocks still code, nothing else code,
//! containers and lists as they were).

use mdbook_kernelbook::scan::{BookIndex, scan_chapter};
use proptest::prelude::*;
use std::path::Path;

/// Pieces of chapters around the constructs the scanner cares about.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("```cuda kernel=k\n".to_string()),
        Just("```cuda kernel=k2 extra=1\n".to_string()),
        Just("```cuda kernel=\n".to_string()),
        Just("```cuda\n".to_string()),
        Just("~~~cu kernel=t\n".to_string()),
        Just("```\n".to_string()),
        Just("~~~\n".to_string()),
        Just("    indented code\n".to_string()),
        Just("{{#lab transpose}}".to_string()),
        Just("{{#lab}}".to_string()),
        Just("{{#lab a b}}".to_string()),
        Just("{{#lab ".to_string()),
        Just("{{#labs x}}".to_string()),
        Just("}}".to_string()),
        Just("`{{#lab x}}`".to_string()),
        Just("{{#banks index=\"32 * t + c\" c=3}}".to_string()),
        Just("{{#warp-access index=\"t * s\" s=[1, 2] title=\"a }} b\"}}".to_string()),
        Just("{{#warp-access index=\"t".to_string()),
        Just("{{#banks".to_string()),
        Just("{{#banks x=[}}".to_string()),
        Just("<div>\n".to_string()),
        Just("> [!NOTE]\n> text\n".to_string()),
        Just("- item\n  ```cuda kernel=inlist\n  x\n  ```\n".to_string()),
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        Just("é🚀\u{0}".to_string()),
        "[ -~]{0,20}",
        any::<String>(),
    ]
}

/// Inputs per property: 4000 in an ordinary test run; set KERNELBOOK_FUZZ_CASES for a longer one.
fn cases() -> u32 {
    std::env::var("KERNELBOOK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        if let Err(err) = scan_chapter(&text, Path::new("c.md")) {
            prop_assert!(err.location.line >= 1 && err.location.line <= text.lines().count() + 1, "{}", err);
        }
    }

    #[test]
    fn glued_fragments_never_panic(parts in proptest::collection::vec(fragment(), 0..24)) {
        let text = parts.concat();
        match scan_chapter(&text, Path::new("c.md")) {
            Ok(scan) => {
                for directive in &scan.directives {
                    prop_assert_eq!(&text[directive.range.clone()], format!("{{{{#lab {}}}}}", directive.lab));
                }
                for block in &scan.kernels {
                    prop_assert!(block.range.end <= text.len());
                }
                for diagram in &scan.diagrams {
                    let written = &text[diagram.range.clone()];
                    prop_assert!(written.starts_with("{{#") && written.ends_with("}}"), "{}", written);
                }
            }
            Err(err) => prop_assert!(err.location.line >= 1 && err.location.line <= text.lines().count() + 1, "{}", err),
        }
        let _ = BookIndex::build([(Path::new("a.md"), text.as_str()), (Path::new("b.md"), text.as_str())]);
    }
}

// ---------------------------------------------------------------------------------------------
// Re-parsing the markdown after the preprocessor's edits.

use mdbook_kernelbook::preprocessor::{ChapterHtml, apply_edits, chapter_edits};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::collections::BTreeMap;

/// A real lab's HTML (the golden recorded table): many lines, no blank one.
fn lab_html() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/transpose-recorded.html");
    std::fs::read_to_string(path).expect("golden lab HTML")
}

/// The chapter as the preprocessor leaves it, every directive's lab rendered as `lab_html`;
/// `None` when the scanner rejects the chapter.
fn edited(chapter: &str) -> Option<String> {
    let scan = scan_chapter(chapter, Path::new("c.md")).ok()?;
    let html = lab_html();
    let rendered: BTreeMap<String, String> = scan
        .directives
        .iter()
        .map(|d| (d.lab.clone(), html.clone()))
        .collect();
    Some(apply_edits(
        chapter,
        chapter_edits(
            chapter,
            &scan,
            &ChapterHtml {
                labs: &rendered,
                diagrams: &[],
                comparisons: &[],
                figures: &[],
            },
        ),
    ))
}

/// The chapter with each directive replaced by a mark (so the line it stood on keeps text).
fn marked(chapter: &str) -> Option<String> {
    let scan = scan_chapter(chapter, Path::new("c.md")).ok()?;
    let edits = scan
        .directives
        .iter()
        .map(|d| (d.range.clone(), "§".to_string()))
        .collect();
    Some(apply_edits(chapter, edits))
}

/// A chapter's block structure: containers, headings, tables and code blocks (with their code),
/// each list's tightness; then all text outside code, without whitespace. HTML is left out
/// (that is what the preprocessor inserts); paragraphs too (a lab's HTML ends one).
#[derive(Debug, Default, PartialEq, Eq)]
struct Outline {
    blocks: Vec<String>,
    /// Each list's looseness, where its items show it (a paragraph in an item: loose; text
    /// directly in one: tight; an item of HTML and code blocks only shows neither).
    loose: Vec<Option<bool>>,
    text: String,
    /// Text or code that holds inserted HTML: the caption or lab shown as text or code.
    leaked: Vec<String>,
}

fn outline(markdown: &str) -> Outline {
    let mut reader = OutlineReader::default();
    for event in Parser::new_ext(markdown, Options::all()) {
        reader.follow(event);
    }
    reader.out
}

/// Reads a parse into an [`Outline`].
#[derive(Default)]
struct OutlineReader {
    out: Outline,
    /// The code block being read.
    code: Option<String>,
    /// For each open list, its index in `out.loose`.
    lists: Vec<usize>,
    /// For each open container, whether it is a list item.
    items: Vec<bool>,
    /// Paragraphs, headings, titles and cells open (text in one is not directly in an item).
    leaves: usize,
}

impl OutlineReader {
    fn follow(&mut self, event: Event<'_>) {
        let leaf = matches!(
            event,
            Event::Start(
                Tag::Paragraph | Tag::Heading { .. } | Tag::DefinitionListTitle | Tag::TableCell
            )
        );
        let leaf_end = matches!(
            event,
            Event::End(
                TagEnd::Paragraph
                    | TagEnd::Heading(_)
                    | TagEnd::DefinitionListTitle
                    | TagEnd::TableCell
            )
        );
        let direct_in_item = self.leaves == 0 && self.items.last() == Some(&true);
        self.leaves = (self.leaves + usize::from(leaf)).saturating_sub(usize::from(leaf_end));
        let out = &mut self.out;
        match event {
            Event::Start(Tag::CodeBlock(_)) => self.code = Some(String::new()),
            Event::End(TagEnd::CodeBlock) => {
                let body = self.code.take().unwrap_or_default();
                if body.contains("kernelbook") {
                    out.leaked.push(body.clone());
                }
                out.blocks.push(format!("code {body:?}"));
            }
            Event::Text(text) | Event::Code(text) => match self.code.as_mut() {
                Some(body) => body.push_str(&text),
                None => {
                    self.shows_looseness(direct_in_item, false);
                    let out = &mut self.out;
                    if text.contains("kernelbook") {
                        out.leaked.push(text.to_string());
                    }
                    out.text
                        .extend(text.chars().filter(|c| !c.is_whitespace() && *c != '§'));
                }
            },
            Event::Start(Tag::List(start)) => {
                self.lists.push(out.loose.len());
                out.loose.push(None);
                out.blocks.push(format!("list {start:?}"));
            }
            Event::End(TagEnd::List(_)) => {
                self.lists.pop();
                out.blocks.push("/list".into());
            }
            Event::Start(Tag::Paragraph) => self.shows_looseness(direct_in_item, true),
            Event::Start(tag) => {
                if is_container(&tag) {
                    self.items.push(matches!(tag, Tag::Item));
                }
                out.blocks.extend(block_name(&tag));
            }
            Event::End(tag) => {
                if matches!(
                    tag,
                    TagEnd::BlockQuote(_)
                        | TagEnd::Item
                        | TagEnd::FootnoteDefinition
                        | TagEnd::DefinitionListDefinition
                ) {
                    self.items.pop();
                }
                if is_block(&tag) {
                    out.blocks.push(format!("/{tag:?}"));
                }
            }
            _ => {}
        }
    }

    /// A paragraph directly in an item shows its list loose, text directly in one tight.
    fn shows_looseness(&mut self, direct_in_item: bool, loose: bool) {
        if let (true, Some(&list)) = (direct_in_item, self.lists.last()) {
            let shown = &mut self.out.loose[list];
            if loose {
                *shown = Some(true);
            } else {
                shown.get_or_insert(false);
            }
        }
    }
}

fn is_container(tag: &Tag<'_>) -> bool {
    matches!(
        tag,
        Tag::BlockQuote(_) | Tag::Item | Tag::FootnoteDefinition(_) | Tag::DefinitionListDefinition
    )
}

fn block_name(tag: &Tag<'_>) -> Option<String> {
    Some(match tag {
        Tag::BlockQuote(kind) => format!("quote {kind:?}"),
        Tag::Item => "item".into(),
        Tag::Heading { level, .. } => format!("heading {level:?}"),
        Tag::Table(_) => "table".into(),
        Tag::TableHead | Tag::TableRow | Tag::TableCell => format!("{tag:?}"),
        Tag::FootnoteDefinition(name) => format!("footnote {name}"),
        Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
            format!("{tag:?}")
        }
        _ => return None,
    })
}

fn is_block(tag: &TagEnd) -> bool {
    matches!(
        tag,
        TagEnd::BlockQuote(_)
            | TagEnd::Item
            | TagEnd::Heading(_)
            | TagEnd::Table
            | TagEnd::TableHead
            | TagEnd::TableRow
            | TagEnd::TableCell
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
    )
}

/// The property itself: the edited chapter has the structure of the chapter as written.
fn check_edits_keep_the_structure(chapter: &str) -> Result<(), TestCaseError> {
    let (Some(edited), Some(marked)) = (edited(chapter), marked(chapter)) else {
        return Ok(());
    };
    let before = outline(&marked);
    let mut after = outline(&edited);
    prop_assert!(
        after.leaked.is_empty(),
        "inserted HTML shown as text or code: {:?}\n--- edited:\n{}",
        after.leaked,
        edited
    );
    after.leaked = before.leaked.clone();
    // Where the edit leaves a list's looseness unshown (its items now HTML and code only), it
    // cannot differ.
    for (after, before) in after.loose.iter_mut().zip(&before.loose) {
        if after.is_none() || before.is_none() {
            *after = *before;
        }
    }
    prop_assert_eq!(
        &before,
        &after,
        "\n--- written:\n{}\n--- edited:\n{}",
        chapter,
        edited
    );
    Ok(())
}

const KERNEL: &str = "```cuda kernel=k\nextern \"C\" __global__ void k() {}\n```";

#[test]
fn a_kernel_in_a_block_quote_keeps_the_quote() {
    let chapter = format!(
        "> Before.\n>\n{}\n>\n> After, still quoted.\n\nOutside.\n\n{{{{#lab l}}}}\n",
        KERNEL
            .lines()
            .map(|l| format!("> {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let edited = edited(&chapter).expect("scans");
    assert!(
        edited.contains("> <!-- kernelbook --><p class=\"kernelbook-kernel\" data-kernel=\"k\">"),
        "{edited}"
    );
    assert!(edited.contains("\n> ```cpp\n"), "{edited}");
    check_edits_keep_the_structure(&chapter).expect("same structure");
    let nested = "> - item\n>   ```cuda kernel=k\n>   x\n>   ```\n>   {{#lab l}}\n> - next\n";
    check_edits_keep_the_structure(nested).expect("same structure");
    // A directive in a quote, also on a lazy line.
    check_edits_keep_the_structure("> See\n> {{#lab l}} and more.\n> End.\n").expect("same");
    check_edits_keep_the_structure("> See\n{{#lab l}}\n\nOut.\n").expect("same");
}

#[test]
fn a_kernel_in_a_list_item_keeps_the_list() {
    let chapter = "- one\n- two:\n  ```cuda kernel=k\n  x\n  ```\n- three {{#lab l}} tail\n- four\n\n1. ```cu kernel=k2\n   y\n   ```\n2. {{#lab l}}\n";
    let out = edited(chapter).expect("scans");
    assert!(out.contains("\n  ```cpp\n"), "{out}");
    check_edits_keep_the_structure(chapter).expect("same structure, lists still tight");
    let loose = "- one\n\n- two\n\n  ```cuda kernel=k\n  x\n  ```\n\n  {{#lab l}}\n\n- three\n";
    check_edits_keep_the_structure(loose).expect("same structure");
    // At the top level the edits are as they always were (the golden renders depend on it).
    let top = edited("```cuda kernel=k\nx\n```\n").expect("scans");
    assert!(
        top.starts_with("<p class=\"kernelbook-kernel\" data-kernel=\"k\">"),
        "{top}"
    );
    assert!(top.contains("</p>\n\n```cpp\n"), "{top}");
}

#[test]
fn a_directive_in_a_table_is_an_error_at_its_line() {
    let err = scan_chapter(
        "| a | b |\n|---|---|\n| {{#lab l}} | 2 |\n",
        Path::new("c.md"),
    )
    .expect_err("a table cell cannot hold a lab");
    assert_eq!(err.location.line, 3);
    assert!(err.message.contains("table"), "{}", err.message);
}

/// Blocks a chapter is made of, before any container prefix.
fn block() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(KERNEL.to_string()),
        Just("~~~cu kernel=t\nint x;\n\n  int y;\n~~~".to_string()),
        Just("```\nplain {{#lab inside_code}}\n```".to_string()),
        Just("{{#lab a}}".to_string()),
        Just("Text {{#lab a}} more text.".to_string()),
        Just("Text\n{{#lab b}}\nmore".to_string()),
        Just("{{#lab a}} {{#lab b}}".to_string()),
        Just("Text with `{{#lab x}}` in code.".to_string()),
        Just("## A heading {{#lab h}}".to_string()),
        Just("<div>\nhtml {{#lab no}}\n</div>".to_string()),
        Just("| a | b |\n|---|---|\n| 1 | 2 |".to_string()),
        Just("    indented code".to_string()),
        Just("A paragraph\nover two lines.".to_string()),
        Just("Term\n: definition {{#lab d}}".to_string()),
        "[a-z][a-z ]{0,11}",
    ]
}

#[derive(Debug, Clone, Copy)]
enum Wrap {
    Quote,
    Bullet,
    Ordered,
}

/// One block in its containers, and whether a blank line follows it.
fn placed() -> impl Strategy<Value = (Vec<Wrap>, String, bool)> {
    let wrap = prop_oneof![Just(Wrap::Quote), Just(Wrap::Bullet), Just(Wrap::Ordered)];
    (
        proptest::collection::vec(wrap, 0..4),
        block(),
        any::<bool>(),
    )
}

/// The chapter the parts make. A part that does not open a list item follows a blank line: a
/// paragraph's lazy continuation lines after a directive are the known limit (see the notes of
/// `directive_edit`), not what this property is about.
fn render(parts: &[(Vec<Wrap>, String, bool)]) -> String {
    let mut out = String::new();
    for (n, (wraps, block, blank)) in parts.iter().enumerate() {
        let opens_item = matches!(wraps.last(), Some(Wrap::Bullet | Wrap::Ordered));
        if n > 0 && !opens_item && !out.ends_with("\n\n") {
            out.push('\n');
        }
        let first: String = wraps
            .iter()
            .map(|w| match w {
                Wrap::Quote => "> ",
                Wrap::Bullet => "- ",
                Wrap::Ordered => "1. ",
            })
            .collect();
        let rest: String = wraps
            .iter()
            .map(|w| match w {
                Wrap::Quote => "> ",
                Wrap::Bullet => "  ",
                Wrap::Ordered => "   ",
            })
            .collect();
        for (i, line) in block.lines().enumerate() {
            let prefix = if i == 0 { &first } else { &rest };
            out.push_str(if line.is_empty() {
                prefix.trim_end()
            } else {
                prefix
            });
            out.push_str(line);
            out.push('\n');
        }
        if *blank {
            out.push_str(rest.trim_end());
            out.push('\n');
        }
    }
    out
}

proptest! {
    // Each case renders and re-parses whole chapters: a quarter of the cases of the others.
    #![proptest_config(ProptestConfig::with_cases(cases().div_ceil(4)))]

    #[test]
    fn edited_chapters_reparse_to_the_same_structure(parts in proptest::collection::vec(placed(), 0..10)) {
        check_edits_keep_the_structure(&render(&parts))?;
    }

    #[test]
    fn editing_glued_fragments_never_panics(parts in proptest::collection::vec(fragment(), 0..24)) {
        let text = parts.concat();
        if let Some(edited) = edited(&text) {
            let _ = outline(&edited);
        }
    }
}
