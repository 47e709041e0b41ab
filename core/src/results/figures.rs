//! Every figure a view shows that is derived from a lab's results, computed here once: each row's
//! GB/s, per cent of the lab's ceiling and of the device's peak, work rate, counter median and
//! time per count, its [`Role`], how it was [`Checked`]; the lab's [`Headline`] figure, its
//! ridge point and its ratios. Tables, charts, figures in prose, diagrams and the GPUs compared
//! read these and only format them.
//!
//! Units are the results' own: milliseconds, GB/s (10^9 bytes per second, as vendors quote
//! peaks), work and bytes per second unscaled; choosing a prefix is the views' formatting.

use super::{LabResults, Outcome, VariantResult};
use crate::bandwidth::{effective_gbs, percent_of};
use crate::spec::{Builtin, LabSpec};
use crate::stats::StoppingRule;

/// What a row is beside the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A kernel of the book, or a copy the runner makes (memcpy, host copies).
    Own,
    /// Someone else's implementation of the same job: the vendor BLAS, PyTorch.
    Peer,
    /// The lab's ceiling, the row the per-cent column is measured against.
    Ceiling,
    /// The row the others are checked against (not checked itself).
    Reference,
}

impl Role {
    /// The one peer rule: a row that runs a library's code, not the book's. (A
    /// `python_transpose` runs a Triton kernel of the book; the copies are the runner's.)
    pub fn of_builtin(builtin: Option<Builtin>) -> Role {
        match builtin {
            Some(builtin) if builtin.descriptor().peer => Role::Peer,
            _ => Role::Own,
        }
    }
}

/// How a row's output was checked, from the words the plan wrote into the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// Against a built-in CPU reference.
    CpuReference,
    /// Against a NumPy reference of the book.
    NumpyReference,
    /// Against another variant's output.
    AgainstVariant,
    /// The row the others are checked against: not checked itself.
    Trusted,
    /// The results do not say (written before checks said so).
    Unrecorded,
}

impl Checked {
    /// The kind of check the plan's description (`CheckPlan::describe`) names.
    pub fn of(words: Option<&str>) -> Checked {
        let Some(words) = words else {
            return Checked::Unrecorded;
        };
        if words.starts_with("the reference the other rows") {
            Checked::Trusted
        } else if words.contains("against the NumPy reference") {
            Checked::NumpyReference
        } else if words.contains("against variant") {
            Checked::AgainstVariant
        } else if words.contains("against the CPU reference") {
            Checked::CpuReference
        } else {
            Checked::Unrecorded
        }
    }
}

/// What a kernel's own count counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterUnit {
    /// As the lab names it: "cycles per load".
    pub unit: String,
    /// Whether it counts SM clock cycles, which the SM clock turns into nanoseconds.
    pub sm_cycles: bool,
}

impl CounterUnit {
    fn of(unit: &str) -> CounterUnit {
        CounterUnit {
            unit: unit.to_string(),
            sm_cycles: unit.starts_with("cycles"),
        }
    }

    /// What one count is per, after "cycles": "per load".
    pub fn per(&self) -> &str {
        self.unit.trim_start_matches("cycles").trim()
    }
}

/// The figure a lab leads with: the kernel's own count if the variants report one, else their
/// work rate if they declare work, else effective bandwidth if they move bytes, else time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Headline {
    Counter(CounterUnit),
    /// Work per second, in units of `unit` ("FLOP", "shared load").
    Rate {
        unit: String,
    },
    Gbs,
    Time,
}

impl Headline {
    pub fn of(results: &LabResults) -> Headline {
        if let Some(unit) = counter_unit(results) {
            return Headline::Counter(unit);
        }
        if let Some(unit) = results.variants.iter().find_map(|v| v.work.as_ref()) {
            return Headline::Rate {
                unit: unit.unit.clone(),
            };
        }
        if moves_bytes(results) {
            Headline::Gbs
        } else {
            Headline::Time
        }
    }
}

