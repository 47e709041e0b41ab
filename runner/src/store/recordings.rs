//! The recordings of many GPUs: `labs/recorded/<gpu>/<lab>.json`, one folder per GPU, named
//! from the device (`nvidia-h200-d8d1645c`: its name and the start of its UUID). A folder is
//! only a place: every file in it keeps its own provenance, so a recording copied in from
//! another board of the same kind (or re-recorded on one) needs nothing else. Which folder the
//! chapters show without a GPU is the book's choice ([`choose_shown`]).

use super::{Recorded, read_results};
use kernelbook_core::results::{DeviceInfo, LabResults};
use std::path::{Path, PathBuf};

/// Folders of a recordings root that hold no GPU's recordings (results files the book quotes
/// that are not a lab's current recording).
pub const NOT_GPU_FOLDERS: &[&str] = &["experiments"];

/// The folder a GPU's recordings go to: its name and the first 8 characters of its UUID, in
/// lowercase letters, digits and `-` (`NVIDIA H200`, `GPU-d8d1645c-…` → `nvidia-h200-d8d1645c`).
pub fn gpu_folder_name(device: &DeviceInfo) -> String {
    let name = slug(&device.name);
    let uuid = device.uuid.trim();
    let unprefixed = ["GPU-", "MIG-"]
        .iter()
        .find_map(|prefix| {
            uuid.get(..prefix.len())
                .filter(|head| head.eq_ignore_ascii_case(prefix))
                .map(|_| &uuid[prefix.len()..])
        })
        .unwrap_or(uuid);
    let start: String = slug(unprefixed).chars().take(8).collect();
    let start = start.trim_matches('-');
    let name = if name.is_empty() { "gpu" } else { &name };
    if start.is_empty() {
        name.to_string()
    } else {
        format!("{name}-{start}")
    }
}

/// `text` in lowercase ASCII letters and digits, every other run of characters one `-`.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// A recordings root: a folder of GPU folders.
#[derive(Debug, Clone)]
pub struct Recordings {
    root: PathBuf,
}

impl Recordings {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Recordings { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The GPU folders, by name: the subfolders that hold a results file (`*.json`), except
    /// [`NOT_GPU_FOLDERS`]. None where the root does not exist.
    pub fn folders(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut folders: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| !NOT_GPU_FOLDERS.contains(&name.as_str()))
            .filter(|name| holds_results(&self.root.join(name)))
            .collect();
        folders.sort();
        folders
    }

    /// Whether results files lie in the root itself: the layout from before there was a
    /// folder per GPU, still read as one GPU's recordings.
    pub fn has_flat_files(&self) -> bool {
        holds_results(&self.root)
    }

    /// The recordings in folder `name` (the root itself for `None`: the flat layout).
    pub fn folder(&self, name: Option<&str>) -> Recorded {
        Recorded::new(name.map_or_else(|| self.root.clone(), |name| self.root.join(name)))
    }

    /// Where `device`'s recordings go: its folder ([`gpu_folder_name`]).
    pub fn for_device(&self, device: &DeviceInfo) -> Recorded {
        self.folder(Some(&gpu_folder_name(device)))
    }

    /// Every results file of folder `name`, read and checked as a results file (not against a
    /// lab), sorted by file name; a file that cannot be trusted is given with its reason.
    pub fn read_folder(&self, name: &str) -> Vec<Result<LabResults, super::Distrust>> {
        let dir = self.root.join(name);
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                    .collect()
            })
            .unwrap_or_default();
        paths.sort();
        paths
            .iter()
            .filter_map(|path| read_results(path).transpose())
            .collect()
    }
}

/// Whether `dir` holds a `*.json` file.
fn holds_results(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            entry.file_type().is_ok_and(|kind| kind.is_file())
                && entry.path().extension().is_some_and(|ext| ext == "json")
        })
    })
}

/// Which GPU's recordings the chapters show when there is no GPU to measure on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The folder; `None` for the root itself (the flat layout).
    pub folder: Option<String>,
    /// What the reader of the build's log should know about the choice, if anything.
    pub notice: Option<String>,
}

