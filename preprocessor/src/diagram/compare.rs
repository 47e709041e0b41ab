//! The model's prediction beside the profiler's counters for the same instruction: which
//! counters a diagram is compared with, whether they agree, and what a disagreement is called.

use super::model::{Footprint, Panel};
use super::spec::MemoryOp;
use kernelbook_core::results::KernelProfile;
use serde::Serialize;

/// A counter agrees with the model when it is within this fraction of the prediction…
pub const AGREE_RELATIVE: f64 = 0.05;
/// …or within this much of it (a conflict-free kernel still shows a residue of ~0.1 conflicts
/// per request, which the counter picks up from arbitration the model has no part in).
pub const AGREE_ABSOLUTE: f64 = 0.15;

/// Counters of one profiled kernel launch, and where they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterSource<'a> {
    pub counters: &'a KernelProfile,
    /// e.g. "Nsight Compute 2025.3.1.0".
    pub tool: String,
    /// e.g. "recorded on NVIDIA H200, 2026-12-01T09:18:40Z" or "measured on this machine".
    pub origin: String,
    /// The lab's name, for the command that profiles it.
    pub lab: String,
    /// The lab and row, e.g. "lab `profile_transpose`, transpose_naive".
    pub row: String,
    /// Said before the verdict: why these counters and not live ones, edits since.
    pub caveats: Vec<String>,
}

/// One predicted figure beside its counter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    /// A name for the data attributes and the browser test: "sectors-per-request".
    pub metric: &'static str,
    /// What it is, in words: "global store sectors per request".
    pub what: String,
    pub predicted: String,
    /// "–" where the recording lacks this counter.
    pub measured: String,
    pub agrees: Option<bool>,
}

/// The comparison under a panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonView {
    pub source: String,
    pub rows: Vec<CompareRow>,
    /// "agree", "differ" or "unknown": a CSS class and what the browser test reads.
    pub verdict_class: &'static str,
    pub verdict: String,
    pub notes: Vec<String>,
}

/// The comparison of `panel` with `source`'s counters; `why` is the author's explanation of a
/// disagreement.
pub fn compare(
    panel: &Panel,
    op: MemoryOp,
    source: &CounterSource<'_>,
    why: Option<&str>,
) -> ComparisonView {
    let rows = compare_rows(panel, op, source.counters);
    let differing: Vec<&CompareRow> = rows.iter().filter(|r| r.agrees == Some(false)).collect();
    let (verdict_class, mut verdict) = if rows.iter().all(|r| r.agrees.is_none()) {
        (
            "unknown",
            format!(
                "This recording of {} lacks these counters: profile the lab again (`kernelbook profile {}`).",
                source.row, source.lab
            ),
        )
    } else if differing.is_empty() {
        (
            "agree",
            format!(
                "The counters agree with the model (within {:.0} % or {AGREE_ABSOLUTE}).",
                AGREE_RELATIVE * 100.0
            ),
        )
    } else {
        let parts: Vec<String> = differing.iter().map(|r| difference(r)).collect();
        (
            "differ",
            format!("The counters differ from the model: {}.", parts.join("; ")),
        )
    };
    if let (Some(why), "differ") = (why, verdict_class) {
        verdict.push(' ');
        verdict.push_str(why);
    }
    let mut notes = source.caveats.clone();
    notes.extend(l2_merge_note(panel, op, source.counters));
    ComparisonView {
        source: format!(
            "The model beside {} ({}), {}: the average over every {} instruction of its checked launch.",
            source.tool,
            source.origin,
            source.row,
            instruction_kind(panel, op)
        ),
        rows,
        verdict_class,
        verdict,
        notes,
    }
}

fn instruction_kind(panel: &Panel, op: MemoryOp) -> String {
    match panel.footprint {
        Footprint::Global(_) => format!("global {}", op.noun()),
        Footprint::Banks(_) => format!("shared-memory {}", op.noun()),
    }
}

