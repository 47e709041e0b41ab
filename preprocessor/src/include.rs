//! Where each line of a chapter came from once mdBook's `links` preprocessor has expanded its
//! `{{#include FILE}}`s. kernelbook runs after `links` (so that kernel blocks and `{{#lab}}`
//! directives in included files are found); this module repeats the expansion on the chapter's
//! file with every line's origin kept, so that a kernel block from an included file is reported
//! at that file's line (and a compiler's message about it points there).
//!
//! Only `{{#include}}` (whole files, line ranges, anchors), `{{#title}}` and escaped links are
//! repeated. Anything else (`{{#rustdoc_include}}`, `{{#playground}}`, a cycle) gives `None`,
//! and the caller then reports lines of the expanded chapter instead.

use kernelbook_core::SourceLocation;
use kernelbook_core::textfile::{MOST_BYTES, read_text};
use regex::Regex;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

/// mdBook's own limit (`MAX_LINK_NESTED_DEPTH`): deeper includes are dropped with an error.
const MAX_DEPTH: usize = 10;

/// The `links` preprocessor's pattern, verbatim.
static LINK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?x)\\\{\{\#.*\}\}|\{\{\s*\#([a-zA-Z0-9_]+)\s+([^}]+)\}\}").ok());
static ANCHOR_START: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"ANCHOR:\s*(?P<anchor_name>[\w_-]+)").ok());
static ANCHOR_END: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"ANCHOR_END:\s*(?P<anchor_name>[\w_-]+)").ok());

/// Text with the origin of each of its lines (`lines[k]` is where line `k + 1` came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotated {
    pub text: String,
    pub lines: Vec<SourceLocation>,
    /// Where an escaped link (`\{{#lab x}}`, shown as written) now stands: mdBook has taken
    /// the backslash away, and the text there is to be shown, not expanded.
    pub escaped: Vec<usize>,
}

impl Annotated {
    /// A file's text, each line its own.
    pub fn of_file(text: &str, file: &Path) -> Annotated {
        let mut out = Annotated::empty(SourceLocation {
            file: file.to_path_buf(),
            line: 1,
        });
        out.push(text, &out.lines[0].clone());
        out
    }

    fn empty(origin: SourceLocation) -> Annotated {
        Annotated {
            text: String::new(),
            lines: vec![origin],
            escaped: Vec::new(),
        }
    }

    /// Appends `s`, whose first character came from `origin` (and each further line from the
    /// next line of the same file).
    fn push(&mut self, s: &str, origin: &SourceLocation) {
        if s.is_empty() {
            return;
        }
        if (self.text.is_empty() || self.text.ends_with('\n'))
            && let Some(last) = self.lines.last_mut()
        {
            *last = origin.clone();
        }
        for (i, part) in s.split('\n').enumerate() {
            if i > 0 {
                self.text.push('\n');
                self.lines.push(SourceLocation {
                    file: origin.file.clone(),
                    line: origin.line + i,
                });
            }
            self.text.push_str(part);
        }
    }

    /// Appends `self.text[range]` of `src`, keeping its lines' origins.
    fn copy_from(&mut self, src: &Annotated, range: std::ops::Range<usize>) {
        let mut pos = range.start;
        let mut line = src.text[..pos].matches('\n').count();
        while pos < range.end {
            let end = src.text[pos..range.end]
                .find('\n')
                .map_or(range.end, |i| pos + i + 1);
            if let Some(origin) = src.lines.get(line) {
                self.push(&src.text[pos..end], origin);
            }
            pos = end;
            line += 1;
        }
    }

    /// Where line `line` (1-based) came from.
    pub fn origin(&self, line: usize) -> Option<&SourceLocation> {
        self.lines.get(line.checked_sub(1)?)
    }
}

/// Expands the `{{#include}}`s of a chapter as mdBook's `links` does. `dir` is the folder on
/// disk that relative paths start from; `shown_dir` is the same folder as locations show it.
pub fn expand(chapter: &Annotated, dir: &Path, shown_dir: &Path) -> Option<Annotated> {
    expand_at(chapter, dir, shown_dir, 0)
}

