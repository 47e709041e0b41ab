//! Sanity checks on a results file's contents: every number the book shows or derives a figure
//! from is finite and within a generous physical range, a summary agrees with its samples, and
//! the variants are unique. A file that passes renders without a negative time, an infinite
//! bandwidth or a ghost row; one that does not is distrusted like a corrupt file.
//!
//! The bounds are far outside anything a GPU does, so that no real measurement is refused; they
//! are there to keep a damaged or hand-edited file from turning into nonsense on the page.

use super::{
    CounterResult, DeviceInfo, KernelProfile, LabResults, Outcome, Provenance, VariantResult,
};
use crate::bandwidth;
use crate::spec::LabSpec;
use crate::stats::Summary;
use std::collections::BTreeSet;

/// The shortest kernel time believed, in milliseconds (1 ns: below any timer's resolution).
pub const MIN_TIME_MS: f64 = 1e-6;
/// The longest kernel time believed, in milliseconds (an hour).
pub const MAX_TIME_MS: f64 = 3_600_000.0;
/// The highest effective bandwidth believed, in GB/s (about 200× an H200's HBM).
pub const MAX_GBS: f64 = 1e6;
/// The highest work rate believed, in units per second (about 1000× an H200's FP8 peak).
pub const MAX_WORK_PER_SECOND: f64 = 1e18;
/// The largest value a kernel's own counter or a profiler counter may hold.
pub const MAX_COUNTER: f64 = 1e18;
/// The most bytes a variant may declare (the highest bandwidth for the longest time).
pub const MAX_BYTES: f64 = MAX_GBS * 1e9 * (MAX_TIME_MS / 1e3);
/// Relative difference tolerated between a recorded summary and the one its samples give.
const SUMMARY_TOLERANCE: f64 = 1e-9;

/// Which part of a results file a problem is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Device,
    Provenance,
    Variant(String),
    /// The profiler's counters for a variant.
    Profile(String),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Device => write!(f, "the device"),
            Place::Provenance => write!(f, "the provenance"),
            Place::Variant(name) => write!(f, "variant `{name}`"),
            Place::Profile(name) => write!(f, "the profile of `{name}`"),
        }
    }
}

/// A number as a message shows it: plain where that is short, in exponent form otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown(pub f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v == 0.0 || (v.is_finite() && (1e-4..1e15).contains(&v.abs())) {
            write!(f, "{v}")
        } else {
            write!(f, "{v:e}")
        }
    }
}

/// Why the contents of a results file cannot be shown.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidResults {
    #[error("it holds no variants")]
    NoVariants,
    #[error("variant `{0}` appears more than once")]
    DuplicateVariant(String),
    #[error("its ceiling `{0}` is not one of its variants")]
    UnknownCeiling(String),
    #[error("its profile names variant `{0}`, which it does not hold")]
    UnknownProfiledVariant(String),
    #[error("{place}: {field} is {}, outside {} to {}", Shown(*value), Shown(*min), Shown(*max))]
    OutOfRange {
        place: Place,
        field: &'static str,
        value: f64,
        min: f64,
        max: f64,
    },
    #[error("{place}: measured, but no samples")]
    NoSamples { place: Place },
    #[error(
        "{place}: the summary's {field} is {}, its samples give {}",
        Shown(*recorded),
        Shown(*computed)
    )]
    InconsistentSummary {
        place: Place,
        field: &'static str,
        recorded: f64,
        computed: f64,
    },
    #[error("{place}: its timeline is impossible: {problem}")]
    BadTimeline { place: Place, problem: String },
}

/// How [`LabResults::check_lab`] treats a variant the lab has and the results lack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingVariants {
    /// The results must hold every variant (the cache: its key is the lab's plan).
    Refused,
    /// The variant was added after the measurement (a recording): its row says "not recorded".
    Allowed,
}

/// Results that do not belong to the lab they are shown for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabMismatch {
    #[error("it holds lab `{found}`, not `{expected}`")]
    Lab { found: String, expected: String },
    #[error("it holds variant `{0}`, which the lab does not have")]
    UnknownVariant(String),
    #[error("it lacks the lab's variant `{0}`")]
    MissingVariant(String),
}

