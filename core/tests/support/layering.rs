//! The layering of a crate's top-level modules, checked against ARCHITECTURE.md's table of
//! allowed edges. Each crate's `tests/layering.rs` includes this file and calls [`check`].
//!
//! A top-level module is a file `src/NAME.rs` or a folder `src/NAME/` (`lib` and `main` are the
//! crate's root, not modules). An edge A → B is a `crate::B` path (or `use crate::{B, …}`) in
//! A's non-test code: the text before its first `#[cfg(test)]`, comments left out, files named
//! `tests.rs` and folders named `tests` skipped — as `/work/shared/tools/module-cycles` reads it.
//!
//! The table is the section `## Layering` of ARCHITECTURE.md: under a heading `### `CRATE``, one
//! row per module, `| `module` | `a`, `b` | … |`, the modules it may use in its second column. A
//! third column, where a crate's table has one, says where vendor names (cuda, nvrtc, hip) may
//! appear: `backend` for the backend itself, `known exception: why` for a module that still has
//! them; every other module must have none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate's row of the table: the modules a module may use, and whether it may name vendors.
#[derive(Debug, Default)]
pub struct Allowed {
    pub uses: BTreeSet<String>,
    pub vendor_names: bool,
}

/// The table of `krate`, parsed from `architecture` (ARCHITECTURE.md's text), and whether it
/// has a vendor-names column.
pub fn table(architecture: &str, krate: &str) -> (BTreeMap<String, Allowed>, bool) {
    let section = architecture
        .split("\n## ")
        .find(|s| s.starts_with("Layering"))
        .expect("ARCHITECTURE.md has a `## Layering` section");
    let heading = format!("### `{krate}`");
    let body = section
        .split("\n### ")
        .find(|s| format!("### {}", s.lines().next().unwrap_or_default()).trim() == heading)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md's layering section has no `{heading}`"));
    let mut rows = BTreeMap::new();
    let mut vendor_column = false;
    for line in body.lines().filter(|l| l.trim_start().starts_with('|')) {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let Some(module) = backticked(cells[0]).into_iter().next() else {
            vendor_column |= cells.len() > 2 && cells[0] == "module";
            continue; // the header and its separator
        };
        let vendor = cells.get(2).copied().unwrap_or_default();
        let allowed = Allowed {
            uses: cells
                .get(1)
                .map(|c| backticked(c))
                .unwrap_or_default()
                .into_iter()
                .collect(),
            vendor_names: vendor.starts_with("backend") || vendor.starts_with("known exception"),
        };
        assert!(
            rows.insert(module.clone(), allowed).is_none(),
            "ARCHITECTURE.md: `{module}` has two rows in `{heading}`"
        );
    }
    assert!(
        !rows.is_empty(),
        "ARCHITECTURE.md: `{heading}` has no table"
    );
    (rows, vendor_column)
}

/// The words between backticks in `cell`.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Each top-level module's non-test code, by module (a folder's files joined).
pub fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut code: BTreeMap<String, String> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a path").as_os_str();
        let top = first.to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        let text = without_comments(&text);
        let non_test = text.split("#[cfg(test)]").next().unwrap_or_default();
        let entry = code.entry(top).or_default();
        entry.push_str(non_test);
        entry.push('\n');
    }
    code
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("a readable folder")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if path.is_dir() {
            if name != "tests" && name != "target" {
                files.extend(rust_files(&path));
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            files.push(path);
        }
    }
    files
}

/// `text` without `/* … */` and `// …` comments (as the cycle tool strips them).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start + 2..]
            .split_once("*/")
            .map_or("", |(_, after)| after);
    }
    out.push_str(rest);
    out.lines()
        .map(|line| line.split_once("//").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules `code` names with `crate::NAME` or `crate::{NAME, …}`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "crate::".len()..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            names.extend(group_heads(group));
        } else {
            names.insert(identifier(after));
        }
    }
    names.remove("");
    names
}

/// The first identifier of each top-level item of a `{a::b, c, d::{e, f}}` group.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = vec![identifier(group.trim_start())];
    let mut depth = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(identifier(group[i + 1..].trim_start())),
            _ => {}
        }
    }
    heads
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The edges between top-level modules.
pub fn edges(code: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    code.iter()
        .map(|(module, text)| {
            let uses = crate_paths(text)
                .into_iter()
                .filter(|name| name != module && code.contains_key(name))
                .collect();
            (module.clone(), uses)
        })
        .collect()
}

