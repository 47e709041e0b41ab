//! Turns a lab's results into what the reader sees. A pure view model ([`LabView`]) is built
//! from the lab and its results, then handlebars renders it into HTML (escaped). The terminal
//! table of `kernelbook run` is built from the same view model.

use crate::format::{format_gbs, format_percent, to_tera};
pub use crate::format::{format_ms, format_params, format_sig, rate_scale};
pub use crate::templates::Templates;
use kernelbook_core::results::figures::{
    self, Checked, Headline, LabFigures, Ridge, Role, Row, RowFigures, TimeRatio, counter_unit,
    moves_bytes, sm_clock_ghz,
};
use kernelbook_core::results::{FailureStage, LabResults, Outcome, VariantResult};
use kernelbook_core::spec::{LabSpec, PlannedLab};
use kernelbook_runner::{KernelProblem, LabOutcome};
use serde::Serialize;

/// One row of a lab's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowView {
    pub name: String,
    pub label: String,
    pub access: String,
    pub kernel: Option<String>,
    /// "ok", "FAIL" (wrong result) or "ERROR" (did not run).
    pub status: String,
    pub problem: Option<String>,
    /// The problem is the one the row is there to show: a drill's starter with a bug to find
    /// (`baseline = "solution"`) gives a wrong result on purpose. Shown, not a build failure.
    pub intended: bool,
    /// Why a peer was not measured here (it is not installed): not a failure.
    pub unavailable: Option<String>,
    pub gbs: String,
    pub pct_ceiling: String,
    pub pct_peak: String,
    pub median: String,
    pub spread: String,
    pub noisy: bool,
    pub is_ceiling: bool,
    pub launch: String,
    pub registers: String,
    pub spills: String,
    pub shared: String,
    pub blocks_per_sm: String,
    pub occupancy: String,
    /// The work rate in the lab's rate unit ([`LabView::rate_header`]), if the variant does work.
    pub rate: String,
    /// The kernel's own measurement (median), and in nanoseconds at the recorded SM clock.
    pub counter: String,
    pub counter_ns: String,
    /// The same row on the GPU the book was recorded on, beside a live measurement (GB/s, or
    /// the counter or median time where the lab moves no bytes); empty otherwise.
    pub beside: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProvenanceView {
    pub device: String,
    pub arch: String,
    pub sm_count: u32,
    pub l2: String,
    pub peak: String,
    pub driver: String,
    pub compiler: String,
    pub params: String,
    pub date: String,
    pub samples: usize,
    pub wall: String,
    pub timing: String,
    pub seed: u64,
    /// "SM 1980 MHz, memory 3201 MHz" where the driver reported them.
    pub clocks: Option<String>,
}

/// Something wrong with a lab that needs more room than a table cell: a compiler message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProblemView {
    pub title: String,
    pub detail: String,
}

/// Everything a lab's section shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabView {
    pub lab: String,
    pub title: String,
    /// "live", "recorded" or "missing": a CSS class.
    pub origin_class: String,
    /// e.g. "Measured live on this machine" or "Recorded".
    pub origin: String,
    pub ceiling_label: String,
    pub rows: Vec<RowView>,
    pub has_launch_stats: bool,
    /// The rows of the launch-statistics table: one per kernel and launch shape (a sweep runs one
    /// kernel many times).
    pub launch_rows: Vec<RowView>,
    pub provenance: Option<ProvenanceView>,
    pub notes: Vec<String>,
    pub problems: Vec<ProblemView>,
    /// The chart beside the table, drawn from the same results ([`crate::chart`]).
    pub chart: Option<crate::chart::ChartView>,
    pub missing: Option<String>,
    /// Whether the lab moves bytes worth a bandwidth column (a latency lab does not).
    pub show_bandwidth: bool,
    /// The header of the work-rate column, e.g. "TFLOP/s"; no column when `None`.
    pub rate_header: Option<String>,
    /// The header of the kernel-measured column, e.g. "cycles per load".
    pub counter_header: Option<String>,
    /// Whether the counter is in cycles and an SM clock was recorded, for a nanoseconds column.
    pub counter_ns_header: Option<String>,
    /// How many data columns a row has after the label and access pattern.
    pub data_columns: usize,
    /// Sentences comparing two variants' times, from the lab's `ratios`.
    pub ratios: Vec<String>,
    /// The ridge point from the lab's `ridge`, as a sentence.
    pub ridge: Option<String>,
    /// Nsight Compute's counters, for a lab that asks for a profile.
    pub profile: Option<ProfileView>,
    /// The hierarchy levels this lab stands for, with their measured value ([`LevelView`]).
    pub levels: Vec<LevelView>,
    /// What the levels' values are, e.g. "cycles per load" or "GB/s".
    pub levels_header: String,
    /// Kernels edited since the recorded numbers were measured (not rendered by this field: the
    /// notes say it); `--strict` fails on them.
    #[serde(skip)]
    pub stale_kernels: Vec<String>,
    /// The header of the recorded GPU's column ("GB/s on NVIDIA H200, recorded"), shown beside
    /// a live measurement on another GPU.
    pub beside_header: Option<String>,
}