/// `value` within `min..=max`, else an [`InvalidResults::OutOfRange`] at `place`.
fn in_range(
    place: &Place,
    field: &'static str,
    value: f64,
    (min, max): (f64, f64),
) -> Result<(), InvalidResults> {
    // A negative zero would print as "-0" where no figure can be negative.
    let negative_zero = value == 0.0 && value.is_sign_negative() && min >= 0.0;
    if value.is_finite() && (min..=max).contains(&value) && !negative_zero {
        Ok(())
    } else {
        Err(InvalidResults::OutOfRange {
            place: place.clone(),
            field,
            value,
            min,
            max,
        })
    }
}

/// An integer field, checked as a float (every bound here is exact in f64).
fn int_in_range(
    place: &Place,
    field: &'static str,
    value: impl Into<u64>,
    range: (f64, f64),
) -> Result<(), InvalidResults> {
    in_range(place, field, value.into() as f64, range)
}

/// Zero (the driver did not report it) or within `range`.
fn unreported_or(
    place: &Place,
    field: &'static str,
    value: u64,
    range: (f64, f64),
) -> Result<(), InvalidResults> {
    if value == 0 {
        return Ok(());
    }
    int_in_range(place, field, value, range)
}

const TIME: (f64, f64) = (MIN_TIME_MS, MAX_TIME_MS);

impl LabResults {
    /// Checks that every figure the book would show or derive from these results is finite and
    /// plausible, that summaries agree with their samples, and that names are unique and refer
    /// to variants the file holds. [`LabResults::from_json`] runs it on every file it reads.
    pub fn validate(&self) -> Result<(), InvalidResults> {
        if self.variants.is_empty() {
            return Err(InvalidResults::NoVariants);
        }
        let mut names = BTreeSet::new();
        for variant in &self.variants {
            if !names.insert(variant.name.as_str()) {
                return Err(InvalidResults::DuplicateVariant(variant.name.clone()));
            }
        }
        if let Some(ceiling) = &self.ceiling
            && !names.contains(ceiling.as_str())
        {
            return Err(InvalidResults::UnknownCeiling(ceiling.clone()));
        }
        validate_provenance(&self.provenance)?;
        for variant in &self.variants {
            validate_variant(variant)?;
        }
        for profiled in self.profile.iter().flat_map(|p| &p.kernels) {
            if !names.contains(profiled.variant.as_str()) {
                return Err(InvalidResults::UnknownProfiledVariant(
                    profiled.variant.clone(),
                ));
            }
            validate_profile(
                &Place::Profile(profiled.variant.clone()),
                &profiled.counters,
            )?;
        }
        Ok(())
    }

    /// Checks that these results are `lab`'s: its name, only its variants, and (unless
    /// `missing` allows it) all of them. Duplicates are [`validate`](Self::validate)'s concern.
    pub fn check_lab(&self, lab: &LabSpec, missing: MissingVariants) -> Result<(), LabMismatch> {
        if self.lab != lab.name {
            return Err(LabMismatch::Lab {
                found: self.lab.clone(),
                expected: lab.name.clone(),
            });
        }
        if let Some(ghost) = self
            .variants
            .iter()
            .find(|v| lab.variant(&v.name).is_none())
        {
            return Err(LabMismatch::UnknownVariant(ghost.name.clone()));
        }
        if missing == MissingVariants::Refused
            && let Some(absent) = lab
                .variants
                .iter()
                .find(|v| self.variant(&v.name).is_none())
        {
            return Err(LabMismatch::MissingVariant(absent.name.clone()));
        }
        Ok(())
    }
}

fn validate_provenance(p: &Provenance) -> Result<(), InvalidResults> {
    let place = Place::Provenance;
    in_range(&place, "wall_seconds", p.wall_seconds, (0.0, 1e7))?;
    if let Some(clocks) = p.clocks {
        int_in_range(&place, "clocks.sm_mhz", clocks.sm_mhz, (0.0, 1e4))?;
        int_in_range(&place, "clocks.memory_mhz", clocks.memory_mhz, (0.0, 1e5))?;
    }
    validate_device(&p.device)
}

