//! Where a book's recordings are and which GPU's the chapters show, from book.toml:
//!
//! ```toml
//! [preprocessor.kernelbook]
//! labs = "labs"
//! # A folder of GPU folders (default: `recorded` in the labs folder).
//! recordings = "labs/recorded"
//! # The GPU whose recordings the chapters show when there is no GPU to measure on.
//! recorded-gpu = "nvidia-h200-882b8b4e"
//! ```
//!
//! `kernelbook build --recordings DIR` sets `recordings` for one build (the Slurm merge job
//! builds from the folders its tasks recorded). The folders are read here, for the GPUs compared
//! ([`recorded_columns`]) as for the chapters.

use crate::config::{NAME, labs_dir};
use crate::gpus::view::GpuColumn;
use crate::scan::BookIndex;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use kernelbook_runner::store::{Recordings, choose_shown, stale_kernels};
use mdbook_preprocessor::config::Config;
use std::path::{Path, PathBuf};

/// The book.toml key (under `[preprocessor.kernelbook]`) of the recordings folder.
pub const RECORDINGS_KEY: &str = "recordings";
/// The book.toml key of the GPU folder the chapters show without a GPU.
pub const SHOWN_KEY: &str = "recorded-gpu";

/// The book's recordings: `recordings` from book.toml (relative to the book's root), else
/// `recorded` in the labs folder.
pub fn recordings(root: &Path, config: &Config) -> anyhow::Result<Recordings> {
    let dir: Option<String> = config.get(&format!("preprocessor.{NAME}.{RECORDINGS_KEY}"))?;
    Ok(Recordings::new(match dir {
        Some(dir) => root.join(dir),
        None => labs_dir(root, config)?.join("recorded"),
    }))
}

/// The folder of the recordings the chapters show (see
/// [`choose_shown`](kernelbook_runner::store::choose_shown)), and a notice about the choice
/// where there is one to make.
pub fn shown_dir(root: &Path, config: &Config) -> anyhow::Result<(PathBuf, Option<String>)> {
    let recordings = recordings(root, config)?;
    let setting: Option<String> = config.get(&format!("preprocessor.{NAME}.{SHOWN_KEY}"))?;
    let shown = choose_shown(
        setting.as_deref(),
        &recordings.folders(),
        recordings.has_flat_files(),
    );
    let dir = recordings
        .folder(shown.folder.as_deref())
        .dir()
        .to_path_buf();
    Ok((dir, shown.notice))
}

/// A column per GPU folder of `recordings`, holding its recording of each of `labs` (with the
/// kernels edited since found from `index`). A file that cannot be trusted is left out with a
/// warning, as the book's own recording would be.
pub fn recorded_columns(
    recordings: &Recordings,
    labs: &[&LabSpec],
    index: &BookIndex,
) -> Vec<GpuColumn> {
    recordings
        .folders()
        .into_iter()
        .map(|folder| {
            let store = recordings.folder(Some(&folder));
            let labs = labs
                .iter()
                .filter_map(|lab| match store.get(lab) {
                    Ok(Some(results)) => {
                        let kernels =
                            index.kernels_named(lab.kernel_refs().into_iter().map(|(k, _)| k));
                        let stale = stale_kernels(&results, &kernels);
                        Some((lab.name.clone(), recorded_outcome(results, stale)))
                    }
                    Ok(None) => None,
                    Err(distrust) => {
                        eprintln!("kernelbook: warning: {distrust}");
                        None
                    }
                })
                .collect();
            GpuColumn {
                folder,
                live: false,
                labs,
            }
        })
        .collect()
}

/// A recording's outcome, with the kernels edited since it was made.
pub fn recorded_outcome(
    results: kernelbook_core::results::LabResults,
    stale: Vec<String>,
) -> LabOutcome {
    LabOutcome::Recorded {
        results,
        why: "recorded".into(),
        stale_kernels: stale,
        compile_errors: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        text.parse().expect("a book.toml")
    }

    #[test]
    fn the_setting_names_the_folder_shown() {
        let dir = tempfile::tempdir().expect("tempdir");
        for gpu in ["nvidia-h200-882b8b4e", "fake-gpu-fake"] {
            let folder = dir.path().join("labs/recorded").join(gpu);
            std::fs::create_dir_all(&folder).expect("mkdir");
            std::fs::write(folder.join("copy.json"), "{}").expect("write");
        }
        let chosen = config("[preprocessor.kernelbook]\nrecorded-gpu = \"nvidia-h200-882b8b4e\"\n");
        assert_eq!(
            shown_dir(dir.path(), &chosen).expect("read"),
            (dir.path().join("labs/recorded/nvidia-h200-882b8b4e"), None)
        );
        let (first, notice) = shown_dir(dir.path(), &config("")).expect("read");
        assert_eq!(first, dir.path().join("labs/recorded/fake-gpu-fake"));
        assert!(notice.is_some(), "several GPUs and no choice: said so");
        let elsewhere = config("[preprocessor.kernelbook]\nrecordings = \"runs/1\"\n");
        assert_eq!(
            recordings(dir.path(), &elsewhere).expect("read").root(),
            dir.path().join("runs/1")
        );
    }
}