fn expand_at(src: &Annotated, dir: &Path, shown_dir: &Path, depth: usize) -> Option<Annotated> {
    let link = LINK.as_ref()?;
    let mut out = Annotated::empty(src.lines.first()?.clone());
    let mut copied = 0;
    for cap in link.captures_iter(&src.text) {
        let whole = cap.get(0)?;
        let replacement = match (cap.get(1), cap.get(2)) {
            (Some(kind), Some(rest)) => match kind.as_str() {
                "title" => Some(Annotated::empty(src.lines.first()?.clone())),
                kind @ ("include" | "rustdoc_include") => {
                    match rest.as_str().split_whitespace().next() {
                        Some(arg) => {
                            if depth >= MAX_DEPTH {
                                return None;
                            }
                            let rustdoc = kind == "rustdoc_include";
                            include(arg, rustdoc, dir, shown_dir, depth)?
                        }
                        None => continue,
                    }
                }
                "playground" | "playpen" => return None,
                _ => continue,
            },
            _ if whole.as_str().starts_with('\\') => {
                out.copy_from(src, copied..whole.start());
                out.escaped.push(out.text.len());
                out.copy_from(src, whole.start() + 1..whole.end());
                copied = whole.end();
                continue;
            }
            _ => continue,
        };
        out.copy_from(src, copied..whole.start());
        copied = whole.end();
        if let Some(included) = replacement {
            let at = out.text.len();
            out.copy_from(&included, 0..included.text.len());
            out.escaped.extend(included.escaped.iter().map(|e| at + e));
        } else {
            // mdBook leaves a link it cannot read in the page as written.
            out.copy_from(src, whole.start()..whole.end());
        }
    }
    out.copy_from(src, copied..src.text.len());
    Some(out)
}

/// The lines `arg` (`FILE`, `FILE:N`, `FILE:N:M`, `FILE:ANCHOR`...) names, themselves expanded;
/// `Some(None)` when the file cannot be read (mdBook then leaves the link as written). A
/// `rustdoc_include` keeps the other lines too, hidden behind `# `.
fn include(
    arg: &str,
    rustdoc: bool,
    dir: &Path,
    shown_dir: &Path,
    depth: usize,
) -> Option<Option<Annotated>> {
    let (path, selection) = arg
        .split_once(':')
        .map_or((arg, None), |(p, s)| (p, Some(s)));
    let target = dir.join(path);
    let shown = normalize(&shown_dir.join(path));
    let Ok(text) = read_text(&target, MOST_BYTES) else {
        return Some(None);
    };
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
    let taken = match (parse_selection(selection), rustdoc) {
        (Selection::Lines(start, end), false) => lines
            .iter()
            .skip(start)
            .take(end.map_or(usize::MAX, |e| e.saturating_sub(start)))
            .map(|&(n, l)| (n, l.to_string()))
            .collect(),
        (Selection::Lines(start, end), true) => lines
            .iter()
            .map(|&(n, l)| {
                let shown = n > start && end.is_none_or(|e| n <= e);
                (
                    n,
                    if shown {
                        l.to_string()
                    } else {
                        format!("# {l}")
                    },
                )
            })
            .collect(),
        (Selection::Anchor(anchor), false) => anchored(&lines, anchor)?,
        (Selection::Anchor(anchor), true) => rustdoc_anchored(&lines, anchor)?,
    };
    let mut piece = Annotated {
        text: String::new(),
        lines: Vec::new(),
        escaped: Vec::new(),
    };
    for (i, (n, line)) in taken.iter().enumerate() {
        if i > 0 {
            piece.text.push('\n');
        }
        piece.text.push_str(line);
        piece.lines.push(SourceLocation {
            file: shown.clone(),
            line: *n,
        });
    }
    if piece.lines.is_empty() {
        piece.lines.push(SourceLocation {
            file: shown.clone(),
            line: 1,
        });
    }
    let parent = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
    Some(Some(expand_at(
        &piece,
        &parent(&target),
        &parent(&shown),
        depth + 1,
    )?))
}

enum Selection<'a> {
    /// Lines `start..end` (0-based, end exclusive; no end: to the end of the file).
    Lines(usize, Option<usize>),
    Anchor(&'a str),
}

/// mdBook's `parse_range_or_anchor`.
fn parse_selection(selection: Option<&str>) -> Selection<'_> {
    let mut parts = selection.unwrap_or("").splitn(3, ':');
    let first = parts.next();
    let start = match first {
        Some(value) if value.parse::<usize>().is_ok() => {
            Some(value.parse::<usize>().unwrap_or(0).saturating_sub(1))
        }
        Some("") | None => None,
        Some(anchor) => return Selection::Anchor(anchor),
    };
    let end = parts.next().map(str::parse::<usize>);
    match (start, end) {
        (Some(start), Some(Ok(end))) => Selection::Lines(start, Some(end)),
        (Some(start), Some(Err(_))) => Selection::Lines(start, None),
        (Some(start), None) => Selection::Lines(start, Some(start + 1)),
        (None, Some(Ok(end))) => Selection::Lines(0, Some(end)),
        (None, _) => Selection::Lines(0, None),
    }
}