/// The unit of the kernels' own count, where a variant reports one.
pub fn counter_unit(results: &LabResults) -> Option<CounterUnit> {
    results
        .variants
        .iter()
        .find_map(|v| v.counter.as_ref().map(|c| CounterUnit::of(&c.unit)))
}

/// Whether any variant moves bytes worth a bandwidth figure (a latency lab does not).
pub fn moves_bytes(results: &LabResults) -> bool {
    results.variants.iter().any(|v| v.bytes_moved > 0)
}

/// The SM clock the results were measured at, in GHz, where the driver reported it.
pub fn sm_clock_ghz(results: &LabResults) -> Option<f64> {
    results
        .provenance
        .clocks
        .map(|c| f64::from(c.sm_mhz) / 1000.0)
        .filter(|ghz| *ghz > 0.0)
}

/// A relative spread above this marks a result noisy (the stopping rule's threshold).
pub fn noisy_spread() -> f64 {
    StoppingRule::default().noisy_spread
}

/// The figures of one measured row; every figure is `None` where it does not apply.
#[derive(Debug, Clone, PartialEq)]
pub struct RowFigures {
    pub median_ms: f64,
    /// The relative spread of its samples (0.012 for 1.2 %).
    pub rel_spread: f64,
    /// Effective GB/s at the median (0 for a row that moves no bytes).
    pub gbs: f64,
    pub pct_ceiling: Option<f64>,
    pub pct_peak: Option<f64>,
    /// Units of its declared work per second.
    pub rate: Option<f64>,
    /// The median of the kernel's own count.
    pub counter: Option<f64>,
    /// That count in nanoseconds, where it counts SM cycles and the clock was recorded.
    pub counter_ns: Option<f64>,
}

impl RowFigures {
    /// The figures of `v`, a row of `results`; `None` where it was not measured.
    pub fn of(results: &LabResults, v: &VariantResult) -> Option<RowFigures> {
        let Outcome::Measured { summary, .. } = &v.outcome else {
            return None;
        };
        let gbs = effective_gbs(v.bytes_moved, summary.median_ms);
        let counter = v.counter.as_ref().and_then(|c| c.median());
        let in_cycles = v
            .counter
            .as_ref()
            .is_some_and(|c| CounterUnit::of(&c.unit).sm_cycles);
        let ghz = sm_clock_ghz(results).filter(|_| in_cycles);
        Some(RowFigures {
            median_ms: summary.median_ms,
            rel_spread: summary.rel_spread,
            gbs,
            pct_ceiling: results.ceiling_gbs().and_then(|c| percent_of(gbs, c)),
            pct_peak: percent_of(gbs, results.provenance.device.theoretical_gbs()),
            rate: v.work_per_second(),
            counter,
            counter_ns: counter.zip(ghz).map(|(count, ghz)| count / ghz),
        })
    }
}

/// A row's role in its lab: the lab's ceiling, else a peer by its builtin
/// ([`Role::of_builtin`]), else the reference the others are checked against, else its own.
pub fn role(lab: &LabSpec, results: &LabResults, name: &str) -> Role {
    if results.ceiling.as_deref() == Some(name) {
        return Role::Ceiling;
    }
    match Role::of_builtin(lab.variant(name).and_then(|v| v.builtin)) {
        Role::Own if checked(results, name) == Checked::Trusted => Role::Reference,
        role => role,
    }
}

/// How row `name` of `results` was checked.
pub fn checked(results: &LabResults, name: &str) -> Checked {
    Checked::of(results.variant(name).and_then(|v| v.checked.as_deref()))
}

/// How many output elements apart the compared ones are, where a row's check compared only a
/// sample: the plan's words end ", every 257th element" (`CheckPlan::describe`). `None` where
/// it compared every element, or the results do not say.
pub fn sample_stride(words: Option<&str>) -> Option<usize> {
    let (_, every) = words?.rsplit_once(", every ")?;
    let stride: usize = every.strip_suffix("th element")?.parse().ok()?;
    (stride > 1).then_some(stride)
}

