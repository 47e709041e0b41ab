//! The labs of a book: every `*.toml` of its labs folder, loaded and checked, by name.

use anyhow::{Context, bail};
use kernelbook_core::spec::{LabFile, LabSpec, PlannedLab};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The labs of a book, by name: those that run and those only planned so far.
#[derive(Debug, Clone, Default)]
pub struct Labs {
    pub ready: BTreeMap<String, LabSpec>,
    pub planned: BTreeMap<String, PlannedLab>,
}

impl Labs {
    pub fn contains(&self, name: &str) -> bool {
        self.ready.contains_key(name) || self.planned.contains_key(name)
    }

    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .ready
            .keys()
            .chain(self.planned.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names
    }
}

/// Loads every `*.toml` lab under `dir`, by name.
pub fn load_labs(dir: &Path) -> anyhow::Result<Labs> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the labs folder {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    let mut labs = Labs::default();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut errors = Vec::new();
    for path in paths {
        match LabFile::load(&path) {
            Ok(lab) => {
                if let Some(first) = seen.get(lab.name()) {
                    errors.push(format!(
                        "{}:1: lab `{}` is also defined in {}",
                        path.display(),
                        lab.name(),
                        first.display()
                    ));
                    continue;
                }
                seen.insert(lab.name().to_string(), path.clone());
                match lab {
                    LabFile::Ready(lab) => labs.ready.insert(lab.name.clone(), *lab).map(drop),
                    LabFile::Planned(lab) => labs.planned.insert(lab.name.clone(), lab).map(drop),
                };
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    Ok(labs)
}