/// Chooses the shown folder: the book's `setting` (book.toml's `recorded-gpu`) where the
/// root has it; otherwise the only GPU folder, or the first by name with a notice saying so;
/// the root itself where it holds the flat layout and no folder. `folders` are the root's GPU
/// folders, sorted.
pub fn choose_shown(setting: Option<&str>, folders: &[String], flat: bool) -> Shown {
    let shown = |folder: Option<&String>, notice: Option<String>| Shown {
        folder: folder.cloned(),
        notice,
    };
    let first = folders.first();
    match setting {
        Some(name) if folders.iter().any(|f| f == name) => Shown {
            folder: Some(name.to_string()),
            notice: None,
        },
        Some(name) if first.is_some() => shown(
            first,
            Some(format!(
                "book.toml's recorded-gpu names `{name}`, which the recordings do not have; showing `{}` ({})",
                first.map_or("", String::as_str),
                folders.join(", ")
            )),
        ),
        Some(_) if flat => shown(None, None),
        Some(name) => Shown {
            folder: Some(name.to_string()),
            notice: None,
        },
        None if folders.len() > 1 => shown(
            first,
            Some(format!(
                "the recordings hold several GPUs ({}); showing `{}`: name one with recorded-gpu under [preprocessor.kernelbook] in book.toml",
                folders.join(", "),
                first.map_or("", String::as_str)
            )),
        ),
        None => shown(first, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(name: &str, uuid: &str) -> DeviceInfo {
        let mut info = crate::plan::tests::h200();
        info.name = name.into();
        info.uuid = uuid.into();
        info
    }

    #[test]
    fn a_gpus_folder_is_named_from_its_name_and_uuid() {
        let name = |n: &str, u: &str| gpu_folder_name(&device(n, u));
        assert_eq!(
            name("NVIDIA H200", "GPU-d8d1645c-8517-03ad-8621-cfe1592a5c73"),
            "nvidia-h200-d8d1645c"
        );
        assert_eq!(
            name("AMD Instinct MI300X", "GPU-4f0a1b2c3d4e5f60"),
            "amd-instinct-mi300x-4f0a1b2c"
        );
        assert_eq!(name("Fake GPU", "GPU-fake-1"), "fake-gpu-fake-1");
        assert_eq!(name("Fake GPU", "GPU-fake"), "fake-gpu-fake");
        assert_eq!(
            name("NVIDIA A100-SXM4-80GB", "MIG-0123abcd-ffff"),
            "nvidia-a100-sxm4-80gb-0123abcd"
        );
        assert_eq!(name("../../etc", ""), "etc", "no path escapes the root");
        assert_eq!(name("", "GPU-"), "gpu");
    }

    #[test]
    fn the_books_choice_is_shown_else_the_only_or_first_folder() {
        let folders = [
            "fake-gpu-fake".to_string(),
            "nvidia-h200-d8d1645c".to_string(),
        ];
        let h200 = Some("nvidia-h200-d8d1645c");
        assert_eq!(
            choose_shown(h200, &folders, false),
            Shown {
                folder: h200.map(String::from),
                notice: None
            }
        );
        let absent = choose_shown(Some("nvidia-a100-00000000"), &folders, false);
        assert_eq!(absent.folder.as_deref(), Some("fake-gpu-fake"));
        assert!(
            absent
                .notice
                .as_deref()
                .is_some_and(|n| n.contains("`nvidia-a100-00000000`")),
            "{absent:?}"
        );
        let unset = choose_shown(None, &folders, false);
        assert_eq!(unset.folder.as_deref(), Some("fake-gpu-fake"));
        assert!(unset.notice.is_some());
        assert_eq!(
            choose_shown(None, &folders[1..], false),
            Shown {
                folder: h200.map(String::from),
                notice: None
            }
        );
        assert_eq!(
            choose_shown(None, &[], true).folder,
            None,
            "the flat layout"
        );
        assert_eq!(choose_shown(h200, &[], true).folder, None);
        assert_eq!(
            choose_shown(h200, &[], false).folder.as_deref(),
            h200,
            "nothing recorded yet: the book's folder, whose absence the book reports"
        );
    }

    #[test]
    fn folders_are_those_holding_results_files_but_experiments() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Recordings::new(dir.path());
        for (folder, file) in [
            ("nvidia-h200-d8d1645c", "copy.json"),
            ("experiments", "old.json"),
            ("notes", "README.md"),
            ("fake-gpu-fake", "copy.json"),
        ] {
            std::fs::create_dir_all(dir.path().join(folder)).expect("mkdir");
            std::fs::write(dir.path().join(folder).join(file), "{}").expect("write");
        }
        assert_eq!(root.folders(), ["fake-gpu-fake", "nvidia-h200-d8d1645c"]);
        assert!(!root.has_flat_files());
        std::fs::write(dir.path().join("copy.json"), "{}").expect("write");
        assert!(root.has_flat_files());
        let read = root.read_folder("fake-gpu-fake");
        assert_eq!(read.len(), 1);
        assert!(read[0].is_err(), "`{{}}` is not a results file");
        assert!(
            Recordings::new(dir.path().join("none"))
                .folders()
                .is_empty()
        );
    }
}