/// mdBook's `take_rustdoc_include_anchored_lines`: every line but the anchors', those outside
/// the anchor behind `# `.
fn rustdoc_anchored(lines: &[(usize, &str)], anchor: &str) -> Option<Vec<(usize, String)>> {
    let (start_re, end_re) = (ANCHOR_START.as_ref()?, ANCHOR_END.as_ref()?);
    let mut kept = Vec::new();
    let mut within = false;
    for &(n, line) in lines {
        if within {
            match end_re.captures(line) {
                Some(cap) if &cap["anchor_name"] == anchor => within = false,
                Some(_) => {}
                None if !start_re.is_match(line) => kept.push((n, line.to_string())),
                None => {}
            }
        } else if let Some(cap) = start_re.captures(line) {
            within = &cap["anchor_name"] == anchor;
        } else if !end_re.is_match(line) {
            kept.push((n, format!("# {line}")));
        }
    }
    Some(kept)
}

/// mdBook's `take_anchored_lines`: the lines between `ANCHOR: name` and `ANCHOR_END: name`,
/// without any anchor line.
fn anchored(lines: &[(usize, &str)], anchor: &str) -> Option<Vec<(usize, String)>> {
    let (start_re, end_re) = (ANCHOR_START.as_ref()?, ANCHOR_END.as_ref()?);
    let mut kept = Vec::new();
    let mut found = false;
    for &(n, line) in lines {
        if found {
            match end_re.captures(line) {
                Some(cap) if &cap["anchor_name"] == anchor => break,
                Some(_) => {}
                None if !start_re.is_match(line) => kept.push((n, line.to_string())),
                None => {}
            }
        } else if start_re
            .captures(line)
            .is_some_and(|cap| &cap["anchor_name"] == anchor)
        {
            found = true;
        }
    }
    Some(kept)
}

/// Every `{{#include}}` of `written` (a chapter's text as written, shown as `shown`, relative
/// paths from `dir`) that names no readable text file: missing, a folder, a FIFO, a device,
/// too large. mdBook would leave the first kinds in the page as written without a word and
/// hang or run out of memory on the others; each is a `(location, message)` here, and the
/// included files' own includes are checked too.
pub fn unreadable_includes(
    written: &str,
    shown: &Path,
    dir: &Path,
) -> Vec<(SourceLocation, String)> {
    let mut found = Vec::new();
    check_includes_at(written, shown, dir, 0, &mut found);
    found
}

fn check_includes_at(
    text: &str,
    shown: &Path,
    dir: &Path,
    depth: usize,
    found: &mut Vec<(SourceLocation, String)>,
) {
    let Some(link) = LINK.as_ref() else {
        return;
    };
    if depth >= MAX_DEPTH {
        return;
    }
    for cap in link.captures_iter(text) {
        let (Some(whole), Some(kind), Some(rest)) = (cap.get(0), cap.get(1), cap.get(2)) else {
            continue;
        };
        if !matches!(kind.as_str(), "include" | "rustdoc_include") {
            continue;
        }
        let Some(arg) = rest.as_str().split_whitespace().next() else {
            continue;
        };
        let path = arg.split_once(':').map_or(arg, |(p, _)| p);
        let target = dir.join(path);
        let location = SourceLocation {
            file: shown.to_path_buf(),
            line: kernelbook_core::line_of_offset(text, whole.start()),
        };
        match read_text(&target, MOST_BYTES) {
            Ok(included) => {
                let parent = |p: &Path| p.parent().map(Path::to_path_buf).unwrap_or_default();
                let shown_included = normalize(&parent(shown).join(path));
                check_includes_at(
                    &included,
                    &shown_included,
                    &parent(&target),
                    depth + 1,
                    found,
                );
            }
            Err(err) => found.push((
                location,
                format!(
                    "`{}` cannot be included: {}: {}",
                    whole.as_str(),
                    normalize(&parent_of(shown).join(path)).display(),
                    err.reason
                ),
            )),
        }
    }
}

