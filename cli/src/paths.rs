//! Where a command may write. A folder or file named on the command line is written only where
//! the user meant it: a relative path stays inside the project (`../../x` is refused: name an
//! absolute path to write elsewhere), no path lies inside the book's sources (the chapters, the
//! lab files), and a path whose parent is a file says so instead of "Not a directory".

use anyhow::bail;
use std::path::{Component, Path, PathBuf};

/// `given` (as typed, relative to the current folder) checked as a place to write `what` (e.g.
/// "--out"): its absolute form, or an error naming the path and what to do.
pub fn writable(
    given: &Path,
    what: &str,
    project: &Path,
    sources: &[PathBuf],
) -> anyhow::Result<PathBuf> {
    let resolved = resolve(given)?;
    let project = resolve(project)?;
    if given.is_relative() && !resolved.starts_with(&project) {
        bail!(
            "{what} {}: this relative path leads out of the project ({}) to {}; name an \
             absolute path if that is where it should go",
            given.display(),
            project.display(),
            resolved.display()
        );
    }
    for source in sources {
        let source = resolve(source)?;
        if resolved.starts_with(&source) {
            bail!(
                "{what} {}: it would write among the book's sources ({}); name a folder \
                 outside them",
                given.display(),
                source.display()
            );
        }
    }
    refuse_file_on_the_way(given, &resolved, what)?;
    Ok(resolved)
}

/// A file (not a folder) where `resolved` or one of its parents should be a folder.
fn refuse_file_on_the_way(given: &Path, resolved: &Path, what: &str) -> anyhow::Result<()> {
    for dir in resolved.ancestors().skip(1) {
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => bail!(
                "{what} {}: {} is a file, not a folder; name a path whose folders are folders",
                given.display(),
                dir.display()
            ),
            Err(_) => continue,
        }
    }
    Ok(())
}

/// A folder `given` that is to hold files: an error naming it when it is a file.
pub fn refuse_file_as_folder(given: &Path, what: &str) -> anyhow::Result<()> {
    if std::fs::metadata(given).is_ok_and(|meta| !meta.is_dir()) {
        bail!(
            "{what} {}: this is a file, not a folder; name a folder (it is made if missing)",
            given.display()
        );
    }
    Ok(())
}

/// `path` made absolute, `.` and `..` taken away, and its longest existing part with its
/// symbolic links resolved (so that a link into the project counts as the project).
pub fn resolve(path: &Path) -> anyhow::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut clean = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    let mut existing = clean.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut out = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf());
    out.extend(rest.iter().rev());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_path_out_of_the_project_is_refused_an_absolute_one_is_not() {
        let root = tempfile::tempdir().expect("tempdir");
        let project = root.path().join("book");
        std::fs::create_dir_all(project.join("src")).expect("mkdir");
        let sources = [project.join("src")];
        let outside = root.path().join("elsewhere");
        assert!(writable(&outside, "--out", &project, &sources).is_ok());
        let inside = project.join("results");
        assert!(writable(&inside, "--out", &project, &sources).is_ok());
        let err = writable(&project.join("src/x"), "--out", &project, &sources)
            .expect_err("among the sources");
        assert!(err.to_string().contains("sources"), "{err}");
        let err = writable(Path::new("../../x"), "--out", &project, &sources)
            .expect_err("relative, out of the project");
        assert!(err.to_string().contains("absolute path"), "{err}");
    }

    #[test]
    fn a_file_on_the_way_is_named() {
        let root = tempfile::tempdir().expect("tempdir");
        let file = root.path().join("notes.txt");
        std::fs::write(&file, "mine").expect("write");
        let err = writable(&file.join("x"), "--json", root.path(), &[]).expect_err("a file");
        assert!(err.to_string().contains("notes.txt is a file"), "{err}");
        let err = refuse_file_as_folder(&file, "--into").expect_err("a file");
        assert!(err.to_string().contains("not a folder"), "{err}");
    }

    #[test]
    fn dots_are_resolved() {
        let root = tempfile::tempdir().expect("tempdir");
        let real = std::fs::canonicalize(root.path()).expect("canonical");
        assert_eq!(
            resolve(&root.path().join("a/../b/./c")).expect("resolve"),
            real.join("b/c")
        );
    }
}
