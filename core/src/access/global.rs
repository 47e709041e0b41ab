//! Global memory's view of one warp instruction: which 32-byte sectors and 128-byte lines it
//! touches, and how many of the bytes they bring are the ones the lanes asked for.
//!
//! An aligned access of at most 16 bytes never crosses a sector boundary (sectors are 32 bytes),
//! so every lane lands in exactly one sector; the instruction costs one sector request for each
//! distinct sector. Nsight Compute's "sectors per request" counts the same thing
//! (`l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum` over `..._requests_...`), averaged over
//! every such instruction of a kernel.

use super::{LINE_BYTES, SECTOR_BYTES, WarpAccess};
use std::collections::BTreeMap;

/// One sector the instruction touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectorUse {
    /// The sector's number: its first byte address divided by 32.
    pub index: u64,
    /// Bit `b` is set where byte `b` of the sector is one a lane asked for.
    pub used: u32,
    /// The lanes whose access lies in it, in lane order.
    pub lanes: Vec<usize>,
}

impl SectorUse {
    /// The line the sector belongs to.
    pub fn line(&self) -> u64 {
        self.index * SECTOR_BYTES / LINE_BYTES
    }

    /// Which of its line's four sectors it is.
    pub fn position_in_line(&self) -> u64 {
        self.index % (LINE_BYTES / SECTOR_BYTES)
    }

    /// Bytes of the sector a lane asked for.
    pub fn used_bytes(&self) -> u64 {
        u64::from(self.used.count_ones())
    }
}

/// What one warp instruction costs global memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalFootprint {
    /// Every touched sector, in address order.
    pub sectors: Vec<SectorUse>,
    /// The bytes each lane accesses.
    pub elem_bytes: u64,
}

impl GlobalFootprint {
    pub(super) fn of(access: &WarpAccess) -> Self {
        let mut sectors: BTreeMap<u64, SectorUse> = BTreeMap::new();
        for (lane, &address) in access.addresses().iter().enumerate() {
            let index = address / SECTOR_BYTES;
            let offset = address % SECTOR_BYTES;
            // `elem_bytes` ≤ 16 and aligned, so the bytes fit in this one sector.
            let bits = ((1u64 << access.elem_bytes()) - 1) << offset;
            let sector = sectors.entry(index).or_insert_with(|| SectorUse {
                index,
                used: 0,
                lanes: Vec::new(),
            });
            sector.used |= bits as u32;
            sector.lanes.push(lane);
        }
        GlobalFootprint {
            sectors: sectors.into_values().collect(),
            elem_bytes: access.elem_bytes(),
        }
    }

    /// Sector requests this one instruction makes: one per distinct sector.
    pub fn sectors_per_request(&self) -> usize {
        self.sectors.len()
    }

    /// The distinct 128-byte lines the sectors fall in, in address order.
    pub fn lines(&self) -> Vec<u64> {
        let mut lines: Vec<u64> = self.sectors.iter().map(SectorUse::line).collect();
        lines.dedup();
        lines
    }

    pub fn lines_touched(&self) -> usize {
        self.lines().len()
    }

    /// Distinct bytes the lanes asked for (two lanes reading one byte count it once).
    pub fn used_bytes(&self) -> u64 {
        self.sectors.iter().map(SectorUse::used_bytes).sum()
    }

    /// What the sectors bring: 32 bytes each, whatever part of them was asked for.
    pub fn sector_bytes_fetched(&self) -> u64 {
        self.sectors.len() as u64 * SECTOR_BYTES
    }

    /// What whole lines would bring, on hardware that fetched a line for every miss.
    pub fn line_bytes_fetched(&self) -> u64 {
        self.lines_touched() as u64 * LINE_BYTES
    }

    /// Used over fetched bytes, counting sectors (what Hopper fetches): 1.0 is every byte used.
    pub fn sector_efficiency(&self) -> f64 {
        ratio(self.used_bytes(), self.sector_bytes_fetched())
    }

    /// Used over fetched bytes, counting whole lines.
    pub fn line_efficiency(&self) -> f64 {
        ratio(self.used_bytes(), self.line_bytes_fetched())
    }

