//! Shared memory's view of one warp instruction of 4-byte accesses: the bank of each lane's word,
//! `(address / 4) mod 32`, and how many passes (wavefronts) the banks need to serve the warp.
//!
//! A bank serves one word per pass. Lanes asking for the *same* word are served together (a
//! broadcast for loads; for stores one lane's value wins), so what serialises is the number of
//! *distinct* words asked of one bank: the conflict degree. The instruction takes that many
//! wavefronts, and Nsight Compute counts the ones beyond the first as bank conflicts
//! (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum`).

use super::{BANK_WORD_BYTES, BANKS, WarpAccess};

/// One word that one bank is asked for, and who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankWord {
    /// The word's number: its byte address divided by 4.
    pub word: u64,
    /// The lanes reading or writing it, in lane order.
    pub lanes: Vec<usize>,
}

impl BankWord {
    /// Whether several lanes share this word (served by one broadcast).
    pub fn is_broadcast(&self) -> bool {
        self.lanes.len() > 1
    }
}

/// How the 32 banks serve one warp instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankFootprint {
    /// Per bank, bank 0 first: the distinct words asked of it, in the order lanes ask.
    pub banks: Vec<Vec<BankWord>>,
    /// The bank each lane's word lies in, lane 0 first.
    pub lane_banks: Vec<usize>,
}

impl BankFootprint {
    pub(super) fn of(access: &WarpAccess) -> Self {
        let mut banks: Vec<Vec<BankWord>> = vec![Vec::new(); BANKS];
        let mut lane_banks = Vec::with_capacity(access.addresses().len());
        for (lane, &address) in access.addresses().iter().enumerate() {
            let word = address / BANK_WORD_BYTES;
            let bank = (word % BANKS as u64) as usize;
            lane_banks.push(bank);
            match banks[bank].iter_mut().find(|w| w.word == word) {
                Some(shared) => shared.lanes.push(lane),
                None => banks[bank].push(BankWord {
                    word,
                    lanes: vec![lane],
                }),
            }
        }
        BankFootprint { banks, lane_banks }
    }

    /// The most distinct words any one bank is asked for: 1 is conflict-free, 32 is a 32-way
    /// conflict.
    pub fn degree(&self) -> usize {
        self.banks.iter().map(Vec::len).max().unwrap_or(0).max(1)
    }

    /// Passes through the banks the instruction takes: one per word of the busiest bank.
    pub fn wavefronts(&self) -> usize {
        self.degree()
    }

    /// Wavefronts beyond the first: what Nsight Compute counts as bank conflicts.
    pub fn conflicts(&self) -> usize {
        self.wavefronts() - 1
    }

    /// Banks asked for at least one word.
    pub fn banks_used(&self) -> usize {
        self.banks.iter().filter(|words| !words.is_empty()).count()
    }

    /// Words that several lanes share, each served once for all of them.
    pub fn broadcasts(&self) -> impl Iterator<Item = &BankWord> {
        self.banks.iter().flatten().filter(|w| w.is_broadcast())
    }
}

#[cfg(test)]
mod tests {
    use crate::access::{Pattern, Unit};
    use crate::expr::{Expr, Params};

    fn banks(index: &str, values: &[(&str, i64)]) -> super::BankFootprint {
        let params: Params = values.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Pattern::new(Expr::new(index), Unit::Element, 4)
            .access(&params)
            .expect("evaluates")
            .banks()
            .expect("4-byte words")
    }

    #[test]
    fn consecutive_words_take_every_bank_once() {
        let b = banks("t", &[]);
        assert_eq!(b.degree(), 1);
        assert_eq!(b.conflicts(), 0);
        assert_eq!(b.banks_used(), 32);
    }

    /// The practice problem: `s[2t]` uses the 16 even banks twice each, a 2-way conflict; a
    /// constant offset moves it to the odd banks, still 2-way.
    #[test]
    fn the_practice_problem_is_a_two_way_conflict() {
        let even = banks("2 * t", &[]);
        assert_eq!(even.degree(), 2);
        assert_eq!(even.wavefronts(), 2);
        assert_eq!(even.conflicts(), 1);
        assert_eq!(even.banks_used(), 16);
        assert_eq!(even.banks[0].len(), 2);
        assert_eq!(even.banks[0][0].lanes, vec![0]);
        assert_eq!(even.banks[0][1].lanes, vec![16]);
        assert!(even.banks[1].is_empty());
        let odd = banks("2 * t + 1", &[]);
        assert_eq!(odd.degree(), 2);
        assert!(odd.banks[0].is_empty() && odd.banks[1].len() == 2);
        // The fix the worked solution gives: lanes 16-31 shifted by one word.
        assert_eq!(banks("2 * t + t / 16", &[]).degree(), 1);
    }

    /// A column of `float tile[32][32]`: word 32t + c, bank c for every lane.
    #[test]
    fn a_column_of_a_32_wide_tile_is_a_32_way_conflict() {
        for c in 0..32 {
            let b = banks("32 * t + c", &[("c", c)]);
            assert_eq!(b.degree(), 32, "column {c}");
            assert_eq!(b.conflicts(), 31);
            assert_eq!(b.banks_used(), 1);
            assert_eq!(b.banks[c as usize].len(), 32);
        }
    }

    /// The +1 pad's proof: `(33i + c) mod 32 = (i + c) mod 32` takes all 32 values as `i` runs
    /// over the rows, for every column `c`.
    #[test]
    fn the_padded_column_is_conflict_free_for_every_column() {
        for c in 0..32 {
            let b = banks("33 * t + c", &[("c", c)]);
            assert_eq!(b.degree(), 1, "column {c}");
            assert_eq!(b.banks_used(), 32);
            for (lane, bank) in b.lane_banks.iter().enumerate() {
                assert_eq!(*bank, (lane + c as usize) % 32);
            }
        }
    }

    /// Lab 2's 64-wide tile: 16 lanes across, 2 rows down, four words apart in 65-word rows, so
    /// lanes `tx` and `tx + 8` share a bank.
    #[test]
    fn the_64_wide_tile_is_two_way() {
        let store = banks("65 * (t / 16) + 4 * (t % 16) + k", &[("k", 0)]);
        assert_eq!(store.degree(), 2);
        assert_eq!(store.banks[0][0].lanes, vec![0]);
        assert_eq!(store.banks[0][1].lanes, vec![8]);
        let load = banks("65 * (4 * (t % 16) + k) + t / 16", &[("k", 3)]);
        assert_eq!(load.degree(), 2);
    }

    #[test]
    fn lanes_reading_one_word_are_a_broadcast_not_a_conflict() {
        let all = banks("c", &[("c", 5)]);
        assert_eq!(all.degree(), 1);
        assert_eq!(all.conflicts(), 0);
        let shared: Vec<_> = all.broadcasts().collect();
        assert_eq!(shared.len(), 1);
        assert_eq!(shared[0].lanes.len(), 32);
        // Half the warp on one word, half on another word of the same bank: 2-way.
        let halves = banks("32 * (t / 16)", &[]);
        assert_eq!(halves.degree(), 2);
        assert_eq!(halves.broadcasts().count(), 2);
    }
}
