//! `kernelbook check EXERCISE [FILE]`: grades the learner's version of an exercise's starter
//! kernel. It compiles the kernel, verifies it against the CPU reference, times it beside the
//! starter and the reference solution, and prints PASS or an instructive FAIL. Without FILE it
//! uses `exercises/EXERCISE.cu`, which it first fills with the starter kernel.
//!
//! Exit status: 0 on PASS, 1 on FAIL, 2 when nothing could be graded (an unknown exercise, an
//! unreadable file, no GPU, a broken starter).

use super::check_report::{CheckReport, sanitizer_lines};
use crate::output::{self, say};
use crate::progress::Spinner;
use crate::project::{Context, Project};
use anyhow::{Context as _, anyhow, bail};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use kernelbook_core::KernelSource;
use kernelbook_core::exercise::ExerciseSpec;
use kernelbook_core::results::{FailureStage, LabResults, Outcome, VariantResult};
use kernelbook_core::spec::LabSpec;
use kernelbook_core::terminal;
use kernelbook_runner::exercise::{CheckPlan, LEARNER_VARIANT};
use kernelbook_runner::{Mode, RunError};
use mdbook_kernelbook::render::{format_ms, format_params};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The exit status when nothing was graded; 1 is kept for a FAIL.
const NOT_GRADED: u8 = 2;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The exercise: a lab with an `[exercise]` section.
    exercise: String,
    /// Your kernel. Defaults to exercises/EXERCISE.cu under the book's root, which is created
    /// with the starter kernel when it does not exist yet.
    file: Option<PathBuf>,
    /// Print the report as JSON (the verdict, the table's rows, the compiler's errors and the
    /// sanitizer's findings at lines of your file) instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    match check(ctx, &args) {
        Ok(code) => Ok(code),
        // A closed stdout ends the command quietly (see `main`).
        Err(err) if output::is_closed_stdout(&err) => Err(err),
        Err(err) => {
            output::notice(&format!("kernelbook: {err:#}"));
            Ok(ExitCode::from(NOT_GRADED))
        }
    }
}

fn check(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let name = args.exercise.as_str();
    let project = Project::load(ctx)?;
    let lab = exercise_lab(&project, name)?;
    let kernels = project.kernels_for(&lab);
    let file = match &args.file {
        Some(file) => {
            if !file.exists() {
                bail!(
                    "{}: no such file (run `kernelbook check {name}` without a file to get the \
                     starter kernel in exercises/{name}.cu)",
                    file.display()
                );
            }
            file.clone()
        }
        None => {
            let file = exercise_file(&ctx.root, name);
            let exists = file
                .try_exists()
                .with_context(|| format!("cannot look for {}", file.display()))?;
            if !exists {
                write_starter(&project, &lab, &file)?;
                return Ok(ExitCode::SUCCESS);
            }
            file
        }
    };
    let source = kernelbook_core::textfile::read_text(&file, kernelbook_core::textfile::MOST_BYTES)
        .map_err(|err| anyhow!("cannot read your kernel {err}"))?;
    let plan = CheckPlan::new(&lab, &kernels, &source, &file).map_err(|e| anyhow!(e))?;

    let runner = project.runner(Mode::Auto);
    let mut spinner = Spinner::new();
    let checked = runner.check_exercise(&plan, &mut spinner);
    spinner.finish();
    let checked = checked.map_err(|err| match err {
        RunError::Unavailable(why) => anyhow!("cannot check `{name}` on this machine: {why}"),
        other => anyhow!(other),
    })?;
    let verdict = &checked.verdict;
    let code = if verdict.is_pass() {
        ExitCode::SUCCESS
    } else if verdict.is_graded() {
        ExitCode::FAILURE
    } else {
        ExitCode::from(NOT_GRADED)
    };
    let out = &mut output::stdout();
    let printed = if args.json {
        let report = CheckReport::new(&lab, &checked, &file);
        let text = serde_json::to_string_pretty(&report).context("cannot write the report")?;
        say!(out, "{text}")
    } else {
        let why = sanitizer_lines(&lab, &checked).join("\n");
        write!(
            out,
            "{}",
            terminal::safe(&report(&lab, &checked.results, &file))
        )
        .and_then(|()| say!(out, "{verdict}"))
        .and_then(|()| match why.is_empty() {
            false => say!(out, "{}", terminal::safe(&why)),
            true => Ok(()),
        })
    };
    // The grade stands when its report could not be read: the exit status is the grade.
    Ok(output::verdict(printed, code)?)
}

