//! `kernelbook export --format nvbench-json|csv`: the recordings of one GPU or several, in
//! nvbench's JSON layout (`nvbench-compare a.json b.json` diffs two GPUs) or as CSV.

use crate::export::{self, GpuResults};
use crate::output;
use crate::project::{Context, Project};
use anyhow::{Context as _, bail};
use kernelbook_runner::store::Recordings;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// nvbench's JSON output, file version 1.0.0 (what nvbench-compare reads).
    NvbenchJson,
    /// A row per GPU, lab and variant.
    Csv,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_enum)]
    format: Format,
    /// The GPU folders to export (repeatable); every folder of the recordings by default.
    /// nvbench-compare diffs files of one GPU each: export them one at a time.
    #[arg(long = "gpu", value_name = "FOLDER")]
    gpus: Vec<String>,
    /// Read the recordings (a folder per GPU) from DIR instead of book.toml's `recordings`.
    #[arg(long, value_name = "DIR")]
    recordings: Option<PathBuf>,
    /// Write to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
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
    let text = match args.format {
        Format::NvbenchJson => {
            let argv: Vec<String> = std::env::args().collect();
            let mut text = serde_json::to_string_pretty(&export::nvbench::document(&gpus, &argv))?;
            text.push('\n');
            text
        }
        Format::Csv => export::csv_text(&gpus)?,
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
