//! The cache key: a hash of the compiled plan and the toolchain it is measured with.
//!
//! Hashing the plan itself (cargo hashes its computed build unit the same way) means a field
//! added to the plan changes the key with nobody having to remember it. One thing is taken out
//! before hashing: where each kernel block stands in the chapter (`origin`), which only serves
//! compiler messages — moving a block down a line must not cost a GPU run.

use super::LabPlan;
use kernelbook_core::results::{DeviceInfo, FORMAT_VERSION};

/// The version the counters' key is hashed with: format 2 of the results file added each
/// variant's parameters, which no counter depends on, so counters taken before it stay valid.
const COUNTER_FORMAT_VERSION: u32 = 1;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The device, driver and compiler a measurement is (or would be) made with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolchain {
    pub device: DeviceInfo,
    pub driver_version: String,
    pub compiler_version: String,
}

#[derive(Serialize)]
struct KeyMaterial<'a> {
    runner_version: &'a str,
    format_version: u32,
    toolchain: &'a Toolchain,
    plan: serde_json::Value,
}

impl LabPlan {
    /// The cache key of this plan measured with `toolchain`: a hex SHA-256.
    pub fn key(&self, toolchain: &Toolchain) -> String {
        let mut plan = serde_json::to_value(self).unwrap_or_default();
        remove_origins(&mut plan);
        let material = KeyMaterial {
            runner_version: env!("CARGO_PKG_VERSION"),
            format_version: FORMAT_VERSION,
            toolchain,
            plan,
        };
        let json = serde_json::to_vec(&material).unwrap_or_default();
        Sha256::digest(&json)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Drops every `origin` (a kernel block's place in the chapter) from a serialised plan.
fn remove_origins(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("origin");
            map.values_mut().for_each(remove_origins);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(remove_origins),
        _ => {}
    }
}

/// What the counters of one variant's kernel depend on, and nothing else: the builds its
/// launches use (source, options, target), their shapes and arguments, the buffers and tensor
/// maps they are given (sizes, types, fills), the device model, the profiler and the metrics.
/// Not the variant's name, check or bytes: renaming a row or rewording a table re-profiles
/// nothing; editing one kernel re-profiles only the variants that launch it.
#[derive(Serialize)]
struct CounterMaterial<'a> {
    runner_version: &'a str,
    format_version: u32,
    device: &'a str,
    tool: &'a str,
    metrics: &'a [&'a str],
    arch: &'a str,
    launches: Vec<serde_json::Value>,
    builds: Vec<serde_json::Value>,
    buffers: Vec<serde_json::Value>,
    tensor_maps: Vec<serde_json::Value>,
    /// The variant's L2 controls: the same launches under another fetch granularity or
    /// window are other counters. Absent where it sets none, so other keys stay as they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    l2: Option<&'a super::L2Plan>,
}

impl LabPlan {
    /// The key of the counters of `variant` (one of this plan's), profiled on a GPU of model
    /// `device` with `tool` collecting `metrics`; `None` for a variant that runs no kernel of
    /// the book.
    pub fn counter_key(
        &self,
        variant: &super::VariantPlan,
        device: &str,
        tool: &str,
        metrics: &[&str],
    ) -> Option<String> {
        let super::OpPlan::Kernel(op) = &variant.op else {
            return None;
        };
        let launches: Vec<&super::LaunchPlan> = op.launches().collect();
        let mut builds: Vec<usize> = launches.iter().map(|l| l.build).collect();
        builds.sort_unstable();
        builds.dedup();
        let mut buffers: Vec<usize> = Vec::new();
        let mut tensor_maps: Vec<usize> = Vec::new();
        for arg in launches.iter().flat_map(|l| &l.args) {
            match arg {
                super::ArgPlan::Buffer(index) => buffers.push(*index),
                super::ArgPlan::TensorMap(index) => tensor_maps.push(*index),
                _ => {}
            }
        }
        let value = |v: serde_json::Result<serde_json::Value>| {
            let mut v = v.unwrap_or_default();
            remove_origins(&mut v);
            v
        };
        let material = CounterMaterial {
            runner_version: env!("CARGO_PKG_VERSION"),
            format_version: COUNTER_FORMAT_VERSION,
            device,
            tool,
            metrics,
            arch: &self.target.arch,
            launches: launches
                .iter()
                .map(|l| value(serde_json::to_value(l)))
                .collect(),
            builds: builds
                .iter()
                .filter_map(|&i| self.builds.get(i))
                .map(|b| {
                    value(serde_json::to_value((
                        &b.source.name,
                        &b.source.source,
                        &b.flags,
                    )))
                })
                .collect(),
            buffers: buffers
                .iter()
                .filter_map(|&i| self.buffers.get(i))
                .map(|b| value(serde_json::to_value((b.elem, b.len, b.fill))))
                .collect(),
            tensor_maps: tensor_maps
                .iter()
                .filter_map(|&i| self.tensor_maps.get(i))
                .map(|m| value(serde_json::to_value(m)))
                .collect(),
            l2: variant.l2.as_ref(),
        };
        let json = serde_json::to_vec(&material).unwrap_or_default();
        Some(
            Sha256::digest(&json)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }
}