fn validate_device(d: &DeviceInfo) -> Result<(), InvalidResults> {
    let place = Place::Device;
    int_in_range(&place, "sm_count", d.sm_count, (1.0, 1e5))?;
    int_in_range(&place, "sm_clock_khz", d.sm_clock_khz, (1e4, 1e7))?;
    int_in_range(
        &place,
        "max_threads_per_sm",
        d.max_threads_per_sm,
        (1.0, 65536.0),
    )?;
    int_in_range(&place, "warp_size", d.warp_size, (1.0, 1024.0))?;
    int_in_range(
        &place,
        "compute_capability.0",
        d.compute_capability.0,
        (0.0, 1e4),
    )?;
    int_in_range(
        &place,
        "compute_capability.1",
        d.compute_capability.1,
        (0.0, 1e4),
    )?;
    int_in_range(&place, "l2_bytes", d.l2_bytes, (0.0, 2f64.powi(40)))?;
    int_in_range(&place, "memory_bytes", d.memory_bytes, (0.0, 2f64.powi(50)))?;
    int_in_range(
        &place,
        "max_shared_bytes_per_block",
        d.max_shared_bytes_per_block,
        (0.0, 2f64.powi(30)),
    )?;
    if let Some(registers) = d.registers_per_sm {
        int_in_range(&place, "registers_per_sm", registers, (1.0, 2f64.powi(24)))?;
    }
    if let Some(shared) = d.shared_bytes_per_sm {
        int_in_range(&place, "shared_bytes_per_sm", shared, (1.0, 2f64.powi(30)))?;
    }
    // The theoretical peak: both zero where the driver does not say (no "% of peak" then).
    unreported_or(&place, "memory_clock_khz", d.memory_clock_khz, (1e4, 1e8))?;
    unreported_or(
        &place,
        "bus_width_bits",
        d.bus_width_bits,
        (8.0, 2f64.powi(17)),
    )
}

fn validate_variant(v: &VariantResult) -> Result<(), InvalidResults> {
    let place = Place::Variant(v.name.clone());
    int_in_range(&place, "bytes_moved", v.bytes_moved, (0.0, MAX_BYTES))?;
    if let Some(resources) = v.resources {
        in_range(&place, "occupancy", resources.occupancy, (0.0, 1.0))?;
    }
    if let Some(counter) = &v.counter {
        validate_counter(&place, counter)?;
    }
    if let Some(problem) = v.timeline.as_ref().and_then(|t| t.problem()) {
        return Err(InvalidResults::BadTimeline { place, problem });
    }
    let Outcome::Measured {
        summary,
        samples_ms,
        ..
    } = &v.outcome
    else {
        return Ok(());
    };
    validate_samples(&place, summary, samples_ms)?;
    let gbs = bandwidth::effective_gbs(v.bytes_moved, summary.median_ms);
    in_range(&place, "effective GB/s", gbs, (0.0, MAX_GBS))?;
    if let Some(rate) = v.work_per_second() {
        in_range(&place, "work per second", rate, (0.0, MAX_WORK_PER_SECOND))?;
    }
    Ok(())
}

fn validate_counter(place: &Place, counter: &CounterResult) -> Result<(), InvalidResults> {
    int_in_range(place, "counter.per", counter.per, (1.0, u64::MAX as f64))?;
    for value in &counter.values {
        in_range(place, "a counter value", *value, (0.0, MAX_COUNTER))?;
    }
    Ok(())
}

/// Every sample a plausible time, and the summary the one they give.
fn validate_samples(
    place: &Place,
    summary: &Summary,
    samples_ms: &[f64],
) -> Result<(), InvalidResults> {
    for sample in samples_ms {
        in_range(place, "a sample (ms)", *sample, TIME)?;
    }
    let computed = Summary::of(samples_ms).ok_or_else(|| InvalidResults::NoSamples {
        place: place.clone(),
    })?;
    let fields = [
        (
            "samples",
            summary.samples as f64,
            computed.samples as f64,
            0.0,
        ),
        ("median_ms", summary.median_ms, computed.median_ms, 0.0),
        ("min_ms", summary.min_ms, computed.min_ms, 0.0),
        ("max_ms", summary.max_ms, computed.max_ms, 0.0),
        ("mean_ms", summary.mean_ms, computed.mean_ms, 0.0),
        // A spread of zero may come back as a few ULPs of the mean.
        ("rel_spread", summary.rel_spread, computed.rel_spread, 1e-12),
    ];
    for (field, recorded, computed, absolute) in fields {
        let tolerance = absolute + SUMMARY_TOLERANCE * recorded.abs().max(computed.abs());
        let sign_differs = recorded.is_sign_negative() != computed.is_sign_negative();
        if !recorded.is_finite() || sign_differs || (recorded - computed).abs() > tolerance {
            return Err(InvalidResults::InconsistentSummary {
                place: place.clone(),
                field,
                recorded,
                computed,
            });
        }
    }
    Ok(())
}

