//! `kernelbook record`: measures labs and writes `labs/recorded/LAB.json`, the results a
//! machine without a GPU shows. Only fully verified runs are recorded.

use crate::output::{self, say};
use crate::progress::Spinner;
use crate::project::{Context, Project};
use anyhow::bail;
use kernelbook_core::expr::Params;
use kernelbook_core::results::{LabResults, Outcome};
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::{LabOutcome, LabRequest, Mode, Runner};
use mdbook_kernelbook::render::lab_view;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Labs to record; all labs when none is named.
    labs: Vec<String>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let names: Vec<String> = if args.labs.is_empty() {
        project.labs.ready.keys().cloned().collect()
    } else {
        args.labs
    };
    let labs = names
        .iter()
        .map(|name| project.lab(name, &Params::new()))
        .collect::<Result<Vec<_>, _>>()?;
    let kernels: Vec<_> = labs.iter().map(|lab| project.kernels_for(lab)).collect();
    let requests: Vec<LabRequest<'_>> = labs
        .iter()
        .zip(&kernels)
        .map(|(lab, kernels)| LabRequest { lab, kernels })
        .collect();
    let runner = project.runner(Mode::Auto);
    let mut spinner = Spinner::new();
    // The runner measures them in the order that suits the GPU (labs with Python rows last).
    let measured = runner.measure_now(&requests, &mut spinner);
    spinner.finish();
    let mut failed = Vec::new();
    // Every lab is recorded whatever happens to stdout; a write error is reported after.
    let mut output_error = None;
    for (lab, measured) in labs.iter().zip(measured) {
        let results = measured?;
        let recording = record(&runner, lab, &results)?;
        if let Err(err) = report(&runner, lab, &results, &recording) {
            output_error.get_or_insert(err);
        }
        if !matches!(recording, Recording::Recorded) {
            failed.push(lab.name.clone());
        }
    }
    if let Some(err) = output_error {
        return Err(err.into());
    }
    if !failed.is_empty() {
        bail!(
            "not recorded (a variant failed, or its figures are implausible): {}",
            failed.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether a lab's results were recorded, and if not, why.
#[derive(Debug)]
enum Recording {
    Recorded,
    /// A variant failed, was wrong or unavailable (other than for its architecture): only fully
    /// verified runs are recorded.
    VariantFailed,
    /// The figures would be distrusted when the book loads them.
    Implausible(String),
}

/// Records the lab's results if every variant was verified and timed (or needs an architecture
/// this GPU is not: a fact about the GPU, kept in its recording) and the results pass the checks
/// the book makes when it loads them.
fn record(runner: &Runner, lab: &LabSpec, results: &LabResults) -> anyhow::Result<Recording> {
    if !all_verified(lab, results) {
        return Ok(Recording::VariantFailed);
    }
    // A file the book would ignore on load is not written.
    if let Err(err) = results.validate() {
        return Ok(Recording::Implausible(err.to_string()));
    }
    runner.recorded().put(results)?;
    Ok(Recording::Recorded)
}

/// Whether every row was measured, or is one that `requires` an architecture and did not run.
fn all_verified(lab: &LabSpec, results: &LabResults) -> bool {
    results.variants.iter().all(|v| match v.outcome {
        Outcome::Measured { .. } => true,
        Outcome::Unavailable { .. } => lab
            .variants
            .iter()
            .any(|spec| spec.name == v.name && spec.requires.is_some()),
        _ => false,
    })
}

/// Prints the lab's table and whether it was recorded.
fn report(
    runner: &Runner,
    lab: &LabSpec,
    results: &LabResults,
    recording: &Recording,
) -> std::io::Result<()> {
    let out = &mut output::stdout();
    let outcome = LabOutcome::Measured {
        results: results.clone(),
        cached: false,
    };
    crate::table::print(out, &lab_view(lab, &outcome))?;
    match recording {
        Recording::Recorded => say!(
            out,
            "recorded {}\n",
            runner.recorded().path(&lab.name).display()
        ),
        Recording::VariantFailed => say!(out, "not recorded: a variant failed\n"),
        Recording::Implausible(why) => say!(out, "not recorded: implausible results: {why}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_row_gated_by_its_architecture_does_not_stop_a_recording_and_a_missing_peer_does() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let lab = LabSpec::load(&root.join("labs/bandwidth.toml")).expect("lab 1");
        let text = std::fs::read_to_string(root.join("labs/recorded/bandwidth.json"))
            .expect("lab 1's recording");
        let mut results = LabResults::from_json(&text).expect("a results file");
        assert!(all_verified(&lab, &results));
        let unavailable = Outcome::Unavailable {
            reason: "needs a Hopper-class GPU (compute capability 9.0)".into(),
        };
        let set = |results: &mut LabResults, name: &str| {
            let row = results.variants.iter_mut().find(|v| v.name == name);
            row.expect("the row").outcome = unavailable.clone();
        };
        set(&mut results, "copy_bulk");
        assert!(all_verified(&lab, &results), "copy_bulk requires sm_90");
        set(&mut results, "copy_float4");
        assert!(
            !all_verified(&lab, &results),
            "copy_float4 requires nothing"
        );
    }
}
