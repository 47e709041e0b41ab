//! `kernelbook record`: measures labs and writes `labs/recorded/<gpu>/LAB.json`, the results a
//! machine without a GPU shows, into the folder of the GPU that measured them. With
//! `--devices`, every selected GPU measures at once and records into its own folder. Only fully
//! verified runs are recorded.

use crate::gpus::{self, DeviceArgs, GpuRunner};
use crate::output::{self, cells, say};
use crate::project::{Context, Project};
use anyhow::bail;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use kernelbook_core::exercise::Baseline;
use kernelbook_core::expr::Params;
use kernelbook_core::results::{LabResults, Outcome};
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::plan::LabPlan;
use kernelbook_runner::store::{Recorded, Recordings};
use kernelbook_runner::{LabOutcome, LabRequest, Mode, RunError};
use mdbook_kernelbook::render::lab_view;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Labs to record; all labs when none is named.
    labs: Vec<String>,
    #[command(flatten)]
    gpus: DeviceArgs,
    /// Write the recordings into a folder per GPU under DIR instead of the book's recordings
    /// (a Slurm task's results folder).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Record into this GPU folder instead of the GPU's own: e.g. the folder the chapters show,
    /// re-recorded on another board of the same kind. One GPU only.
    #[arg(long, value_name = "NAME")]
    folder: Option<String>,
    /// Record every lab that verifies and go past those that do not; fail only where a GPU
    /// recorded no lab at all.
    #[arg(long)]
    keep_going: bool,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    if let Some(name) = &args.folder {
        check_folder_name(name)?;
    }
    let out = match &args.out {
        Some(dir) => {
            crate::paths::refuse_file_as_folder(dir, "--out")?;
            Some(project.writable(dir, "--out")?)
        }
        None => None,
    };
    let names: Vec<String> = if args.labs.is_empty() {
        project.labs.ready.keys().cloned().collect()
    } else {
        args.labs.clone()
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
    let selection = args.gpus.devices.clone().unwrap_or_default();
    let gpus = gpus::runners(&project, &selection, Mode::Auto)?;
    if args.folder.is_some() && gpus.len() > 1 {
        bail!("--folder names one GPU's folder: measure on one GPU (--devices) with it");
    }
    let root = match &out {
        Some(dir) => Recordings::new(dir),
        None => project.recordings()?,
    };
    // The runners measure side by side, each in the order that suits its GPU (labs with Python
    // rows last).
    let started = std::time::Instant::now();
    let measured = gpus::on_each(&gpus, |gpu, progress| {
        gpu.runner.measure_now(&requests, progress)
    });
    let wall = started.elapsed().as_secs_f64();
    let mut columns = Vec::new();
    for (gpu, measured) in gpus.iter().zip(measured) {
        let store = match &args.folder {
            Some(name) => root.folder(Some(name)),
            None => root.for_device(&gpu.info),
        };
        let recordings = record_gpu(&requests, measured, &store, gpu, gpus.len() > 1)?;
        columns.push((gpu.label(), recordings));
    }
    if columns.len() > 1 {
        let out = &mut output::stdout();
        say!(out, "{}", status_table(&names, &columns))?;
        say!(
            out,
            "{} GPUs measured side by side in {wall:.1} s",
            columns.len()
        )?;
    }
    if args.out.is_none() && args.folder.is_none() {
        tell_where_the_book_looks(&project, &gpus);
    }
    verdict(&names, &columns, args.keep_going)
}

/// `--folder` names one GPU folder under the recordings: a plain name, never a path that
/// could lead out of them (`../../x`).
fn check_folder_name(name: &str) -> anyhow::Result<()> {
    let mut parts = std::path::Path::new(name).components();
    let plain = matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(_)), None)
    );
    if !plain || name.contains(['/', '\\']) {
        bail!(
            "--folder {name}: a GPU folder's name (such as nvidia-h200-882b8b4e), not a path; \
             to record somewhere else, name that folder with --out DIR"
        );
    }
    Ok(())
}

/// Records each lab `gpu` measured into `store` and prints its table, under the GPU's name
/// where there are several.
fn record_gpu(
    requests: &[LabRequest<'_>],
    measured: Vec<Result<LabResults, RunError>>,
    store: &Recorded,
    gpu: &GpuRunner,
    several: bool,
) -> anyhow::Result<Vec<Recording>> {
    let out = &mut output::stdout();
    if several {
        say!(out, "== {} → {}", gpu.label(), store.dir().display())?;
    }
    let mut recordings = Vec::new();
    // Every lab is recorded whatever happens to stdout; a write error is reported after.
    let mut output_error = None;
    for (request, measured) in requests.iter().zip(measured) {
        let lab = request.lab;
        // What the measurement ran: the lab's plan for the GPU that measured it.
        let planned = measured.and_then(|results| {
            let plan = gpu.runner.plan_for(request, &results.provenance.device)?;
            Ok((plan, results))
        });
        let recording = match planned {
            Ok((plan, results)) => {
                let recording = record(store, (lab, &plan), &results)?;
                if let Err(err) = report(store, lab, &results, &recording) {
                    output_error.get_or_insert(err);
                }
                recording
            }
            Err(err) => {
                let why = err.to_string();
                if let Err(err) = say!(out, "{}: not measured: {why}", lab.name) {
                    output_error.get_or_insert(err);
                }
                Recording::Failed(why)
            }
        };
        recordings.push(recording);
    }
    match output_error {
        Some(err) => Err(err.into()),
        None => Ok(recordings),
    }
}

/// Whether a lab's results were recorded, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Recording {
    Recorded,
    /// A variant failed, was wrong or unavailable (other than for its architecture): only fully
    /// verified runs are recorded.
    VariantFailed,
    /// The figures would be distrusted when the book loads them.
    Implausible(String),
    /// The lab could not be measured on this GPU at all (it is busy, or failed to open).
    Failed(String),
}