/// One level of the hierarchy as this GPU measured it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelView {
    pub name: String,
    /// The variant it was read from (a working set).
    pub variant: String,
    pub value: String,
}

/// The summary rows of a lab's `levels`: the kernel's own count (and nanoseconds) where it
/// reports one, else effective bandwidth.
fn level_views(lab: &LabSpec, results: &LabResults, rows: &[RowView]) -> (Vec<LevelView>, String) {
    let counter = counter_unit(results);
    let header = counter
        .as_ref()
        .map_or_else(|| "GB/s".into(), |c| c.unit.clone());
    let views = lab
        .levels
        .iter()
        .filter_map(|level| {
            let row = rows.iter().find(|r| r.name == level.variant)?;
            if row.problem.is_some() || row.unavailable.is_some() {
                return None;
            }
            // Nanoseconds only make sense for a count of SM cycles.
            let in_cycles = counter.as_ref().is_some_and(|c| c.sm_cycles);
            let value = match &counter {
                Some(_) if in_cycles && row.counter_ns != "–" => {
                    format!("{} ({} ns)", row.counter, row.counter_ns)
                }
                Some(_) => row.counter.clone(),
                None => row.gbs.clone(),
            };
            Some(LevelView {
                name: level.name.clone(),
                variant: row.label.clone(),
                value,
            })
        })
        .collect();
    (views, header)
}

/// The profiler's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileView {
    pub tool: String,
    pub rows: Vec<ProfileRowView>,
    pub problem: Option<String>,
    /// "on NVIDIA H200, 2026-12-02T10:00:00Z" where the counters were taken apart from the
    /// timings (`kernelbook profile`).
    pub taken: Option<String>,
    /// The variants whose counters are being collected, by label.
    pub pending: Option<String>,
    /// Why the counters shown are the recording's.
    pub recorded: Option<String>,
}

/// One profiled kernel; every figure is "–" where the profiler did not give it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileRowView {
    pub label: String,
    pub kernel: String,
    pub load_conflicts: String,
    pub store_conflicts: String,
    pub conflicts_per_load: String,
    pub wavefronts_per_load: String,
    pub load_sectors_per_request: String,
    pub store_sectors_per_request: String,
    pub dram_read: String,
    pub dram_write: String,
    pub l1_to_l2_writes: String,
}

