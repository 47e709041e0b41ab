//! `kernelbook run LAB`: measures a lab now (ignoring the cache), prints its table, and keeps
//! the results in the cache for the next build.

use crate::progress::Spinner;
use crate::project::{Context, Project, parse_assignment};
use kernelbook_core::expr::Params;
use kernelbook_runner::{LabOutcome, LabRequest, Mode};
use mdbook_kernelbook::render::lab_view;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The lab to run (see `kernelbook list`).
    lab: String,
    /// Override a size parameter, e.g. `--set n=4096` (repeatable).
    #[arg(long = "set", value_parser = parse_assignment)]
    set: Vec<(String, i64)>,
    /// Also write the full results (raw samples, provenance) to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let overrides: Params = args.set.into_iter().collect();
    let lab = project.lab(&args.lab, &overrides)?;
    let kernels = project.kernels_for(&lab);
    let runner = project.runner(Mode::Auto);
    let mut spinner = Spinner::new();
    let request = LabRequest {
        lab: &lab,
        kernels: &kernels,
    };
    let measured = runner.measure_now(&[request], &mut spinner);
    spinner.finish();
    let results = measured
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("lab `{}` was not measured", lab.name))??;
    if let Some(path) = &args.json {
        kernelbook_runner::store::write_results(path, &results)?;
    }
    let view = lab_view(
        &lab,
        &LabOutcome::Measured {
            results: results.clone(),
            cached: false,
        },
    );
    let printed = crate::table::print(&mut crate::output::stdout(), &view);
    let all_ok = view.rows.iter().all(|row| row.problem.is_none());
    let code = if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    };
    Ok(crate::output::verdict(printed, code)?)
}
