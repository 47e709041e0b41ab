//! Results files on disk: the cache (keyed by everything that changes a measurement) and the
//! recorded results committed under `labs/recorded/`. Writes are atomic (temporary file, then
//! rename), and a file that cannot be trusted is reported and ignored, never used.

use kernelbook_core::KernelSource;
use kernelbook_core::results::{DeviceInfo, FORMAT_VERSION, LabResults};
use kernelbook_core::spec::LabSpec;
use kernelbook_core::stats::StoppingRule;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Everything a measurement depends on. Presentation (titles, labels, access-pattern prose) is
/// left out on purpose: rewording a table must not cost a GPU run.
#[derive(Serialize)]
struct KeyMaterial<'a> {
    runner_version: &'a str,
    format_version: u32,
    lab: &'a str,
    params: &'a BTreeMap<String, i64>,
    bytes: &'a str,
    ceiling: Option<&'a str>,
    compile_flags: &'a [String],
    buffers: &'a [kernelbook_core::spec::BufferSpec],
    check: &'a kernelbook_core::spec::CheckSpec,
    flush_l2: bool,
    profile: bool,
    work: Option<&'a kernelbook_core::spec::WorkSpec>,
    counter: Option<&'a kernelbook_core::spec::CounterSpec>,
    variants: Vec<VariantKey<'a>>,
    device_name: &'a str,
    device_uuid: &'a str,
    device_arch: &'a str,
    driver_version: &'a str,
    compiler_version: &'a str,
    rule: &'a StoppingRule,
}

#[derive(Serialize)]
struct VariantKey<'a> {
    name: &'a str,
    kernel: Option<&'a str>,
    /// The source of every kernel the variant launches, setup and later stages included.
    kernel_sources: Vec<Option<&'a str>>,
    builtin: Option<kernelbook_core::spec::Builtin>,
    grid: Vec<&'a str>,
    block: Vec<&'a str>,
    shared_bytes: Option<&'a str>,
    args: &'a [String],
    bytes: Option<&'a str>,
    check: Option<&'a kernelbook_core::spec::CheckSpec>,
    defines: &'a BTreeMap<String, String>,
    setup: Vec<LaunchKey<'a>>,
    then: Vec<LaunchKey<'a>>,
    work: Option<&'a kernelbook_core::spec::WorkSpec>,
    counter: Option<&'a kernelbook_core::spec::CounterSpec>,
    flush_l2: Option<bool>,
}

#[derive(Serialize)]
struct LaunchKey<'a> {
    kernel: &'a str,
    grid: Vec<&'a str>,
    block: Vec<&'a str>,
    shared_bytes: Option<&'a str>,
    args: &'a [String],
    defines: &'a BTreeMap<String, String>,
}

impl<'a> LaunchKey<'a> {
    fn of(launch: &'a kernelbook_core::spec::LaunchSpec) -> Self {
        LaunchKey {
            kernel: launch.kernel_name(),
            grid: strs(&launch.grid),
            block: strs(&launch.block),
            shared_bytes: launch.shared_bytes.as_ref().map(|e| e.as_str()),
            args: &launch.args,
            defines: &launch.defines,
        }
    }
}

/// Identifies the device, driver and compiler a measurement is (or would be) made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    pub device: DeviceInfo,
    pub driver_version: String,
    pub compiler_version: String,
}

fn strs(exprs: &[kernelbook_core::expr::Expr]) -> Vec<&str> {
    exprs.iter().map(|e| e.as_str()).collect()
}

