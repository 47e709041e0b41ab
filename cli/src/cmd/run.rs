//! `kernelbook run LAB`: measures a lab now (ignoring the cache), prints its table, and keeps
//! the results in the cache for the next build. With `--devices`, every selected GPU measures
//! it at once; each GPU's table is printed, then the GPUs side by side. `--format` prints the
//! table as Markdown, the results as kernelbook's CSV, or the results file itself (JSON);
//! `--json -` is the results file on stdout, as nvbench's `--json -` is.

use crate::gpus::{self, DeviceArgs, GpuRunner};
use crate::output::{self, say};
use crate::progress::Spinner;
use crate::project::{Context, Project, parse_assignment};
use kernelbook_core::expr::Params;
use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::sanitizer::Verdict;
use kernelbook_runner::{LabOutcome, LabRequest, Mode, RunError, SanitizedVariant};
use mdbook_kernelbook::gpus::view::{GpuColumn, lab_comparison};
use mdbook_kernelbook::render::{format_params, lab_view};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `run` prints on stdout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The lab's tables, as the book shows them.
    #[default]
    Table,
    /// The lab's main table as a Markdown pipe table, with its sentences and provenance.
    Md,
    /// kernelbook's CSV (as `kernelbook export --format csv`): a row per variant.
    Csv,
    /// The results file (raw samples, provenance); with several GPUs, a JSON list of them.
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The lab to run (see `kernelbook list`).
    lab: String,
    /// Override a size parameter, e.g. `--set n=4096` (repeatable).
    #[arg(long = "set", value_parser = parse_assignment)]
    set: Vec<(String, i64)>,
    /// Also write the full results (raw samples, provenance) to this JSON file (with several
    /// GPUs, one file per GPU: NAME-<gpu folder>.json); `-` writes them to stdout instead of
    /// the table (as `--format json`).
    #[arg(long)]
    json: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    #[command(flatten)]
    gpus: DeviceArgs,
}

