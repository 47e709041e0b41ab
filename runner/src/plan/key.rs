//! The cache key: a hash of the compiled plan and the toolchain it is measured with.
//!
//! Hashing the plan itself (cargo hashes its computed build unit the same way) means a field
//! added to the plan changes the key with nobody having to remember it. One thing is taken out
//! before hashing: where each kernel block stands in the chapter (`origin`), which only serves
//! compiler messages — moving a block down a line must not cost a GPU run.

use super::LabPlan;
use kernelbook_core::results::{DeviceInfo, FORMAT_VERSION};
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
