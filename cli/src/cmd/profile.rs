//! `kernelbook profile`: adds Nsight Compute's counters to labs' recordings
//! (`labs/recorded/GPU/LAB.json`, the GPU the chapters show) without timing them again, so that the figures a chapter quotes
//! from a recording stay true while its diagrams gain the counters they are compared with.

use crate::output::{self, say};
use crate::progress::Spinner;
use crate::project::{Context, Project};
use anyhow::{anyhow, bail};
use kernelbook_core::expr::Params;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::{LabRequest, Mode, Runner};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Labs to profile (each must have `profile = true`); every such lab when none is named.
    labs: Vec<String>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let names: Vec<String> = if args.labs.is_empty() {
        project
            .labs
            .ready
            .values()
            .filter(|lab| lab.profile)
            .map(|lab| lab.name.clone())
            .collect()
    } else {
        args.labs
    };
    let mut labs = Vec::new();
    for name in &names {
        let lab = project.lab(name, &Params::new())?;
        if !lab.profile {
            bail!(
                "lab `{name}` is not profiled: set `profile = true` in {}",
                lab.file.display()
            );
        }
        labs.push(lab);
    }
    let runner = project.runner(Mode::Auto);
    // Without a GPU every lab would fail alike: said once.
    if let Err(why) = runner.toolchain() {
        say!(
            &mut output::stdout(),
            "not profiled: {}: {why}. `kernelbook profile` runs the recorded kernels under Nsight \
             Compute on a GPU; without one the book shows the counters recorded with the labs",
            names.join(", ")
        )?;
        bail!("no counters added to: {}", names.join(", "));
    }
    let mut failed = Vec::new();
    for lab in &labs {
        if let Err(err) = profile_one(&project, &runner, lab) {
            say!(&mut output::stdout(), "not profiled: {}: {err:#}", lab.name)?;
            failed.push(lab.name.clone());
        }
    }
    if !failed.is_empty() {
        bail!("no counters added to: {}", failed.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

/// Profiles `lab`'s recorded kernels now and writes the counters into its recording.
fn profile_one(project: &Project, runner: &Runner, lab: &LabSpec) -> anyhow::Result<()> {
    let store = runner.recorded();
    let mut recorded = store
        .get(lab)
        .map_err(|distrust| anyhow!("{distrust}"))?
        .ok_or_else(|| {
            anyhow!(
                "no recording at {}: record the lab first (`kernelbook record {}`)",
                store.path(&lab.name).display(),
                lab.name
            )
        })?;
    let kernels = project.kernels_for(lab);
    let request = LabRequest {
        lab,
        kernels: &kernels,
    };
    let mut spinner = Spinner::new();
    let run = runner.profile_recorded(&request, &recorded, &mut spinner);
    spinner.finish();
    let run = run?;
    if run.kernels.is_empty() {
        bail!(
            "{}",
            run.problem
                .unwrap_or_else(|| "Nsight Compute gave no counters".into())
        );
    }
    let out = &mut output::stdout();
    if let Some(problem) = &run.problem {
        say!(
            out,
            "{}: some kernels have no counters: {problem}",
            lab.name
        )?;
    }
    let profiled = run.kernels.len();
    recorded.profile = Some(run);
    recorded
        .validate()
        .map_err(|err| anyhow!("the counters are implausible, not written: {err}"))?;
    store.put(&recorded)?;
    say!(
        out,
        "{}: counters of {profiled} kernel variant(s) added to {}",
        lab.name,
        store.path(&lab.name).display()
    )?;
    Ok(())
}