fn validate_profile(place: &Place, k: &KernelProfile) -> Result<(), InvalidResults> {
    let figures = [
        ("duration_ns", k.duration_ns),
        ("shared_load_bank_conflicts", k.shared_load_bank_conflicts),
        ("shared_store_bank_conflicts", k.shared_store_bank_conflicts),
        ("shared_load_instructions", k.shared_load_instructions),
        ("conflicts_per_shared_load", k.conflicts_per_shared_load),
        ("wavefronts_per_shared_load", k.wavefronts_per_shared_load),
        ("shared_store_instructions", k.shared_store_instructions),
        ("conflicts_per_shared_store", k.conflicts_per_shared_store),
        ("wavefronts_per_shared_store", k.wavefronts_per_shared_store),
        (
            "global_load_sectors_per_request",
            k.global_load_sectors_per_request,
        ),
        (
            "global_store_sectors_per_request",
            k.global_store_sectors_per_request,
        ),
        ("dram_read_bytes", k.dram_read_bytes),
        ("dram_write_bytes", k.dram_write_bytes),
        ("dram_bytes", k.dram_bytes),
        ("l2_write_bytes_from_l1", k.l2_write_bytes_from_l1),
    ];
    for (field, value) in figures {
        if let Some(value) = value {
            in_range(place, field, value, (0.0, MAX_COUNTER))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::tests::{measured, results};
    use crate::results::{ProfileRun, ProfiledVariant, ResultsError, Work};
    use std::path::Path;

    const COPY: &str = include_str!("../../../labs/fixtures/copy.toml");

    fn copy_lab() -> LabSpec {
        LabSpec::parse(COPY, Path::new("labs/fixtures/copy.toml")).expect("fixture")
    }

    /// The test results with variant `copy` replaced.
    fn with_copy(variant: VariantResult) -> LabResults {
        let mut r = results();
        r.variants[1] = variant;
        r
    }

    /// A measured variant whose samples and summary both say `ms` (as a hand edit would).
    fn timed_at(ms: f64) -> VariantResult {
        let mut v = measured("copy", 3_000_000, 1.0);
        if let Outcome::Measured {
            summary,
            samples_ms,
            ..
        } = &mut v.outcome
        {
            summary.median_ms = ms;
            summary.min_ms = ms;
            summary.max_ms = ms;
            summary.mean_ms = ms;
            *samples_ms = vec![ms];
        }
        v
    }

    fn out_of_range_field(r: &LabResults) -> Option<&'static str> {
        match r.validate() {
            Err(InvalidResults::OutOfRange { field, .. }) => Some(field),
            _ => None,
        }
    }

    #[test]
    fn the_test_results_pass() {
        assert_eq!(results().validate(), Ok(()));
    }

    #[test]
    fn a_negative_median_is_distrusted() {
        let r = with_copy(timed_at(-0.5));
        let err = r.validate().expect_err("negative");
        assert_eq!(
            err.to_string(),
            "variant `copy`: a sample (ms) is -0.5, outside 1e-6 to 3600000"
        );
        let json = r.to_json();
        assert!(matches!(
            LabResults::from_json(&json),
            Err(ResultsError::Invalid(_))
        ));
    }

    #[test]
    fn a_zero_or_sub_nanosecond_or_hour_long_median_is_distrusted() {
        for ms in [0.0, 1e-300, 1e-7, 3.7e6, f64::INFINITY, f64::NAN] {
            let r = with_copy(timed_at(ms));
            assert_eq!(out_of_range_field(&r), Some("a sample (ms)"), "{ms}");
        }
    }

    #[test]
    fn a_summary_that_disagrees_with_its_samples_is_distrusted() {
        let mut v = measured("copy", 3_000_000, 1.0);
        if let Outcome::Measured { summary, .. } = &mut v.outcome {
            summary.median_ms = -0.5;
        }
        let err = with_copy(v.clone()).validate().expect_err("inconsistent");
        assert!(
            matches!(
                err,
                InvalidResults::InconsistentSummary {
                    field: "median_ms",
                    ..
                }
            ),
            "{err}"
        );
        if let Outcome::Measured { summary, .. } = &mut v.outcome {
            *summary = Summary::of(&[1.0]).expect("summary");
            summary.rel_spread = -0.0;
        }
        assert!(matches!(
            with_copy(v.clone()).validate(),
            Err(InvalidResults::InconsistentSummary {
                field: "rel_spread",
                ..
            })
        ));
        if let Outcome::Measured {
            summary,
            samples_ms,
            ..
        } = &mut v.outcome
        {
            *summary = Summary::of(&[1.0]).expect("summary");
            samples_ms.clear();
        }
        assert!(matches!(
            with_copy(v).validate(),
            Err(InvalidResults::NoSamples { .. })
        ));
    }

    #[test]
    fn bytes_moved_of_u64_max_is_distrusted() {
        let r = with_copy(measured("copy", u64::MAX, 1.0));
        assert_eq!(out_of_range_field(&r), Some("bytes_moved"));
        // Within the byte bound but 10^7 GB/s at this time.
        let r = with_copy(measured("copy", 10_000_000_000_000_000, 1.0));
        assert_eq!(out_of_range_field(&r), Some("effective GB/s"));
    }

    #[test]
    fn an_impossible_work_rate_is_distrusted() {
        let mut v = measured("copy", 3_000_000, 1.0);
        v.work = Some(Work {
            count: u64::MAX,
            unit: "FLOP".into(),
        });
        assert_eq!(
            out_of_range_field(&with_copy(v.clone())),
            Some("work per second")
        );
        v.work = Some(Work {
            count: 1_000_000_000,
            unit: "FLOP".into(),
        });
        assert_eq!(with_copy(v).validate(), Ok(()));
    }

    #[test]
    fn a_huge_or_negative_counter_is_distrusted() {
        for value in [1.7e308, -1.0, f64::NAN, 2e18] {
            let mut v = measured("copy", 3_000_000, 1.0);
            v.counter = Some(CounterResult {
                unit: "cycles per load".into(),
                per: 1,
                values: vec![30.0, value],
            });
            assert_eq!(
                out_of_range_field(&with_copy(v)),
                Some("a counter value"),
                "{value}"
            );
        }
        let mut v = measured("copy", 3_000_000, 1.0);
        v.counter = Some(CounterResult {
            unit: "cycles".into(),
            per: 1,
            values: vec![-0.0],
        });
        assert_eq!(
            with_copy(v.clone()).validate().map_err(|e| e.to_string()),
            Err("variant `copy`: a counter value is -0, outside 0 to 1e18".into()),
            "a negative zero would print as -0.00 (found by views_of_generated_results_are_sound)"
        );
        v.counter = Some(CounterResult {
            unit: "cycles".into(),
            per: 0,
            values: vec![],
        });
        assert_eq!(out_of_range_field(&with_copy(v)), Some("counter.per"));
    }

    #[test]
    fn negative_or_huge_profile_counters_are_distrusted() {
        let profile = |dram: f64, variant: &str| ProfileRun {
            tool: "ncu".into(),
            kernels: vec![ProfiledVariant {
                variant: variant.into(),
                counters: KernelProfile {
                    kernel: "k".into(),
                    launch_id: 0,
                    duration_ns: Some(1000.0),
                    shared_load_bank_conflicts: None,
                    shared_store_bank_conflicts: None,
                    shared_load_instructions: None,
                    conflicts_per_shared_load: None,
                    wavefronts_per_shared_load: None,
                    shared_store_instructions: None,
                    conflicts_per_shared_store: None,
                    wavefronts_per_shared_store: None,
                    global_load_sectors_per_request: None,
                    global_store_sectors_per_request: None,
                    dram_read_bytes: Some(dram),
                    dram_write_bytes: None,
                    dram_bytes: None,
                    l2_write_bytes_from_l1: None,
                    ..Default::default()
                },
            }],
            problem: None,
            provenance: None,
            pending: Vec::new(),
            from_recording: false,
        };
        let mut r = results();
        r.profile = Some(profile(4096.0, "copy"));
        assert_eq!(r.validate(), Ok(()));
        for bad in [-1.0, 1e300] {
            r.profile = Some(profile(bad, "copy"));
            assert_eq!(out_of_range_field(&r), Some("dram_read_bytes"));
        }
        r.profile = Some(profile(4096.0, "ghost"));
        assert_eq!(
            r.validate(),
            Err(InvalidResults::UnknownProfiledVariant("ghost".into()))
        );
    }

    #[test]
    fn an_implausible_device_is_distrusted() {
        type Damage = fn(&mut DeviceInfo);
        let cases: [(&str, Damage); 8] = [
            ("sm_count", |d| d.sm_count = 0),
            ("sm_clock_khz", |d| d.sm_clock_khz = 0),
            ("memory_clock_khz", |d| d.memory_clock_khz = 1),
            ("bus_width_bits", |d| d.bus_width_bits = u64::MAX),
            ("max_threads_per_sm", |d| d.max_threads_per_sm = 0),
            ("warp_size", |d| d.warp_size = 0),
            ("registers_per_sm", |d| d.registers_per_sm = Some(0)),
            ("shared_bytes_per_sm", |d| {
                d.shared_bytes_per_sm = Some(u64::MAX)
            }),
        ];
        for (field, damage) in cases {
            let mut r = results();
            damage(&mut r.provenance.device);
            assert_eq!(out_of_range_field(&r), Some(field));
        }
        // A driver that does not report the memory clock and bus: no peak, not a lie.
        let mut r = results();
        r.provenance.device.memory_clock_khz = 0;
        r.provenance.device.bus_width_bits = 0;
        assert_eq!(r.validate(), Ok(()));
        r.provenance.wall_seconds = -1.0;
        assert_eq!(out_of_range_field(&r), Some("wall_seconds"));
    }

    #[test]
    fn empty_duplicated_or_dangling_variants_are_distrusted() {
        let mut r = results();
        r.variants.clear();
        assert_eq!(r.validate(), Err(InvalidResults::NoVariants));
        let mut r = results();
        r.variants.push(r.variants[0].clone());
        assert_eq!(
            r.validate(),
            Err(InvalidResults::DuplicateVariant("memcpy".into()))
        );
        let mut r = results();
        r.ceiling = Some("gone".into());
        assert_eq!(
            r.validate(),
            Err(InvalidResults::UnknownCeiling("gone".into()))
        );
    }

    #[test]
    fn a_recorded_file_with_a_ghost_variant_is_distrusted() {
        let lab = copy_lab();
        let mut r = results();
        // `copy` is not a variant of the fixture lab (`memcpy`, `scalar`).
        assert_eq!(
            r.check_lab(&lab, MissingVariants::Allowed),
            Err(LabMismatch::UnknownVariant("copy".into()))
        );
        r.variants[1].name = "scalar".into();
        assert_eq!(r.check_lab(&lab, MissingVariants::Refused), Ok(()));
        r.variants.truncate(1);
        assert_eq!(r.check_lab(&lab, MissingVariants::Allowed), Ok(()));
        assert_eq!(
            r.check_lab(&lab, MissingVariants::Refused),
            Err(LabMismatch::MissingVariant("scalar".into()))
        );
        r.lab = "transpose".into();
        assert!(matches!(
            r.check_lab(&lab, MissingVariants::Allowed),
            Err(LabMismatch::Lab { .. })
        ));
    }

    #[test]
    fn numbers_in_messages_stay_short() {
        assert_eq!(Shown(1e-300).to_string(), "1e-300");
        assert_eq!(Shown(-0.5).to_string(), "-0.5");
        assert_eq!(Shown(u64::MAX as f64).to_string(), "1.8446744073709552e19");
        assert_eq!(Shown(0.0).to_string(), "0");
    }
}