/// The lab called `name`, if it is an exercise; otherwise an error that lists the exercises.
fn exercise_lab(project: &Project, name: &str) -> anyhow::Result<LabSpec> {
    let exercises: Vec<&str> = project
        .labs
        .ready
        .values()
        .filter(|lab| lab.exercise.is_some())
        .map(|lab| lab.name.as_str())
        .collect();
    let listed = if exercises.is_empty() {
        "this book has no exercises yet".to_string()
    } else {
        format!("exercises: {}", exercises.join(", "))
    };
    if project.labs.planned.contains_key(name) {
        bail!("lab `{name}` is planned: its kernels are not in the book yet ({listed})");
    }
    let Some(lab) = project.labs.ready.get(name) else {
        bail!("there is no exercise `{name}` ({listed})");
    };
    if lab.exercise.is_none() {
        bail!(
            "lab `{name}` ({}) is not an exercise: it has no [exercise] section ({listed})",
            lab.file.display()
        );
    }
    Ok(lab.clone())
}

/// Where the learner's version of exercise `name` is kept: `exercises/NAME.cu` under the
/// book's root.
pub fn exercise_file(root: &Path, name: &str) -> PathBuf {
    under_root(root, &Path::new("exercises").join(format!("{name}.cu")))
}

/// `path` under the book's root, without a leading `./` for the current folder.
fn under_root(root: &Path, path: &Path) -> PathBuf {
    if root == Path::new(".") || root.as_os_str().is_empty() {
        path.to_path_buf()
    } else {
        root.join(path)
    }
}

/// The exercise's starter kernel, as the book shows it.
pub fn starter_kernel<'p>(project: &'p Project, lab: &LabSpec) -> anyhow::Result<&'p KernelSource> {
    lab.exercise
        .as_ref()
        .and_then(|exercise| lab.variant(&exercise.starter))
        .and_then(|variant| variant.kernel_name())
        .and_then(|kernel| project.index.kernels.get(kernel))
        .ok_or_else(|| anyhow!("lab `{}` names no starter kernel of the book", lab.name))
}

/// Writes the exercise's starter kernel, exactly as the book shows it, to `file`.
fn write_starter(project: &Project, lab: &LabSpec, file: &Path) -> anyhow::Result<()> {
    let starter = starter_kernel(project, lab)?;
    if let Some(dir) = file.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    std::fs::write(file, &starter.source)
        .with_context(|| format!("cannot write the starter kernel to {}", file.display()))?;
    let out = &mut output::stdout();
    say!(
        out,
        "wrote the starter kernel `{}` (from {}) to {}",
        starter.name,
        starter.origin,
        file.display()
    )?;
    say!(
        out,
        "edit it, then run `kernelbook check {}` again",
        lab.name
    )?;
    Ok(())
}

/// The columns of the report's table, in the terminal and in `kernelbook serve`'s page.
pub const REPORT_HEADER: [&str; 7] = [
    "",
    "kernel",
    "median",
    "GB/s",
    "vs starter",
    "registers",
    "blocks/SM",
];

/// The lab's title, one row per measured variant (time, bandwidth, speed relative to the
/// starter, resources) and where it was measured; `file` is the learner's kernel.
fn report(lab: &LabSpec, results: &LabResults, file: &Path) -> String {
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_header(REPORT_HEADER.to_vec());
    for row in report_rows(lab, results, file) {
        table.add_row(output::cells(row));
    }
    format!(
        "{} ({})\n{table}\n{}\n",
        lab.title,
        lab.name,
        measured_on(results)
    )
}

/// The report's rows, one per measured variant, cells as [`REPORT_HEADER`] names them.
pub fn report_rows(lab: &LabSpec, results: &LabResults, file: &Path) -> Vec<[String; 7]> {
    let starter_ms = lab
        .exercise
        .as_ref()
        .and_then(|exercise| results.variant(&exercise.starter))
        .and_then(VariantResult::median_ms);
    let is = |role: fn(&ExerciseSpec) -> &String, name: &str| {
        lab.exercise.as_ref().is_some_and(|e| role(e) == name)
    };
    let mut rows = Vec::new();
    for variant in &results.variants {
        let role = if variant.name == LEARNER_VARIANT {
            "yours"
        } else if is(|e| &e.starter, &variant.name) {
            "starter"
        } else if is(|e| &e.solution, &variant.name) {
            "solution"
        } else {
            variant.name.as_str()
        };
        let kernel = if variant.name == LEARNER_VARIANT {
            file.display().to_string()
        } else {
            variant.kernel.clone().unwrap_or_default()
        };
        let gbs = variant
            .effective_gbs()
            .filter(|_| variant.bytes_moved > 0)
            .map(|gbs| format!("{gbs:.0}"))
            .unwrap_or_default();
        let relative = match (starter_ms, variant.median_ms()) {
            (Some(starter), Some(this)) => format!("{:.2}×", starter / this),
            _ => String::new(),
        };
        let (registers, blocks) = variant
            .resources
            .map(|r| (r.registers.to_string(), r.blocks_per_sm.to_string()))
            .unwrap_or_default();
        rows.push([
            role.to_string(),
            kernel,
            status(&variant.outcome),
            gbs,
            relative,
            registers,
            blocks,
        ]);
    }
    rows
}

