//! `kernelbook record`: measures labs and writes `labs/recorded/LAB.json`, the results a
//! machine without a GPU shows. Only fully verified runs are recorded.

use crate::progress::Spinner;
use crate::project::{Context, Project};
use anyhow::bail;
use kernelbook_core::expr::Params;
use kernelbook_core::results::Outcome;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::{LabOutcome, Mode};
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
    let mut labs = names
        .iter()
        .map(|name| project.lab(name, &Params::new()))
        .collect::<Result<Vec<_>, _>>()?;
    // Labs with a Python peer go last: the Python process imports torch while the rest measure.
    labs.sort_by_key(LabSpec::runs_python);
    let runner = project.runner(Mode::Auto);
    runner.prepare_refresh(&labs.iter().collect::<Vec<_>>());
    let mut failed = Vec::new();
    for lab in &labs {
        let name = &lab.name;
        let kernels = project.kernels_for(lab);
        let mut spinner = Spinner::new();
        let measured = runner.refresh(lab, &kernels, &mut spinner);
        spinner.finish();
        let results = measured?;
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
        if all_verified {
            runner.recorded().put(&results)?;
            println!("recorded {}\n", runner.recorded().path(name).display());
        } else {
            println!("not recorded: a variant failed\n");
            failed.push(name.clone());
        }
    }
    if !failed.is_empty() {
        bail!("not recorded (a variant failed): {}", failed.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
