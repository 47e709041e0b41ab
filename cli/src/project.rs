//! The book as the commands see it: chapters scanned, labs loaded, a runner configured.

use anyhow::{Context as _, anyhow, bail};
use kernelbook_core::KernelSource;
use kernelbook_core::expr::Params;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::backend::BackendChoice;
use kernelbook_runner::plan::Measurement;
use kernelbook_runner::store::Recordings;
use kernelbook_runner::{Mode, Runner, RunnerConfig};
use mdbook_driver::MDBook;
use mdbook_kernelbook::preprocessor::{Includes, Labs, labs_dir, load_book_parts};
use mdbook_kernelbook::recorded::{recordings, shown_dir};
use mdbook_kernelbook::scan::BookIndex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// The recordings of the GPU the chapters show without a GPU (book.toml's `recorded-gpu`).
    pub recorded_dir: PathBuf,
    pub backend: BackendChoice,
}

impl Project {
    pub fn load(ctx: &Context) -> anyhow::Result<Project> {
        let root = ctx.root.as_path();
        check_sources(root)?;
        let book = MDBook::load(root)
            .with_context(|| format!("loading the book at {}", root.display()))?;
        let labs_dir = labs_dir(root, &book.config)?;
        let (recorded_dir, choice) = shown_dir(root, &book.config)?;
        if let Some(choice) = choice {
            crate::output::notice(&format!("kernelbook: {choice}"));
        }
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
            recorded_dir,
            backend: ctx.backend,
        })
    }

    pub fn runner(&self, mode: Mode) -> Runner {
        self.runner_on(self.backend, mode)
    }

    /// [`runner`](Self::runner) on the vendor `backend` (`--devices` finds it first).
    pub fn runner_on(&self, backend: BackendChoice, mode: Mode) -> Runner {
        runner_at(&self.root, &self.recorded_dir, backend, mode)
    }

    /// Reads the recordings from `dir` (a folder of GPU folders) instead of book.toml's
    /// `recordings`, for the chapters and the comparison alike.
    pub fn read_recordings_from(&mut self, dir: &Path) -> anyhow::Result<()> {
        let key = format!(
            "preprocessor.{}.{}",
            mdbook_kernelbook::NAME,
            mdbook_kernelbook::recorded::RECORDINGS_KEY
        );
        self.book.config.set(&key, dir.to_string_lossy().as_ref())?;
        let (recorded_dir, choice) = shown_dir(&self.root, &self.book.config)?;
        if let Some(choice) = choice {
            crate::output::notice(&format!("kernelbook: {choice}"));
        }
        self.recorded_dir = recorded_dir;
        Ok(())
    }

    /// The folders no command writes into: the chapters' (book.toml's `src`).
    pub fn sources(&self) -> Vec<PathBuf> {
        vec![self.root.join(&self.book.config.book.src)]
    }

    /// `given` checked as a place for `what` to write ([`crate::paths::writable`]).
    pub fn writable(&self, given: &Path, what: &str) -> anyhow::Result<PathBuf> {
        crate::paths::writable(given, what, &self.root, &self.sources())
    }

    /// The book's recordings, a folder per GPU (book.toml's `recordings`).
    pub fn recordings(&self) -> anyhow::Result<Recordings> {
        recordings(&self.root, &self.book.config)
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

/// Refuses a book whose source folder holds something mdBook would hang or run out of memory
/// on: a FIFO, a device or a socket (or a link to one, `/dev/zero`), or a chapter larger than
/// any text source may be. mdBook reads every chapter and copies every other file.
pub fn check_sources(root: &Path) -> anyhow::Result<()> {
    let toml = root.join("book.toml");
    if !toml.exists() {
        bail!("{}", no_book_here(root));
    }
    let text = kernelbook_core::textfile::read_text(&toml, kernelbook_core::textfile::MOST_BYTES)
        .map_err(|err| anyhow!("{err}"))?;
    let config: mdbook_driver::config::Config = text
        .parse()
        .with_context(|| format!("{}: not a book's settings", toml.display()))?;
    check_folder(&root.join(&config.book.src), 0)
}

/// What a command that needs a book says where there is none.
pub fn no_book_here(root: &Path) -> String {
    let shown = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    format!(
        "there is no book.toml in {}: this is not a book's folder. Run kernelbook in the folder \
         that holds book.toml, or name that folder with --root DIR",
        shown.display()
    )
}

fn check_folder(dir: &Path, depth: usize) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let is_link = entry.file_type().is_ok_and(|kind| kind.is_symlink());
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            // Links to folders are not followed: a loop of them would never end.
            if !is_link && depth < 32 {
                check_folder(&path, depth + 1)?;
            }
            continue;
        }
        kernelbook_core::textfile::check_regular(&path).map_err(|err| {
            anyhow!("{err}; mdBook reads or copies every file of the source folder, so remove it")
        })?;
        let chapter = path.extension().is_some_and(|ext| ext == "md");
        if chapter && meta.len() > kernelbook_core::textfile::MOST_BYTES {
            bail!(
                "{}: {} bytes, more than the {} a chapter may hold",
                path.display(),
                meta.len(),
                kernelbook_core::textfile::MOST_BYTES
            );
        }
    }
    Ok(())
}

