//! Bandwidth arithmetic. GB means 10^9 bytes throughout, as vendors quote peaks.

/// Effective bandwidth in GB/s: bytes the kernel must move over its (median) time.
pub fn effective_gbs(bytes: u64, time_ms: f64) -> f64 {
    if time_ms <= 0.0 {
        return 0.0;
    }
    bytes as f64 / (time_ms * 1e-3) / 1e9
}

/// Theoretical DRAM bandwidth in GB/s from the memory clock and bus width the driver reports.
/// HBM and GDDR transfer twice per clock, which the driver's clock does not include.
pub fn theoretical_gbs(memory_clock_khz: u64, bus_width_bits: u64) -> f64 {
    memory_clock_khz as f64 * 1e3 * 2.0 * (bus_width_bits as f64 / 8.0) / 1e9
}

/// `part` as a percentage of `whole` (`None` when there is no whole to compare with).
pub fn percent_of(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0 && part.is_finite()).then(|| 100.0 * part / whole)
}

/// The 32-byte-sector model of a float copy that reads every `stride`-th element and writes
/// contiguously: what fraction of the copy ceiling its *effective* bandwidth (useful bytes over
/// time) should reach.
///
/// Per element the kernel needs 8 useful bytes (4 read, 4 written). The write is coalesced:
/// 4 bytes moved. The read moves a whole 32-byte sector per 8 floats of span, so 4·min(s, 8)
/// bytes: from a stride of 8 on, every lane has a sector of its own and it costs no more. The
/// ratio is 8 / (4 + 4·min(s, 8)).
pub fn strided_copy_efficiency(stride: f64) -> f64 {
    2.0 / (1.0 + stride.clamp(1.0, 8.0))
}

/// The same copy as [`strided_copy_efficiency`] counted at the DRAM, where the L2 fills each
/// miss with 64 bytes (a pair of sectors): the read moves 4·min(s, 16) bytes per element, so the
/// ratio is 2 / (1 + min(s, 16)), flat from stride 16 (the coalescing chapter's L2-fill model).
pub fn l2_fill_strided_copy_efficiency(stride: f64) -> f64 {
    2.0 / (1.0 + stride.clamp(1.0, 16.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_bandwidth_counts_bytes_over_time() {
        // 256 MiB read + 256 MiB written in 0.15 ms.
        let bytes = 2 * 256 * 1024 * 1024;
        let gbs = effective_gbs(bytes, 0.15);
        assert!((gbs - 3579.14).abs() < 0.01, "{gbs}");
        assert_eq!(effective_gbs(bytes, 0.0), 0.0);
    }

    #[test]
    fn h200_theoretical_peak_matches_the_datasheet() {
        // 3201 MHz, 6016-bit bus: 4.8 TB/s.
        let peak = theoretical_gbs(3_201_000, 6016);
        assert!((peak - 4814.3).abs() < 0.5, "{peak}");
    }

    #[test]
    fn the_sector_model_floors_at_stride_eight() {
        assert_eq!(strided_copy_efficiency(1.0), 1.0);
        assert_eq!(strided_copy_efficiency(2.0), 2.0 / 3.0);
        assert_eq!(strided_copy_efficiency(8.0), 2.0 / 9.0);
        assert_eq!(
            strided_copy_efficiency(64.0),
            2.0 / 9.0,
            "no further loss past 8"
        );
    }

    #[test]
    fn the_l2_fill_model_floors_at_stride_sixteen() {
        assert_eq!(l2_fill_strided_copy_efficiency(8.0), 2.0 / 9.0);
        assert_eq!(l2_fill_strided_copy_efficiency(16.0), 2.0 / 17.0);
        assert_eq!(l2_fill_strided_copy_efficiency(64.0), 2.0 / 17.0);
    }

    #[test]
    fn percentages() {
        assert_eq!(percent_of(50.0, 200.0), Some(25.0));
        assert_eq!(percent_of(50.0, 0.0), None);
    }
}
