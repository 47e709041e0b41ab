//! Figures in prose: `{{#value LAB.VARIANT.FIELD [* K] [/ K]}}` and
//! `{{#ratio LAB.A LAB.B [FIELD]}}` render a measured quantity where a sentence needs it,
//! `{{#ridge LAB.COMPUTE LAB.MEMORY}}` (or `... peak`) a ridge point, and
//! `{{#device LAB [PROPERTY]}}` the GPU it was measured on or one of its properties
//! ([`device`]), from the same results as the lab's table (live on a GPU, recorded without one).
//! A row that failed or was not measured renders as a marked gap, never as a number from
//! elsewhere.
//!
//! ```
//! use mdbook_kernelbook::figures::{Field, Query};
//! let query = Query::parse("{{#ratio transpose.padded transpose.naive}}").expect("well-formed");
//! assert_eq!(query, Query::Ratio {
//!     lab: "transpose".into(),
//!     top: "padded".into(),
//!     bottom: "naive".into(),
//!     field: Field::Gbs,
//! });
//! ```
//!
//! Parsing and rendering are plain functions; where the directives stand is found by
//! [`crate::scan`], and which results they read by [`crate::preprocessor`].

use kernelbook_core::SourceLocation;
use kernelbook_core::results::figures::{self, RowFigures};
use kernelbook_core::results::{KernelProfile, LabResults, Outcome, VariantResult};
use std::ops::Range;

pub mod claim;
pub mod device;
pub mod error;

pub use claim::{Factor, Op, Relation};
pub use device::Property;
pub use error::{Gap, ParseError};

/// The directives' openings, as they are searched for.
pub const OPENINGS: [&str; 6] = [
    "{{#value ",
    "{{#ratio ",
    "{{#device ",
    "{{#claim ",
    "{{#ridge ",
    "{{#timeline ",
];

/// A figure directive of a chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureDirective {
    pub query: Query,
    pub range: Range<usize>,
    pub location: SourceLocation,
}

/// What a figure shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// One field of one row, times a constant (`* 4 / 1000`: 4-byte loads per second as TB/s).
    Value {
        lab: String,
        variant: String,
        field: Field,
        scale: Scale,
    },
    /// `field` of `top` over `field` of `bottom`, as "3.0×".
    Ratio {
        lab: String,
        top: String,
        bottom: String,
        field: Field,
    },
    /// The name of the GPU the lab's results come from ("NVIDIA H200"), or one of its
    /// properties.
    Device { lab: String, property: Property },
    /// The roofline's ridge point: the work rate of `compute` over the bandwidth of `memory`, in
    /// units of work (FLOP) per byte.
    Ridge {
        lab: String,
        compute: String,
        memory: Bandwidth,
    },
    /// A claim the prose makes about the order of rows (`a < b < c` by `field`): nothing is
    /// shown where the results bear it out, a note where they do not.
    Claim {
        lab: String,
        rows: Vec<String>,
        field: Field,
    },
    /// A claim the prose makes about how far apart two rows are (`a >= 2 * b`, `a within 5 %
    /// of b`), shown and checked like an order claim ([`claim`]).
    Compare {
        lab: String,
        left: String,
        relation: Relation,
        right: String,
        field: Field,
    },
    /// A pipelined row's timeline, drawn ([`crate::chart::timeline`]): a figure of its own,
    /// written on a line of its own.
    Timeline { lab: String, variant: String },
}

/// The bandwidth a ridge point divides by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bandwidth {
    /// A row's measured bandwidth.
    Row(String),
    /// The device's theoretical DRAM bandwidth (memory clock × 2 × bus width).
    Peak,
}

/// A constant a value is multiplied by: `times / over`, both whole numbers as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    pub times: u64,
    pub over: u64,
}

impl Scale {
    pub const ONE: Scale = Scale { times: 1, over: 1 };

    /// `* 4 / 1000` (operators and numbers as separate words), or nothing.
    fn parse(words: &[&str]) -> Result<Scale, ParseError> {
        let usage = ParseError::Usage(
            "a value's scale is `* N` and `/ N` with whole numbers, e.g. `{{#value lab.row.rate * 4 / 1000}}`",
        );
        if !words.len().is_multiple_of(2) {
            return Err(usage);
        }
        let mut scale = Scale::ONE;
        for pair in words.chunks(2) {
            let number: u64 = pair[1]
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or(usage.clone())?;
            let side = match pair[0] {
                "*" => &mut scale.times,
                "/" => &mut scale.over,
                _ => return Err(usage),
            };
            *side = side.checked_mul(number).ok_or(usage.clone())?;
        }
        Ok(scale)
    }

    fn apply(self, value: f64) -> f64 {
        value * self.times as f64 / self.over as f64
    }
}

