//! The book is written whole or not at all: mdBook builds it into a folder beside its
//! destination, which then takes the destination's place in one rename (on Linux the two
//! folders are exchanged atomically, `RENAME_EXCHANGE`). Whoever reads the destination — a
//! browser, a second build running at the same time — sees the old book or the new one, never
//! half of one; a failed build leaves the old one as it was. Only the old book's own folder is
//! deleted after the swap, as mdBook deletes its contents before writing; nothing outside it.
//!
//! The swap deletes whatever the destination held, so only a folder that is missing, empty, or
//! a book this tool wrote is replaced: every book written here carries [`MARKER`], and a folder
//! without it (a user's folder, `book/src`, the project root, `$HOME`) is refused with a message
//! that names it.

use std::io;
use std::path::{Path, PathBuf};

/// The file every book written here carries at the top of its folder: the proof that the
/// folder is a book this tool wrote, which the next build may replace whole.
pub const MARKER: &str = ".kernelbook-book";

/// What [`MARKER`] says to whoever opens it.
const MARKER_TEXT: &str = "This folder is a book written by `kernelbook build`: the next build \
replaces it whole. Keep nothing else here.\n";

/// A folder beside the destination, into which the book is built.
#[derive(Debug)]
pub struct Staging {
    /// Removed on drop: the half-written book of a failed build, or the old book after a swap.
    dir: tempfile::TempDir,
    dest: PathBuf,
}

impl Staging {
    /// A fresh folder beside `dest` (in the same file system, so that a rename can swap them).
    /// A `dest` that is a symbolic link to a folder stands for that folder; one that is not a
    /// folder is an error (it is not ours to replace).
    pub fn beside(dest: &Path) -> io::Result<Staging> {
        let dest = match std::fs::symlink_metadata(dest) {
            Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(dest)?,
            _ => dest.to_path_buf(),
        };
        if dest.exists() && !dest.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not a folder: not replacing it with the book",
                    dest.display()
                ),
            ));
        }
        refuse_unless_replaceable(&dest)?;
        let parent = match dest.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent)?;
        let name = dest
            .file_name()
            .map_or_else(|| "book".into(), |n| n.to_string_lossy().into_owned());
        let dir = tempfile::Builder::new()
            .prefix(&format!(".{name}.building-"))
            .tempdir_in(&parent)?;
        Ok(Staging { dir, dest })
    }

    /// Where the book is to be built.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Puts the built book at the destination; the old book, if there was one, is deleted.
    pub fn commit(self) -> io::Result<()> {
        std::fs::write(self.dir.path().join(MARKER), MARKER_TEXT)?;
        // The destination may have changed since `beside` looked at it.
        refuse_unless_replaceable(&self.dest)?;
        // Another build may put its book there between two of these calls: then try again.
        for _ in 0..20 {
            match swap::exchange(self.dir.path(), &self.dest) {
                // The old book is now in the staging folder, removed with it.
                Ok(()) => return Ok(()),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) if swap::unsupported(&err) => return self.commit_in_two_steps(),
                Err(err) => return Err(err),
            }
            match swap::rename_no_replace(self.dir.path(), &self.dest) {
                Ok(()) => {
                    // Now the book itself: not to be removed.
                    let _ = self.dir.keep();
                    return Ok(());
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) if swap::unsupported(&err) => return self.commit_in_two_steps(),
                Err(err) => return Err(err),
            }
        }
        Err(io::Error::other(format!(
            "{} kept changing while the book was put there",
            self.dest.display()
        )))
    }

    /// Where no atomic exchange exists: the old book is moved aside, the new one put in its
    /// place (the old one put back if that fails), then the old one deleted.
    fn commit_in_two_steps(self) -> io::Result<()> {
        let parent = self.dir.path().parent().unwrap_or(Path::new("."));
        let aside = tempfile::Builder::new()
            .prefix(".book.old-")
            .tempdir_in(parent)?;
        let old = aside.path().join("book");
        let had_old = match std::fs::rename(&self.dest, &old) {
            Ok(()) => true,
            Err(err) if err.kind() == io::ErrorKind::NotFound => false,
            Err(err) => return Err(err),
        };
        if let Err(err) = std::fs::rename(self.dir.path(), &self.dest) {
            if had_old {
                let _ = std::fs::rename(&old, &self.dest);
            }
            return Err(err);
        }
        let _ = self.dir.keep();
        drop(aside);
        Ok(())
    }
}

/// Refuses a destination whose contents the swap would delete and that is not a book written
/// here: only a missing or empty folder, or one holding [`MARKER`] (a regular file), may go.
fn refuse_unless_replaceable(dest: &Path) -> io::Result<()> {
    let mut entries = match std::fs::read_dir(dest) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => {
            return Err(io::Error::new(
                err.kind(),
                format!("cannot look into {}: {err}", dest.display()),
            ));
        }
    };
    if entries.next().is_none() {
        return Ok(());
    }
    let marked = std::fs::symlink_metadata(dest.join(MARKER)).is_ok_and(|meta| meta.is_file());
    if marked || written_by_mdbook(dest) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{} holds files and is not a book kernelbook wrote (it has no {MARKER}): not \
             replacing it, which would delete them. Name a new or empty folder (--dest-dir, \
             or `build-dir` in book.toml), or empty this one yourself",
            dest.display()
        ),
    ))
}

