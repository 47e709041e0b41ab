//! Turns a lab's results into what the reader sees. A pure view model ([`LabView`]) is built
//! from the lab and its results, then handlebars renders it into HTML (escaped). The terminal
//! table of `kernelbook run` is built from the same view model.

use handlebars::Handlebars;
use kernelbook_core::bandwidth::percent_of;
use kernelbook_core::results::{FailureStage, LabResults, Outcome, VariantResult};
use kernelbook_core::spec::{LabSpec, PlannedLab};
use kernelbook_runner::LabOutcome;
use serde::Serialize;

const LAB_TEMPLATE: &str = include_str!("../templates/lab.hbs");
const PLOT_TEMPLATE: &str = include_str!("../templates/plot.hbs");

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
    pub plot: Option<crate::plot::PlotView>,
    pub missing: Option<String>,
}

impl LabView {
    /// What `--strict` fails the build on: every variant that did not give a verified result,
    /// every compiler message, and missing results (a planned lab is not a failure).
    pub fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        if let (Some(why), false) = (&self.missing, self.origin_class == "planned") {
            failures.push(format!("lab `{}`: no results: {why}", self.lab));
        }
        for row in &self.rows {
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
        failures
    }
}

/// The view of a lab whose kernels are not written yet: it says so, and shows no numbers.
pub fn planned_view(lab: &PlannedLab) -> LabView {
    LabView {
        lab: lab.name.clone(),
        title: lab.title.clone(),
        origin_class: "planned".into(),
        origin: "Planned".into(),
        ceiling_label: String::new(),
        rows: Vec::new(),
        has_launch_stats: false,
        launch_rows: Vec::new(),
        provenance: None,
        notes: Vec::new(),
        problems: Vec::new(),
        plot: None,
        missing: Some(format!(
            "{} is described on this page, but its kernels are not in the book yet, so there is nothing to measure; \
             its table appears here once they are{}",
            lab.title,
            if lab.summary.is_empty() {
                ".".to_string()
            } else {
                format!(". It will measure: {}", lab.summary)
            }
        )),
    }
}