/// A circle of modules, where there is one: a path from a module back to itself.
pub fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut circle = path[at..].to_vec();
            circle.push(module.to_string());
            return Some(circle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        for next in edges.get(module).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|module| visit(module, edges, &mut Vec::new(), &mut done))
}

/// Whether `word` (an identifier or a word of a string) names a GPU vendor's API.
fn is_vendor_name(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    lower.contains("cuda")
        || lower.contains("nvrtc")
        || lower
            .split('_')
            .any(|part| matches!(part, "hip" | "hiprtc" | "amdhip64"))
        || (word.starts_with("Hip") && word[3..].starts_with(|c: char| c.is_ascii_uppercase()))
}

/// The vendor names in `code`, each once.
fn vendor_names(code: &str) -> BTreeSet<String> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| is_vendor_name(w))
        .map(str::to_string)
        .collect()
}

/// Everything wrong with `krate`'s layering (the crate at `manifest_dir`), against the table in
/// the workspace's ARCHITECTURE.md.
pub fn problems(manifest_dir: &str, krate: &str) -> Vec<String> {
    let root = Path::new(manifest_dir);
    let architecture = std::fs::read_to_string(root.join("../ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md beside the crates");
    let (table, vendor_column) = table(&architecture, krate);
    let code = modules(&root.join("src"));
    let edges = edges(&code);
    let mut problems = Vec::new();
    if let Some(circle) = circle(&edges) {
        problems.push(format!("a circle: {}", circle.join(" → ")));
    }
    for (module, uses) in &edges {
        let Some(allowed) = table.get(module) else {
            problems.push(format!(
                "`{module}` is not in ARCHITECTURE.md's table for `{krate}`"
            ));
            continue;
        };
        for used in uses.difference(&allowed.uses) {
            problems.push(format!(
                "`{module}` uses `{used}`, an edge ARCHITECTURE.md's table does not allow"
            ));
        }
        let vendors = vendor_names(&code[module]);
        if vendor_column && !allowed.vendor_names && !vendors.is_empty() {
            let names: Vec<&str> = vendors.iter().map(String::as_str).collect();
            problems.push(format!(
                "`{module}` names a vendor outside the backend: {}",
                names.join(", ")
            ));
        }
    }
    for module in table.keys().filter(|m| !code.contains_key(*m)) {
        problems.push(format!(
            "ARCHITECTURE.md's table names `{module}`, which is not a module"
        ));
    }
    problems
}

/// Fails the test with every problem of `krate`'s layering.
pub fn check(manifest_dir: &str, krate: &str) {
    let problems = problems(manifest_dir, krate);
    assert!(
        problems.is_empty(),
        "the layering of `{krate}` does not match ARCHITECTURE.md:\n{}",
        problems.join("\n")
    );
}

/// The checker itself: a circle, a forbidden edge and a vendor name are each found.
pub fn self_test() {
    let code: BTreeMap<String, String> = [
        ("a", "use crate::b::X; fn f() { crate::{c, d::{e, f}}; }"),
        ("b", "// crate::a in a comment\nuse crate::c;"),
        (
            "c",
            "fn g() { let _ = \"libnvrtc.so\"; }\n#[cfg(test)]\nuse crate::a;",
        ),
        ("d", "use crate::c; use crate::a;"),
    ]
    .into_iter()
    .map(|(m, t)| (m.to_string(), without_comments(t)))
    .map(|(m, t)| {
        (
            m,
            t.split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .to_string(),
        )
    })
    .collect();
    let edges = edges(&code);
    let names = |m: &str| edges[m].iter().cloned().collect::<Vec<_>>();
    assert_eq!(names("a"), ["b", "c", "d"]);
    assert_eq!(names("b"), ["c"]);
    assert!(names("c").is_empty(), "test code and strings are not edges");
    assert_eq!(
        circle(&edges),
        Some(vec!["a".into(), "d".into(), "a".into()])
    );
    assert!(vendor_names(&code["c"]).contains("libnvrtc"));
    assert!(vendor_names("HipDevice CudaLike hip_malloc").len() == 3);
    assert!(vendor_names("relationship shipped chip").is_empty());
    let (table, vendor_column) = table(
        "# A\n\n## Layering\n\n### `x`\n\n| module | may use | vendor names |\n|---|---|---|\n| `a` | `b`, `c` | |\n| `b` | | backend |\n",
        "x",
    );
    assert!(vendor_column);
    assert_eq!(table["a"].uses.len(), 2);
    assert!(table["b"].vendor_names && !table["a"].vendor_names);
}
