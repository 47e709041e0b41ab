//! "Tangling": writing each kernel of the book to `kernels/NAME.cu`, so a learner can open it in
//! an editor or build it with nvcc. The book stays the source of truth; a test fails when
//! `kernels/` is out of date.

use crate::scan::BookIndex;
use std::collections::BTreeMap;
use std::path::Path;

/// The first line of every tangled file; files without it (shared headers) are left alone.
pub const MARKER: &str = "// Tangled by `kernelbook tangle` from";
/// The same for a Python kernel block (`NAME.py`).
pub const PYTHON_MARKER: &str = "# Tangled by `kernelbook tangle` from";

/// The files `kernels/` should hold: file name → contents.
pub fn tangled_files(index: &BookIndex) -> BTreeMap<String, String> {
    index
        .kernels
        .values()
        .map(|kernel| {
            let marker = match kernel.language {
                kernelbook_core::Language::Cuda => MARKER,
                kernelbook_core::Language::Python => PYTHON_MARKER,
            };
            let contents = format!(
                "{marker} {}:{}. Edit the book, not this file.\n{}",
                kernel.origin.file.display(),
                kernel.origin.line,
                kernel.source
            );
            let file = format!("{}.{}", kernel.name, kernel.language.extension());
            (file, contents)
        })
        .collect()
}

/// How `kernels/` differs from what the book says it should hold.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TangleDiff {
    pub missing: Vec<String>,
    pub outdated: Vec<String>,
    /// Tangled files whose kernel is no longer in the book.
    pub orphaned: Vec<String>,
}

impl TangleDiff {
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.outdated.is_empty() && self.orphaned.is_empty()
    }
}

/// Compares `dir` with `expected`.
pub fn diff(dir: &Path, expected: &BTreeMap<String, String>) -> std::io::Result<TangleDiff> {
    let mut diff = TangleDiff::default();
    for (name, contents) in expected {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(found) if &found == contents => {}
            Ok(_) => diff.outdated.push(name.clone()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                diff.missing.push(name.clone())
            }
            Err(err) => return Err(err),
        }
    }
    if dir.exists() {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            if (name.ends_with(".cu") || name.ends_with(".py")) && !expected.contains_key(&name) {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if text.starts_with(MARKER) || text.starts_with(PYTHON_MARKER) {
                    diff.orphaned.push(name);
                }
            }
        }
    }
    diff.orphaned.sort();
    Ok(diff)
}

/// Brings `dir` in line with `expected`: writes what is missing or outdated, removes orphans.
pub fn write(dir: &Path, expected: &BTreeMap<String, String>) -> std::io::Result<TangleDiff> {
    let found = diff(dir, expected)?;
    std::fs::create_dir_all(dir)?;
    for name in found.missing.iter().chain(&found.outdated) {
        std::fs::write(dir.join(name), &expected[name])?;
    }
    for name in &found.orphaned {
        std::fs::remove_file(dir.join(name))?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> BookIndex {
        BookIndex::build([(
            Path::new("book/src/a.md"),
            "```cuda kernel=copy\nbody\n```\n",
        )])
        .expect("index")
    }

    #[test]
    fn writes_then_reports_clean_then_detects_edits_and_orphans() {
        let dir = tempfile::tempdir().expect("tempdir");
        let expected = tangled_files(&index());
        assert_eq!(
            expected["copy.cu"],
            format!("{MARKER} book/src/a.md:2. Edit the book, not this file.\nbody\n")
        );
        assert_eq!(
            diff(dir.path(), &expected).expect("diff").missing,
            vec!["copy.cu"]
        );
        write(dir.path(), &expected).expect("write");
        assert!(diff(dir.path(), &expected).expect("diff").is_clean());

        std::fs::write(dir.path().join("copy.cu"), "edited").expect("edit");
        std::fs::write(dir.path().join("old.cu"), format!("{MARKER} x.md:1.\n")).expect("orphan");
        std::fs::write(dir.path().join("common.cuh"), "// shared header").expect("header");
        let found = diff(dir.path(), &expected).expect("diff");
        assert_eq!(found.outdated, vec!["copy.cu"]);
        assert_eq!(found.orphaned, vec!["old.cu"]);
        write(dir.path(), &expected).expect("write");
        assert!(diff(dir.path(), &expected).expect("diff").is_clean());
        assert!(
            dir.path().join("common.cuh").exists(),
            "hand-written files are kept"
        );
    }
}
