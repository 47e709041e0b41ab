//! `kernelbook record`: measures labs and writes `labs/recorded/LAB.json`, the results a
//! machine without a GPU shows. Only fully verified runs are recorded.

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
    for (lab, measured) in labs.iter().zip(measured) {
        let results = measured?;
        if record(&runner, lab, &results)? {
            continue;
        }
        failed.push(lab.name.clone());
    }
    if !failed.is_empty() {
        bail!(
            "not recorded (a variant failed, or its figures are implausible): {}",
            failed.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the lab's table and records its results if every variant was verified and timed and
/// the results pass validation; returns whether it did.
fn record(runner: &Runner, lab: &LabSpec, results: &LabResults) -> anyhow::Result<bool> {
    crate::table::print(&lab_view(
        lab,
        &LabOutcome::Measured {
            results: results.clone(),
            cached: false,
        },
    ));
    let all_verified = results
        .variants
        .iter()
        .all(|v| matches!(v.outcome, Outcome::Measured { .. }));
    if !all_verified {
        println!("not recorded: a variant failed\n");
        return Ok(false);
    }
    // A file the book would ignore on load is not written.
    if let Err(err) = results.validate() {
        println!("not recorded: implausible results: {err}\n");
        return Ok(false);
    }
    runner.recorded().put(results)?;
    println!("recorded {}\n", runner.recorded().path(&lab.name).display());
    Ok(true)
}