/// A measured quantity of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Effective bandwidth, GB/s, as the table shows it.
    Gbs,
    /// Median time, in µs or ms as the table shows it.
    Time,
    /// Median time in microseconds, a bare number.
    Us,
    /// Per cent of the lab's ceiling.
    PctCeiling,
    /// Per cent of the device's theoretical peak.
    PctPeak,
    /// The kernel's own measurement (median), e.g. cycles per load.
    Counter,
    /// Work per second (FLOP/s, loads/s), in units of 10^9.
    Rate,
    /// Relative spread of the samples, per cent.
    Spread,
    /// Bytes read from DRAM, in MB, from the lab's Nsight Compute profile.
    DramRead,
    /// Bytes written to DRAM, in MiB (2^20 bytes, as the book sizes its buffers), from the
    /// lab's Nsight Compute profile.
    DramWrite,
    /// Bytes the L1 wrote to the L2, in MiB, from the profile: what partial stores cost between
    /// the SM and the L2, before the L2 merges them.
    L2WriteFromL1,
    /// Sectors per global load request, from the lab's Nsight Compute profile.
    Sectors,
    /// Sectors per global store request, from the profile.
    StoreSectors,
    /// Bank conflicts per shared load instruction, from the profile.
    ConflictsPerLoad,
    /// Wavefronts (passes) per shared load instruction, from the profile.
    WavefrontsPerLoad,
    /// Achieved occupancy, per cent of the SMs' warp slots, from the profile.
    Occupancy,
    /// The grid in waves of resident blocks per SM, from the profile.
    Waves,
    /// Warp instructions executed, in millions, from the profile.
    WarpInstructions,
    /// DRAM throughput, per cent of its peak over the kernel's time, from the profile.
    DramThroughput,
    /// Work per byte against HBM: the row's work over the DRAM bytes read and written in its
    /// profile (where the roofline draws it).
    DramIntensity,
    /// A pipelined row's serial sum over its time, from its timeline ("2.6×").
    Overlap,
    /// The sum of a pipelined row's parts (every copy and kernel), as a time.
    Serial,
    /// The serial sum less the run's time: what overlapping saved.
    Saved,
    /// The longest kind of part, all its chunks together: the bound on any overlap.
    Bound,
    /// A pipelined row's host → device copies, all chunks together.
    H2d,
    /// A pipelined row's kernels, all chunks together.
    Kernels,
    /// A pipelined row's device → host copies, all chunks together.
    D2h,
    /// The L2's sector hit rate, per cent, from the profile.
    L2HitRate,
    /// The L2 fetch granularity the driver reported once the row's `l2` controls were set, bytes.
    L2Fetch,
    /// The fetch granularity the driver reported before them (what the other rows ran with).
    L2FetchBefore,
    /// The L2 set-aside for persisting lines the driver reported, MiB.
    L2Persisting,
    /// The access-policy window the driver reported, MiB.
    L2Window,
    /// Registers per thread the compiler allocated (ptxas' report).
    Registers,
    /// Bytes per thread the compiler spilled to local memory (stores).
    SpillStores,
    /// Bytes per thread the compiler loads back from its spills.
    SpillLoads,
    /// Blocks the occupancy calculator lets reside on one SM at once.
    BlocksPerSm,
}

impl Field {
    const NAMES: [(&'static str, Field); 36] = [
        ("gbs", Field::Gbs),
        ("time", Field::Time),
        ("us", Field::Us),
        ("pct_ceiling", Field::PctCeiling),
        ("pct_peak", Field::PctPeak),
        ("counter", Field::Counter),
        ("rate", Field::Rate),
        ("spread", Field::Spread),
        ("dram_read", Field::DramRead),
        ("dram_write", Field::DramWrite),
        ("l2_write_from_l1", Field::L2WriteFromL1),
        ("sectors", Field::Sectors),
        ("store_sectors", Field::StoreSectors),
        ("conflicts_per_load", Field::ConflictsPerLoad),
        ("wavefronts_per_load", Field::WavefrontsPerLoad),
        ("occupancy", Field::Occupancy),
        ("waves", Field::Waves),
        ("warp_instructions", Field::WarpInstructions),
        ("dram_throughput", Field::DramThroughput),
        ("dram_intensity", Field::DramIntensity),
        ("overlap", Field::Overlap),
        ("serial", Field::Serial),
        ("saved", Field::Saved),
        ("bound", Field::Bound),
        ("h2d", Field::H2d),
        ("kernels", Field::Kernels),
        ("d2h", Field::D2h),
        ("l2_hit_rate", Field::L2HitRate),
        ("l2_fetch", Field::L2Fetch),
        ("l2_fetch_before", Field::L2FetchBefore),
        ("l2_persisting", Field::L2Persisting),
        ("l2_window", Field::L2Window),
        ("registers", Field::Registers),
        ("spill_stores", Field::SpillStores),
        ("spill_loads", Field::SpillLoads),
        ("blocks_per_sm", Field::BlocksPerSm),
    ];

    /// The name directives use.
    pub fn name(self) -> &'static str {
        Field::NAMES
            .iter()
            .find(|(_, field)| *field == self)
            .map_or("?", |(name, _)| name)
    }

    fn parse(word: &str) -> Result<Field, ParseError> {
        Field::NAMES
            .iter()
            .find(|(name, _)| *name == word)
            .map(|(_, field)| *field)
            .ok_or_else(|| {
                let names: Vec<&str> = Field::NAMES.iter().map(|(n, _)| *n).collect();
                ParseError::UnknownField {
                    word: word.to_string(),
                    names: names.join(", "),
                }
            })
    }
}

impl Query {
    /// Parses a whole directive, `{{#value ...}}`, `{{#ratio ...}}`, `{{#device ...}}`,
    /// `{{#ridge ...}}` or `{{#claim ...}}`.
    pub fn parse(directive: &str) -> Result<Query, ParseError> {
        let body = directive
            .strip_prefix("{{#")
            .and_then(|rest| rest.strip_suffix("}}"))
            .ok_or_else(|| ParseError::NotADirective(directive.to_string()))?;
        let mut words = body.split_whitespace();
        let kind = words.next().unwrap_or_default();
        let words: Vec<&str> = words.collect();
        match (kind, words.as_slice()) {
            ("value", [path, scale @ ..]) => parse_value(path, scale),
            ("ratio", [top, bottom, rest @ ..]) if rest.len() <= 1 => {
                let (lab, top) = row(top)?;
                let (other, bottom) = row(bottom)?;
                if lab != other {
                    return Err(ParseError::TwoLabs {
                        what: "ratio compares",
                        lab,
                        other,
                    });
                }
                let field = rest.first().map_or(Ok(Field::Gbs), |f| Field::parse(f))?;
                Ok(Query::Ratio {
                    lab,
                    top,
                    bottom,
                    field,
                })
            }
            ("device", [lab, rest @ ..]) if rest.len() <= 1 => Ok(Query::Device {
                lab: name(lab)?,
                property: Property::parse(rest.first().copied())?,
            }),
            ("ridge", [compute, memory]) => parse_ridge(compute, memory),
            ("claim", words) => claim::parse(words),
            ("timeline", [path]) => {
                let (lab, variant) = row(path)?;
                Ok(Query::Timeline { lab, variant })
            }
            ("timeline", _) => Err(ParseError::Usage(
                "`{{#timeline}}` takes one pipelined row: `{{#timeline LAB.VARIANT}}`",
            )),
            ("device", _) => Err(ParseError::Usage(
                "`{{#device}}` takes a lab and an optional property: `{{#device LAB [PROPERTY]}}`",
            )),
            ("value", _) => Err(VALUE_USAGE),
            ("ridge", _) => Err(ParseError::Usage(
                "`{{#ridge}}` takes a compute row and a bandwidth row of one lab, or `peak`: `{{#ridge LAB.COMPUTE LAB.MEMORY}}`",
            )),
            _ => Err(ParseError::Usage(
                "`{{#ratio}}` takes two rows of one lab and an optional field: `{{#ratio LAB.A LAB.B [FIELD]}}`",
            )),
        }
    }