/// The runner of the book at `root` whose shown recordings are in `recorded_dir`: its cache in
/// `.kernelbook/cache`.
pub fn runner_at(root: &Path, recorded_dir: &Path, backend: BackendChoice, mode: Mode) -> Runner {
    Runner::new(RunnerConfig {
        cache_dir: root.join(".kernelbook/cache"),
        recorded_dir: recorded_dir.to_path_buf(),
        mode,
        measurement: Measurement::default(),
        // Each lab runs in a child process of this program: a kernel that faults or hangs
        // cannot take the build down.
        isolation: std::env::current_exe().ok(),
        backend,
    })
}

/// Parses `NAME=VALUE` (for `--set`): NAME a parameter's name (letters, digits, `_`, not
/// starting with a digit), VALUE a 64-bit integer (`_` between digits allowed).
pub fn parse_assignment(text: &str) -> Result<(String, i64), String> {
    let shown = quoted(text);
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{shown}` is not NAME=VALUE"))?;
    let name = name.trim();
    let is_name = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_name {
        return Err(format!(
            "`{shown}`: `{}` is not a parameter name (letters, digits and `_`)",
            quoted(name)
        ));
    }
    let digits = value.trim().replace('_', "");
    let value = digits.parse().map_err(|_| {
        let shown = quoted(value.trim());
        let unsigned = digits.strip_prefix(['-', '+']).unwrap_or(&digits);
        if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
            format!("`{shown}` does not fit in a 64-bit integer")
        } else {
            format!("`{shown}` is not an integer")
        }
    })?;
    Ok((name.to_string(), value))
}

/// `text` as a message quotes it: on one line, control characters escaped, 40 characters at
/// most.
fn quoted(text: &str) -> String {
    let text = kernelbook_core::terminal::one_line(text);
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_assignment;
    use proptest::prelude::*;

    #[test]
    fn assignments() {
        assert_eq!(parse_assignment("n=4096"), Ok(("n".into(), 4096)));
        assert_eq!(parse_assignment(" n = 8_192"), Ok(("n".into(), 8192)));
        assert_eq!(parse_assignment("n=-3"), Ok(("n".into(), -3)));
        assert!(parse_assignment("n").is_err());
        assert!(parse_assignment("n=big").is_err());
        assert!(parse_assignment("=5").is_err());
        assert!(parse_assignment("1n=5").is_err());
        assert!(parse_assignment("n=").is_err());
        assert!(parse_assignment("n==5").is_err());
        assert_eq!(
            parse_assignment("n=99999999999999999999"),
            Err("`99999999999999999999` does not fit in a 64-bit integer".into())
        );
        assert_eq!(
            parse_assignment(&format!("n={}", "9".repeat(100_000))),
            Err(format!(
                "`{}…` does not fit in a 64-bit integer",
                "9".repeat(40)
            ))
        );
        assert_eq!(
            parse_assignment("n=\u{1b}[31m"),
            Err("`\\x1b[31m` is not an integer".into())
        );
    }

    /// Inputs per property: 4000 in an ordinary test run; set KERNELBOOK_FUZZ_CASES for more.
    fn cases() -> u32 {
        std::env::var("KERNELBOOK_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4000)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]

        /// Any string is a value or a one-line error without control characters, never a panic.
        #[test]
        fn any_set_value_is_a_value_or_a_clear_error(text in any::<String>()) {
            match parse_assignment(&text) {
                Ok((name, _)) => prop_assert!(!name.is_empty() && text.contains(&name)),
                Err(message) => prop_assert!(
                    !message.chars().any(|c| c.is_control()),
                    "{:?}", message
                ),
            }
        }

        /// Assignments that look right: the value comes back exactly.
        #[test]
        fn a_well_formed_assignment_round_trips(
            name in "[a-z_][a-z0-9_]{0,10}",
            value in any::<i64>(),
            space in "[ \t]{0,2}",
        ) {
            let text = format!("{space}{name}{space}={space}{value}{space}");
            prop_assert_eq!(parse_assignment(&text), Ok((name, value)));
        }
    }
}