fn parent_of(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// `a/b/../c` as `a/c`, without touching the file system (the path is for showing).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_include_of_nothing_a_folder_or_a_device_is_named_at_its_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("folder")).expect("mkdir");
        std::fs::write(dir.path().join("part.md"), "ok\n{{#include gone.md}}\n").expect("write");
        let chapter = "a\n{{#include missing.md}}\n{{#include folder}}\n{{#include /dev/zero}}\n\
                       {{#include part.md:2}}\n\\{{#include escaped.md}}\n";
        let found = unreadable_includes(chapter, Path::new("src/ch.md"), dir.path());
        let at: Vec<String> = found
            .iter()
            .map(|(loc, message)| format!("{}:{}: {message}", loc.file.display(), loc.line))
            .collect();
        assert_eq!(at.len(), 4, "{at:#?}");
        assert!(
            at[0].starts_with("src/ch.md:2: `{{#include missing.md}}`"),
            "{}",
            at[0]
        );
        assert!(
            at[1].starts_with("src/ch.md:3:") && at[1].contains("a folder"),
            "{}",
            at[1]
        );
        assert!(
            at[2].starts_with("src/ch.md:4:") && at[2].contains("a device"),
            "{}",
            at[2]
        );
        assert!(
            at[3].starts_with("src/part.md:2:") && at[3].contains("gone.md"),
            "{}",
            at[3]
        );
    }

    #[test]
    fn included_lines_keep_their_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("part.md"),
            "p1\np2\n<!-- ANCHOR: a -->\np4\n<!-- ANCHOR_END: a -->\n",
        )
        .expect("write");
        let chapter =
            "c1\n{{#include part.md}}\nc3 {{#include part.md:a}} tail\n\\{{#include x}}\n";
        let annotated = Annotated::of_file(chapter, Path::new("src/ch.md"));
        let out = expand(&annotated, dir.path(), Path::new("src")).expect("expands");
        assert_eq!(
            out.text,
            "c1\np1\np2\n<!-- ANCHOR: a -->\np4\n<!-- ANCHOR_END: a -->\nc3 p4 tail\n{{#include x}}\n"
        );
        let at = |line: usize| out.origin(line).map(ToString::to_string);
        assert_eq!(at(1).as_deref(), Some("src/ch.md:1"));
        assert_eq!(at(2).as_deref(), Some("src/part.md:1"));
        assert_eq!(at(5).as_deref(), Some("src/part.md:4"));
        assert_eq!(at(7).as_deref(), Some("src/ch.md:3"));
        assert_eq!(at(8).as_deref(), Some("src/ch.md:4"));
        let ranged = Annotated::of_file("{{#include part.md:2:4}}", Path::new("src/ch.md"));
        let out = expand(&ranged, dir.path(), Path::new("src")).expect("expands");
        assert_eq!(out.text, "p2\n<!-- ANCHOR: a -->\np4");
        assert_eq!(
            out.origin(3).map(ToString::to_string).as_deref(),
            Some("src/part.md:4")
        );
        let escaped = Annotated::of_file("a \\{{#lab x}}", Path::new("src/ch.md"));
        let out = expand(&escaped, dir.path(), Path::new("src")).expect("expands");
        assert_eq!(
            (out.text.as_str(), out.escaped.as_slice()),
            ("a {{#lab x}}", &[2][..])
        );
        let rustdoc = Annotated::of_file("{{#rustdoc_include part.md:2}}", Path::new("src/ch.md"));
        let out = expand(&rustdoc, dir.path(), Path::new("src")).expect("expands");
        assert!(out.text.starts_with("# p1\np2\n# <!--"), "{}", out.text);
        assert_eq!(
            out.origin(2).map(ToString::to_string).as_deref(),
            Some("src/part.md:2")
        );
        let unsupported = Annotated::of_file("{{#playground x.rs}}", Path::new("src/ch.md"));
        assert_eq!(expand(&unsupported, dir.path(), Path::new("src")), None);
    }

    #[test]
    fn a_cycle_is_not_followed_forever() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("self.md"), "x {{#include self.md}}\n").expect("write");
        let chapter = Annotated::of_file("{{#include self.md}}", Path::new("ch.md"));
        assert_eq!(expand(&chapter, dir.path(), Path::new("")), None);
        assert_eq!(normalize(Path::new("a/b/../c/./d")), PathBuf::from("a/c/d"));
    }
}