/// One row of a lab with every figure derived from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'r> {
    pub result: &'r VariantResult,
    pub role: Role,
    pub checked: Checked,
    /// `None` where the row was not measured.
    pub figures: Option<RowFigures>,
}

/// Every figure of a lab's results, computed once for all its views.
#[derive(Debug, Clone, PartialEq)]
pub struct LabFigures<'r> {
    pub headline: Headline,
    /// In the results' order.
    pub rows: Vec<Row<'r>>,
    pub ridge: Option<Ridge>,
    pub ratios: Vec<TimeRatio>,
}

impl<'r> LabFigures<'r> {
    pub fn of(lab: &LabSpec, results: &'r LabResults) -> LabFigures<'r> {
        LabFigures {
            headline: Headline::of(results),
            rows: results
                .variants
                .iter()
                .map(|result| Row {
                    result,
                    role: role(lab, results, &result.name),
                    checked: Checked::of(result.checked.as_deref()),
                    figures: RowFigures::of(results, result),
                })
                .collect(),
            ridge: lab_ridge(lab, results),
            ratios: time_ratios(lab, results),
        }
    }

    /// The row named `name`.
    pub fn row(&self, name: &str) -> Option<&Row<'r>> {
        self.rows.iter().find(|row| row.result.name == name)
    }
}

/// `count` units (bytes, FLOP) done in `ms` milliseconds, per second: the one rate of the book.
pub fn per_second(count: f64, ms: f64) -> f64 {
    count / (ms / 1000.0)
}

/// Work per byte where a work rate meets a bandwidth, both per second; `None` where either is
/// not a positive, finite figure. The one ridge point of the book.
pub fn ridge(work_per_second: f64, bytes_per_second: f64) -> Option<f64> {
    let ridge = work_per_second / bytes_per_second;
    (work_per_second > 0.0 && bytes_per_second > 0.0 && ridge.is_finite()).then_some(ridge)
}

/// A row's work per byte against HBM: its work over the DRAM bytes read and written that
/// Nsight Compute counted for it; `None` where the row does no work or has no such counters.
/// The one measured intensity of the book (the roofline draws it, prose quotes it).
pub fn dram_intensity(results: &LabResults, variant: &str) -> Option<f64> {
    let work = results.variant(variant)?.work.as_ref()?.count as f64;
    let run = results.profile.as_ref()?;
    let counters = &run.kernels.iter().find(|k| k.variant == variant)?.counters;
    let bytes = counters.dram_bytes.filter(|b| *b > 0.0)?;
    Some(work / bytes).filter(|i| i.is_finite() && *i > 0.0)
}

/// How many times as fast as a baseline a row ran: the baseline's time over the row's. The one
/// speed-up of the book (and "took N× as long" is the speed-up of the faster row over the slower).
pub fn speedup(baseline_ms: f64, ms: f64) -> Option<f64> {
    let speedup = baseline_ms / ms;
    (ms > 0.0 && speedup.is_finite()).then_some(speedup)
}

/// A lab's `ridge`: its compute row's work rate over its memory row's bandwidth.
#[derive(Debug, Clone, PartialEq)]
pub struct Ridge {
    /// The compute row's work per second and the unit of its work.
    pub work_per_second: f64,
    pub unit: String,
    /// The memory row's effective bandwidth.
    pub gbs: f64,
    /// Work per byte.
    pub intensity: f64,
}

/// The ridge point of `lab`'s `ridge`, both rows measured in `results`.
pub fn lab_ridge(lab: &LabSpec, results: &LabResults) -> Option<Ridge> {
    let spec = lab.ridge.as_ref()?;
    let compute = results.variant(&spec.compute)?;
    let work_per_second = compute.work_per_second()?;
    let gbs = results.variant(&spec.memory)?.effective_gbs()?;
    Some(Ridge {
        work_per_second,
        unit: compute.work.as_ref()?.unit.clone(),
        gbs,
        intensity: ridge(work_per_second, gbs_to_bytes_per_second(gbs))?,
    })
}

/// GB/s as bytes per second.
pub fn gbs_to_bytes_per_second(gbs: f64) -> f64 {
    gbs * 1e9
}

