//! The book as the commands see it: chapters scanned, labs loaded, a runner configured.

use anyhow::{Context as _, anyhow, bail};
use kernelbook_core::KernelSource;
use kernelbook_core::expr::Params;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::backend::BackendChoice;
use kernelbook_runner::plan::Measurement;
use kernelbook_runner::{Mode, Runner, RunnerConfig};
use mdbook_driver::MDBook;
use mdbook_kernelbook::preprocessor::{Includes, Labs, labs_dir, load_book_parts};
use mdbook_kernelbook::scan::BookIndex;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What every command is given: where the book is and which GPU to use.
#[derive(Debug, Clone)]
pub struct Context {
    pub root: PathBuf,
    pub backend: BackendChoice,
}

pub struct Project {
    pub root: PathBuf,
    pub book: MDBook,
    pub index: BookIndex,
    pub labs: Labs,
    pub labs_dir: PathBuf,
    pub backend: BackendChoice,
}

impl Project {
    pub fn load(ctx: &Context) -> anyhow::Result<Project> {
        let root = ctx.root.as_path();
        let book = MDBook::load(root)
            .with_context(|| format!("loading the book at {}", root.display()))?;
        let labs_dir = labs_dir(root, &book.config)?;
        let (index, labs) = load_book_parts(
            &book.book,
            root,
            &book.config.book.src,
            &labs_dir,
            Includes::Unexpanded,
        )?;
        Ok(Project {
            root: root.to_path_buf(),
            book,
            index,
            labs,
            labs_dir,
            backend: ctx.backend,
        })
    }

    pub fn runner(&self, mode: Mode) -> Runner {
        Runner::new(RunnerConfig {
            cache_dir: self.root.join(".kernelbook/cache"),
            recorded_dir: self.labs_dir.join("recorded"),
            mode,
            measurement: Measurement::default(),
            // Each lab runs in a child process of this program: a kernel that faults or hangs
            // cannot take the build down.
            isolation: std::env::current_exe().ok(),
            backend: self.backend,
        })
    }

    /// The lab called `name`, with `overrides` applied to its parameters.
    pub fn lab(&self, name: &str, overrides: &Params) -> anyhow::Result<LabSpec> {
        if self.labs.planned.contains_key(name) {
            bail!("lab `{name}` is planned: its kernels are not in the book yet");
        }
        let lab = self.labs.ready.get(name).ok_or_else(|| {
            anyhow!(
                "there is no lab `{name}` (labs: {})",
                self.labs.names().join(", ")
            )
        })?;
        Ok(lab.with_params(overrides)?)
    }

    pub fn kernels_for(&self, lab: &LabSpec) -> BTreeMap<String, KernelSource> {
        self.index
            .kernels_named(lab.kernel_refs().into_iter().map(|(k, _)| k))
    }
}

/// Parses `NAME=VALUE` (for `--set`).
pub fn parse_assignment(text: &str) -> Result<(String, i64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))?;
    let value = value
        .trim()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{value}` is not an integer"))?;
    Ok((name.trim().to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::parse_assignment;

    #[test]
    fn assignments() {
        assert_eq!(parse_assignment("n=4096"), Ok(("n".into(), 4096)));
        assert_eq!(parse_assignment(" n = 8_192"), Ok(("n".into(), 8192)));
        assert!(parse_assignment("n").is_err());
        assert!(parse_assignment("n=big").is_err());
    }
}