/// The cache key of `lab` (with its current parameters) on `toolchain`: a hex SHA-256.
pub fn cache_key(
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
    toolchain: &Toolchain,
    rule: &StoppingRule,
) -> String {
    let material = KeyMaterial {
        runner_version: env!("CARGO_PKG_VERSION"),
        format_version: FORMAT_VERSION,
        lab: &lab.name,
        params: &lab.params,
        bytes: lab.bytes.as_str(),
        ceiling: lab.ceiling.as_deref(),
        compile_flags: &lab.compile_flags,
        buffers: &lab.buffers,
        check: &lab.check,
        flush_l2: lab.flush_l2,
        profile: lab.profile,
        work: lab.work.as_ref(),
        counter: lab.counter.as_ref(),
        variants: lab
            .variants
            .iter()
            .map(|v| VariantKey {
                name: &v.name,
                kernel: v.kernel_name(),
                kernel_sources: v
                    .kernel_names()
                    .into_iter()
                    .map(|k| kernels.get(k).map(|k| k.source.as_str()))
                    .collect(),
                builtin: v.builtin,
                grid: strs(&v.grid),
                block: strs(&v.block),
                shared_bytes: v.shared_bytes.as_ref().map(|e| e.as_str()),
                args: &v.args,
                bytes: v.bytes.as_ref().map(|e| e.as_str()),
                check: v.check.as_ref(),
                defines: &v.defines,
                setup: v.setup.iter().map(LaunchKey::of).collect(),
                then: v.then.iter().map(LaunchKey::of).collect(),
                work: v.work.as_ref(),
                counter: v.counter.as_ref(),
                flush_l2: v.flush_l2,
            })
            .collect(),
        device_name: &toolchain.device.name,
        device_uuid: &toolchain.device.uuid,
        device_arch: &toolchain.device.arch,
        driver_version: &toolchain.driver_version,
        compiler_version: &toolchain.compiler_version,
        // The lab's `[timing]` overrides are part of the rule it is measured under.
        rule: &lab.stopping_rule(rule),
    };
    let json = serde_json::to_vec(&material).unwrap_or_default();
    Sha256::digest(&json)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

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
    use kernelbook_core::results::{FORMAT_VERSION, Provenance};

    const LAB: &str = r#"
name = "copy"
title = "Copy"
bytes = "2 * n * 4"
[params]
n = 1024
[[buffers]]
name = "src"
len = "n"
fill = "random"
[[buffers]]
name = "dst"
len = "n"
fill = "poison"
[check]
reference = "copy"
input = "src"
output = "dst"
[[variants]]
name = "scalar"
label = "scalar copy"
access = "coalesced"
kernel = "copy_scalar"
grid = ["n / 256"]
block = [256]
args = ["dst", "src", "n"]
"#;

    fn lab(text: &str) -> LabSpec {
        LabSpec::parse(text, Path::new("labs/copy.toml")).expect("lab")
    }

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

    fn toolchain() -> Toolchain {
        Toolchain {
            device: DeviceInfo {
                backend: "cuda".into(),
                name: "NVIDIA H200".into(),
                uuid: "GPU-1".into(),
                arch: "sm_90".into(),
                compute_capability: (9, 0),
                sm_count: 132,
                l2_bytes: 62914560,
                memory_bytes: 1 << 37,
                memory_clock_khz: 3_201_000,
                bus_width_bits: 6016,
                sm_clock_khz: 1_980_000,
                max_threads_per_sm: 2048,
                max_shared_bytes_per_block: 232448,
            },
            driver_version: "13.0".into(),
            compiler_version: "NVRTC 13.0".into(),
        }
    }

    fn key(lab_text: &str, source: &str, toolchain: &Toolchain) -> String {
        cache_key(
            &lab(lab_text),
            &kernels(source),
            toolchain,
            &StoppingRule::default(),
        )
    }

    #[test]
    fn the_key_is_stable_and_ignores_presentation() {
        let base = key(LAB, "a", &toolchain());
        assert_eq!(base, key(LAB, "a", &toolchain()));
        let reworded = LAB
            .replace("title = \"Copy\"", "title = \"A copy\"")
            .replace("label = \"scalar copy\"", "label = \"the scalar copy\"")
            .replace("access = \"coalesced\"", "access = \"fully coalesced\"");
        assert_eq!(base, key(&reworded, "a", &toolchain()));
    }

    #[test]
    fn the_key_changes_with_everything_that_changes_a_measurement() {
        let base = key(LAB, "a", &toolchain());
        assert_ne!(base, key(LAB, "a // edited", &toolchain()), "kernel source");
        assert_ne!(
            base,
            key(&LAB.replace("n = 1024", "n = 2048"), "a", &toolchain()),
            "params"
        );
        assert_ne!(
            base,
            key(
                &LAB.replace("block = [256]", "block = [128]"),
                "a",
                &toolchain()
            ),
            "launch shape"
        );
        let flags = LAB.replace("bytes = ", "compile_flags = [\"-DX=1\"]\nbytes = ");
        assert_ne!(base, key(&flags, "a", &toolchain()), "compile flags");
        let rule = StoppingRule::default();
        let lab_with_timing = |timing: &str| {
            let text = LAB.replace("[params]", &format!("[timing]\n{timing}\n\n[params]"));
            cache_key(&lab(&text), &kernels("a"), &toolchain(), &rule)
        };
        assert_ne!(
            base,
            lab_with_timing("max_wall_s = 3"),
            "the lab's own stopping rule"
        );
        assert_eq!(
            base,
            lab_with_timing("max_wall_s = 10"),
            "a [timing] table that repeats the defaults changes nothing"
        );
        let mut other = toolchain();
        other.device.uuid = "GPU-2".into();
        assert_ne!(base, key(LAB, "a", &other), "device");
        let mut other = toolchain();
        other.driver_version = "13.1".into();
        assert_ne!(base, key(LAB, "a", &other), "driver");
        let mut other = toolchain();
        other.compiler_version = "NVRTC 13.1".into();
        assert_ne!(base, key(LAB, "a", &other), "compiler");
    }

    #[test]
    fn kernels_the_lab_does_not_run_do_not_change_its_key() {
        let lab = lab(LAB);
        let mut more = kernels("a");
        let base = cache_key(&lab, &more, &toolchain(), &StoppingRule::default());
        more.insert("unrelated".into(), more["copy_scalar"].clone());
        assert_eq!(
            base,
            cache_key(&lab, &more, &toolchain(), &StoppingRule::default())
        );
    }

    fn results(lab: &str) -> LabResults {
        LabResults {
            format_version: FORMAT_VERSION,
            lab: lab.into(),
            params: Params::new(),
            provenance: Provenance {
                device: toolchain().device,
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