    /// What it shows, for the page (`data-field`): a field's name, "ratio", "device",
    /// "ridge" (over a measured bandwidth) or "ridge_peak" (over the theoretical one).
    pub fn kind(&self) -> &'static str {
        match self {
            Query::Value { field, .. } => field.name(),
            Query::Ratio { .. } => "ratio",
            Query::Device { .. } => "device",
            Query::Claim { .. } | Query::Compare { .. } => "claim",
            Query::Timeline { .. } => "timeline",
            Query::Ridge {
                memory: Bandwidth::Row(_),
                ..
            } => "ridge",
            Query::Ridge {
                memory: Bandwidth::Peak,
                ..
            } => "ridge_peak",
        }
    }

    pub fn lab(&self) -> &str {
        match self {
            Query::Value { lab, .. }
            | Query::Ratio { lab, .. }
            | Query::Device { lab, .. }
            | Query::Claim { lab, .. }
            | Query::Compare { lab, .. }
            | Query::Timeline { lab, .. }
            | Query::Ridge { lab, .. } => lab,
        }
    }

    /// The rows it reads.
    pub fn variants(&self) -> Vec<&str> {
        match self {
            Query::Value { variant, .. } | Query::Timeline { variant, .. } => vec![variant],
            Query::Ratio { top, bottom, .. } => vec![top, bottom],
            Query::Device { .. } => Vec::new(),
            Query::Claim { rows, .. } => rows.iter().map(String::as_str).collect(),
            Query::Compare { left, right, .. } => vec![left, right],
            Query::Ridge {
                compute, memory, ..
            } => match memory {
                Bandwidth::Row(memory) => vec![compute, memory],
                Bandwidth::Peak => vec![compute],
            },
        }
    }
}

const VALUE_USAGE: ParseError = ParseError::Usage("`{{#value}}` takes one LAB.VARIANT.FIELD");

/// `LAB.VARIANT.FIELD [* N] [/ N]`.
fn parse_value(path: &str, scale: &[&str]) -> Result<Query, ParseError> {
    if scale
        .first()
        .is_some_and(|word| *word != "*" && *word != "/")
    {
        return Err(VALUE_USAGE);
    }
    let (lab, variant, field) = match path.split('.').collect::<Vec<_>>()[..] {
        [lab, variant, field] => (lab, variant, field),
        _ => return Err(ParseError::NotAValuePath(path.to_string())),
    };
    Ok(Query::Value {
        lab: name(lab)?,
        variant: name(variant)?,
        field: Field::parse(field)?,
        scale: Scale::parse(scale)?,
    })
}

/// `LAB.COMPUTE LAB.MEMORY` or `LAB.COMPUTE peak`.
fn parse_ridge(compute: &str, memory: &str) -> Result<Query, ParseError> {
    let (lab, compute) = row(compute)?;
    let memory = if memory == "peak" {
        Bandwidth::Peak
    } else {
        let (other, memory) = row(memory)?;
        if other != lab {
            return Err(ParseError::TwoLabs {
                what: "ridge point divides",
                lab,
                other,
            });
        }
        Bandwidth::Row(memory)
    };
    Ok(Query::Ridge {
        lab,
        compute,
        memory,
    })
}

fn name(word: &str) -> Result<String, ParseError> {
    let ok = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(word.to_string())
    } else {
        Err(ParseError::NotAName(word.to_string()))
    }
}

fn row(path: &str) -> Result<(String, String), ParseError> {
    match path.split_once('.') {
        Some((lab, variant)) => Ok((name(lab)?, name(variant)?)),
        None => Err(ParseError::NotARow(path.to_string())),
    }
}

/// A figure's text: the number, formatted as the lab's table formats it, or a marked gap saying
/// why there is none. `source` says where the results come from, for the tooltip.
pub fn render(query: &Query, results: Option<&LabResults>, source: &str) -> String {
    match (query, figure(query, results)) {
        // A chart of its own: a block, not a span.
        (Query::Timeline { .. }, Ok(figure)) => figure,
        (Query::Claim { .. } | Query::Compare { .. }, Ok(note)) => format!(
            "<span class=\"kernelbook-claim\" data-holds=\"{}\" title=\"{}\">{note}</span>",
            note.is_empty(),
            escape(source)
        ),
        (_, Ok(text)) => format!(
            "<span class=\"kernelbook-figure\" data-field=\"{}\" title=\"{}\">{text}</span>",
            query.kind(),
            escape(source)
        ),
        (_, Err(why)) => format!(
            "<span class=\"kernelbook-gap\" title=\"{}\">[no result]</span>",
            escape(&why.to_string())
        ),
    }
}

/// The number a query gives, or why there is none.
pub fn figure(query: &Query, results: Option<&LabResults>) -> Result<String, Gap> {
    let results = results.ok_or_else(|| Gap::NoResults(query.lab().to_string()))?;
    match query {
        Query::Value {
            variant,
            field,
            scale,
            ..
        } => {
            let value = scale.apply(quantity(results, variant, *field)?);
            Ok(format_field(*field, value))
        }
        Query::Ratio {
            top, bottom, field, ..
        } => {
            let ratio = quantity(results, top, *field)? / quantity(results, bottom, *field)?;
            if !ratio.is_finite() {
                return Err(Gap::NotANumber(format!("{top} over {bottom}")));
            }
            Ok(format_ratio(ratio))
        }
        Query::Device { property, .. } => property
            .text(&results.provenance.device)
            .map(|t| escape(&t)),
        Query::Claim { rows, field, .. } => claim::check_order(results, rows, *field),
        Query::Compare {
            left,
            relation,
            right,
            field,
            ..
        } => claim::check_compare(results, (left, right), relation, *field),
        Query::Ridge {
            compute, memory, ..
        } => ridge(results, compute, memory).map(crate::format::format_sig),
        Query::Timeline { lab, variant } => {
            let timeline = timeline_of(results, variant)?;
            let title = format!("{lab}.{variant}: copies and kernels per stream");
            let id = format!("timeline-{lab}-{variant}");
            Ok(crate::chart::timeline::svg(&id, &title, timeline))
        }
    }
}

