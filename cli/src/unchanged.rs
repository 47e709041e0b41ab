//! A book that would render exactly as it did last time is not rendered again: mdBook's HTML
//! renderer (pages, print page, search index) is most of a warm build, and its output depends
//! only on what it is given. [`Digest::of`] reads that: the preprocessed book, the
//! configuration, the theme, the files copied from the source folder beside the chapters, and
//! the kernelbook binary itself (its templates and assets are built in). The digest is kept in
//! the rendered folder ([`DIGEST_FILE`]); [`Digest::rendered_in`] says whether a folder holds the
//! book it stands for.

use anyhow::Context as _;
use mdbook_driver::book::Book;
use mdbook_driver::config::Config;
use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};

/// The file in the rendered book that holds the digest of what it was rendered from.
pub const DIGEST_FILE: &str = ".kernelbook-rendered-from";

/// What a renderer is given, in 64 hexadecimal digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest(String);

impl Digest {
    /// The digest of rendering `book` (preprocessed) with `config`, from the book at `root`
    /// (its source folder `src` and theme folder `theme`).
    pub fn of(
        book: &Book,
        config: &Config,
        root: &Path,
        src: &Path,
        theme: &Path,
    ) -> anyhow::Result<Digest> {
        let mut hash = Sha256::new();
        hash.update(serde_json::to_vec(book).context("reading the preprocessed book")?);
        hash.update(serde_json::to_vec(config).context("reading the configuration")?);
        hash.update(root.as_os_str().as_encoded_bytes());
        for file in files_under(theme) {
            let bytes = std::fs::read(&file)
                .with_context(|| format!("reading the theme file {}", file.display()))?;
            hash.update(file.as_os_str().as_encoded_bytes());
            hash.update(Sha256::digest(&bytes));
        }
        // What the renderer copies beside the pages (pictures and the like): by size and time.
        for file in files_under(src).filter(|f| f.extension().is_none_or(|e| e != "md")) {
            hash.update(file.as_os_str().as_encoded_bytes());
            hash.update(stamp(&file));
        }
        // Without knowing which binary this is, nothing may be taken for unchanged.
        let exe = std::env::current_exe().context("finding kernelbook's own binary")?;
        hash.update(stamp(&exe));
        let hex: String = hash
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        Ok(Digest(hex))
    }

    /// Whether `folder` holds a complete rendering of what this digest stands for.
    pub fn rendered_in(&self, folder: &Path) -> bool {
        folder.join("index.html").is_file()
            && std::fs::read_to_string(folder.join(DIGEST_FILE))
                .is_ok_and(|kept| kept.trim() == self.0)
    }

    /// Records in `folder` (a rendering just made) what it was rendered from.
    pub fn keep_in(&self, folder: &Path) -> anyhow::Result<()> {
        let file = folder.join(DIGEST_FILE);
        std::fs::write(&file, format!("{}\n", self.0))
            .with_context(|| format!("writing {}", file.display()))
    }
}

/// A file's size and modification time, as bytes to hash.
fn stamp(file: &Path) -> Vec<u8> {
    let Ok(meta) = std::fs::metadata(file) else {
        return b"missing".to_vec();
    };
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let mut bytes = meta.len().to_le_bytes().to_vec();
    bytes.extend(modified.to_le_bytes());
    bytes
}

/// Every regular file under `dir`, in a stable order; none where it does not exist.
fn files_under(dir: &Path) -> impl Iterator<Item = PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(text: &str) -> Book {
        let mut book = Book::new();
        book.push_item(mdbook_driver::book::Chapter::new(
            "One",
            text.to_string(),
            "one.md",
            Vec::new(),
        ));
        book
    }

    #[test]
    fn the_digest_follows_the_book_the_theme_and_the_copied_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (src, theme) = (dir.path().join("src"), dir.path().join("theme"));
        std::fs::create_dir_all(&src).expect("src");
        std::fs::create_dir_all(&theme).expect("theme");
        let config = Config::default();
        let of = |text: &str| Digest::of(&book(text), &config, dir.path(), &src, &theme);
        let first = of("# One").expect("digest");
        assert_eq!(first, of("# One").expect("digest"), "stable");
        assert_ne!(first, of("# One, edited").expect("digest"));
        std::fs::write(theme.join("custom.css"), "body {}").expect("theme file");
        let themed = of("# One").expect("digest");
        assert_ne!(first, themed);
        std::fs::write(src.join("picture.svg"), "<svg/>").expect("picture");
        assert_ne!(themed, of("# One").expect("digest"));
        // A chapter's own file is the book's text, already in the digest.
        let before = of("# One").expect("digest");
        std::fs::write(src.join("one.md"), "# One").expect("chapter");
        assert_eq!(before, of("# One").expect("digest"));
    }

    #[test]
    fn a_folder_holds_the_rendering_only_with_its_digest_and_an_index() {
        let dir = tempfile::tempdir().expect("tempdir");
        let digest = Digest("ab".repeat(32));
        assert!(!digest.rendered_in(dir.path()));
        digest.keep_in(dir.path()).expect("keep");
        assert!(
            !digest.rendered_in(dir.path()),
            "no index.html: not a rendering"
        );
        std::fs::write(dir.path().join("index.html"), "<html>").expect("index");
        assert!(digest.rendered_in(dir.path()));
        assert!(!Digest("cd".repeat(32)).rendered_in(dir.path()));
    }
}