fn profile_view(lab: &LabSpec, results: &LabResults) -> Option<ProfileView> {
    let run = results.profile.as_ref()?;
    let dash = || "–".to_string();
    let count = |v: Option<f64>| v.map_or_else(dash, |v| format!("{v:.0}"));
    let ratio = |v: Option<f64>| v.map_or_else(dash, |v| format!("{v:.2}"));
    let mib =
        |v: Option<f64>| v.map_or_else(dash, |v| format!("{:.1} MiB", v / (1u64 << 20) as f64));
    Some(ProfileView {
        tool: run.tool.clone(),
        rows: run
            .kernels
            .iter()
            .map(|k| {
                let c = &k.counters;
                ProfileRowView {
                    label: lab
                        .variant(&k.variant)
                        .map_or(k.variant.as_str(), |v| v.label())
                        .to_string(),
                    kernel: c.kernel.clone(),
                    load_conflicts: count(c.shared_load_bank_conflicts),
                    store_conflicts: count(c.shared_store_bank_conflicts),
                    conflicts_per_load: ratio(c.conflicts_per_shared_load),
                    wavefronts_per_load: ratio(c.wavefronts_per_shared_load),
                    load_sectors_per_request: ratio(c.global_load_sectors_per_request),
                    store_sectors_per_request: ratio(c.global_store_sectors_per_request),
                    dram_read: mib(c.dram_read_bytes),
                    dram_write: mib(c.dram_write_bytes),
                    l1_to_l2_writes: mib(c.l2_write_bytes_from_l1),
                }
            })
            .collect(),
        problem: run.problem.clone(),
        taken: run
            .provenance
            .as_ref()
            .map(|p| format!("on {}, {}", p.device, p.measured_at)),
        pending: (!run.pending.is_empty()).then(|| {
            run.pending
                .iter()
                .map(|name| lab.variant(name).map_or(name.as_str(), |v| v.label()))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        recorded: run.from_recording.then(|| {
            "the recording's, shown because this build collected none and the kernels are unchanged since it was made"
                .to_string()
        }),
    })
}

impl LabView {
    /// A section with no table, only `why` (`origin` is its CSS class and its label).
    fn without_results(name: &str, title: &str, origin: (&str, &str), why: String) -> LabView {
        LabView {
            lab: name.to_string(),
            title: title.to_string(),
            origin_class: origin.0.into(),
            origin: origin.1.into(),
            ceiling_label: String::new(),
            rows: Vec::new(),
            has_launch_stats: false,
            launch_rows: Vec::new(),
            provenance: None,
            notes: Vec::new(),
            problems: Vec::new(),
            chart: None,
            show_bandwidth: false,
            rate_header: None,
            counter_header: None,
            counter_ns_header: None,
            data_columns: 0,
            ratios: Vec::new(),
            ridge: None,
            profile: None,
            levels: Vec::new(),
            levels_header: String::new(),
            stale_kernels: Vec::new(),
            beside_header: None,
            missing: Some(why),
        }
    }

    /// What `--strict` fails the build on: every variant that did not give a verified result,
    /// every compiler message, missing results (a planned lab is not a failure), and recorded
    /// numbers of kernels edited since (every number shown must be measured from the code shown).
    pub fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        if let (Some(why), false) = (&self.missing, self.origin_class == "planned") {
            failures.push(format!("lab `{}`: no results: {why}", self.lab));
        }
        for row in self.rows.iter().filter(|row| !row.intended) {
            if let Some(problem) = &row.problem {
                failures.push(format!(
                    "lab `{}`, {}: {} {problem}",
                    self.lab, row.label, row.status
                ));
            }
        }
        for problem in &self.problems {
            failures.push(format!(
                "lab `{}`: {}\n{}",
                self.lab, problem.title, problem.detail
            ));
        }
        if !self.stale_kernels.is_empty() {
            failures.push(format!(
                "lab `{}`: the recorded numbers were measured before edits to {}, so they do not belong to the code shown; \
                 measure the current code on a GPU (`kernelbook record {}`)",
                self.lab,
                self.stale_kernels
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.lab
            ));
        }
        failures
    }
}

/// The view of a lab whose kernels are not written yet: it says so, and shows no numbers.
pub fn planned_view(lab: &PlannedLab) -> LabView {
    LabView::without_results(
        &lab.name,
        &lab.title,
        ("planned", "Planned"),
        format!(
            "{} is described on this page, but its kernels are not in the book yet, so there is nothing to measure; \
             its table appears here once they are{}",
            lab.title,
            if lab.summary.is_empty() {
                ".".to_string()
            } else {
                format!(". It will measure: {}", lab.summary)
            }
        ),
    )
}

/// Builds the view of `lab` from where its results came from.
pub fn lab_view(lab: &LabSpec, outcome: &LabOutcome) -> LabView {
    let origin = match outcome {
        LabOutcome::Measured { results, cached } => Origin::measured(results, *cached),
        LabOutcome::Recorded {
            results,
            why,
            stale_kernels,
            compile_errors,
        } => Origin::recorded(results, why, stale_kernels, compile_errors),
        LabOutcome::Missing { why } => {
            return LabView::without_results(
                &lab.name,
                &lab.title,
                ("missing", "No results"),
                why.clone(),
            );
        }
    };
    results_view(lab, origin)
}

/// [`lab_view`], with the GPU the book was recorded on beside a live measurement made on
/// another GPU: each row gains that GPU's figure (GB/s, else the kernel's counter, else the
/// median time), so the reader sees both machines in one table, and the chart draws both.
pub fn lab_view_beside(
    lab: &LabSpec,
    outcome: &LabOutcome,
    recorded: Option<&LabResults>,
) -> LabView {
    let mut view = lab_view(lab, outcome);
    let (LabOutcome::Measured { results, .. }, Some(recorded)) = (outcome, recorded) else {
        return view;
    };
    if recorded.provenance.device.uuid == results.provenance.device.uuid {
        return view;
    }
    let device = &recorded.provenance.device.name;
    let headline = Headline::of(results);
    let rate = rate_scale(results);
    let header = match (&headline, &rate) {
        (Headline::Gbs, _) => format!("GB/s on the {device} (recorded)"),
        (Headline::Counter(unit), _) => format!("{}, {device} (recorded)", unit.unit),
        (Headline::Rate { .. }, Some((_, label))) => format!("{label} on the {device} (recorded)"),
        (Headline::Rate { .. } | Headline::Time, _) => {
            format!("Median time on the {device} (recorded)")
        }
    };
    let divisor = rate.map(|(divisor, _)| divisor);
    for row in &mut view.rows {
        row.beside = recorded
            .variant(&row.name)
            .and_then(|v| RowFigures::of(recorded, v))
            .and_then(|f| beside_figure(&headline, &f, divisor))
            .unwrap_or_else(|| "–".into());
    }
    view.beside_header = Some(header);
    view.data_columns += 1;
    view.chart = crate::chart::chart_view(
        lab,
        results,
        Some(crate::chart::Beside { results: recorded }),
    );
    view
}

/// The recorded GPU's headline figure of a row, as the table formats it.
fn beside_figure(
    headline: &Headline,
    row: &RowFigures,
    rate_divisor: Option<f64>,
) -> Option<String> {
    match headline {
        Headline::Gbs => Some(format_gbs(row.gbs)),
        Headline::Counter(_) => row.counter.map(format_sig),
        Headline::Rate { .. } => match (row.rate, rate_divisor) {
            (Some(rate), Some(divisor)) => Some(format_sig(rate / divisor)),
            _ => None,
        },
        Headline::Time => Some(format_ms(row.median_ms)),
    }
}

/// Where a lab's results came from, and what the reader must know about that before the table.
struct Origin<'a> {
    results: &'a LabResults,
    /// A CSS class: "live" or "recorded".
    class: &'static str,
    /// e.g. "Measured live on this machine" or "Recorded".
    label: &'static str,
    notes: Vec<String>,
    problems: Vec<ProblemView>,
    stale_kernels: Vec<String>,
    /// Whether the lab's variants the results lack get a "not recorded" row (a recording made
    /// before they were added); live results hold every variant they were asked for.
    fill_missing: bool,
}

