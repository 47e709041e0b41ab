//! Results files on disk: the cache (keyed by [`LabPlan::key`](crate::plan::LabPlan::key), which
//! holds the GPU's UUID: each GPU's results apart) and the recorded results committed under
//! `labs/recorded/`, a folder per GPU ([`recordings`]). Writes are atomic (temporary file, then
//! rename), and a file that cannot be trusted is reported and ignored, never used.

pub mod counters;
pub mod recordings;

use kernelbook_core::KernelSource;
use kernelbook_core::results::{LabResults, MissingVariants};
use kernelbook_core::spec::LabSpec;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::plan::Toolchain;
pub use counters::{CachedCounters, CounterCache};
pub use recordings::{Recordings, Shown, choose_shown, gpu_folder_name};

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

/// The largest results file read (the book's largest recording is under 100 KiB).
pub const MAX_RESULTS_BYTES: u64 = 64 << 20;

/// Reads a results file: `Ok(None)` if there is none, `Err` if it is there but unusable — not a
/// regular file (a FIFO, socket, device or directory is never opened for reading, so nothing
/// blocks), too large, unreadable, not a results file, or holding implausible figures
/// ([`LabResults::validate`]).
pub fn read_results(path: &Path) -> Result<Option<LabResults>, Distrust> {
    let distrust = |reason: String| Distrust {
        path: path.to_path_buf(),
        reason,
    };
    let text = match read_regular_file(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(reason) => return Err(distrust(reason)),
    };
    LabResults::from_json(&text)
        .map(Some)
        .map_err(|err| distrust(err.to_string()))
}

/// The text of the regular file at `path` (following symbolic links), `None` if nothing is
/// there, or why it cannot be read.
fn read_regular_file(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        // A dangling symbolic link is something there, not nothing.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::symlink_metadata(path) {
                Ok(_) => Err("it is a symbolic link to nothing".into()),
                Err(_) => Ok(None),
            };
        }
        Err(err) => return Err(err.to_string()),
    };
    not_regular(&metadata)?;
    let file =
        kernelbook_core::textfile::open_without_blocking(path).map_err(|err| err.to_string())?;
    // Checked again on what was opened: the path may have been replaced in between.
    let metadata = file.metadata().map_err(|err| err.to_string())?;
    not_regular(&metadata)?;
    if metadata.len() > MAX_RESULTS_BYTES {
        return Err(format!(
            "it is {} bytes, more than the {MAX_RESULTS_BYTES} a results file may have",
            metadata.len()
        ));
    }
    let mut text = String::new();
    file.take(MAX_RESULTS_BYTES)
        .read_to_string(&mut text)
        .map_err(|err| err.to_string())?;
    Ok(Some(text))
}

/// `Err` with what the file is, unless it is a regular file.
fn not_regular(metadata: &std::fs::Metadata) -> Result<(), String> {
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a directory"
    } else {
        kernelbook_core::textfile::special_kind(&kind)
    };
    Err(format!("it is {what}, not a regular file"))
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

    /// The results cached for `lab` under `key`. They must hold exactly the lab's variants:
    /// the key is the plan's, and the plan has every variant of the lab.
    pub fn get(&self, lab: &LabSpec, key: &str) -> Result<Option<LabResults>, Distrust> {
        read_matching(lab, &self.path(&lab.name, key), MissingVariants::Refused)
    }

    pub fn put(&self, key: &str, results: &LabResults) -> std::io::Result<()> {
        write_results(&self.path(&results.lab, key), results)
    }
}

/// Reads `path` and checks that it holds `lab`'s results (see [`LabResults::check_lab`]).
fn read_matching(
    lab: &LabSpec,
    path: &Path,
    missing: MissingVariants,
) -> Result<Option<LabResults>, Distrust> {
    let Some(results) = read_results(path)? else {
        return Ok(None);
    };
    results
        .check_lab(lab, missing)
        .map_err(|mismatch| Distrust {
            path: path.to_path_buf(),
            reason: mismatch.to_string(),
        })?;
    Ok(Some(results))
}

