//! What memory sees of one warp instruction: the model behind the book's warp-access and bank
//! diagrams.
//!
//! A [`WarpAccess`] is the byte address each of a warp's 32 lanes starts at and the size of
//! every lane's access. From it, [`WarpAccess::global`] counts what global memory does (the
//! 32-byte sectors and 128-byte lines touched, bytes used against bytes fetched) and
//! [`WarpAccess::banks`] what shared memory does (which lanes meet in which of the 32 banks, the
//! conflict degree, wavefronts, broadcasts). A [`Pattern`] computes the addresses from a lab
//! file's integer expression over the lane variable `t`.
//!
//! Everything here is arithmetic on addresses: it is the model a chapter reasons with, not a
//! measurement. The rules are NVIDIA's (CUDA C++ Programming Guide: 32-byte sectors, 32 banks
//! of 4 bytes, lanes reading one word are served by one broadcast); the profiler's counters are
//! what a diagram sets beside it.
//!
//! ```
//! use kernelbook_core::access::{Pattern, Unit};
//! use kernelbook_core::expr::{Expr, Params};
//! // Lane t reads element 2t of a float array: 8 sectors, 2 lines, half the bytes used.
//! let pattern = Pattern::new(Expr::new("t * stride"), Unit::Element, 4);
//! let access = pattern.access(&Params::from([("stride".into(), 2)])).expect("evaluates");
//! let global = access.global();
//! assert_eq!(global.sectors_per_request(), 8);
//! assert_eq!(global.lines_touched(), 2);
//! assert_eq!(global.line_efficiency(), 0.5);
//! ```

mod banks;
mod global;
mod pattern;

pub use banks::{BankFootprint, BankWord};
pub use global::{GlobalFootprint, SectorUse};
pub use pattern::{LANE_VARIABLE, Pattern, PatternError, Unit};

/// Lanes in one warp of an NVIDIA GPU: every instruction the model counts is issued by this many
/// lanes at once. (An AMD wavefront has 64; the model does not cover it.)
pub const WARP_LANES: usize = 32;

/// The unit global memory is moved in between L1, L2 and DRAM.
pub const SECTOR_BYTES: u64 = 32;

/// A cache line: four sectors. The "line model" counts whole lines fetched.
pub const LINE_BYTES: u64 = 128;

/// Shared memory's banks, each serving one 4-byte word per cycle.
pub const BANKS: usize = 32;

/// The width of one bank.
pub const BANK_WORD_BYTES: u64 = 4;

/// Access sizes one lane's load or store instruction can have.
pub const ELEMENT_SIZES: [u64; 5] = [1, 2, 4, 8, 16];

/// Why a warp access cannot be modelled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    #[error(
        "{0} lanes: the model is of one warp instruction, which NVIDIA GPUs issue for {WARP_LANES} lanes at once"
    )]
    LaneCount(usize),
    #[error(
        "a lane's access of {0} bytes is not one an instruction makes (1, 2, 4, 8 or 16 bytes)"
    )]
    ElementSize(u64),
    #[error(
        "lane {lane}'s address {address} is not a multiple of its {bytes}-byte access: the GPU would stop the kernel with a misaligned-address error"
    )]
    Misaligned {
        lane: usize,
        address: u64,
        bytes: u64,
    },
    #[error("lane {lane}'s access at byte {address} runs past the largest address the model takes")]
    TooLarge { lane: usize, address: u64 },
    #[error(
        "the bank model covers 4-byte accesses only; {0}-byte accesses are split into half- or quarter-warp phases, which it does not model"
    )]
    BankElementSize(u64),
}

/// One warp instruction's accesses: lane `i` touches `elem_bytes` bytes from `addresses[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarpAccess {
    addresses: Vec<u64>,
    elem_bytes: u64,
}

/// The largest byte address a lane may start at: far beyond any allocation, and small enough
/// that `address + 16` and `address / 4` stay exact everywhere below.
pub const MAX_ADDRESS: u64 = 1 << 56;

impl WarpAccess {
    /// A warp's accesses, checked as the hardware would: a whole warp of lanes, an access size an
    /// instruction has, every address aligned to it.
    pub fn new(addresses: Vec<u64>, elem_bytes: u64) -> Result<Self, AccessError> {
        if addresses.len() != WARP_LANES {
            return Err(AccessError::LaneCount(addresses.len()));
        }
        if !ELEMENT_SIZES.contains(&elem_bytes) {
            return Err(AccessError::ElementSize(elem_bytes));
        }
        for (lane, &address) in addresses.iter().enumerate() {
            if address > MAX_ADDRESS {
                return Err(AccessError::TooLarge { lane, address });
            }
            if address % elem_bytes != 0 {
                return Err(AccessError::Misaligned {
                    lane,
                    address,
                    bytes: elem_bytes,
                });
            }
        }
        Ok(WarpAccess {
            addresses,
            elem_bytes,
        })
    }

    /// The byte address each lane starts at, lane 0 first.
    pub fn addresses(&self) -> &[u64] {
        &self.addresses
    }

    /// The bytes each lane accesses.
    pub fn elem_bytes(&self) -> u64 {
        self.elem_bytes
    }

    /// What global memory moves for this instruction.
    pub fn global(&self) -> GlobalFootprint {
        GlobalFootprint::of(self)
    }

    /// How shared memory's banks serve this instruction (4-byte accesses only).
    pub fn banks(&self) -> Result<BankFootprint, AccessError> {
        if self.elem_bytes != BANK_WORD_BYTES {
            return Err(AccessError::BankElementSize(self.elem_bytes));
        }
        Ok(BankFootprint::of(self))
    }
}

/// Lane numbers written compactly, runs as ranges: "0–7", "0, 16", "3–5, 9".
pub fn lane_list(lanes: &[usize]) -> String {
    let mut sorted = lanes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(match end - start {
            0 => start.to_string(),
            1 => format!("{start}, {end}"),
            _ => format!("{start}–{end}"),
        });
        i += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(f: impl Fn(u64) -> u64) -> Vec<u64> {
        (0..WARP_LANES as u64).map(f).collect()
    }

    #[test]
    fn a_warp_is_32_lanes_of_an_aligned_instruction_size() {
        assert_eq!(
            WarpAccess::new(vec![0; 64], 4),
            Err(AccessError::LaneCount(64))
        );
        assert_eq!(
            WarpAccess::new(lanes(|t| 4 * t), 3),
            Err(AccessError::ElementSize(3))
        );
        assert_eq!(
            WarpAccess::new(lanes(|t| 4 * t + 2), 4),
            Err(AccessError::Misaligned {
                lane: 0,
                address: 2,
                bytes: 4
            })
        );
        assert!(WarpAccess::new(lanes(|t| 16 * t), 16).is_ok());
    }

    #[test]
    fn banks_need_four_byte_words() {
        let access = WarpAccess::new(lanes(|t| 8 * t), 8).expect("valid");
        assert_eq!(access.banks(), Err(AccessError::BankElementSize(8)));
    }

    #[test]
    fn lane_lists_are_compact() {
        assert_eq!(lane_list(&[0, 1, 2, 3, 4, 5, 6, 7]), "0–7");
        assert_eq!(lane_list(&[16, 0]), "0, 16");
        assert_eq!(lane_list(&[9, 3, 4, 5, 3]), "3–5, 9");
        assert_eq!(lane_list(&[]), "");
    }
}
