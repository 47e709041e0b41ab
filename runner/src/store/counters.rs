//! The counters cache: one file per variant's kernel launch, under its counter key
//! ([`LabPlan::counter_key`](crate::plan::LabPlan::counter_key): the kernel's builds, its
//! launch shape and buffer sizes, the device model, the profiler and its metrics). A lab's
//! numbers and its counters are cached apart, so that re-measuring a lab's timings re-profiles
//! nothing whose kernel did not change, and editing one kernel re-profiles only its launches.

use super::{Distrust, read_regular_file};
use kernelbook_core::results::KernelProfile;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One variant's counters as the cache keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedCounters {
    /// The key the file is named after, repeated: a file copied under another name is not used.
    pub key: String,
    /// The profiler, e.g. "NVIDIA Nsight Compute 2025.3.1.0".
    pub tool: String,
    /// The GPU the counters were taken on and when.
    pub device: String,
    pub uuid: String,
    pub measured_at: String,
    /// Seconds the session that took them spent per variant profiled (to estimate the next).
    pub seconds: f64,
    pub counters: KernelProfile,
}

/// The folder of the counters cache.
#[derive(Debug, Clone)]
pub struct CounterCache {
    dir: PathBuf,
}

impl CounterCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CounterCache { dir: dir.into() }
    }

    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{}.json", &key[..key.len().min(40)]))
    }

    /// The counters kept under `key`: `Ok(None)` if there are none, `Err` if the file is there
    /// but cannot be used (then they are collected again).
    pub fn get(&self, key: &str) -> Result<Option<CachedCounters>, Distrust> {
        let path = self.path(key);
        let distrust = |reason: String| Distrust {
            path: path.clone(),
            reason,
        };
        let Some(text) = read_regular_file(&path).map_err(distrust)? else {
            return Ok(None);
        };
        let cached: CachedCounters =
            serde_json::from_str(&text).map_err(|err| distrust(err.to_string()))?;
        if cached.key != key {
            return Err(distrust("it holds the counters of another key".into()));
        }
        Ok(Some(cached))
    }

    /// Keeps `counters` under their key, atomically.
    pub fn put(&self, counters: &CachedCounters) -> std::io::Result<()> {
        write_json(&self.path(&counters.key), counters)
    }
}

fn write_json(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    let json = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    file.write_all(&json)?;
    file.write_all(b"\n")?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|err| err.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str) -> CachedCounters {
        CachedCounters {
            key: key.into(),
            tool: "ncu".into(),
            device: "NVIDIA H200".into(),
            uuid: "GPU-1".into(),
            measured_at: "2026-12-02T00:00:00Z".into(),
            seconds: 0.5,
            counters: KernelProfile {
                kernel: "copy".into(),
                launch_id: 0,
                duration_ns: Some(1000.0),
                shared_load_bank_conflicts: None,
                shared_store_bank_conflicts: None,
                shared_load_instructions: None,
                conflicts_per_shared_load: None,
                wavefronts_per_shared_load: None,
                shared_store_instructions: None,
                conflicts_per_shared_store: None,
                wavefronts_per_shared_store: None,
                global_load_sectors_per_request: Some(4.0),
                global_store_sectors_per_request: Some(4.0),
                dram_read_bytes: Some(1.0),
                dram_write_bytes: Some(1.0),
                dram_bytes: Some(2.0),
                l2_write_bytes_from_l1: None,
                ..Default::default()
            },
        }
    }

    #[test]
    fn counters_round_trip_and_a_file_of_another_key_is_distrusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = CounterCache::new(dir.path());
        assert_eq!(cache.get("abc").expect("nothing"), None);
        cache.put(&entry("abc")).expect("put");
        assert_eq!(cache.get("abc").expect("read"), Some(entry("abc")));
        std::fs::copy(cache.path("abc"), cache.path("def")).expect("copy");
        let err = cache.get("def").expect_err("another key");
        assert!(err.reason.contains("another key"), "{err}");
    }
}
