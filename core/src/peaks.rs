//! Theoretical on-chip rates: what a GPU's SMs could deliver per clock, from the properties the
//! driver reports (SM count, SM clock) and per-architecture constants it does not report, each
//! cited where it is defined. The book's reference tables show these beside the measured
//! figures; the chapter that shows one writes the same arithmetic out.
//!
//! ```
//! use kernelbook_core::peaks;
//! // An H200: 132 SMs at 1.98 GHz.
//! let smem = peaks::shared_memory_gbs(132, 1_980_000);
//! assert!((smem - 33_454.0).abs() < 1.0, "{smem}");
//! ```

use crate::results::DeviceInfo;

/// Banks of shared memory per SM, each delivering one 4-byte word per clock: 32 on every
/// NVIDIA GPU since compute capability 5.0 (CUDA C++ Programming Guide, "Shared Memory" in the
/// compute-capability appendix).
pub const SHARED_BANKS: u32 = 32;
/// Bytes one bank delivers per clock.
pub const BANK_BYTES: u32 = 4;
/// Source operands of a fused multiply-add (`a * b + c`), each a 4-byte register.
pub const FMA_OPERANDS: u32 = 3;

/// Clock in kHz as cycles per second.
fn hz(clock_khz: u64) -> f64 {
    clock_khz as f64 * 1e3
}

/// Aggregate shared-memory bandwidth, GB/s: banks × bytes per bank × SMs × clock.
pub fn shared_memory_gbs(sm_count: u32, sm_clock_khz: u64) -> f64 {
    f64::from(SHARED_BANKS * BANK_BYTES) * f64::from(sm_count) * hz(sm_clock_khz) / 1e9
}

/// 32-bit FMA results per clock per SM (the "FP32 lanes"), from the CUDA C++ Programming
/// Guide's table of arithmetic-instruction throughput; `None` for an architecture that table
/// does not give here (and for AMD GPUs).
pub fn fp32_lanes_per_sm(device: &DeviceInfo) -> Option<u32> {
    if device.backend != crate::results::DeviceApi::Cuda {
        return None;
    }
    match device.compute_capability {
        (7, 0) | (7, 2) | (7, 5) | (8, 0) => Some(64),
        (8, 6) | (8, 7) | (8, 9) | (9, 0) | (10, 0) | (12, 0) => Some(128),
        _ => None,
    }
}

/// Register operands one SM's FMAs read per second, GB/s: every lane issuing an FMA each
/// clock reads three 4-byte registers (lanes × 3 × 4 B × clock).
pub fn register_read_gbs_per_sm(lanes: u32, sm_clock_khz: u64) -> f64 {
    f64::from(lanes * FMA_OPERANDS * 4) * hz(sm_clock_khz) / 1e9
}

/// Peak FP32 rate, GFLOP/s: one FMA (two FLOPs) per lane per clock on every SM.
pub fn fp32_peak_gflops(lanes: u32, sm_count: u32, sm_clock_khz: u64) -> f64 {
    f64::from(lanes) * 2.0 * f64::from(sm_count) * hz(sm_clock_khz) / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::h200;

    #[test]
    fn an_h200s_on_chip_peaks_follow_from_132_sms_at_1980_mhz() {
        let d = h200();
        let lanes = fp32_lanes_per_sm(&d).expect("Hopper");
        assert_eq!(lanes, 128);
        // 128 B per clock per SM: 253 GB/s each, 33.5 TB/s over the chip.
        assert!((shared_memory_gbs(d.sm_count, d.sm_clock_khz) - 33_454.08).abs() < 0.01);
        // 128 lanes × 12 B per clock: 3.04 TB/s per SM.
        assert!((register_read_gbs_per_sm(lanes, d.sm_clock_khz) - 3041.28).abs() < 0.01);
        // 128 × 2 × 132 × 1.98 GHz: 66.9 TFLOP/s.
        assert!((fp32_peak_gflops(lanes, d.sm_count, d.sm_clock_khz) - 66_908.16).abs() < 0.01);
    }

    #[test]
    fn architectures_without_a_cited_constant_have_none() {
        let mut d = h200();
        d.compute_capability = (8, 0);
        assert_eq!(fp32_lanes_per_sm(&d), Some(64));
        d.compute_capability = (6, 1);
        assert_eq!(fp32_lanes_per_sm(&d), None);
        d.compute_capability = (9, 0);
        d.backend = crate::results::DeviceApi::Hip;
        assert_eq!(fp32_lanes_per_sm(&d), None);
    }
}
