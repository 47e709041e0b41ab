//! `kernelbook run LAB`: measures a lab now (ignoring the cache), prints its table, and keeps
//! the results in the cache for the next build. With `--devices`, every selected GPU measures
//! it at once; each GPU's table is printed, then the GPUs side by side.

use crate::gpus::{self, DeviceArgs, GpuRunner};
use crate::output::{self, say};
use crate::project::{Context, Project, parse_assignment};
use kernelbook_core::expr::Params;
use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::{LabOutcome, LabRequest, Mode, RunError};
use mdbook_kernelbook::gpus::view::{GpuColumn, lab_comparison};
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
    /// Also write the full results (raw samples, provenance) to this JSON file (with several
    /// GPUs, one file per GPU: NAME-<gpu folder>.json).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    gpus: DeviceArgs,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let overrides: Params = args.set.iter().cloned().collect();
    let lab = project.lab(&args.lab, &overrides)?;
    // Where the results go is checked before anything is measured.
    let json = match &args.json {
        Some(path) if path.is_dir() => anyhow::bail!(
            "--json {}: this is a folder; name the file to write, e.g. {}",
            path.display(),
            path.join(format!("{}.json", lab.name)).display()
        ),
        Some(path) => {
            let path = project.writable(path, "--json")?;
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder).map_err(|err| {
                    anyhow::anyhow!(
                        "--json {}: cannot make its folder {} ({err}); name a file in a folder \
                         you can write",
                        path.display(),
                        folder.display()
                    )
                })?;
            }
            Some(path)
        }
        None => None,
    };
    let kernels = project.kernels_for(&lab);
    let request = LabRequest {
        lab: &lab,
        kernels: &kernels,
    };
    let selection = args.gpus.devices.clone().unwrap_or_default();
    let gpus = gpus::runners(&project, &selection, Mode::Auto)?;
    let measured: Vec<Result<LabResults, RunError>> = gpus::on_each(&gpus, |gpu, progress| {
        let mut results = gpu.runner.measure_now(&[request], progress);
        results
            .pop()
            .unwrap_or_else(|| Err(RunError::lab(&lab.name, "not measured")))
    });
    if let [only] = &measured[..] {
        return print_one(&lab, only, json.as_deref());
    }
    print_side_by_side(&lab, &gpus, measured, json.as_deref())
}

/// One GPU's table, as `run` prints it without `--devices`: its exit status is 2 when a
/// variant failed.
fn print_one(
    lab: &LabSpec,
    measured: &Result<LabResults, RunError>,
    json: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let results = match measured {
        Ok(results) => results,
        Err(err) => anyhow::bail!("{err}"),
    };
    if let Some(path) = json {
        write_json(path, results)?;
    }
    let view = lab_view(
        lab,
        &LabOutcome::Measured {
            results: results.clone(),
            cached: false,
        },
    );
    let printed = crate::table::print(&mut output::stdout(), &view);
    let all_ok = view.rows.iter().all(|row| row.problem.is_none());
    let code = if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    };
    Ok(output::verdict(printed, code)?)
}

/// Writes `results` to the `--json` file `path`, an error naming it and what to do.
fn write_json(path: &std::path::Path, results: &LabResults) -> anyhow::Result<()> {
    kernelbook_runner::store::write_results(path, results).map_err(|err| {
        anyhow::anyhow!(
            "--json {}: cannot write it ({err}); name a file in a folder you can write",
            path.display()
        )
    })
}

/// Each GPU's table under its name, then the GPUs side by side; exit status 2 when a GPU could
/// not measure or a variant failed on one.
fn print_side_by_side(
    lab: &LabSpec,
    gpus: &[GpuRunner],
    measured: Vec<Result<LabResults, RunError>>,
    json: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let out = &mut output::stdout();
    let mut columns = Vec::new();
    let mut all_ok = true;
    for (gpu, measured) in gpus.iter().zip(measured) {
        say!(out, "== {}", gpu.label())?;
        let outcome = match measured {
            Ok(results) => {
                if let Some(path) = json {
                    let file = path.with_file_name(format!(
                        "{}-{}.json",
                        path.file_stem()
                            .and_then(|s| s.to_str())
                            .unwrap_or("results"),
                        gpu.folder()
                    ));
                    write_json(&file, &results)?;
                }
                LabOutcome::Measured {
                    results,
                    cached: false,
                }
            }
            Err(err) => LabOutcome::Missing {
                why: err.to_string(),
            },
        };
        let view = lab_view(lab, &outcome);
        all_ok &= view.missing.is_none() && view.rows.iter().all(|row| row.problem.is_none());
        crate::table::print(out, &view)?;
        say!(out, "")?;
        columns.push(GpuColumn {
            folder: gpu.folder(),
            live: true,
            labs: [(lab.name.clone(), outcome)].into(),
        });
    }
    let names: Vec<String> = gpus.iter().map(GpuRunner::label).collect();
    if let Some(compared) = lab_comparison(lab, &columns) {
        say!(out, "{}", crate::table::comparison_table(&compared, &names))?;
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}