/// Builds the view of `lab` from where its results came from.
pub fn lab_view(lab: &LabSpec, outcome: &LabOutcome) -> LabView {
    let mut problems = Vec::new();
    let (results, origin_class, origin, mut notes) = match outcome {
        LabOutcome::Measured { results, cached } => (
            results,
            "live",
            if *cached {
                "Measured on this machine (cached from an earlier build)"
            } else {
                "Measured live on this machine"
            },
            Vec::new(),
        ),
        LabOutcome::Recorded {
            results,
            why,
            stale_kernels,
            compile_errors,
        } => {
            problems.extend(compile_errors.iter().map(|p| ProblemView {
                title: format!(
                    "{} no longer compiles (checked with NVRTC; no GPU ran it)",
                    p.kernel
                ),
                detail: p.message.clone(),
            }));
            let mut notes = vec![format!("These are recorded results: {why}.")];
            if !stale_kernels.is_empty() {
                notes.push(format!(
                    "The recorded numbers predate edits to {}: run the book on a GPU to measure the current code.",
                    stale_kernels.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                ));
            }
            (results, "recorded", "Recorded", notes)
        }
        LabOutcome::Missing { why } => {
            return LabView {
                lab: lab.name.clone(),
                title: lab.title.clone(),
                origin_class: "missing".into(),
                origin: "No results".into(),
                ceiling_label: String::new(),
                rows: Vec::new(),
                has_launch_stats: false,
                launch_rows: Vec::new(),
                provenance: None,
                notes: Vec::new(),
                problems: Vec::new(),
                plot: None,
                missing: Some(why.clone()),
            };
        }
    };
    if results.params != lab.params {
        notes.push(format!(
            "Measured with {}; the lab now asks for {}.",
            format_params(&results.params),
            format_params(&lab.params)
        ));
    }
    let device = &results.provenance.device;
    let peak = device.theoretical_gbs();
    let ceiling = results.ceiling_gbs();
    let ceiling_label = results
        .ceiling
        .as_deref()
        .map(|name| lab.variant(name).map_or(name, |v| v.label()).to_string())
        .unwrap_or_else(|| "ceiling".into());
    let rows: Vec<RowView> = results
        .variants
        .iter()
        .map(|v| row_view(lab, results, v, ceiling, peak))
        .collect();
    let peers: Vec<String> = results
        .variants
        .iter()
        .filter(|v| {
            v.kernel.is_none()
                && !matches!(
                    lab.variant(&v.name).and_then(|s| s.builtin),
                    Some(kernelbook_core::spec::Builtin::Memcpy)
                )
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
    if !peers.is_empty() {
        notes.push(format!("Peers on this machine — {}.", peers.join("; ")));
    }
    if rows.iter().any(|r| r.noisy) {
        notes.push(
            "A result marked noisy had a relative spread above 5 %: treat its figure with care."
                .into(),
        );
    }
    let samples = results
        .variants
        .iter()
        .map(|v| match &v.outcome {
            Outcome::Measured { samples_ms, .. } => samples_ms.len(),
            _ => 0,
        })
        .sum();
    for variant in &results.variants {
        if let Outcome::Failed {
            stage: FailureStage::Compile,
            message,
        } = &variant.outcome
        {
            problems.push(ProblemView {
                title: format!(
                    "{} did not compile",
                    variant.kernel.as_deref().unwrap_or(&variant.name)
                ),
                detail: message.clone(),
            });
        }
    }
    let p = &results.provenance;
    LabView {
        lab: lab.name.clone(),
        title: lab.title.clone(),
        origin_class: origin_class.into(),
        origin: origin.into(),
        ceiling_label,
        has_launch_stats: rows.iter().any(|r| r.kernel.is_some()),
        launch_rows: {
            let mut seen = std::collections::BTreeSet::new();
            rows.iter()
                .filter(|r| {
                    r.kernel.is_some()
                        && seen.insert((r.kernel.clone(), r.launch.clone(), r.registers.clone()))
                })
                .cloned()
                .collect()
        },
        rows,
        provenance: Some(ProvenanceView {
            device: device.name.clone(),
            arch: device.arch.clone(),
            sm_count: device.sm_count,
            l2: format!("{:.0} MiB", device.l2_bytes as f64 / (1 << 20) as f64),
            peak: format!("{peak:.0} GB/s"),
            driver: p.driver_version.clone(),
            compiler: p.compiler_version.clone(),
            params: format_params(&results.params),
            date: p.measured_at.clone(),
            samples,
            wall: format!("{:.1} s", p.wall_seconds),
            timing: p.timing_method.clone(),
            seed: p.input_seed,
            clocks: p
                .clocks
                .map(|c| format!("SM {} MHz, memory {} MHz", c.sm_mhz, c.memory_mhz)),
        }),
        notes,
        problems,
        plot: crate::plot::plot_view(lab, results),
        missing: None,
    }
}

fn row_view(
    lab: &LabSpec,
    results: &LabResults,
    v: &VariantResult,
    ceiling: Option<f64>,
    peak: f64,
) -> RowView {
    let spec = lab.variant(&v.name);
    let dash = || "–".to_string();
    let mut row = RowView {
        name: v.name.clone(),
        label: spec.map_or(v.name.as_str(), |s| s.label()).to_string(),
        access: spec.map(|s| s.access.clone()).unwrap_or_default(),
        kernel: v.kernel.clone(),
        status: "ok".into(),
        problem: None,
        unavailable: None,
        gbs: dash(),
        pct_ceiling: dash(),
        pct_peak: dash(),
        median: dash(),
        spread: dash(),
        noisy: false,
        is_ceiling: results.ceiling.as_deref() == Some(v.name.as_str()),
        launch: v
            .launch
            .map_or_else(dash, |l| format!("{} × {}", dims(l.grid), dims(l.block))),
        registers: dash(),
        spills: dash(),
        shared: dash(),
        blocks_per_sm: dash(),
        occupancy: dash(),
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
        Outcome::Measured { summary, noisy, .. } => {
            let gbs = v.effective_gbs().unwrap_or(0.0);
            row.gbs = format!("{gbs:.0}");
            row.pct_ceiling = ceiling
                .and_then(|c| percent_of(gbs, c))
                .map_or_else(dash, |p| format!("{p:.1} %"));
            row.pct_peak = percent_of(gbs, peak).map_or_else(dash, |p| format!("{p:.1} %"));
            row.median = format_ms(summary.median_ms);
            row.spread = format!("{:.1} %", summary.rel_spread * 100.0);
            row.noisy = *noisy;
        }
        Outcome::WrongResult { mismatch } => {
            row.status = "FAIL".into();
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

fn dims(d: [u32; 3]) -> String {
    match d {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("({x}, {y})"),
        [x, y, z] => format!("({x}, {y}, {z})"),
    }
}

/// "n = 8192, tile = 32".
pub fn format_params(params: &kernelbook_core::expr::Params) -> String {
    if params.is_empty() {
        return "no parameters".into();
    }
    params
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A kernel time at a readable scale: "152.3 µs", "1.204 ms".
pub fn format_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.1} µs", ms * 1000.0)
    } else {
        format!("{ms:.3} ms")
    }
}

fn format_bytes(bytes: u64) -> String {
    // Exact bytes: the point of the column is often a difference of a few words (the +1 pad).
    format!("{bytes} B")
}

/// The compiled templates.
#[derive(Debug)]
pub struct Templates {
    handlebars: Handlebars<'static>,
}

impl Templates {
    pub fn new() -> Self {
        let mut handlebars = Handlebars::new();
        handlebars.set_strict_mode(true);
        // The template is part of the binary; a syntax error in it is a bug caught by the tests.
        for (name, text) in [("lab", LAB_TEMPLATE), ("plot", PLOT_TEMPLATE)] {
            if let Err(err) = handlebars.register_template_string(name, text) {
                panic!("templates/{name}.hbs does not parse: {err}");
            }
        }
        Templates { handlebars }
    }

    /// The lab's HTML. It holds no blank line, so markdown keeps it as one HTML block.
    pub fn render_lab(&self, view: &LabView) -> Result<String, handlebars::RenderError> {
        let html = self.handlebars.render("lab", view)?;
        Ok(html
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

impl Default for Templates {
    fn default() -> Self {
        Self::new()
    }
}