/// One of a lab's `ratios`: how many times as long the slow row took as the fast one.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeRatio {
    pub slow: String,
    pub fast: String,
    pub slow_ms: f64,
    pub fast_ms: f64,
    pub times: f64,
}

/// The lab's `ratios` whose two rows were both measured.
pub fn time_ratios(lab: &LabSpec, results: &LabResults) -> Vec<TimeRatio> {
    lab.ratios
        .iter()
        .filter_map(|[slow, fast]| {
            let slow_ms = results.variant(slow)?.median_ms()?;
            let fast_ms = results.variant(fast)?.median_ms()?;
            Some(TimeRatio {
                slow: slow.clone(),
                fast: fast.clone(),
                slow_ms,
                fast_ms,
                times: speedup(slow_ms, fast_ms)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::results;

    #[test]
    fn a_rows_figures_follow_from_its_time() {
        let results = results();
        let copy = results.variant("copy").expect("a copy row");
        let figures = RowFigures::of(&results, copy).expect("measured");
        // 3 GB in 1 ms against the ceiling's 4 GB in 1 ms.
        assert!((figures.gbs - 3000.0).abs() < 1e-9, "{}", figures.gbs);
        assert_eq!(figures.pct_ceiling, Some(75.0));
        assert_eq!(figures.counter, None);
        assert_eq!(figures.counter_ns, None);
        assert_eq!(Headline::of(&results), Headline::Gbs);
    }

    #[test]
    fn speedups_ridges_and_checks() {
        assert_eq!(speedup(2.0, 0.5), Some(4.0));
        assert_eq!(speedup(2.0, 0.0), None);
        assert_eq!(ridge(60e12, 4e12), Some(15.0));
        assert_eq!(ridge(60e12, 0.0), None);
        assert_eq!(
            Checked::of(Some("bit for bit against the CPU reference `transpose`")),
            Checked::CpuReference
        );
        assert_eq!(
            Checked::of(Some("within rtol 1e-4, atol 1e-3 against variant `naive`")),
            Checked::AgainstVariant
        );
        assert_eq!(
            Checked::of(Some(
                "the reference the other rows are checked against (not checked itself)"
            )),
            Checked::Trusted
        );
        assert_eq!(Checked::of(None), Checked::Unrecorded);
        let sampled = "within ulps 4 against the NumPy reference `sum_ref`, every 7th element";
        assert_eq!(sample_stride(Some(sampled)), Some(7));
        assert_eq!(
            sample_stride(Some("bit for bit against the CPU reference `copy`")),
            None
        );
        assert_eq!(sample_stride(None), None);
        assert_eq!(Role::of_builtin(Some(Builtin::LibrarySgemm)), Role::Peer);
        assert_eq!(
            Role::of_builtin(Some(Builtin::HostToDevicePinned)),
            Role::Own
        );
        assert_eq!(Role::of_builtin(Some(Builtin::PythonTranspose)), Role::Own);
    }

    #[test]
    fn a_labs_figures_hold_each_rows_role_and_check() {
        let lab = LabSpec::parse(
            include_str!("../../../labs/fixtures/copy.toml"),
            std::path::Path::new("labs/copy.toml"),
        )
        .expect("the fixture lab");
        let mut results = results();
        results.variants[1].name = "scalar".into();
        results.variants[1].checked =
            Some("the reference the other rows are checked against (not checked itself)".into());
        let figures = LabFigures::of(&lab, &results);
        assert_eq!(figures.row("memcpy").map(|r| r.role), Some(Role::Ceiling));
        assert_eq!(figures.row("scalar").map(|r| r.role), Some(Role::Reference));
        assert_eq!(
            figures.row("scalar").map(|r| r.checked),
            Some(Checked::Trusted)
        );
        assert_eq!(
            figures.row("memcpy").map(|r| r.checked),
            Some(Checked::Unrecorded)
        );
        assert!(figures.row("scalar").is_some_and(|r| r.figures.is_some()));
        assert_eq!(figures.headline, Headline::Gbs);
    }
}
