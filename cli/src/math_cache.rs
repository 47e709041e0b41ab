//! KaTeX's rendering of each chapter, remembered. mdbook-katex renders every formula of every
//! chapter through a JavaScript engine on every build, which is most of a warm build's time;
//! a chapter whose text (after kernelbook's preprocessor, so its figures included) and KaTeX
//! settings are the ones of an earlier build gets that build's output back instead.
//!
//! The cache is a folder of files named by a digest of what decides the output; a file that
//! cannot be read is rendered again, and a write that fails costs only the next build's time.

use mdbook_preprocessor::book::{Book, BookItem, Chapter};
use mdbook_preprocessor::{Preprocessor, PreprocessorContext};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;

/// The KaTeX crate whose output is kept: a new version renders anew.
const RENDERER: &str = "mdbook-katex 0.10.0";
/// The largest cached chapter read back (a chapter's HTML is tens of KiB).
const MOST_BYTES: u64 = 16 << 20;

/// `inner` (KaTeX's preprocessor), with its output per chapter kept in `dir`.
pub struct CachedMath<P> {
    inner: P,
    dir: PathBuf,
}

impl<P> CachedMath<P> {
    pub fn new(inner: P, dir: PathBuf) -> Self {
        CachedMath { inner, dir }
    }
}

impl<P: Preprocessor> Preprocessor for CachedMath<P> {
    fn name(&self) -> &str {
        // The same name, so that it takes the place of book.toml's `[preprocessor.katex]`.
        self.inner.name()
    }

    /// HTML only: KaTeX writes HTML (and SVG, for a root or a wide accent), which a markdown,
    /// epub or pdf renderer would show raw; they get the TeX as the chapter wrote it.
    fn supports_renderer(&self, renderer: &str) -> anyhow::Result<bool> {
        Ok(renderer == "html" && self.inner.supports_renderer(renderer)?)
    }

    fn run(&self, ctx: &PreprocessorContext, mut book: Book) -> anyhow::Result<Book> {
        let settings: Option<serde_json::Value> = ctx
            .config
            .get(&format!("preprocessor.{}", self.inner.name()))
            .ok()
            .flatten();
        let salt = format!("{RENDERER}\n{settings:?}\n");
        let mut missing: Vec<(String, Chapter)> = Vec::new();
        book.for_each_chapter_mut(|chapter| {
            let key = key(&salt, &chapter.content);
            match self.read(&key) {
                Some(rendered) => chapter.content = rendered,
                None => {
                    let mut alone = chapter.clone();
                    alone.sub_items = Vec::new();
                    missing.push((key, alone));
                }
            }
        });
        if missing.is_empty() {
            return Ok(book);
        }
        let (keys, chapters): (Vec<String>, Vec<Chapter>) = missing.into_iter().unzip();
        let rendered = self.inner.run(
            ctx,
            Book::new_with_items(chapters.into_iter().map(BookItem::Chapter).collect()),
        )?;
        let mut by_key: BTreeMap<String, String> = BTreeMap::new();
        for (key, chapter) in keys.into_iter().zip(rendered.chapters()) {
            self.write(&key, &chapter.content);
            by_key.insert(key, chapter.content.clone());
        }
        book.for_each_chapter_mut(|chapter| {
            if let Some(rendered) = by_key.get(&key(&salt, &chapter.content)) {
                chapter.content = rendered.clone();
            }
        });
        Ok(book)
    }
}

impl<P> CachedMath<P> {
    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.html"))
    }

    fn read(&self, key: &str) -> Option<String> {
        use std::io::Read as _;
        let path = self.path(key);
        let metadata = std::fs::symlink_metadata(&path).ok()?;
        if !metadata.is_file() || metadata.len() > MOST_BYTES {
            return None;
        }
        let mut text = String::new();
        std::fs::File::open(&path)
            .ok()?
            .take(MOST_BYTES)
            .read_to_string(&mut text)
            .ok()?;
        Some(text)
    }

    fn write(&self, key: &str, content: &str) {
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
            file.write_all(content.as_bytes())?;
            file.persist(self.path(key)).map_err(|err| err.error)?;
            Ok(())
        });
        // A cache that cannot be written costs the next build its time, nothing else.
        drop(written);
    }
}

/// A digest of the renderer, its settings and the chapter's text.
fn key(salt: &str, content: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(salt.as_bytes());
    hash.update(content.as_bytes());
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Stands in for KaTeX: counts the chapters it is given, and marks each one.
    struct Marking(AtomicUsize);

    impl Preprocessor for Marking {
        fn name(&self) -> &str {
            "katex"
        }
        fn run(&self, _: &PreprocessorContext, mut book: Book) -> anyhow::Result<Book> {
            book.for_each_chapter_mut(|chapter| {
                self.0.fetch_add(1, Ordering::SeqCst);
                chapter.content = format!("<rendered>{}", chapter.content);
            });
            Ok(book)
        }
    }

    #[test]
    fn only_the_html_renderer_gets_katexs_html() {
        let cached = CachedMath::new(Marking(AtomicUsize::new(0)), PathBuf::new());
        assert!(cached.supports_renderer("html").expect("answers"));
        for other in ["markdown", "epub", "linkcheck"] {
            assert!(
                !cached.supports_renderer(other).expect("answers"),
                "{other}"
            );
        }
    }

    fn book(contents: &[&str]) -> Book {
        let mut book = Book::new();
        for (at, content) in contents.iter().enumerate() {
            let name = format!("c{at}");
            book.push_item(Chapter::new(
                &name,
                content.to_string(),
                format!("{name}.md"),
                Vec::new(),
            ));
        }
        book
    }

    fn contents(book: &Book) -> Vec<String> {
        book.chapters().map(|c| c.content.clone()).collect()
    }

    fn context(root: &std::path::Path) -> PreprocessorContext {
        PreprocessorContext::new(
            root.to_path_buf(),
            mdbook_preprocessor::config::Config::default(),
            "html".into(),
        )
    }

    /// The second build renders only the chapter whose text changed, and the book reads as if
    /// every chapter had been rendered.
    #[test]
    fn only_changed_chapters_are_rendered_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ctx = context(dir.path());
        let cached = CachedMath::new(Marking(AtomicUsize::new(0)), dir.path().join("math"));
        let first = cached.run(&ctx, book(&["$a$", "$b$"])).expect("first");
        assert_eq!(contents(&first), ["<rendered>$a$", "<rendered>$b$"]);
        assert_eq!(cached.inner.0.load(Ordering::SeqCst), 2);
        let second = cached.run(&ctx, book(&["$a$", "$c$"])).expect("second");
        assert_eq!(contents(&second), ["<rendered>$a$", "<rendered>$c$"]);
        assert_eq!(cached.inner.0.load(Ordering::SeqCst), 3);
    }
}