/// The timeline of a measured pipelined row.
fn timeline_of<'r>(
    results: &'r LabResults,
    variant: &str,
) -> Result<&'r kernelbook_core::results::timeline::Timeline, Gap> {
    let row = results
        .variant(variant)
        .ok_or_else(|| Gap::NotMeasured(variant.to_string()))?;
    if !matches!(row.outcome, Outcome::Measured { .. }) {
        return Err(Gap::NoMeasurement {
            variant: variant.to_string(),
            why: why(row),
        });
    }
    row.timeline.as_ref().ok_or_else(|| Gap::Missing {
        variant: variant.to_string(),
        what: "timeline (it is not a pipelined row)",
    })
}

/// Work per byte: `compute`'s work rate over `memory`'s bandwidth.
fn ridge(results: &LabResults, compute: &str, memory: &Bandwidth) -> Result<f64, Gap> {
    let rate = crate::format::from_giga(quantity(results, compute, Field::Rate)?);
    let gbs = match memory {
        Bandwidth::Row(row) => quantity(results, row, Field::Gbs)?,
        Bandwidth::Peak => results.provenance.device.theoretical_gbs(),
    };
    figures::ridge(rate, figures::gbs_to_bytes_per_second(gbs))
        .ok_or_else(|| Gap::NotANumber(format!("`{compute}` over a bandwidth of {gbs} GB/s")))
}

/// `field` of row `variant`, unformatted.
pub fn quantity(results: &LabResults, variant: &str, field: Field) -> Result<f64, Gap> {
    let row = results
        .variant(variant)
        .ok_or_else(|| Gap::NotMeasured(variant.to_string()))?;
    let no_measurement = || Gap::NoMeasurement {
        variant: variant.to_string(),
        why: why(row),
    };
    let figures = RowFigures::of(results, row).ok_or_else(no_measurement)?;
    let missing = |what: &'static str| Gap::Missing {
        variant: variant.to_string(),
        what,
    };
    let value = match field {
        Field::Gbs => figures.gbs,
        Field::Time | Field::Us => figures.median_ms * 1000.0,
        Field::PctCeiling => figures.pct_ceiling.ok_or_else(|| missing("ceiling"))?,
        Field::PctPeak => figures.pct_peak.ok_or_else(|| missing("peak"))?,
        Field::Counter => figures.counter.ok_or_else(|| missing("counter"))?,
        Field::Rate => crate::format::to_giga(figures.rate.ok_or_else(|| missing("work"))?),
        Field::Spread => figures.rel_spread * 100.0,
        Field::DramRead => {
            let bytes = profiled(results, variant)?.dram_read_bytes;
            bytes.ok_or_else(|| missing("DRAM bytes read in its profile"))? / 1e6
        }
        Field::DramWrite => {
            let bytes = profiled(results, variant)?.dram_write_bytes;
            crate::format::to_mib(
                bytes.ok_or_else(|| missing("DRAM bytes written in its profile"))?,
            )
        }
        Field::L2WriteFromL1 => {
            let bytes = profiled(results, variant)?.l2_write_bytes_from_l1;
            crate::format::to_mib(
                bytes.ok_or_else(|| missing("L1 → L2 write bytes in its profile"))?,
            )
        }
        Field::StoreSectors | Field::ConflictsPerLoad | Field::WavefrontsPerLoad => {
            return per_instruction(profiled(results, variant)?, field)
                .ok_or_else(|| missing("such counter in its profile"));
        }
        Field::Registers | Field::SpillStores | Field::SpillLoads | Field::BlocksPerSm => {
            return compiled(row, field)
                .ok_or_else(|| missing("compile results (registers, spills, blocks per SM)"));
        }
        Field::Sectors => {
            let sectors = profiled(results, variant)?.global_load_sectors_per_request;
            sectors.ok_or_else(|| missing("sectors per load request in its profile"))?
        }
        Field::Occupancy => profiled(results, variant)?
            .achieved_occupancy_pct
            .ok_or_else(|| missing("achieved occupancy in its profile"))?,
        Field::Waves => profiled(results, variant)?
            .waves_per_sm
            .ok_or_else(|| missing("waves per SM in its profile"))?,
        Field::WarpInstructions => {
            let count = profiled(results, variant)?.warp_instructions;
            count.ok_or_else(|| missing("warp instructions in its profile"))? / 1e6
        }
        Field::DramThroughput => profiled(results, variant)?
            .dram_throughput_pct
            .ok_or_else(|| missing("DRAM throughput in its profile"))?,
        Field::L2HitRate => profiled(results, variant)?
            .l2_hit_rate_pct
            .ok_or_else(|| missing("the L2 hit rate in its profile"))?,
        Field::L2Fetch | Field::L2FetchBefore | Field::L2Persisting | Field::L2Window => {
            return l2_reported(row, field).ok_or_else(|| missing("L2 controls read back"));
        }
        Field::DramIntensity => {
            profiled(results, variant)?;
            figures::dram_intensity(results, variant)
                .ok_or_else(|| missing("work and DRAM bytes in its profile"))?
        }
        Field::Overlap
        | Field::Serial
        | Field::Saved
        | Field::Bound
        | Field::H2d
        | Field::Kernels
        | Field::D2h => timeline_quantity(timeline_of(results, variant)?, field)
            .ok_or_else(|| missing("overlap (its run took no time)"))?,
    };
    Ok(value)
}

/// A timeline's figure; times in µs, as [`Field::Time`] holds them.
fn timeline_quantity(
    timeline: &kernelbook_core::results::timeline::Timeline,
    field: Field,
) -> Option<f64> {
    use kernelbook_core::results::timeline::Part;
    let ms = match field {
        Field::Overlap => return timeline.overlap(),
        Field::Serial => timeline.serial_ms(),
        Field::Saved => timeline.saved_ms(),
        Field::Bound => timeline.bound_ms(),
        Field::H2d => timeline.part_ms(Part::HostToDevice),
        Field::Kernels => timeline.part_ms(Part::Kernel),
        Field::D2h => timeline.part_ms(Part::DeviceToHost),
        _ => return None,
    };
    Some(ms * 1000.0)
}