/// Whether `dir` is the HTML of an mdBook build from before books carried [`MARKER`]:
/// mdBook's own `.nojekyll` and `index.html`, and its script `book.js` (`book-HASH.js` since
/// mdBook 0.5).
fn written_by_mdbook(dir: &Path) -> bool {
    let is_file = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_file());
    let has_book_js = std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("book") && name.ends_with(".js")
        })
    });
    is_file(".nojekyll") && is_file("index.html") && has_book_js
}

#[cfg(target_os = "linux")]
mod swap {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use std::io;
    use std::path::Path;

    /// Exchanges `a` and `b` atomically; both must exist.
    pub fn exchange(a: &Path, b: &Path) -> io::Result<()> {
        Ok(renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE)?)
    }

    /// Renames `from` to `to` unless `to` exists.
    pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
        Ok(renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE)?)
    }

    /// Whether the file system (or kernel) lacks these renames.
    pub fn unsupported(err: &io::Error) -> bool {
        matches!(
            err.raw_os_error(),
            Some(code) if code == rustix::io::Errno::INVAL.raw_os_error()
                || code == rustix::io::Errno::NOSYS.raw_os_error()
                || code == rustix::io::Errno::OPNOTSUPP.raw_os_error()
        )
    }
}

#[cfg(not(target_os = "linux"))]
mod swap {
    use std::io;
    use std::path::Path;

    pub fn exchange(_: &Path, _: &Path) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub fn rename_no_replace(_: &Path, _: &Path) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub fn unsupported(err: &io::Error) -> bool {
        err.kind() == io::ErrorKind::Unsupported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_book(dir: &Path, page: &str) {
        std::fs::create_dir_all(dir).expect("mkdir");
        std::fs::write(dir.join("index.html"), page).expect("write");
    }

    #[test]
    fn the_new_book_replaces_the_old_whole() {
        let root = tempfile::tempdir().expect("tempdir");
        let dest = root.path().join("target/book");
        for round in ["first", "second"] {
            let staging = Staging::beside(&dest).expect("staging");
            write_book(staging.path(), round);
            staging.commit().expect("commit");
            assert_eq!(
                std::fs::read_to_string(dest.join("index.html")).expect("page"),
                round
            );
        }
        let left: Vec<_> = std::fs::read_dir(root.path().join("target"))
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, ["book"], "no staging folder is left behind");
    }

    #[test]
    fn a_failed_build_leaves_the_old_book_alone() {
        let root = tempfile::tempdir().expect("tempdir");
        let dest = root.path().join("book");
        write_book(&dest, "old");
        std::fs::write(dest.join(MARKER), "").expect("marker");
        let staging = Staging::beside(&dest).expect("staging");
        write_book(staging.path(), "half");
        drop(staging);
        assert_eq!(
            std::fs::read_to_string(dest.join("index.html")).expect("page"),
            "old"
        );
        assert_eq!(std::fs::read_dir(root.path()).expect("dir").count(), 1);
    }

    #[test]
    fn a_folder_of_other_files_is_refused_and_kept() {
        let root = tempfile::tempdir().expect("tempdir");
        let dest = root.path().join("mine");
        std::fs::create_dir_all(dest.join("notes")).expect("mkdir");
        std::fs::write(dest.join("SUMMARY.md"), "keep").expect("write");
        let err = Staging::beside(&dest).expect_err("refused");
        let message = err.to_string();
        assert!(message.contains(&dest.display().to_string()), "{message}");
        assert!(message.contains(MARKER), "{message}");
        assert_eq!(
            std::fs::read_to_string(dest.join("SUMMARY.md")).expect("kept"),
            "keep"
        );
    }

    #[test]
    fn a_book_written_here_carries_the_marker_and_is_replaced() {
        let root = tempfile::tempdir().expect("tempdir");
        let dest = root.path().join("out");
        std::fs::create_dir_all(&dest).expect("empty folder");
        let staging = Staging::beside(&dest).expect("an empty folder may be replaced");
        write_book(staging.path(), "one");
        staging.commit().expect("commit");
        assert!(dest.join(MARKER).is_file());
        let staging = Staging::beside(&dest).expect("a marked book may be replaced");
        write_book(staging.path(), "two");
        staging.commit().expect("commit");
        assert_eq!(
            std::fs::read_to_string(dest.join("index.html")).expect("page"),
            "two"
        );
    }

    #[test]
    fn a_book_an_earlier_version_wrote_without_the_marker_is_replaced() {
        let root = tempfile::tempdir().expect("tempdir");
        let dest = root.path().join("book");
        write_book(&dest, "old");
        std::fs::write(dest.join(".nojekyll"), "").expect("write");
        assert!(Staging::beside(&dest).is_err(), "not yet mdBook's");
        std::fs::write(dest.join("book-609e4cb8.js"), "").expect("write");
        assert!(Staging::beside(&dest).is_ok(), "mdBook's HTML");
    }

    #[test]
    fn a_file_in_the_way_is_not_replaced() {
        let root = tempfile::tempdir().expect("tempdir");
        let dest = root.path().join("book");
        std::fs::write(&dest, "mine").expect("write");
        assert!(Staging::beside(&dest).is_err());
        assert_eq!(std::fs::read_to_string(&dest).expect("file"), "mine");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_a_folder_keeps_pointing_at_the_new_book() {
        let root = tempfile::tempdir().expect("tempdir");
        let real = root.path().join("site/book");
        write_book(&real, "old");
        std::fs::write(real.join(MARKER), "").expect("marker");
        let link = root.path().join("book");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let staging = Staging::beside(&link).expect("staging");
        write_book(staging.path(), "new");
        staging.commit().expect("commit");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("link")
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(link.join("index.html")).expect("page"),
            "new"
        );
    }
}
