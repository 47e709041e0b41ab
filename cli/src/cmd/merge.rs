//! `kernelbook merge --into DIR SOURCE…`: gathers recordings folders (each a folder per GPU:
//! the book's own, a Slurm task's results) into one, which `kernelbook build --recordings`
//! builds from. Each file is checked as the book checks a recording before it is copied; a
//! later source's recording of a lab replaces an earlier one's in the same GPU's folder, and
//! the command says so.

use crate::output::{self, say};
use crate::project::Context;
use anyhow::bail;
use kernelbook_runner::store::{Recordings, read_results, write_results};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The recordings folder to write (a folder per GPU).
    #[arg(long, value_name = "DIR")]
    into: PathBuf,
    /// Recordings folders to gather, in order (a folder per GPU each).
    #[arg(required = true, value_name = "SOURCE")]
    sources: Vec<PathBuf>,
}

/// One recording a source offers: its GPU folder and its file name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Offered {
    pub folder: String,
    pub file: String,
}

/// What to copy, from which source (by index), and what replaced what: each GPU folder and
/// file once, from the last source that has it.
pub fn plan_merge(sources: &[(String, Vec<Offered>)]) -> (Vec<(usize, Offered)>, Vec<String>) {
    let mut chosen: std::collections::BTreeMap<Offered, usize> = Default::default();
    let mut notices = Vec::new();
    for (index, (name, offered)) in sources.iter().enumerate() {
        for recording in offered {
            if let Some(earlier) = chosen.insert(recording.clone(), index) {
                notices.push(format!(
                    "{}/{} from {name} replaces the one from {}",
                    recording.folder, recording.file, sources[earlier].0
                ));
            }
        }
    }
    let copies = chosen
        .into_iter()
        .map(|(offered, index)| (index, offered))
        .collect();
    (copies, notices)
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    crate::paths::refuse_file_as_folder(&args.into, "--into")?;
    crate::paths::writable(&args.into, "--into", &ctx.root, &[])?;
    for source in &args.sources {
        check_source(ctx, source)?;
    }
    let mut sources = Vec::new();
    for source in &args.sources {
        let recordings = Recordings::new(source);
        let folders = recordings.folders();
        if folders.is_empty() {
            output::notice(&format!(
                "kernelbook: merge: {} holds no GPU's recordings",
                source.display()
            ));
        }
        let offered = folders
            .iter()
            .flat_map(|folder| {
                json_files(&source.join(folder))
                    .into_iter()
                    .map(|file| Offered {
                        folder: folder.clone(),
                        file,
                    })
            })
            .collect();
        sources.push((source.display().to_string(), offered));
    }
    let (copies, notices) = plan_merge(&sources);
    for notice in notices {
        output::notice(&format!("kernelbook: merge: {notice}"));
    }
    let mut merged = 0;
    for (index, offered) in &copies {
        let from = args.sources[*index]
            .join(&offered.folder)
            .join(&offered.file);
        match read_results(&from) {
            Ok(Some(results)) => {
                let to = args.into.join(&offered.folder).join(&offered.file);
                write_results(&to, &results).map_err(|err| {
                    anyhow::anyhow!(
                        "merge: cannot write {} ({err}); give --into a folder you can write",
                        to.display()
                    )
                })?;
                merged += 1;
            }
            Ok(None) => {}
            Err(distrust) => output::notice(&format!("kernelbook: merge: {distrust}")),
        }
    }
    if merged == 0 {
        bail!("nothing to merge: no source holds a recording that can be trusted");
    }
    let gpus: std::collections::BTreeSet<&str> =
        copies.iter().map(|(_, o)| o.folder.as_str()).collect();
    say!(
        &mut output::stdout(),
        "merged {merged} recordings of {} GPUs into {}",
        gpus.len(),
        args.into.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// A source must be a folder, and hold no symbolic link out of it: a recording is copied only
/// from where the command line says.
fn check_source(ctx: &Context, source: &Path) -> anyhow::Result<()> {
    if !source.is_dir() {
        let hint = if ctx.root.join("book.toml").is_file() {
            String::new()
        } else {
            format!(" ({})", crate::project::no_book_here(&ctx.root))
        };
        bail!(
            "merge: {} is not a folder of recordings (a folder per GPU){hint}",
            source.display()
        );
    }
    let real = std::fs::canonicalize(source)?;
    let mut entries: Vec<PathBuf> = Vec::new();
    for gpu in std::fs::read_dir(source)?.filter_map(Result::ok) {
        entries.push(gpu.path());
        if gpu.file_type().is_ok_and(|kind| kind.is_dir()) {
            let files = std::fs::read_dir(gpu.path())?.filter_map(Result::ok);
            entries.extend(files.map(|file| file.path()));
        }
    }
    for entry in entries {
        let is_link = std::fs::symlink_metadata(&entry).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            continue;
        }
        let target = std::fs::canonicalize(&entry).ok();
        if target
            .as_ref()
            .is_none_or(|target| !target.starts_with(&real))
        {
            bail!(
                "merge: {} is a symbolic link out of {} (to {}): a source's recordings must \
                 lie in it; copy the file or folder there instead of linking to it",
                entry.display(),
                source.display(),
                target.map_or_else(|| "nothing".into(), |t| t.display().to_string())
            );
        }
    }
    Ok(())
}

/// The `*.json` files of `dir`, by name.
fn json_files(dir: &std::path::Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|name| name.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(folder: &str, file: &str) -> Offered {
        Offered {
            folder: folder.into(),
            file: file.into(),
        }
    }

    #[test]
    fn a_later_source_replaces_an_earlier_ones_recording_of_the_same_gpu_and_lab() {
        let sources = vec![
            (
                "labs/recorded".to_string(),
                vec![
                    offered("nvidia-h200-882b8b4e", "copy.json"),
                    offered("nvidia-h200-882b8b4e", "fusion.json"),
                ],
            ),
            (
                "results/a".to_string(),
                vec![offered("nvidia-a100-1234abcd", "copy.json")],
            ),
            (
                "results/b".to_string(),
                vec![offered("nvidia-h200-882b8b4e", "copy.json")],
            ),
        ];
        let (copies, notices) = plan_merge(&sources);
        assert_eq!(
            copies,
            vec![
                (1, offered("nvidia-a100-1234abcd", "copy.json")),
                (2, offered("nvidia-h200-882b8b4e", "copy.json")),
                (0, offered("nvidia-h200-882b8b4e", "fusion.json")),
            ]
        );
        assert_eq!(
            notices,
            ["nvidia-h200-882b8b4e/copy.json from results/b replaces the one from labs/recorded"]
        );
    }
}
