//! `kernelbook export --format nvbench-json|csv|sweep-csv`: the recordings of one GPU or
//! several, in nvbench's JSON layout (`nvbench-compare-robust a.json b.json` diffs two GPUs),
//! as kernelbook's own CSV, or a lab's sweep as a wide CSV along its axis.

use crate::export::sweep::{Metric, SweepRequest};
use crate::export::{self, GpuResults};
use crate::output;
use crate::project::{Context, Project};
use anyhow::{Context as _, bail};
use kernelbook_runner::store::Recordings;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// nvbench's JSON output, file version 1.0.0 (what nvbench-compare-robust and
    /// nvbench-compare-legacy read); see --output-dir.
    NvbenchJson,
    /// kernelbook's own CSV: a row per GPU, lab and variant, a column per parameter.
    Csv,
    /// One lab's sweep (`--lab`): a row per value of its axis, a column per series.
    SweepCsv,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_enum)]
    format: Format,
    /// The GPU folders to export (repeatable); every folder of the recordings by default.
    /// nvbench-compare-robust diffs files of one GPU each: export them one at a time, or all
    /// at once with --output-dir.
    #[arg(long = "gpu", value_name = "FOLDER")]
    gpus: Vec<String>,
    /// Read the recordings (a folder per GPU) from DIR instead of book.toml's `recordings`.
    #[arg(long, value_name = "DIR")]
    recordings: Option<PathBuf>,
    /// Write to FILE instead of stdout (nvbench's JSON: with its samples' files in FILE-bin/).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// nvbench's JSON: a file per GPU in DIR (DIR/FOLDER.json, its samples in
    /// DIR/FOLDER.json-bin/), all with the same states, a state a GPU lacks marked skipped, so
    /// that nvbench-compare-robust compares any two of them.
    #[arg(long, value_name = "DIR", conflicts_with = "output")]
    output_dir: Option<PathBuf>,
    /// The lab whose sweep `--format sweep-csv` exports.
    #[arg(long, value_name = "LAB", required_if_eq("format", "sweep-csv"))]
    lab: Option<String>,
    /// The sweep's axis: a parameter, or an expression over a variant's parameters
    /// ("size * unit"); the lab's one swept parameter by default.
    #[arg(long, value_name = "EXPR", requires = "lab")]
    axis: Option<String>,
    /// The figure in each cell of the sweep's CSV (GB/s where the lab moves bytes by default).
    #[arg(long, value_enum, requires = "lab")]
    metric: Option<Metric>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let output = match &args.output {
        Some(path) => Some(crate::paths::writable(path, "-o", &ctx.root, &[])?),
        None => None,
    };
    let recordings = match &args.recordings {
        Some(dir) => Recordings::new(dir),
        None => Project::load(ctx)?.recordings()?,
    };
    let gpus = read_gpus(&recordings, &args.gpus)?;
    if args.output_dir.is_some() && args.format != Format::NvbenchJson {
        bail!("--output-dir is for --format nvbench-json");
    }
    let text = match args.format {
        Format::NvbenchJson => {
            let argv: Vec<String> = std::env::args().collect();
            if let Some(dir) = &args.output_dir {
                return write_aligned(&gpus, &argv, dir);
            }
            let file_name = args
                .output
                .as_ref()
                .and_then(|path| path.file_name())
                .map(|name| name.to_string_lossy().into_owned());
            let export = export::nvbench::document(&gpus, &argv, file_name.as_deref());
            if let Some(path) = &args.output {
                write_sample_files(path.parent().unwrap_or(Path::new("")), &export)?;
            }
            export.text()
        }
        Format::Csv => export::csv_text(&gpus)?,
        Format::SweepCsv => export::sweep::wide_csv(
            &gpus,
            &SweepRequest {
                lab: args.lab.clone().unwrap_or_default(),
                axis: args.axis.clone(),
                metric: args.metric,
            },
        )?,
    };
    match &output {
        Some(path) => std::fs::write(path, text).with_context(|| {
            format!(
                "cannot write {}: name a file in a folder you can write",
                path.display()
            )
        })?,
        None => output::stdout().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `--output-dir DIR`: a file per GPU, `DIR/FOLDER.json`, with the same states; the states
/// some GPU lacks are listed on stderr.
fn write_aligned(gpus: &[GpuResults], argv: &[String], dir: &Path) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let names: Vec<String> = gpus.iter().map(|g| format!("{}.json", g.folder)).collect();
    let mut only_some: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut note = |lab: &str, variant: &str, on: &[&str]| {
        let key = (lab.to_string(), on.join(", "));
        only_some.entry(key).or_default().push(variant.to_string());
    };
    let exports = export::nvbench::aligned(gpus, argv, &names, &mut note);
    for ((lab, on), variants) in &only_some {
        output::notice(&format!(
            "kernelbook: {lab}: {} only on {on}, a skipped state in the other files: {}",
            match variants.len() {
                1 => "1 state".to_string(),
                n => format!("{n} states"),
            },
            variants.join(", ")
        ));
    }
    for (name, export) in names.iter().zip(&exports) {
        let path = dir.join(name);
        std::fs::write(&path, export.text())
            .with_context(|| format!("cannot write {}", path.display()))?;
        write_sample_files(dir, export)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The samples' files of `export`, under `dir` (the JSON file's folder).
fn write_sample_files(dir: &Path, export: &export::nvbench::Export) -> anyhow::Result<()> {
    for file in &export.sample_files {
        let path = dir.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, &file.bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The results of each folder named (every folder where none is), each file checked as the
/// book checks a recording; one that cannot be trusted is left out with a warning.
fn read_gpus(recordings: &Recordings, named: &[String]) -> anyhow::Result<Vec<GpuResults>> {
    let folders = recordings.folders();
    if folders.is_empty() {
        bail!("{} holds no GPU's recordings", recordings.root().display());
    }
    if let Some(missing) = named.iter().find(|name| !folders.contains(name)) {
        bail!(
            "{} has no GPU folder `{missing}` (folders: {})",
            recordings.root().display(),
            folders.join(", ")
        );
    }
    let chosen = if named.is_empty() {
        folders
    } else {
        named.to_vec()
    };
    Ok(chosen
        .into_iter()
        .map(|folder| {
            let results = recordings
                .read_folder(&folder)
                .into_iter()
                .filter_map(|read| {
                    read.map_err(|distrust| {
                        output::notice(&format!("kernelbook: warning: {distrust}"))
                    })
                    .ok()
                })
                .collect();
            GpuResults { folder, results }
        })
        .collect())
}
