//! The device properties a lab's expressions may name, e.g. `grid = ["2 * sm_count"]`: the one
//! place that lists them.
//!
//! When a plan is compiled they come from the GPU it is compiled for (the runner's `Target`), so
//! they are in the plan and its cache key like every other number. When a lab file is loaded
//! there is no GPU: [`DeviceParams::PLACEHOLDER`], an H200's, stands in, only so that an
//! expression naming them can be checked to be well formed. No number a measurement uses comes
//! from the placeholders.

use crate::expr::Params;

/// The values of the device properties an expression may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceParams {
    /// Streaming multiprocessors (compute units on AMD).
    pub sm_count: i64,
    pub l2_bytes: i64,
    pub max_threads_per_sm: i64,
    /// Threads per warp (wavefront): 32 on NVIDIA, 64 on AMD's gfx9 (CDNA) parts.
    pub warp_size: i64,
    /// The opt-in limit of dynamic and static shared memory per block.
    pub max_shared_bytes_per_block: i64,
}

impl DeviceParams {
    /// What a lab file is checked with when it is loaded: an NVIDIA H200 (132 SMs, a 60 MiB L2,
    /// 2048 threads per SM, warps of 32, 227 KiB of shared memory per block).
    pub const PLACEHOLDER: DeviceParams = DeviceParams {
        sm_count: 132,
        l2_bytes: 62_914_560,
        max_threads_per_sm: 2048,
        warp_size: 32,
        max_shared_bytes_per_block: 232_448,
    };

    /// Each property by the name expressions use.
    pub fn entries(&self) -> [(&'static str, i64); 5] {
        [
            ("sm_count", self.sm_count),
            ("l2_bytes", self.l2_bytes),
            ("max_threads_per_sm", self.max_threads_per_sm),
            ("warp_size", self.warp_size),
            (
                "max_shared_bytes_per_block",
                self.max_shared_bytes_per_block,
            ),
        ]
    }

    /// Whether `name` is a device property, which no parameter of a lab may be called.
    pub fn is_name(name: &str) -> bool {
        Self::PLACEHOLDER.entries().iter().any(|(n, _)| *n == name)
    }

    /// `params` with the device properties bound beside them. A lab's parameters never share a
    /// name with a property (that is an error when the lab is loaded), so nothing is shadowed.
    pub fn bind(&self, params: &Params) -> Params {
        let mut all = params.clone();
        all.extend(
            self.entries()
                .map(|(name, value)| (name.to_string(), value)),
        );
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;

    #[test]
    fn the_placeholders_are_an_h200s_and_bind_beside_the_labs_params() {
        let env = DeviceParams::PLACEHOLDER.bind(&Params::from([("n".to_string(), 4)]));
        assert_eq!(Expr::new("2 * sm_count").eval(&env), Ok(264));
        assert_eq!(Expr::new("l2_bytes / 1048576").eval(&env), Ok(60));
        assert_eq!(
            Expr::new("n + warp_size + max_threads_per_sm").eval(&env),
            Ok(2084)
        );
        assert_eq!(
            Expr::new("max_shared_bytes_per_block").eval(&env),
            Ok(232_448)
        );
        assert!(DeviceParams::is_name("warp_size"));
        assert!(!DeviceParams::is_name("n"));
    }
}