impl Recording {
    /// The cell of the status table.
    fn cell(&self) -> String {
        match self {
            Recording::Recorded => "recorded".into(),
            Recording::VariantFailed => "not recorded: a variant failed".into(),
            Recording::Implausible(why) => format!("not recorded: implausible: {why}"),
            Recording::Failed(why) => format!("not measured: {why}"),
        }
    }
}

/// Records the lab's results if every variant was verified and timed (or needs an architecture
/// this GPU is not: a fact about the GPU, kept in its recording) and the results pass the checks
/// the book makes when it loads them.
fn record(
    store: &Recorded,
    (lab, plan): (&LabSpec, &LabPlan),
    results: &LabResults,
) -> anyhow::Result<Recording> {
    if !all_verified(lab, plan, results) {
        return Ok(Recording::VariantFailed);
    }
    // A file the book would ignore on load is not written.
    if let Err(err) = results.validate() {
        return Ok(Recording::Implausible(err.to_string()));
    }
    store.put(results)?;
    Ok(Recording::Recorded)
}

/// Whether every row was measured, or is one its plan marked unsupported on this GPU (it
/// `requires` an architecture) and did not run, or is a drill's starter whose wrong result is
/// the drill (an exercise timed against its solution: `baseline = "solution"`).
fn all_verified(lab: &LabSpec, plan: &LabPlan, results: &LabResults) -> bool {
    let wrong_on_purpose = |name: &str| {
        lab.exercise
            .as_ref()
            .is_some_and(|e| e.baseline == Baseline::Solution && e.starter == name)
    };
    results.variants.iter().all(|v| match v.outcome {
        Outcome::Measured { .. } => true,
        Outcome::Unavailable { .. } => plan
            .variant(&v.name)
            .is_some_and(|planned| planned.unsupported.is_some()),
        Outcome::WrongResult { .. } => wrong_on_purpose(&v.name),
        Outcome::Failed { .. } => false,
    })
}

/// Prints the lab's table and whether it was recorded.
fn report(
    store: &Recorded,
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
        Recording::Recorded => say!(out, "recorded {}\n", store.path(&lab.name).display()),
        other => say!(out, "{}\n", other.cell()),
    }
}

/// One row per lab, one column per GPU: what became of each lab on each GPU.
fn status_table(labs: &[String], columns: &[(String, Vec<Recording>)]) -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED).set_header(cells(
        std::iter::once("lab".to_string()).chain(columns.iter().map(|(gpu, _)| gpu.clone())),
    ));
    for (row, lab) in labs.iter().enumerate() {
        let statuses = columns
            .iter()
            .map(|(_, recordings)| recordings.get(row).map(Recording::cell).unwrap_or_default());
        table.add_row(cells(std::iter::once(lab.clone()).chain(statuses)));
    }
    table
}