/// "measured on NVIDIA H200 (sm_90), NVRTC 13.0, n = 1048576": the line under the table.
pub fn measured_on(results: &LabResults) -> String {
    let p = &results.provenance;
    format!(
        "measured on {} ({}), {}, {}",
        p.device.name,
        p.device.arch,
        p.compiler_version,
        format_params(&results.params)
    )
}

/// The "median" column: the time, or what went wrong instead.
fn status(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Measured { summary, noisy, .. } => {
            let time = format_ms(summary.median_ms);
            if *noisy {
                format!("{time} (noisy)")
            } else {
                time
            }
        }
        Outcome::WrongResult { .. } => "wrong result".into(),
        Outcome::Failed {
            stage: FailureStage::Compile,
            ..
        } => "does not compile".into(),
        Outcome::Failed {
            stage: FailureStage::Timeout,
            ..
        } => "timed out".into(),
        Outcome::Failed {
            stage: FailureStage::Crash,
            ..
        } => "crashed".into(),
        Outcome::Failed { stage, .. } => format!("failed at {}", stage.describe()),
        Outcome::Unavailable { .. } => "not available".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exercise lab the tests share.
    const LAB: &str = include_str!("../../../labs/fixtures/coalesce.toml");

    /// A variant's JSON: measured in `median_ms`, or with `outcome` as given.
    fn variant(name: &str, kernel: &str, outcome: &str) -> String {
        format!(
            r#"{{"name": "{name}", "kernel": "{kernel}", "source_hash": null, "compile_flags": [],
                "bytes_moved": 8388608, "launch": null,
                "resources": {{"registers": 16, "local_bytes": 0, "spill_store_bytes": 0,
                    "spill_load_bytes": 0, "shared_bytes": 0, "blocks_per_sm": 8,
                    "occupancy": 1.0}},
                "outcome": {outcome}}}"#
        )
    }

    fn measured(median_ms: f64) -> String {
        format!(
            r#"{{"status": "measured", "summary": {{"samples": 1, "median_ms": {median_ms},
                "min_ms": {median_ms}, "max_ms": {median_ms}, "mean_ms": {median_ms},
                "rel_spread": 0.0}}, "stop_reason": "converged", "noisy": false,
                "samples_ms": [{median_ms}]}}"#
        )
    }

    fn results(variants: &[String]) -> LabResults {
        let json = format!(
            r#"{{"format_version": 1, "lab": "coalesce", "params": {{"n": 1048576}},
                "provenance": {{"device": {{"backend": "cuda", "name": "NVIDIA H200",
                    "uuid": "GPU-0", "arch": "sm_90", "compute_capability": [9, 0],
                    "sm_count": 132, "l2_bytes": 62914560, "memory_bytes": 150109880320,
                    "memory_clock_khz": 3201000, "bus_width_bits": 6016,
                    "sm_clock_khz": 1980000, "max_threads_per_sm": 2048,
                    "max_shared_bytes_per_block": 232448}},
                  "driver_version": "13.0", "compiler_version": "NVRTC 13.0",
                  "runner_version": "0.1.0", "measured_at": "2026-01-01T00:00:00Z",
                  "wall_seconds": 1.0, "input_seed": 1, "timing_method": "events"}},
                "ceiling": null, "variants": [{}]}}"#,
            variants.join(", ")
        );
        LabResults::from_json(&json).expect("valid results")
    }

    #[test]
    fn the_report_compares_each_row_with_the_starter() {
        let lab = LabSpec::parse(LAB, Path::new("labs/coalesce.toml")).expect("lab");
        let results = results(&[
            variant("starter", "copy_chunked", &measured(0.4)),
            variant("yours", "yours:copy_chunked", &measured(0.1)),
            variant(
                "solution",
                "copy_coalesced",
                r#"{"status": "failed", "stage": "compile", "message": "no"}"#,
            ),
        ]);
        let report = report(&lab, &results, Path::new("exercises/coalesce.cu"));
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(lines[0], "Coalesce a chunked copy (coalesce)");
        let row = |role: &str| {
            lines
                .iter()
                .find(|l| l.starts_with(&format!("│ {role} ")))
                .map(|l| l.split(['│', '┆']).map(str::trim).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        assert_eq!(
            row("starter")[1..8],
            [
                "starter",
                "copy_chunked",
                "400.0 µs",
                "21",
                "1.00×",
                "16",
                "8"
            ]
        );
        assert_eq!(
            row("yours")[1..8],
            [
                "yours",
                "exercises/coalesce.cu",
                "100.0 µs",
                "84",
                "4.00×",
                "16",
                "8"
            ]
        );
        assert_eq!(
            row("solution")[1..8],
            [
                "solution",
                "copy_coalesced",
                "does not compile",
                "",
                "",
                "16",
                "8"
            ]
        );
        assert_eq!(
            lines.last().copied(),
            Some("measured on NVIDIA H200 (sm_90), NVRTC 13.0, n = 1048576")
        );
    }
}
