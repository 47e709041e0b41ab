//! Results files on disk: the cache (keyed by [`LabPlan::key`](crate::plan::LabPlan::key)) and the
//! recorded results committed under `labs/recorded/`. Writes are atomic (temporary file, then
//! rename), and a file that cannot be trusted is reported and ignored, never used.

use kernelbook_core::KernelSource;
use kernelbook_core::results::LabResults;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::plan::Toolchain;

/// A results file that exists but cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distrust {
    pub path: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for Distrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ignoring {}: {}", self.path.display(), self.reason)
    }
}

/// Reads a results file: `Ok(None)` if there is none, `Err` if it is there but unusable.
pub fn read_results(path: &Path) -> Result<Option<LabResults>, Distrust> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(Distrust {
                path: path.to_path_buf(),
                reason: err.to_string(),
            });
        }
    };
    LabResults::from_json(&text)
        .map(Some)
        .map_err(|err| Distrust {
            path: path.to_path_buf(),
            reason: err.to_string(),
        })
}

/// Writes a results file atomically: readers see the old file or the new one, never a part.
pub fn write_results(path: &Path, results: &LabResults) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(results.to_json().as_bytes())?;
    file.write_all(b"\n")?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(())
}

/// The cache: one results file per key.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Cache { dir: dir.into() }
    }

    pub fn path(&self, lab: &str, key: &str) -> PathBuf {
        self.dir
            .join(format!("{lab}-{}.json", &key[..key.len().min(32)]))
    }

    pub fn get(&self, lab: &str, key: &str) -> Result<Option<LabResults>, Distrust> {
        self.read_matching(lab, &self.path(lab, key))
    }

    pub fn put(&self, key: &str, results: &LabResults) -> std::io::Result<()> {
        write_results(&self.path(&results.lab, key), results)
    }

    fn read_matching(&self, lab: &str, path: &Path) -> Result<Option<LabResults>, Distrust> {
        match read_results(path)? {
            Some(results) if results.lab != lab => Err(Distrust {
                path: path.to_path_buf(),
                reason: format!("it holds lab `{}`, not `{lab}`", results.lab),
            }),
            other => Ok(other),
        }
    }
}

/// The recorded results committed with the book: `labs/recorded/<lab>.json`.
#[derive(Debug, Clone)]
pub struct Recorded {
    dir: PathBuf,
}

impl Recorded {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Recorded { dir: dir.into() }
    }

    pub fn path(&self, lab: &str) -> PathBuf {
        self.dir.join(format!("{lab}.json"))
    }

    pub fn get(&self, lab: &str) -> Result<Option<LabResults>, Distrust> {
        Cache::new(&self.dir).read_matching(lab, &self.path(lab))
    }

    pub fn put(&self, results: &LabResults) -> std::io::Result<()> {
        write_results(&self.path(&results.lab), results)
    }
}

/// Kernels whose source changed since `results` were measured (by fingerprint).
pub fn stale_kernels(
    results: &LabResults,
    kernels: &BTreeMap<String, KernelSource>,
) -> Vec<String> {
    let changed = |name: &str, then: Option<&String>| {
        let now = kernels.get(name).map(KernelSource::source_hash);
        now.as_ref() != then
    };
    let mut stale: Vec<String> = Vec::new();
    for variant in &results.variants {
        let own = variant
            .kernel
            .iter()
            .map(|k| (k, variant.source_hash.as_ref()));
        let others = variant
            .other_kernels
            .iter()
            .map(|(k, hash)| (k, Some(hash)));
        for (name, hash) in own.chain(others) {
            if changed(name, hash) && !stale.contains(name) {
                stale.push(name.clone());
            }
        }
    }
    stale
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::SourceLocation;
    use kernelbook_core::expr::Params;
    use kernelbook_core::results::{DeviceInfo, FORMAT_VERSION, Provenance};

    fn kernels(source: &str) -> BTreeMap<String, KernelSource> {
        BTreeMap::from([(
            "copy_scalar".to_string(),
            KernelSource {
                name: "copy_scalar".into(),
                source: source.into(),
                origin: SourceLocation {
                    file: "a.md".into(),
                    line: 3,
                },
                language: Default::default(),
            },
        )])
    }

    fn device() -> DeviceInfo {
        crate::plan::tests::h200()
    }

    fn results(lab: &str) -> LabResults {
        LabResults {
            format_version: FORMAT_VERSION,
            lab: lab.into(),
            params: Params::new(),
            provenance: Provenance {
                device: device(),
                driver_version: "13.0".into(),
                compiler_version: "NVRTC 13.0".into(),
                runner_version: "0".into(),
                measured_at: "2026-11-29T00:00:00Z".into(),
                wall_seconds: 1.0,
                input_seed: 1,
                timing_method: "events".into(),
                clocks: None,
            },
            ceiling: None,
            variants: vec![],
            profile: None,
        }
    }

    #[test]
    fn writes_atomically_and_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::new(dir.path().join("cache"));
        assert_eq!(cache.get("copy", "k1").expect("absent is fine"), None);
        cache.put("k1", &results("copy")).expect("write");
        assert_eq!(
            cache.get("copy", "k1").expect("read"),
            Some(results("copy"))
        );
        let names: Vec<_> = std::fs::read_dir(dir.path().join("cache"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(
            names.len(),
            1,
            "no temporary file is left behind: {names:?}"
        );
    }

    #[test]
    fn truncated_foreign_or_misplaced_files_are_distrusted_not_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::new(dir.path());
        let path = cache.path("copy", "k");
        let full = results("copy").to_json();
        std::fs::write(&path, &full[..full.len() / 2]).expect("write");
        assert!(
            cache
                .get("copy", "k")
                .expect_err("truncated")
                .reason
                .contains("not a kernelbook results file")
        );
        std::fs::write(
            &path,
            full.replace("\"format_version\": 1", "\"format_version\": 99"),
        )
        .expect("write");
        assert!(
            cache
                .get("copy", "k")
                .expect_err("foreign")
                .reason
                .contains("format 99")
        );
        std::fs::write(&path, results("transpose").to_json()).expect("write");
        assert!(
            cache
                .get("copy", "k")
                .expect_err("misplaced")
                .reason
                .contains("holds lab `transpose`")
        );
    }

    #[test]
    fn stale_kernels_are_found_by_fingerprint() {
        let mut r = results("copy");
        let current = kernels("new source");
        r.variants.push(kernelbook_core::results::VariantResult {
            name: "scalar".into(),
            kernel: Some("copy_scalar".into()),
            source_hash: Some(kernels("old source")["copy_scalar"].source_hash()),
            compile_flags: vec![],
            bytes_moved: 0,
            launch: None,
            resources: None,
            outcome: kernelbook_core::results::Outcome::Failed {
                stage: kernelbook_core::results::FailureStage::Launch,
                message: String::new(),
            },
            implementation: None,
            work: None,
            counter: None,
            other_kernels: Default::default(),
        });
        assert_eq!(stale_kernels(&r, &current), vec!["copy_scalar"]);
        assert!(stale_kernels(&r, &kernels("old source")).is_empty());
    }
}