/// The predicted figures and their counters: sectors per request for global memory; conflicts
/// and wavefronts per request for shared memory.
fn compare_rows(panel: &Panel, op: MemoryOp, counters: &KernelProfile) -> Vec<CompareRow> {
    match (&panel.footprint, op) {
        (Footprint::Global(global), _) => {
            let measured = match op {
                MemoryOp::Load => counters.global_load_sectors_per_request,
                MemoryOp::Store => counters.global_store_sectors_per_request,
            };
            vec![row(
                "sectors-per-request",
                format!("global {} sectors per request", op.noun()),
                global.sectors_per_request() as f64,
                measured,
            )]
        }
        (Footprint::Banks(banks), op) => {
            let (conflicts, wavefronts) = match op {
                MemoryOp::Load => (
                    counters.conflicts_per_shared_load,
                    counters.wavefronts_per_shared_load,
                ),
                MemoryOp::Store => (
                    counters.conflicts_per_shared_store,
                    counters.wavefronts_per_shared_store,
                ),
            };
            vec![
                row(
                    "conflicts-per-request",
                    format!("bank conflicts per shared {}", op.noun()),
                    banks.conflicts() as f64,
                    conflicts,
                ),
                row(
                    "wavefronts-per-request",
                    format!("wavefronts per shared {}", op.noun()),
                    banks.wavefronts() as f64,
                    wavefronts,
                ),
            ]
        }
    }
}

fn row(metric: &'static str, what: String, predicted: f64, measured: Option<f64>) -> CompareRow {
    CompareRow {
        metric,
        what,
        predicted: format!("{predicted:.0}"),
        measured: measured.map_or_else(|| "–".into(), |m| format!("{m:.2}")),
        agrees: measured.map(|m| agrees(predicted, m)),
    }
}

/// Whether a counter agrees with a prediction, by [`AGREE_RELATIVE`] and [`AGREE_ABSOLUTE`].
pub fn agrees(predicted: f64, measured: f64) -> bool {
    let gap = (measured - predicted).abs();
    gap <= AGREE_ABSOLUTE || gap <= AGREE_RELATIVE * predicted.abs()
}

/// "global load sectors per request: 26.50 against the model's 32, 17 % fewer".
fn difference(row: &CompareRow) -> String {
    let (Ok(predicted), Ok(measured)) = (row.predicted.parse::<f64>(), row.measured.parse::<f64>())
    else {
        return row.what.clone();
    };
    let direction = if measured > predicted {
        "more"
    } else {
        "fewer"
    };
    let size = if predicted > 0.0 {
        format!(
            "{:.0} % {direction}",
            100.0 * (measured - predicted).abs() / predicted
        )
    } else {
        format!("{:.2} {direction}", (measured - predicted).abs())
    };
    format!(
        "{} {} against the model's {}, {size}",
        row.what, row.measured, row.predicted
    )
}

/// Where a store's wasted sectors went: the model counts what L1 sends to L2 per byte used; a
/// write-back L2 can merge the partial sectors before DRAM sees them.
fn l2_merge_note(panel: &Panel, op: MemoryOp, counters: &KernelProfile) -> Option<String> {
    let Footprint::Global(global) = &panel.footprint else {
        return None;
    };
    let amplification = global.sector_amplification();
    let (Some(to_l2), Some(to_dram)) = (counters.l2_write_bytes_from_l1, counters.dram_write_bytes)
    else {
        return None;
    };
    if op != MemoryOp::Store || amplification < 1.5 || to_dram <= 0.0 || to_l2 / to_dram < 1.5 {
        return None;
    }
    Some(format!(
        "Where the waste goes: the model's {:.0}× ({} B moved per {} B used) is paid between L1 and L2 — L1 wrote {} to L2 — but DRAM received only {}, {:.1}× less: the L2 merged the partial-sector writes before they left the chip.",
        amplification,
        global.sector_bytes_fetched(),
        global.used_bytes(),
        mib(to_l2),
        mib(to_dram),
        to_l2 / to_dram
    ))
}

fn mib(bytes: f64) -> String {
    format!("{:.0} MiB", bytes / f64::from(1u32 << 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_allows_the_profilers_residue() {
        assert!(agrees(32.0, 32.0));
        assert!(agrees(31.0, 31.35), "within 5 %");
        assert!(agrees(0.0, 0.09), "the padded kernel's residue");
        assert!(agrees(1.0, 1.09));
        assert!(!agrees(4.0, 4.5));
        assert!(!agrees(32.0, 26.5));
        assert!(!agrees(0.0, 0.9));
    }

    #[test]
    fn a_difference_is_said_with_both_numbers() {
        let row = row(
            "sectors-per-request",
            "global load sectors per request".into(),
            32.0,
            Some(26.5),
        );
        assert_eq!(row.agrees, Some(false));
        assert_eq!(
            difference(&row),
            "global load sectors per request 26.50 against the model's 32, 17 % fewer"
        );
        let zero = row_zero();
        assert_eq!(
            difference(&zero),
            "bank conflicts per shared load 0.90 against the model's 0, 0.90 more"
        );
    }

    fn row_zero() -> CompareRow {
        row(
            "conflicts-per-request",
            "bank conflicts per shared load".into(),
            0.0,
            Some(0.9),
        )
    }
}