/// `--json -` is `--format json`; with another `--format`, both would write stdout.
fn output_format(args: &Args) -> anyhow::Result<(Format, Option<&Path>)> {
    match args.json.as_deref() {
        Some(path) if path == Path::new("-") => match args.format {
            Format::Table | Format::Json => Ok((Format::Json, None)),
            other => anyhow::bail!(
                "--json - writes the results to stdout, where --format {} writes too: give one",
                format!("{other:?}").to_lowercase()
            ),
        },
        json => Ok((args.format, json)),
    }
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let (format, json) = output_format(&args)?;
    let project = Project::load(ctx)?;
    let overrides: Params = args.set.iter().cloned().collect();
    let lab = project.lab(&args.lab, &overrides)?;
    // Where the results go is checked before anything is measured.
    let json = match json {
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
    if format != Format::Table {
        return print_formatted(&lab, &gpus, &measured, format, json.as_deref());
    }
    let sanitized = sanitize_each(&request, &gpus, &measured);
    let code = if let [only] = &measured[..] {
        print_one(&lab, only, json.as_deref())?
    } else {
        print_side_by_side(&lab, &gpus, measured, json.as_deref())?
    };
    // A finding fails the run as a failed check does, even in a variant whose check passed.
    let printed = print_sanitized(&mut output::stdout(), &gpus, &sanitized);
    let found = sanitized.iter().flatten().any(SanitizedVariant::found);
    let code = if found { ExitCode::from(2) } else { code };
    Ok(output::verdict(printed, code)?)
}

/// Each GPU's variants run under compute-sanitizer after it measured them: those that failed,
/// and every one where the lab asks (`sanitize = true`); a GPU whose lab could not be planned
/// again says why.
fn sanitize_each(
    request: &LabRequest<'_>,
    gpus: &[GpuRunner],
    measured: &[Result<LabResults, RunError>],
) -> Vec<Vec<SanitizedVariant>> {
    let mut spinner = Spinner::new();
    let sanitized = gpus
        .iter()
        .zip(measured)
        .map(|(gpu, measured)| match measured {
            Ok(results) => gpu
                .runner
                .sanitize_lab(request, results, &mut spinner)
                .unwrap_or_else(|err| {
                    vec![SanitizedVariant {
                        variant: String::new(),
                        sizes: Params::new(),
                        verdict: Verdict::Unavailable {
                            why: err.to_string(),
                        },
                    }]
                }),
            Err(_) => Vec::new(),
        })
        .collect();
    spinner.finish();
    sanitized
}

/// What the sanitizer said of each variant it ran, under the tables.
fn print_sanitized(
    out: &mut impl std::io::Write,
    gpus: &[GpuRunner],
    sanitized: &[Vec<SanitizedVariant>],
) -> std::io::Result<()> {
    for (gpu, runs) in gpus.iter().zip(sanitized) {
        for run in runs {
            let on = if gpus.len() > 1 {
                format!(" on GPU {} ({})", gpu.ordinal, gpu.info.name)
            } else {
                String::new()
            };
            let what = if run.variant.is_empty() {
                "compute-sanitizer".to_string()
            } else {
                format!("`{}` under compute-sanitizer", run.variant)
            };
            let at = if run.sizes.is_empty() {
                String::new()
            } else {
                format!(" at {}", format_params(&run.sizes))
            };
            say!(out, "{what}{on}{at}:")?;
            for line in run.verdict.lines() {
                say!(out, "  {line}")?;
            }
        }
    }
    Ok(())
}

/// The file `--json PATH` names for `gpu`'s results: PATH itself with one GPU, else one per
/// GPU beside it (`NAME-<gpu folder>.json`).
fn json_path(path: &Path, gpu: &GpuRunner, several: bool) -> PathBuf {
    if !several {
        return path.to_path_buf();
    }
    path.with_file_name(format!(
        "{}-{}.json",
        path.file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("results"),
        gpu.folder()
    ))
}

/// `--format md|csv|json`: every GPU's results in that format; exit status 2 when a GPU could
/// not measure or a variant failed.
fn print_formatted(
    lab: &LabSpec,
    gpus: &[GpuRunner],
    measured: &[Result<LabResults, RunError>],
    format: Format,
    json: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let mut all_ok = true;
    let mut texts = Vec::new();
    let mut exported = Vec::new();
    for (gpu, measured) in gpus.iter().zip(measured) {
        let outcome = match measured {
            Ok(results) => {
                if let Some(path) = json {
                    let file = json_path(path, gpu, gpus.len() > 1);
                    write_json(&file, results)?;
                }
                exported.push(crate::export::GpuResults {
                    folder: gpu.folder(),
                    results: vec![results.clone()],
                });
                LabOutcome::Measured {
                    results: results.clone(),
                    cached: false,
                }
            }
            Err(err) => {
                output::notice(&format!("kernelbook: {}: {err}", gpu.label()));
                LabOutcome::Missing {
                    why: err.to_string(),
                }
            }
        };
        let view = lab_view(lab, &outcome);
        all_ok &= view.missing.is_none() && view.rows.iter().all(|row| row.problem.is_none());
        if format == Format::Md {
            let heading = if gpus.len() > 1 {
                format!("# {}\n\n", gpu.label())
            } else {
                String::new()
            };
            texts.push(format!("{heading}{}", crate::table::markdown(&view)));
        }
    }
    let text = match format {
        Format::Md => texts.join("\n"),
        Format::Csv => crate::export::csv_text(&exported)?,
        _ => {
            let results: Vec<&LabResults> = exported.iter().flat_map(|g| &g.results).collect();
            let mut text = match &results[..] {
                [one] => one.to_json(),
                all => serde_json::to_string_pretty(all)?,
            };
            text.push('\n');
            text
        }
    };
    let printed = match format {
        // JSON and CSV escape what they carry themselves; Markdown passes through the escaper.
        Format::Md => say!(&mut output::stdout(), "{}", text.trim_end()),
        _ => output::stdout().write_all(text.as_bytes()),
    };
    let code = if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    };
    Ok(output::verdict(printed, code)?)
}

/// One GPU's table, as `run` prints it without `--devices`: its exit status is 2 when a
/// variant failed.
fn print_one(
    lab: &LabSpec,
    measured: &Result<LabResults, RunError>,
    json: Option<&Path>,
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
    json: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let out = &mut output::stdout();
    let mut columns = Vec::new();
    let mut all_ok = true;
    for (gpu, measured) in gpus.iter().zip(measured) {
        say!(out, "== {}", gpu.label())?;
        let outcome = match measured {
            Ok(results) => {
                if let Some(path) = json {
                    write_json(&json_path(path, gpu, true), &results)?;
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
