//! What a variant's L2 controls were: what the lab asked the driver for and what the driver
//! reported back once they were set (a limit is a hint: the driver may round or clamp it, and
//! the page says what it read back).

use serde::{Deserialize, Serialize};

/// A variant's L2 controls, asked and read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2Result {
    /// The driver's values before the variant's were set (its defaults, as the other rows run).
    #[serde(default)]
    pub before: L2Settings,
    pub requested: L2Settings,
    /// `cuCtxGetLimit` and the stream's access-policy window, read after setting them.
    pub reported: L2Settings,
    /// The most bytes this GPU sets aside for persisting lines, where the driver says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_persisting_bytes: Option<u64>,
    /// The largest access-policy window this GPU takes, where the driver says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_window_bytes: Option<u64>,
}

/// L2 limits and an access-policy window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2Settings {
    /// The most bytes the L2 fetches from DRAM on a miss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_granularity_bytes: Option<u64>,
    /// Bytes of L2 set aside for persisting lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persisting_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<L2Window>,
}

/// An access-policy window over the first `bytes` of a lab buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2Window {
    pub buffer: String,
    pub bytes: u64,
    /// The share of the window's accesses given the persisting property.
    pub hit_ratio: f64,
}