impl<'a> Origin<'a> {
    fn measured(results: &'a LabResults, cached: bool) -> Self {
        Origin {
            results,
            class: "live",
            label: if cached {
                "Measured on this machine (cached from an earlier build)"
            } else {
                "Measured live on this machine"
            },
            notes: Vec::new(),
            problems: Vec::new(),
            stale_kernels: Vec::new(),
            fill_missing: false,
        }
    }

    /// Recorded results say why they are not live, which kernels were edited since the
    /// recording, and which of those edits no longer compile.
    fn recorded(
        results: &'a LabResults,
        why: &str,
        stale_kernels: &[String],
        compile_errors: &[KernelProblem],
    ) -> Self {
        let problems = compile_errors
            .iter()
            .map(|p| ProblemView {
                title: format!(
                    "{} no longer compiles (checked with NVRTC; no GPU ran it)",
                    p.kernel
                ),
                detail: p.message.clone(),
            })
            .collect();
        let mut notes = vec![format!("These are recorded results: {why}.")];
        if !stale_kernels.is_empty() {
            notes.push(format!(
                "The recorded numbers predate edits to {}: run the book on a GPU to measure the current code.",
                stale_kernels.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        Origin {
            results,
            class: "recorded",
            label: "Recorded",
            notes,
            problems,
            stale_kernels: stale_kernels.to_vec(),
            fill_missing: true,
        }
    }
}

/// The view of a lab that has results, measured or recorded.
fn results_view(lab: &LabSpec, origin: Origin<'_>) -> LabView {
    let results = origin.results;
    let columns = TableColumns::of(results);
    let figures = LabFigures::of(lab, results);
    let row = |v: &VariantResult| row_view(lab, figures.row(&v.name), v, &columns.row);
    let rows: Vec<RowView> = if origin.fill_missing {
        // The lab's order, its variants the recording lacks as "not recorded", then any the lab
        // does not have (the store refuses those; a caller that did not check still sees them).
        lab.variants
            .iter()
            .map(|spec| {
                results
                    .variant(&spec.name)
                    .map_or_else(|| not_recorded_row(lab, &spec.name), row)
            })
            .chain(
                results
                    .variants
                    .iter()
                    .filter(|v| lab.variant(&v.name).is_none())
                    .map(row),
            )
            .collect()
    } else {
        results.variants.iter().map(row).collect()
    };
    let mut notes = origin.notes;
    notes.extend(result_notes(lab, (results, &figures), &rows));
    let mut problems = origin.problems;
    problems.extend(compile_failures(results));
    let (levels, levels_header) = level_views(lab, results, &rows);
    LabView {
        lab: lab.name.clone(),
        title: lab.title.clone(),
        origin_class: origin.class.into(),
        origin: origin.label.into(),
        ceiling_label: ceiling_label(lab, results),
        has_launch_stats: rows.iter().any(|r| r.kernel.is_some()),
        launch_rows: launch_rows(&rows),
        rows,
        provenance: Some(provenance_view(results)),
        notes,
        problems,
        chart: crate::chart::chart_view(lab, results, None),
        missing: None,
        data_columns: columns.count(),
        show_bandwidth: columns.bandwidth,
        rate_header: columns.rate_header,
        counter_header: columns.counter_header,
        counter_ns_header: columns.counter_ns_header,
        ratios: ratio_sentences(lab, &figures.ratios),
        ridge: figures
            .ridge
            .as_ref()
            .map(|ridge| ridge_sentence(ridge, &results.provenance.device.name)),
        profile: profile_view(lab, results),
        levels,
        levels_header,
        stale_kernels: origin.stale_kernels,
        beside_header: None,
    }
}

/// The table's optional columns, decided from what the lab's variants measured.
struct TableColumns {
    /// Only a lab that moves bytes has the three bandwidth columns.
    bandwidth: bool,
    rate_header: Option<String>,
    counter_header: Option<String>,
    counter_ns_header: Option<String>,
    /// What each row needs to fill them.
    row: Columns,
}

impl TableColumns {
    fn of(results: &LabResults) -> Self {
        let rate_scale = rate_scale(results);
        let counter = counter_unit(results);
        // Nanoseconds need a count of SM cycles and the clock it ran at.
        let counter_ns_header = counter
            .as_ref()
            .filter(|unit| unit.sm_cycles && sm_clock_ghz(results).is_some())
            .map(|unit| format!("ns {}", unit.per()));
        TableColumns {
            bandwidth: moves_bytes(results),
            row: Columns {
                rate: rate_scale.as_ref().map(|(divisor, _)| *divisor),
            },
            rate_header: rate_scale.map(|(_, header)| header),
            counter_header: counter.map(|c| c.unit),
            counter_ns_header,
        }
    }

    /// How many data columns a row has after the label and access pattern: the time and its
    /// spread, then the optional ones.
    fn count(&self) -> usize {
        2 + if self.bandwidth { 3 } else { 0 }
            + usize::from(self.rate_header.is_some())
            + usize::from(self.counter_header.is_some())
            + usize::from(self.counter_ns_header.is_some())
    }
}

/// What the ceiling column is relative to: the ceiling variant's label.
fn ceiling_label(lab: &LabSpec, results: &LabResults) -> String {
    results
        .ceiling
        .as_deref()
        .map(|name| lab.variant(name).map_or(name, |v| v.label()).to_string())
        .unwrap_or_else(|| "ceiling".into())
}

/// One row per kernel and launch shape: a sweep runs one kernel many times with one launch.
fn launch_rows(rows: &[RowView]) -> Vec<RowView> {
    let mut seen = std::collections::BTreeSet::new();
    rows.iter()
        .filter(|r| {
            r.kernel.is_some()
                && seen.insert((r.kernel.clone(), r.launch.clone(), r.registers.clone()))
        })
        .cloned()
        .collect()
}

/// The notes under a table that the results call for, in the order the reader needs them.
fn result_notes(
    lab: &LabSpec,
    (results, figures): (&LabResults, &LabFigures<'_>),
    rows: &[RowView],
) -> Vec<String> {
    [
        changed_params_note(lab, results),
        peers_note(lab, results),
        sampled_check_note(results),
        checks_note(figures),
        noisy_note(rows),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Results measured with other parameters than the lab now asks for are still shown, with this.
fn changed_params_note(lab: &LabSpec, results: &LabResults) -> Option<String> {
    (results.params != lab.params).then(|| {
        format!(
            "Measured with {}; the lab now asks for {}.",
            format_params(&results.params),
            format_params(&lab.params)
        )
    })
}

/// Which peer libraries ([`Role::Peer`]) this machine has, and which implementation each one
/// picked, with the Python rows' software (a Triton kernel of the book needs Triton). The
/// runner's own copies (memcpy, the host copies) are not listed.
fn peers_note(lab: &LabSpec, results: &LabResults) -> Option<String> {
    let peers: Vec<String> = results
        .variants
        .iter()
        .filter(|v| {
            let builtin = lab.variant(&v.name).and_then(|s| s.builtin);
            v.kernel.is_none()
                && (Role::of_builtin(builtin) == Role::Peer
                    || builtin.is_some_and(|b| b.runs_in_python()))
        })
        .map(|v| {
            let label = lab.variant(&v.name).map_or(v.name.as_str(), |s| s.label());
            match (&v.outcome, &v.implementation) {
                (Outcome::Unavailable { reason }, _) => format!("{label}: not present ({reason})"),
                (_, Some(implementation)) => format!("{label}: {implementation}"),
                (_, None) => format!("{label}: present"),
            }
        })
        .collect();
    (!peers.is_empty()).then(|| {
        format!(
            "Peers on the machine that measured these results ({}) — {}.",
            results.provenance.device.name,
            peers.join("; ")
        )
    })
}

/// A check that compares only every n-th element says so, and why: the stride the plan wrote
/// into the results (a built-in CPU reference's own sample, or a lab's `compare.every`).
fn sampled_check_note(results: &LabResults) -> Option<String> {
    let (stride, checked) = results
        .variants
        .iter()
        .filter_map(|v| {
            let words = v.checked.as_deref();
            Some((figures::sample_stride(words)?, Checked::of(words)))
        })
        .max_by_key(|(stride, _)| *stride)?;
    Some(if checked == Checked::CpuReference {
        format!(
            "This lab's check compares every {stride}th output element with the CPU's (about {} in all, spread over the whole output): \
             recomputing every element would cost the CPU as much arithmetic as the kernel does.",
            kernelbook_core::spec::SAMPLED_ELEMENTS
        )
    } else {
        format!(
            "This lab's check compares every {stride}th output element with its reference's (the lab's `compare.every`)."
        )
    })
}

/// How the rows were checked, where the results say so and it is more than one built-in CPU
/// reference: "Checked: warp, warp_wrong within rtol 1e-4, atol 1e-3 against variant `naive`;
/// naive is the reference the other rows are checked against (not checked itself)."
fn checks_note(figures: &LabFigures<'_>) -> Option<String> {
    let mut groups: Vec<(&str, Checked, Vec<&str>)> = Vec::new();
    for row in &figures.rows {
        let Some(words) = row.result.checked.as_deref() else {
            continue;
        };
        match groups.iter_mut().find(|(how, _, _)| *how == words) {
            Some((_, _, names)) => names.push(&row.result.name),
            None => groups.push((words, row.checked, vec![&row.result.name])),
        }
    }
    let only_builtin = groups.len() == 1 && groups[0].1 == Checked::CpuReference;
    if groups.is_empty() || only_builtin {
        return None;
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(how, _, names)| format!("{}: {how}", names.join(", ")))
        .collect();
    Some(format!("How each row was checked — {}.", parts.join("; ")))
}

/// Explains the "noisy" mark, where a row has it.
fn noisy_note(rows: &[RowView]) -> Option<String> {
    rows.iter().any(|r| r.noisy).then(|| {
        format!(
            "A result marked noisy had a relative spread above {:.0} %: treat its figure with care.",
            figures::noisy_spread() * 100.0
        )
    })
}

/// A variant that did not compile gets the compiler's message in full, below the table.
fn compile_failures(results: &LabResults) -> impl Iterator<Item = ProblemView> + '_ {
    results
        .variants
        .iter()
        .filter_map(|variant| match &variant.outcome {
            Outcome::Failed {
                stage: FailureStage::Compile,
                message,
            } => Some(ProblemView {
                title: format!(
                    "{} did not compile",
                    variant.kernel.as_deref().unwrap_or(&variant.name)
                ),
                detail: message.clone(),
            }),
            _ => None,
        })
}

/// The machine, toolchain and run the results come from.
fn provenance_view(results: &LabResults) -> ProvenanceView {
    let p = &results.provenance;
    let device = &p.device;
    ProvenanceView {
        device: device.name.clone(),
        arch: device.arch.clone(),
        sm_count: device.sm_count,
        l2: format!("{:.0} MiB", device.l2_bytes as f64 / (1 << 20) as f64),
        peak: format!("{:.0} GB/s", device.theoretical_gbs()),
        driver: p.driver_version.clone(),
        compiler: p.compiler_version.clone(),
        params: format_params(&results.params),
        date: p.measured_at.clone(),
        samples: sample_count(results),
        wall: format!("{:.1} s", p.wall_seconds),
        timing: p.timing_method.clone(),
        seed: p.input_seed,
        clocks: p
            .clocks
            .map(|c| format!("SM {} MHz, memory {} MHz", c.sm_mhz, c.memory_mhz)),
    }
}

/// How many timed samples all the measured variants took together.
fn sample_count(results: &LabResults) -> usize {
    results
        .variants
        .iter()
        .map(|v| match &v.outcome {
            Outcome::Measured { samples_ms, .. } => samples_ms.len(),
            _ => 0,
        })
        .sum()
}

/// What the optional columns of a row need.
struct Columns {
    /// Work per second is divided by this for the rate column.
    rate: Option<f64>,
}

/// "tile[32][32] column reads took 20.1× as long as tile[32][33] column reads."
fn ratio_sentences(lab: &LabSpec, ratios: &[TimeRatio]) -> Vec<String> {
    let label = |name: &str| lab.variant(name).map_or(name, |v| v.label()).to_string();
    ratios
        .iter()
        .map(|ratio| {
            format!(
                "{} took {:.2}× as long as {} ({} against {}).",
                label(&ratio.slow),
                ratio.times,
                label(&ratio.fast),
                format_ms(ratio.slow_ms),
                format_ms(ratio.fast_ms)
            )
        })
        .collect()
}

/// The measured ridge point: FLOP/s of the compute variant over bytes/s of the memory variant,
/// on the GPU the results come from (this one's, or a recording's).
fn ridge_sentence(ridge: &Ridge, device: &str) -> String {
    let unit = &ridge.unit;
    format!(
        "Ridge point on the {device}: {:.1} T{unit}/s ÷ {:.0} GB/s = {:.1} {unit} per byte, both measured in the same run. \
         A kernel doing fewer {unit} per byte of HBM traffic than that is memory-bound there.",
        to_tera(ridge.work_per_second),
        ridge.gbs,
        ridge.intensity
    )
}

/// A row with the variant's label and nothing measured ("–" everywhere).
fn blank_row(lab: &LabSpec, name: &str) -> RowView {
    let spec = lab.variant(name);
    let dash = || "–".to_string();
    RowView {
        name: name.to_string(),
        label: spec.map_or(name, |s| s.label()).to_string(),
        access: spec.map(|s| s.access.clone()).unwrap_or_default(),
        kernel: None,
        status: "ok".into(),
        problem: None,
        intended: false,
        unavailable: None,
        gbs: dash(),
        pct_ceiling: dash(),
        pct_peak: dash(),
        median: dash(),
        spread: dash(),
        noisy: false,
        is_ceiling: false,
        launch: dash(),
        registers: dash(),
        spills: dash(),
        shared: dash(),
        blocks_per_sm: dash(),
        occupancy: dash(),
        rate: dash(),
        counter: dash(),
        counter_ns: dash(),
        beside: String::new(),
    }
}

/// The row of a variant the lab has and its recording lacks (it was added since): no number,
/// and a failure under `--strict`, since the table is not the lab's whole table.
fn not_recorded_row(lab: &LabSpec, name: &str) -> RowView {
    RowView {
        status: "not recorded".into(),
        problem: Some(
            "this variant was added to the lab after the recording; run the book on a GPU, or `kernelbook record`, to measure it"
                .into(),
        ),
        ..blank_row(lab, name)
    }
}

fn row_view(
    lab: &LabSpec,
    figures: Option<&Row<'_>>,
    v: &VariantResult,
    columns: &Columns,
) -> RowView {
    let dash = || "–".to_string();
    let mut row = RowView {
        kernel: v.kernel.clone(),
        is_ceiling: figures.is_some_and(|f| f.role == Role::Ceiling),
        launch: v
            .launch
            .map_or_else(dash, |l| format!("{} × {}", dims(l.grid), dims(l.block))),
        ..blank_row(lab, &v.name)
    };
    if let Some(r) = v.resources {
        row.registers = r.registers.to_string();
        row.spills = match (r.spill_store_bytes, r.spill_load_bytes) {
            (Some(stores), Some(loads)) => format!("{stores} B / {loads} B"),
            _ => "not reported".into(),
        };
        row.shared = format_bytes(
            u64::from(r.shared_bytes) + u64::from(v.launch.map_or(0, |l| l.shared_bytes)),
        );
        row.blocks_per_sm = r.blocks_per_sm.to_string();
        row.occupancy = format!("{:.0} %", r.occupancy * 100.0);
    }
    match &v.outcome {
        Outcome::Measured { noisy, .. } => {
            if let Some(figures) = figures.and_then(|f| f.figures.as_ref()) {
                measured_cells(&mut row, figures, columns);
            }
            row.noisy = *noisy;
        }
        Outcome::WrongResult { mismatch } => {
            row.intended = is_starter_with_a_bug(lab, &v.name);
            row.status = if row.intended {
                "FAIL, the bug this drill asks you to find".into()
            } else {
                "FAIL".into()
            };
            row.problem = Some(format!(
                "wrong result at index {}: expected {}, got {} ({} of the elements differ); no time is reported",
                mismatch.index, mismatch.expected, mismatch.actual, mismatch.count
            ));
        }
        Outcome::Unavailable { reason } => {
            row.status = "n/a".into();
            row.unavailable = Some(reason.clone());
        }
        Outcome::Failed {
            stage: FailureStage::Compile,
            ..
        } => {
            row.status = "ERROR".into();
            row.problem = Some("did not compile: the compiler's message is below the table".into());
        }
        Outcome::Failed { stage, message } => {
            row.status = "ERROR".into();
            row.problem = Some(format!("{} failed: {message}", stage.describe()));
        }
    }
    row
}

/// Whether `variant` is the starter of an exercise whose starter is wrong on purpose (a bug to
/// find, timed against the solution).
fn is_starter_with_a_bug(lab: &LabSpec, variant: &str) -> bool {
    lab.exercise.as_ref().is_some_and(|exercise| {
        exercise.starter == variant
            && exercise.baseline == kernelbook_core::exercise::Baseline::Solution
    })
}

/// A measured row's figures, formatted as the table shows them.
fn measured_cells(row: &mut RowView, figures: &RowFigures, columns: &Columns) {
    let dash = || "–".to_string();
    row.gbs = format_gbs(figures.gbs);
    row.pct_ceiling = figures.pct_ceiling.map_or_else(dash, format_percent);
    row.pct_peak = figures.pct_peak.map_or_else(dash, format_percent);
    row.median = format_ms(figures.median_ms);
    row.spread = format_percent(figures.rel_spread * 100.0);
    if let (Some(rate), Some(divisor)) = (figures.rate, columns.rate) {
        row.rate = format_sig(rate / divisor);
    }
    if let Some(median) = figures.counter {
        row.counter = format_sig(median);
    }
    if let Some(ns) = figures.counter_ns {
        row.counter_ns = format_sig(ns);
    }
}

fn dims(d: [u32; 3]) -> String {
    match d {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("({x}, {y})"),
        [x, y, z] => format!("({x}, {y}, {z})"),
    }
}

fn format_bytes(bytes: u64) -> String {
    // Exact bytes: the point of the column is often a difference of a few words (the +1 pad).
    format!("{bytes} B")
}