/// What the driver reported of a row's L2 controls: bytes for the fetch granularity, MiB for
/// the set-aside and the window.
fn l2_reported(row: &VariantResult, field: Field) -> Option<f64> {
    let l2 = row.l2.as_ref()?;
    let mib = |bytes: u64| bytes as f64 / f64::from(1u32 << 20);
    match field {
        Field::L2Fetch => l2.reported.fetch_granularity_bytes.map(|b| b as f64),
        Field::L2FetchBefore => l2.before.fetch_granularity_bytes.map(|b| b as f64),
        Field::L2Persisting => l2.reported.persisting_bytes.map(mib),
        Field::L2Window => l2.reported.window.as_ref().map(|w| mib(w.bytes)),
        _ => None,
    }
}

/// A per-request or per-instruction counter of a profiled launch.
fn per_instruction(counters: &KernelProfile, field: Field) -> Option<f64> {
    match field {
        Field::StoreSectors => counters.global_store_sectors_per_request,
        Field::ConflictsPerLoad => counters.conflicts_per_shared_load,
        Field::WavefrontsPerLoad => counters.wavefronts_per_shared_load,
        _ => None,
    }
}

/// What the compiler and the occupancy calculator reported for a row's kernel; `None` where the
/// row runs no kernel of the book's, or ptxas gave no spill report.
fn compiled(row: &VariantResult, field: Field) -> Option<f64> {
    let resources = row.resources.as_ref()?;
    let count = match field {
        Field::Registers => resources.registers,
        Field::SpillStores => resources.spill_store_bytes?,
        Field::SpillLoads => resources.spill_load_bytes?,
        Field::BlocksPerSm => resources.blocks_per_sm,
        _ => return None,
    };
    Some(f64::from(count))
}

/// The Nsight Compute counters of `variant`'s launch.
fn profiled<'r>(results: &'r LabResults, variant: &str) -> Result<&'r KernelProfile, Gap> {
    let profile = results
        .profile
        .as_ref()
        .ok_or_else(|| Gap::NotProfiled(results.lab.clone()))?;
    profile
        .kernels
        .iter()
        .find(|kernel| kernel.variant == variant)
        .map(|kernel| &kernel.counters)
        .ok_or_else(|| Gap::NoCounters {
            variant: variant.to_string(),
            problem: profile.problem.clone(),
        })
}

fn why(row: &VariantResult) -> &'static str {
    match row.outcome {
        Outcome::WrongResult { .. } => "its result was wrong",
        Outcome::Failed { .. } => "it failed",
        Outcome::Unavailable { .. } => "it is not available here",
        Outcome::Measured { .. } => "measured",
    }
}

/// A field as the lab's table shows it: whole GB/s, the time in µs or ms, per cents to one
/// decimal, counters and rates to three significant figures.
fn format_field(field: Field, value: f64) -> String {
    match field {
        Field::Gbs => format!("{value:.0}"),
        Field::Time
        | Field::Serial
        | Field::Saved
        | Field::Bound
        | Field::H2d
        | Field::Kernels
        | Field::D2h => crate::format::format_ms(value / 1000.0),
        Field::Overlap => format_ratio(value),
        Field::Us => crate::format::format_sig(value),
        Field::PctCeiling
        | Field::PctPeak
        | Field::Spread
        | Field::Occupancy
        | Field::DramThroughput
        | Field::L2HitRate => format!("{value:.1} %"),
        Field::Counter
        | Field::Rate
        | Field::DramRead
        | Field::DramWrite
        | Field::L2WriteFromL1
        | Field::ConflictsPerLoad
        | Field::WavefrontsPerLoad
        | Field::WarpInstructions
        | Field::DramIntensity => crate::format::format_sig(value),
        Field::Sectors | Field::StoreSectors | Field::Waves => significant(value),
        Field::Registers | Field::SpillStores | Field::SpillLoads | Field::BlocksPerSm => {
            format!("{value:.0}")
        }
        Field::L2Fetch | Field::L2FetchBefore | Field::L2Persisting | Field::L2Window => {
            significant(value)
        }
    }
}