    /// How many times the bytes used the sectors move: 8 when each 4-byte lane has a sector.
    pub fn sector_amplification(&self) -> f64 {
        ratio(self.sector_bytes_fetched(), self.used_bytes())
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use crate::access::{Pattern, Unit, WarpAccess};
    use crate::expr::{Expr, Params};

    fn floats_with_stride(stride: i64) -> super::GlobalFootprint {
        Pattern::new(Expr::new("t * stride"), Unit::Element, 4)
            .access(&Params::from([("stride".into(), stride)]))
            .expect("evaluates")
            .global()
    }

    #[test]
    fn consecutive_floats_are_one_line_of_four_full_sectors() {
        let global = floats_with_stride(1);
        assert_eq!(global.sectors_per_request(), 4);
        assert_eq!(global.lines_touched(), 1);
        assert_eq!(global.used_bytes(), 128);
        assert_eq!(global.sector_efficiency(), 1.0);
        assert!(global.sectors.iter().all(|s| s.used == u32::MAX));
        assert_eq!(global.sectors[1].lanes, (8..16).collect::<Vec<_>>());
    }

    /// The seeds' worked example: stride 2 uses half of what it fetches, counting lines or
    /// sectors alike.
    #[test]
    fn stride_two_uses_half_of_the_fetched_bytes() {
        let global = floats_with_stride(2);
        assert_eq!(global.lines_touched(), 2);
        assert_eq!(global.line_bytes_fetched(), 256);
        assert_eq!(global.line_efficiency(), 0.5);
        assert_eq!(global.sectors_per_request(), 8);
        assert_eq!(global.sector_efficiency(), 0.5);
    }

    /// The coalescing chapter's quiz: stride 16 touches 16 lines (6.25 % counting lines) but
    /// 32 sectors (12.5 % counting sectors).
    #[test]
    fn the_stride_sixteen_quiz() {
        let global = floats_with_stride(16);
        assert_eq!(global.lines_touched(), 16);
        assert_eq!(global.line_bytes_fetched(), 2048);
        assert_eq!(global.line_efficiency(), 0.0625);
        assert_eq!(global.sectors_per_request(), 32);
        assert_eq!(global.sector_bytes_fetched(), 1024);
        assert_eq!(global.sector_efficiency(), 0.125);
    }

    /// The chapter's table: sectors = min(4s, 32), lines = min(s, 32).
    #[test]
    fn the_stride_table() {
        for (stride, sectors, lines) in [
            (1, 4, 1),
            (2, 8, 2),
            (4, 16, 4),
            (8, 32, 8),
            (16, 32, 16),
            (32, 32, 32),
            (64, 32, 32),
        ] {
            let global = floats_with_stride(stride);
            assert_eq!(global.sectors_per_request(), sectors, "stride {stride}");
            assert_eq!(global.lines_touched(), lines, "stride {stride}");
            assert_eq!(
                global.sector_amplification(),
                sectors as f64 / 4.0,
                "stride {stride}"
            );
        }
    }

    #[test]
    fn a_shift_of_one_float_straddles_five_sectors_and_two_lines() {
        let global = Pattern::new(Expr::new("t + 1"), Unit::Element, 4)
            .access(&Params::new())
            .expect("evaluates")
            .global();
        assert_eq!(global.sectors_per_request(), 5);
        assert_eq!(global.lines_touched(), 2);
        assert_eq!(global.sector_efficiency(), 0.8);
    }

    #[test]
    fn sixteen_byte_lanes_fill_sixteen_sectors() {
        let addresses = (0..32).map(|t| 16 * t).collect();
        let global = WarpAccess::new(addresses, 16).expect("valid").global();
        assert_eq!(global.sectors_per_request(), 16);
        assert_eq!(global.lines_touched(), 4);
        assert_eq!(global.sector_efficiency(), 1.0);
    }

    #[test]
    fn lanes_reading_one_float_use_four_bytes_of_one_sector() {
        let global = WarpAccess::new(vec![64; 32], 4).expect("valid").global();
        assert_eq!(global.sectors_per_request(), 1);
        assert_eq!(global.used_bytes(), 4);
        assert_eq!(global.sectors[0].lanes.len(), 32);
    }
}