/// One GPU's recorded results: `labs/recorded/<gpu>/<lab>.json` ([`recordings`]).
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

    /// The folder the recordings are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The recording of `lab`. It may lack variants added to the lab since it was recorded
    /// (their rows say "not recorded"), but must not hold any the lab does not have.
    pub fn get(&self, lab: &LabSpec) -> Result<Option<LabResults>, Distrust> {
        read_matching(lab, &self.path(&lab.name), MissingVariants::Allowed)
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
    use kernelbook_core::results::{
        DeviceInfo, FORMAT_VERSION, FailureStage, Outcome, Provenance, VariantResult,
    };
    use kernelbook_core::stats::{StopReason, Summary};

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

    /// The shared copy lab (labs/fixtures/copy.toml): variants `memcpy` and `scalar`.
    fn copy_lab() -> LabSpec {
        let text = include_str!("../../labs/fixtures/copy.toml");
        LabSpec::parse(text, Path::new("labs/fixtures/copy.toml")).expect("fixture")
    }

    fn variant(name: &str, median_ms: f64) -> VariantResult {
        VariantResult {
            name: name.into(),
            kernel: None,
            source_hash: None,
            compile_flags: vec![],
            bytes_moved: 8192,
            launch: None,
            resources: None,
            outcome: Outcome::Measured {
                summary: Summary::of(&[median_ms]).expect("summary"),
                stop_reason: StopReason::Converged,
                noisy: false,
                samples_ms: vec![median_ms],
            },
            implementation: None,
            work: None,
            counter: None,
            checked: None,
            other_kernels: Default::default(),
            params: None,
            sampling_seconds: None,
            timeline: None,
            l2: None,
        }
    }

    /// Results of lab `lab` with the copy lab's two variants.
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
            ceiling: Some("memcpy".into()),
            variants: vec![variant("memcpy", 0.004), variant("scalar", 0.005)],
            profile: None,
        }
    }

    #[test]
    fn writes_atomically_and_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::new(dir.path().join("cache"));
        let lab = copy_lab();
        assert_eq!(cache.get(&lab, "k1").expect("absent is fine"), None);
        cache.put("k1", &results("copy")).expect("write");
        assert_eq!(cache.get(&lab, "k1").expect("read"), Some(results("copy")));
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
        let lab = copy_lab();
        let path = cache.path("copy", "k");
        let full = results("copy").to_json();
        std::fs::write(&path, &full[..full.len() / 2]).expect("write");
        let reason = |cache: &Cache| cache.get(&lab, "k").expect_err("distrusted").reason;
        assert!(reason(&cache).contains("not a kernelbook results file"));
        std::fs::write(
            &path,
            full.replace("\"format_version\": 2", "\"format_version\": 99"),
        )
        .expect("write");
        assert!(reason(&cache).contains("format 99"));
        std::fs::write(&path, results("transpose").to_json()).expect("write");
        assert!(reason(&cache).contains("holds lab `transpose`"));
    }

    #[test]
    fn a_negative_median_is_distrusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let recorded = Recorded::new(dir.path());
        let mut r = results("copy");
        r.variants[1] = variant("scalar", 1.0);
        if let Outcome::Measured {
            summary,
            samples_ms,
            ..
        } = &mut r.variants[1].outcome
        {
            summary.median_ms = -0.5;
            *samples_ms = vec![-0.5];
        }
        recorded.put(&r).expect("write");
        let distrust = recorded.get(&copy_lab()).expect_err("distrusted");
        assert_eq!(
            distrust.to_string(),
            format!(
                "ignoring {}: implausible results: variant `scalar`: a sample (ms) is -0.5, outside 1e-6 to 3600000",
                recorded.path("copy").display()
            )
        );
    }

    #[test]
    fn a_recorded_file_with_a_ghost_variant_is_distrusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let recorded = Recorded::new(dir.path());
        let mut r = results("copy");
        r.variants.push(variant("vectorized", 0.004));
        recorded.put(&r).expect("write");
        let distrust = recorded.get(&copy_lab()).expect_err("a ghost row");
        assert_eq!(
            distrust.reason,
            "it holds variant `vectorized`, which the lab does not have"
        );
    }

    #[test]
    fn a_recording_may_lack_a_variant_added_since_a_cache_entry_may_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut r = results("copy");
        r.variants.truncate(1);
        let recorded = Recorded::new(dir.path().join("recorded"));
        recorded.put(&r).expect("write");
        assert_eq!(
            recorded.get(&copy_lab()).expect("usable"),
            Some(r.clone()),
            "the missing row is shown as not recorded"
        );
        let cache = Cache::new(dir.path().join("cache"));
        cache.put("k", &r).expect("write");
        assert_eq!(
            cache.get(&copy_lab(), "k").expect_err("incomplete").reason,
            "it lacks the lab's variant `scalar`"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_as_a_results_file_does_not_hang() {
        let dir = tempfile::tempdir().expect("tempdir");
        let recorded = Recorded::new(dir.path());
        let path = recorded.path("copy");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("mkfifo");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(recorded.get(&copy_lab()));
        });
        let answer = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading a FIFO must not wait for a writer");
        assert_eq!(
            answer.expect_err("distrusted").reason,
            "it is a FIFO, not a regular file"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_device_or_dangling_link_as_a_results_file_is_distrusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let recorded = Recorded::new(dir.path());
        let lab = copy_lab();
        let path = recorded.path("copy");
        std::fs::create_dir(&path).expect("dir");
        assert_eq!(
            recorded.get(&lab).expect_err("a directory").reason,
            "it is a directory, not a regular file"
        );
        std::fs::remove_dir(&path).expect("rmdir");
        std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink");
        assert_eq!(
            recorded.get(&lab).expect_err("a device").reason,
            "it is a device, not a regular file"
        );
        std::fs::remove_file(&path).expect("rm");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &path).expect("symlink");
        assert_eq!(
            recorded.get(&lab).expect_err("dangling").reason,
            "it is a symbolic link to nothing"
        );
        // A link to a good file is followed.
        std::fs::remove_file(&path).expect("rm");
        let real = dir.path().join("real.json");
        write_results(&real, &results("copy")).expect("write");
        std::os::unix::fs::symlink(&real, &path).expect("symlink");
        assert_eq!(recorded.get(&lab).expect("usable"), Some(results("copy")));
    }

    #[test]
    fn an_oversized_results_file_is_distrusted_unread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let recorded = Recorded::new(dir.path());
        let file = std::fs::File::create(recorded.path("copy")).expect("create");
        file.set_len(MAX_RESULTS_BYTES + 1).expect("sparse file");
        assert!(
            recorded
                .get(&copy_lab())
                .expect_err("too large")
                .reason
                .contains("more than the")
        );
    }

    /// Two GPUs of one host, alike but for their UUIDs, keep their results apart in the cache.
    #[test]
    fn each_gpu_has_its_own_cache_entries() {
        let lab = copy_lab();
        let plan = crate::plan::compile(
            &lab,
            &kernels("source"),
            &crate::plan::Target::of(&device()),
            &crate::plan::Measurement::default(),
        )
        .expect("plan");
        let toolchain = |uuid: &str| {
            let mut device = device();
            device.uuid = uuid.into();
            Toolchain {
                device,
                driver_version: "13.0".into(),
                compiler_version: "NVRTC 13.0".into(),
            }
        };
        let cache = Cache::new("cache");
        assert_ne!(
            cache.path("copy", &plan.key(&toolchain("GPU-aaaa"))),
            cache.path("copy", &plan.key(&toolchain("GPU-bbbb")))
        );
    }

    #[test]
    fn stale_kernels_are_found_by_fingerprint() {
        let mut r = results("copy");
        let current = kernels("new source");
        r.variants[1] = VariantResult {
            name: "scalar".into(),
            kernel: Some("copy_scalar".into()),
            source_hash: Some(kernels("old source")["copy_scalar"].source_hash()),
            outcome: Outcome::Failed {
                stage: FailureStage::Launch,
                message: String::new(),
            },
            ..variant("scalar", 1.0)
        };
        assert_eq!(stale_kernels(&r, &current), vec!["copy_scalar"]);
        assert!(stale_kernels(&r, &kernels("old source")).is_empty());
    }
}