/// Three significant figures without trailing zeros: "32", "1.5", "33.5" (a count of sectors, a
/// device's L2 in MiB).
fn significant(value: f64) -> String {
    let text = crate::format::format_sig(value);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// "1.05×" below two (where a tenth would hide the difference), "3.0×" below ten, "12×" above.
fn format_ratio(ratio: f64) -> String {
    if ratio >= 9.95 {
        format!("{ratio:.0}×")
    } else if ratio >= 1.995 {
        format!("{ratio:.1}×")
    } else {
        format!("{ratio:.2}×")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_parse_or_say_what_is_wrong() {
        assert_eq!(
            Query::parse("{{#value transpose.padded.gbs}}"),
            Ok(Query::Value {
                lab: "transpose".into(),
                variant: "padded".into(),
                field: Field::Gbs,
                scale: Scale::ONE,
            })
        );
        assert_eq!(
            Query::parse("{{#ratio hierarchy.ws_4g hierarchy.ws_64k counter}}"),
            Ok(Query::Ratio {
                lab: "hierarchy".into(),
                top: "ws_4g".into(),
                bottom: "ws_64k".into(),
                field: Field::Counter
            })
        );
        for (bad, message) in [
            ("{{#value transpose.padded}}", "needs LAB.VARIANT.FIELD"),
            ("{{#value transpose.padded.speed}}", "unknown field `speed`"),
            ("{{#ratio a.x b.y}}", "two rows of one lab"),
            ("{{#ratio a.x}}", "takes two rows"),
            ("{{#value a b}}", "takes one"),
            ("{{#value a.b c.gbs}}", "takes one"),
            ("{{#value a.b!.gbs}}", "not a lab or variant name"),
            ("{{#value a.b.rate * 4 /}}", "a value's scale"),
            ("{{#value a.b.rate * 0}}", "a value's scale"),
            ("{{#value a.b.rate + 4}}", "takes one"),
            (
                "{{#device a sms extra}}",
                "takes a lab and an optional property",
            ),
            ("{{#device a speed}}", "unknown device property"),
            ("{{#ridge a.x b.y}}", "two rows of one lab"),
            ("{{#ridge a.x}}", "takes a compute row"),
        ] {
            let err = Query::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(message), "{bad}: {err}");
        }
    }

    #[test]
    fn a_claim_about_the_order_of_rows_parses_and_is_checked() {
        assert_eq!(
            Query::parse("{{#claim t.naive < t.tiled < t.padded}}"),
            Ok(Query::Claim {
                lab: "t".into(),
                rows: vec!["naive".into(), "tiled".into(), "padded".into()],
                field: Field::Gbs
            })
        );
        assert!(matches!(
            Query::parse("{{#claim h.a < h.b counter}}"),
            Ok(Query::Claim {
                field: Field::Counter,
                ..
            })
        ));
        for bad in [
            "{{#claim t.a}}",
            "{{#claim t.a >> t.b}}",
            "{{#claim t.a < u.b}}",
            "{{#claim t.a < t.b <}}",
        ] {
            assert!(Query::parse(bad).is_err(), "{bad}");
        }
        let text = include_str!("../../../labs/recorded/nvidia-h200-882b8b4e/transpose.json");
        let results = LabResults::from_json(text).expect("the recording");
        let holds = Query::parse("{{#claim transpose.naive < transpose.tiled < transpose.padded}}")
            .expect("a claim");
        assert_eq!(figure(&holds, Some(&results)), Ok(String::new()));
        let html = render(&holds, Some(&results), "recorded");
        assert!(html.contains("data-holds=\"true\""), "{html}");
        let fails = Query::parse("{{#claim transpose.padded < transpose.naive}}").expect("a claim");
        let note = figure(&fails, Some(&results)).expect("a note");
        assert!(
            note.starts_with(" (not on the NVIDIA H200: padded "),
            "{note}"
        );
        assert!(render(&fails, Some(&results), "r").contains("data-holds=\"false\""));
    }

    #[test]
    fn a_claim_about_magnitudes_parses_or_says_what_is_wrong() {
        assert_eq!(
            Query::parse("{{#claim s.regtile >= 3 * s.tiled_32 rate}}"),
            Ok(Query::Compare {
                lab: "s".into(),
                left: "regtile".into(),
                relation: Relation::Bound {
                    op: Op::AtLeast,
                    factor: Factor::parse("3").expect("3"),
                },
                right: "tiled_32".into(),
                field: Field::Rate,
            })
        );
        assert_eq!(
            Query::parse("{{#claim b.copy within 2.5 % of b.memcpy}}"),
            Ok(Query::Compare {
                lab: "b".into(),
                left: "copy".into(),
                relation: Relation::Within {
                    percent: Factor::parse("2.5").expect("2.5"),
                },
                right: "memcpy".into(),
                field: Field::Gbs,
            })
        );
        assert!(matches!(
            Query::parse("{{#claim t.a > t.b}}"),
            Ok(Query::Compare {
                relation: Relation::Bound {
                    op: Op::Greater,
                    ..
                },
                ..
            })
        ));
        for (bad, message) in [
            ("{{#claim t.a >= 0 * t.b}}", "a positive number"),
            ("{{#claim t.a >= -2 * t.b}}", "a positive number"),
            ("{{#claim t.a >= x * t.b}}", "a positive number"),
            ("{{#claim t.a == t.b}}", "`{{#claim}}` takes"),
            ("{{#claim t.a within 5 of t.b}}", "`{{#claim}}` takes"),
            ("{{#claim t.a within 5 % of u.b}}", "two rows of one lab"),
            ("{{#claim t.a >= 2 * t.b speed}}", "unknown field `speed`"),
            ("{{#claim t.a >= 2 * t.b *}}", "`{{#claim}}` takes"),
        ] {
            let err = Query::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(message), "{bad}: {err}");
        }
    }

    #[test]
    fn a_claim_about_magnitudes_is_checked_against_the_figures() {
        let results = recorded("transpose");
        let ratio = quantity(&results, "padded", Field::Gbs).expect("padded")
            / quantity(&results, "naive", Field::Gbs).expect("naive");
        let at_least = |k: f64| format!("{{{{#claim transpose.padded >= {k} * transpose.naive}}}}");
        // Just under the measured ratio holds; just over it does not.
        assert_eq!(shown(&at_least(ratio * 0.99), &results), Ok(String::new()));
        let note = shown(&at_least(ratio * 1.01), &results).expect("a note");
        assert!(
            note.starts_with(" (not on the NVIDIA H200: padded "),
            "{note}"
        );
        assert!(note.contains(&format!("{ratio:.2}×, not ≥ ")), "{note}");
        let query = Query::parse(&at_least(ratio * 1.01)).expect("a claim");
        assert!(render(&query, Some(&results), "r").contains("data-holds=\"false\""));
        let apart = (ratio - 1.0) * 100.0;
        let within =
            |p: f64| format!("{{{{#claim transpose.padded within {p} % of transpose.naive}}}}");
        assert_eq!(shown(&within(apart * 1.01), &results), Ok(String::new()));
        let note = shown(&within(apart * 0.99), &results).expect("a note");
        assert!(
            note.contains(&format!("{apart:.1} % apart, not within")),
            "{note}"
        );
        // "<" in a note is escaped for the page.
        let note = shown("{{#claim transpose.padded < transpose.naive}}", &results).expect("note");
        assert!(!note.contains('<'), "{note}");
        let note = shown(
            "{{#claim transpose.padded < 2 * transpose.naive}}",
            &results,
        )
        .expect("note");
        assert!(note.contains("not &lt; 2×"), "{note}");
    }

    #[test]
    fn ratios_and_fields_are_formatted_as_the_table_formats_them() {
        assert_eq!(format_ratio(3.04), "3.0×");
        assert_eq!(format_ratio(1.053), "1.05×");
        assert_eq!(format_ratio(12.4), "12×");
        assert_eq!(format_field(Field::Gbs, 1634.4), "1634");
        assert_eq!(format_field(Field::PctPeak, 74.84), "74.8 %");
        assert_eq!(format_field(Field::Sectors, 4.0), "4");
        assert_eq!(significant(60.0), "60");
        assert_eq!(significant(1.5), "1.5");
        assert_eq!(significant(253.4), "253");
    }

    /// A recording of the GPU the chapters show.
    fn recorded(lab: &str) -> LabResults {
        recorded_in("nvidia-h200-882b8b4e", lab)
    }

    fn recorded_in(gpu: &str, lab: &str) -> LabResults {
        let path = format!(
            "{}/../labs/recorded/{gpu}/{lab}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("a recording");
        LabResults::from_json(&text).expect("a valid recording")
    }

    fn shown(directive: &str, results: &LabResults) -> Result<String, String> {
        let query = Query::parse(directive).map_err(|e| e.to_string())?;
        figure(&query, Some(results)).map_err(|e| e.to_string())
    }

    #[test]
    fn a_scaled_value_multiplies_before_it_is_formatted() {
        let results = recorded("bank_conflicts");
        let rate = quantity(&results, "padded", Field::Rate).expect("a rate");
        assert_eq!(
            Query::parse("{{#value bank_conflicts.padded.rate * 4 / 1000}}"),
            Ok(Query::Value {
                lab: "bank_conflicts".into(),
                variant: "padded".into(),
                field: Field::Rate,
                scale: Scale {
                    times: 4,
                    over: 1000
                },
            })
        );
        let tbs = shown("{{#value bank_conflicts.padded.rate * 4 / 1000}}", &results);
        assert_eq!(tbs, Ok(crate::format::format_sig(rate * 4.0 / 1000.0)));
        assert_eq!(tbs.as_deref(), Ok("19.7"));
    }

    #[test]
    fn dram_bytes_and_sectors_come_from_the_labs_profile() {
        let results = recorded("strided");
        // Stride 1 reads its 256 MiB once; stride 16 reads 16 times as much, stride 64 no more.
        assert_eq!(
            shown("{{#value strided.s1.dram_read}}", &results).as_deref(),
            Ok("268")
        );
        for (row, times) in [
            ("s2", "2.0×"),
            ("s8", "8.0×"),
            ("s16", "16×"),
            ("s64", "16×"),
        ] {
            let ratio = format!("{{{{#ratio strided.{row} strided.s1 dram_read}}}}");
            assert_eq!(shown(&ratio, &results).as_deref(), Ok(times), "{row}");
        }
        assert_eq!(
            shown("{{#value strided.s4.sectors}}", &results).as_deref(),
            Ok("16")
        );
        assert_eq!(
            shown("{{#value strided.s64.sectors}}", &results).as_deref(),
            Ok("32")
        );
        let mut unprofiled = results.clone();
        unprofiled.profile = None;
        let err = shown("{{#value strided.s1.dram_read}}", &unprofiled).expect_err("a gap");
        assert!(err.contains("was not profiled"), "{err}");
    }

    #[test]
    fn dram_writes_and_l1_to_l2_writes_are_mib_from_the_profile() {
        let results = recorded("profile_transpose");
        // The naive transpose's partial stores: 2^31 bytes from L1 to L2, eight times the 2^28
        // of a tiled kernel, of which the L2 wrote about 290 MiB to DRAM.
        let value = |directive: &str| shown(directive, &results);
        assert_eq!(
            value("{{#value profile_transpose.naive.l2_write_from_l1}}").as_deref(),
            Ok("2048")
        );
        assert_eq!(
            value("{{#value profile_transpose.tiled.l2_write_from_l1}}").as_deref(),
            Ok("256")
        );
        assert_eq!(
            value("{{#value profile_transpose.naive.dram_write}}").as_deref(),
            Ok("290")
        );
        // The tiled kernel's 32-way conflict, counted; the naive kernel's 32-sector stores.
        assert_eq!(
            value("{{#value profile_transpose.tiled.conflicts_per_load}}").as_deref(),
            Ok("31.4")
        );
        assert_eq!(
            value("{{#value profile_transpose.tiled.wavefronts_per_load}}").as_deref(),
            Ok("32.4")
        );
        assert_eq!(
            value("{{#value profile_transpose.padded.wavefronts_per_load}}").as_deref(),
            Ok("1.09")
        );
        assert_eq!(
            value("{{#value profile_transpose.naive.store_sectors}}").as_deref(),
            Ok("32")
        );
        // The naive kernel does no shared loads: no conflicts per load to show.
        let err = value("{{#value profile_transpose.naive.conflicts_per_load}}");
        assert!(err.is_err_and(|e| e.contains("counter")));
        let mut unprofiled = results.clone();
        unprofiled.profile = None;
        let err = shown("{{#value profile_transpose.naive.dram_write}}", &unprofiled);
        assert!(err.is_err_and(|e| e.contains("was not profiled")));
    }

    #[test]
    fn registers_spills_and_blocks_per_sm_come_from_the_compile_results() {
        let results = recorded("hierarchy_sizing");
        let all = |field: &str| -> Vec<String> {
            [
                "tile64", "tile96", "tile128", "tile160", "tile192", "tile224",
            ]
            .iter()
            .map(|row| {
                shown(
                    &format!("{{{{#value hierarchy_sizing.{row}.{field}}}}}"),
                    &results,
                )
                .expect("a compile result")
            })
            .collect()
        };
        assert_eq!(all("registers"), ["32", "64", "121", "165", "252", "255"]);
        assert_eq!(all("blocks_per_sm"), ["8", "4", "2", "1", "1", "1"]);
        // Only the largest tile, at the 255-register cap, spills.
        assert_eq!(all("spill_stores"), ["0", "0", "0", "0", "0", "184"]);
        assert_eq!(all("spill_loads"), ["0", "0", "0", "0", "0", "184"]);
        let html = render(
            &Query::parse("{{#value hierarchy_sizing.tile224.registers}}").expect("ok"),
            Some(&results),
            "recorded",
        );
        assert!(html.contains("data-field=\"registers\""), "{html}");
        // A peer's row runs no kernel of the book's: no compile results.
        let transpose = recorded("transpose");
        let err = shown("{{#value transpose.cublas_geam.registers}}", &transpose);
        assert!(err.is_err_and(|e| e.contains("compile results")));
        let mut unreported = results.clone();
        for row in &mut unreported.variants {
            if let Some(resources) = row.resources.as_mut() {
                resources.spill_store_bytes = None;
            }
        }
        assert!(
            shown(
                "{{#value hierarchy_sizing.tile224.spill_stores}}",
                &unreported
            )
            .is_err()
        );
    }

    #[test]
    fn an_hbm_intensity_is_the_rows_work_over_its_counted_dram_bytes() {
        let results = recorded("sgemm");
        let row = results.variant("naive").expect("naive");
        let work = row.work.as_ref().expect("work").count as f64;
        let bytes = profiled(&results, "naive")
            .expect("counters")
            .dram_bytes
            .expect("DRAM bytes");
        assert_eq!(
            shown("{{#value sgemm.naive.dram_intensity}}", &results),
            Ok(crate::format::format_sig(work / bytes))
        );
        // cuBLAS's kernels are not profiled; the copy does no work.
        let err = shown("{{#value sgemm.cublas.dram_intensity}}", &results).expect_err("a gap");
        assert!(err.contains("cublas"), "{err}");
        assert!(shown("{{#value sgemm.memcpy.dram_intensity}}", &results).is_err());
    }

    #[test]
    fn a_ridge_divides_a_measured_rate_by_a_measured_or_theoretical_bandwidth() {
        let results = recorded("memory_wall");
        let rate =
            crate::format::from_giga(quantity(&results, "fma", Field::Rate).expect("a rate"));
        let gbs = quantity(&results, "memcpy", Field::Gbs).expect("a bandwidth");
        let peak = results.provenance.device.theoretical_gbs();
        let measured = Query::parse("{{#ridge memory_wall.fma memory_wall.memcpy}}").expect("ok");
        assert_eq!(measured.kind(), "ridge");
        assert_eq!(measured.variants(), ["fma", "memcpy"]);
        assert_eq!(
            figure(&measured, Some(&results)),
            Ok(crate::format::format_sig(
                rate / crate::format::from_giga(gbs)
            ))
        );
        let theoretical = Query::parse("{{#ridge memory_wall.fma peak}}").expect("ok");
        assert_eq!(theoretical.kind(), "ridge_peak");
        assert_eq!(
            figure(&theoretical, Some(&results)),
            Ok(crate::format::format_sig(
                rate / crate::format::from_giga(peak)
            ))
        );
        // A row without work has no rate to divide.
        let err = shown("{{#ridge memory_wall.memcpy peak}}", &results).expect_err("no work");
        assert!(err.contains("has no work"), "{err}");
    }

    #[test]
    fn a_device_property_reads_the_results_device() {
        let results = recorded("memory_wall");
        assert_eq!(
            shown("{{#device memory_wall}}", &results).as_deref(),
            Ok("NVIDIA H200")
        );
        assert_eq!(
            shown("{{#device memory_wall sms}}", &results).as_deref(),
            Ok("132")
        );
        // 65,536 32-bit registers per SM.
        assert_eq!(
            shown("{{#device memory_wall register_kib_per_sm}}", &results).as_deref(),
            Ok("256")
        );
        // The other board's recording predates the per-SM register count: a gap, with the reason.
        let older = recorded_in("nvidia-h200-d8d1645c", "memory_wall");
        let err = shown("{{#device memory_wall register_kib_per_sm}}", &older);
        assert!(err.is_err_and(|e| e.contains("do not record")));
        let html = render(
            &Query::parse("{{#device memory_wall peak_gbs}}").expect("ok"),
            Some(&results),
            "recorded",
        );
        assert!(html.contains("data-field=\"device\""), "{html}");
        assert!(html.contains(">4814</span>"), "{html}");
    }

    /// The host_device recording with its pinned copy row turned into a pipelined row of two
    /// chunks on two streams, each part 1 ms.
    fn pipelined() -> LabResults {
        use kernelbook_core::results::timeline::{Part, Span, Timeline};
        let mut results = recorded("host_device");
        let span = |stream, chunk, part, start_ms, end_ms| Span {
            stream,
            chunk,
            part,
            start_ms,
            end_ms,
        };
        let row = results
            .variants
            .iter_mut()
            .find(|v| v.name == "h2d_pinned")
            .expect("the row");
        row.timeline = Some(Timeline {
            streams: 2,
            chunks: 2,
            spans: vec![
                span(0, 0, Part::HostToDevice, 0.0, 1.0),
                span(0, 0, Part::Kernel, 1.0, 2.0),
                span(0, 0, Part::DeviceToHost, 2.0, 3.0),
                span(1, 1, Part::HostToDevice, 1.0, 2.0),
                span(1, 1, Part::Kernel, 2.0, 3.5),
                span(1, 1, Part::DeviceToHost, 3.5, 4.0),
            ],
            total_ms: 4.0,
        });
        results
    }

    #[test]
    fn a_pipelined_rows_figures_come_from_its_timeline() {
        let results = pipelined();
        let value = |field: &str| {
            shown(
                &format!("{{{{#value host_device.h2d_pinned.{field}}}}}"),
                &results,
            )
        };
        assert_eq!(value("overlap"), Ok("1.50×".into()));
        assert_eq!(value("serial"), Ok("6.000 ms".into()));
        assert_eq!(value("saved"), Ok("2.000 ms".into()));
        assert_eq!(value("kernels"), Ok("2.500 ms".into()));
        assert_eq!(value("h2d"), Ok("2.000 ms".into()));
        assert_eq!(value("d2h"), Ok("1.500 ms".into()));
        assert_eq!(value("bound"), Ok("2.500 ms".into()));
        // A row that is not pipelined has no such figure.
        let plain = shown("{{#value host_device.d2h_pinned.overlap}}", &results);
        assert!(plain.is_err_and(|e| e.contains("timeline")));
    }

    #[test]
    fn a_timeline_directive_draws_its_row_as_a_block() {
        let results = pipelined();
        assert_eq!(
            Query::parse("{{#timeline host_device.h2d_pinned}}"),
            Ok(Query::Timeline {
                lab: "host_device".into(),
                variant: "h2d_pinned".into()
            })
        );
        assert!(Query::parse("{{#timeline host_device}}").is_err());
        assert!(Query::parse("{{#timeline a.b c.d}}").is_err());
        let query = Query::parse("{{#timeline host_device.h2d_pinned}}").expect("query");
        let html = render(&query, Some(&results), "recorded");
        assert!(
            html.starts_with("<figure class=\"kernelbook-chart kernelbook-chart-timeline\""),
            "{html}"
        );
        assert_eq!(html.matches("<rect class=\"part\"").count(), 6);
        let gap = render(
            &Query::parse("{{#timeline host_device.d2h_pinned}}").expect("query"),
            Some(&results),
            "recorded",
        );
        assert!(gap.contains("kernelbook-gap"), "{gap}");
    }
}