/// The exit status: success when every lab was recorded on every GPU, or, with `keep_going`,
/// when every GPU recorded at least one lab; otherwise an error naming what was not recorded.
fn verdict(
    labs: &[String],
    columns: &[(String, Vec<Recording>)],
    keep_going: bool,
) -> anyhow::Result<ExitCode> {
    let several = columns.len() > 1;
    let missed: Vec<String> = columns
        .iter()
        .flat_map(|(gpu, recordings)| {
            labs.iter()
                .zip(recordings)
                .filter(|(_, r)| **r != Recording::Recorded)
                .map(move |(lab, _)| match several {
                    true => format!("{lab} on {gpu}"),
                    false => lab.clone(),
                })
        })
        .collect();
    let empty: Vec<&str> = columns
        .iter()
        .filter(|(_, recordings)| !recordings.contains(&Recording::Recorded))
        .map(|(gpu, _)| gpu.as_str())
        .collect();
    if keep_going && empty.is_empty() {
        if !missed.is_empty() {
            output::notice(&format!("kernelbook: not recorded: {}", missed.join(", ")));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if keep_going {
        bail!("nothing recorded on {}", empty.join(", "));
    }
    if !missed.is_empty() {
        bail!(
            "not recorded (a variant failed, the GPU could not measure, or its figures are implausible): {}",
            missed.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Says where the chapters look when the recordings just made went to another GPU's folder:
/// re-recording on another board of the book's GPU makes a folder of its own.
fn tell_where_the_book_looks(project: &Project, gpus: &[GpuRunner]) {
    let Ok(recordings) = project.recordings() else {
        return;
    };
    // Only a GPU folder that exists is worth naming (not the flat layout, nor nothing yet).
    let Some(shown) = project
        .recorded_dir
        .strip_prefix(recordings.root())
        .ok()
        .and_then(|folder| folder.to_str())
        .filter(|folder| recordings.folders().iter().any(|f| f == folder))
    else {
        return;
    };
    if gpus.iter().any(|gpu| gpu.folder() == shown) {
        return;
    }
    output::notice(&format!(
        "kernelbook: the chapters show the recordings in {} (book.toml's recorded-gpu); to replace those, record with --folder {shown}",
        project.recorded_dir.display()
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Vec<(String, Vec<Recording>)> {
        vec![
            (
                "GPU 0 (H200)".into(),
                vec![Recording::Recorded, Recording::VariantFailed],
            ),
            (
                "GPU 1 (H200)".into(),
                vec![
                    Recording::Failed("busy".into()),
                    Recording::Failed("busy".into()),
                ],
            ),
        ]
    }

    fn labs() -> Vec<String> {
        vec!["copy".into(), "triton".into()]
    }

    #[test]
    fn a_folder_is_a_name_not_a_path() {
        assert!(check_folder_name("nvidia-h200-882b8b4e").is_ok());
        for bad in ["../../x", "..", ".", "", "a/b", "/tmp/x", "a\\b"] {
            let err = check_folder_name(bad).expect_err(bad);
            assert!(err.to_string().contains("--out DIR"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_status_table_has_a_column_per_gpu() {
        let table = status_table(&labs(), &columns()).to_string();
        let copy = table.lines().find(|l| l.contains("copy")).expect("a row");
        assert!(
            copy.contains("recorded") && copy.contains("not measured: busy"),
            "{copy}"
        );
        assert!(
            table
                .lines()
                .nth(1)
                .is_some_and(|l| l.contains("GPU 1 (H200)"))
        );
    }

    #[test]
    fn a_gpu_that_records_nothing_fails_even_when_going_on() {
        let err = verdict(&labs(), &columns(), true).expect_err("GPU 1 recorded nothing");
        assert_eq!(err.to_string(), "nothing recorded on GPU 1 (H200)");
        let err = verdict(&labs(), &columns(), false).expect_err("not all recorded");
        assert!(
            err.to_string()
                .ends_with("triton on GPU 0 (H200), copy on GPU 1 (H200), triton on GPU 1 (H200)"),
            "{err}"
        );
        let first = &columns()[..1];
        assert!(
            verdict(&labs(), first, true).is_ok(),
            "one lab recorded: enough"
        );
        let err = verdict(&labs(), first, false).expect_err("triton failed");
        assert!(err.to_string().ends_with(": triton"), "{err}");
    }

    #[test]
    fn a_row_gated_by_its_architecture_does_not_stop_a_recording_and_a_missing_peer_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let lab = LabSpec::load(&root.join("labs/bandwidth.toml")).expect("lab 1");
        // Lab 1 as any GPU folder recorded it.
        let text = std::fs::read_dir(root.join("labs/recorded"))
            .expect("the recordings")
            .flatten()
            .find_map(|gpu| std::fs::read_to_string(gpu.path().join("bandwidth.json")).ok())
            .expect("lab 1's recording");
        let mut results = LabResults::from_json(&text).expect("a results file");
        // The plan for a GPU before Hopper, which marks `copy_bulk` (sm_90) unsupported.
        let kernels: std::collections::BTreeMap<String, kernelbook_core::KernelSource> = lab
            .kernel_refs()
            .into_iter()
            .map(|(name, _)| {
                let source = kernelbook_core::KernelSource {
                    name: name.into(),
                    source: format!("extern \"C\" __global__ void {name}() {{}}\n"),
                    origin: kernelbook_core::SourceLocation {
                        file: "chapter.md".into(),
                        line: 1,
                    },
                    language: Default::default(),
                };
                (name.to_string(), source)
            })
            .collect();
        let mut ampere = results.provenance.device.clone();
        (ampere.arch, ampere.compute_capability) = ("sm_80".into(), (8, 0));
        let target = kernelbook_runner::plan::Target::of(&ampere);
        let plan = kernelbook_runner::plan::compile(&lab, &kernels, &target, &Default::default())
            .expect("a plan");
        assert!(all_verified(&lab, &plan, &results));
        let unavailable = Outcome::Unavailable {
            reason: "needs a Hopper-class GPU (compute capability 9.0)".into(),
        };
        let set = |results: &mut LabResults, name: &str| {
            let row = results.variants.iter_mut().find(|v| v.name == name);
            row.expect("the row").outcome = unavailable.clone();
        };
        set(&mut results, "copy_bulk");
        assert!(
            all_verified(&lab, &plan, &results),
            "copy_bulk requires sm_90"
        );
        set(&mut results, "copy_float4");
        assert!(
            !all_verified(&lab, &plan, &results),
            "copy_float4 requires nothing"
        );
    }
}
