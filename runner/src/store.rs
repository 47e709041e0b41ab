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
    kernel_source: Option<&'a str>,
    builtin: Option<kernelbook_core::spec::Builtin>,
    grid: Vec<&'a str>,
    block: Vec<&'a str>,
    shared_bytes: Option<&'a str>,
    args: &'a [String],
    bytes: Option<&'a str>,
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
        variants: lab
            .variants
            .iter()
            .map(|v| VariantKey {
                name: &v.name,
                kernel: v.kernel_name(),
                kernel_source: v.kernel_name().and_then(|k| kernels.get(k)).map(|k| k.source.as_str()),
                builtin: v.builtin,
                grid: strs(&v.grid),
                block: strs(&v.block),
                shared_bytes: v.shared_bytes.as_ref().map(|e| e.as_str()),
                args: &v.args,
                bytes: v.bytes.as_ref().map(|e| e.as_str()),
            })
            .collect(),
        device_name: &toolchain.device.name,
        device_uuid: &toolchain.device.uuid,
        device_arch: &toolchain.device.arch,
        driver_version: &toolchain.driver_version,
        compiler_version: &toolchain.compiler_version,
        rule,
    };
    let json = serde_json::to_vec(&material).unwrap_or_default();
    Sha256::digest(&json).iter().map(|b| format!("{b:02x}")).collect()
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
    LabResults::from_json(&text).map(Some).map_err(|err| Distrust {
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
        self.dir.join(format!("{lab}-{}.json", &key[..key.len().min(32)]))
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
pub fn stale_kernels(results: &LabResults, kernels: &BTreeMap<String, KernelSource>) -> Vec<String> {
    results
        .variants
        .iter()
        .filter_map(|v| {
            let name = v.kernel.as_ref()?;
            let now = kernels.get(name).map(KernelSource::source_hash);
            (now != v.source_hash).then(|| name.clone())
        })
        .collect()
}
