//! `kernelbook slurm`: writes a run's job scripts and submits them with `sbatch`: the job
//! arrays that record the labs on the cluster's GPUs, and the merge job that builds the book
//! from what they recorded once all have ended, saying which failed (see [`crate::slurm`]). A
//! submission that fails cancels (`scancel`) the jobs already submitted. `--dry-run` prints the
//! scripts and the `sbatch` commands instead.

use crate::output::{self, say};
use crate::project::{Context, Project};
use crate::slurm::plan::plan;
use crate::slurm::scripts::{Run, Script, check_run_dir, scripts};
use crate::slurm::{CONFIG_KEY, Overrides, SlurmConfig, sbatch};
use anyhow::{Context as _, anyhow};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the job scripts and the sbatch commands; submit nothing.
    #[arg(long)]
    dry_run: bool,
    /// `--partition` of every job (book.toml: `partition` under [preprocessor.kernelbook.slurm]).
    #[arg(long)]
    partition: Option<String>,
    /// `--account` of every job (book.toml: `account`).
    #[arg(long)]
    account: Option<String>,
    /// `--time` of every job, e.g. 01:00:00 (book.toml: `time`).
    #[arg(long)]
    time: Option<String>,
    /// The `--gres` of one array task, e.g. gpu:h200:1 (repeatable: a task per value, instead
    /// of book.toml's [[preprocessor.kernelbook.slurm.task]] entries).
    #[arg(long = "gres", value_name = "GRES")]
    gres: Vec<String>,
    /// Each recording task has its node to itself (the default; book.toml: `exclusive`).
    #[arg(long, overrides_with = "no_exclusive")]
    exclusive: bool,
    /// Recording tasks may share a node with other jobs.
    #[arg(long, overrides_with = "exclusive")]
    no_exclusive: bool,
    /// `--cpus-per-task` of each recording task (book.toml: `cpus-per-task`).
    #[arg(long, value_name = "N")]
    cpus_per_task: Option<u32>,
    /// `--mem` of each recording task, e.g. 32G (book.toml: `mem`).
    #[arg(long, value_name = "SIZE")]
    mem: Option<String>,
    /// One more sbatch option for every recording task, e.g. --sbatch-option=--qos=high
    /// (repeatable; after book.toml's `sbatch-options`).
    #[arg(
        long = "sbatch-option",
        value_name = "OPTION",
        allow_hyphen_values = true
    )]
    sbatch_options: Vec<String>,
    /// A shell line every job runs before kernelbook, e.g. 'module load cuda' (repeatable;
    /// after book.toml's `setup`).
    #[arg(long = "setup", value_name = "LINE", allow_hyphen_values = true)]
    setup: Vec<String>,
    /// The merge job's partition (book.toml: `partition` under [preprocessor.kernelbook.slurm.merge]).
    #[arg(long, value_name = "PARTITION")]
    merge_partition: Option<String>,
    /// One more sbatch option for the merge job (repeatable).
    #[arg(
        long = "merge-sbatch-option",
        value_name = "OPTION",
        allow_hyphen_values = true
    )]
    merge_sbatch_options: Vec<String>,
    /// The run's folder, which the cluster's nodes must see (default: target/slurm/<UTC time>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The sbatch to run.
    #[arg(long, value_name = "PROGRAM", default_value = "sbatch")]
    sbatch: String,
    /// The scancel to run when a submission fails.
    #[arg(long, value_name = "PROGRAM", default_value = "scancel")]
    scancel: String,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let config: SlurmConfig = project
        .book
        .config
        .get(CONFIG_KEY)
        .with_context(|| format!("book.toml: [{CONFIG_KEY}]"))?
        .unwrap_or_default();
    let config = config.with(Overrides {
        partition: args.partition.clone(),
        account: args.account.clone(),
        time: args.time.clone(),
        gres: args.gres.clone(),
        exclusive: match (args.exclusive, args.no_exclusive) {
            (_, true) => Some(false),
            (true, _) => Some(true),
            _ => None,
        },
        cpus_per_task: args.cpus_per_task,
        mem: args.mem.clone(),
        sbatch_options: args.sbatch_options.clone(),
        setup: args.setup.clone(),
        merge_partition: args.merge_partition.clone(),
        merge_sbatch_options: args.merge_sbatch_options.clone(),
    });
    let plan = plan(&config)?;
    let run = run_layout(&project, args.out.as_deref())?;
    let scripts = scripts(&run, &plan)?;
    let arrays = scripts.len() - 1;
    if args.dry_run {
        return print_dry_run(&scripts, arrays, &args.sbatch);
    }
    for dir in [run.logs(), run.results()] {
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    }
    for script in &scripts {
        write_script(script)?;
    }
    let out = &mut output::stdout();
    let mut ids = Vec::new();
    for script in &scripts[..arrays] {
        let id = sbatch::submit(&args.sbatch, &[], &script.path)
            .map_err(|err| cancel_submitted(&args.scancel, &ids, err))?;
        say!(out, "submitted job array {id}: {}", script.path.display())?;
        ids.push(id);
    }
    let merge = &scripts[arrays];
    let merge_id = sbatch::submit(&args.sbatch, &[dependency(&ids)], &merge.path)
        .map_err(|err| cancel_submitted(&args.scancel, &ids, err))?;
    say!(
        out,
        "submitted merge job {merge_id} (after {}): {}",
        dependency(&ids),
        merge.path.display()
    )?;
    write_jobs(&run, &ids, merge_id)?;
    say!(
        out,
        "when it is done, the book is in {} (logs in {})",
        run.book().join("index.html").display(),
        run.logs().display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `--dependency=afterany:1:2`: the merge job starts once every array's every task ended,
/// failed or not; it says which failed and merges the others.
pub fn dependency(ids: &[u64]) -> String {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("--dependency=afterany:{}", ids.join(":"))
}

/// A submission failed: the jobs already submitted are cancelled, and the error says so (or
/// names the jobs that could not be cancelled).
fn cancel_submitted(scancel: &str, ids: &[u64], err: anyhow::Error) -> anyhow::Error {
    if ids.is_empty() {
        return err;
    }
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    match sbatch::cancel(scancel, ids) {
        Ok(()) => anyhow!(
            "{err:#}; cancelled the jobs already submitted ({})",
            list.join(", ")
        ),
        Err(why) => anyhow!(
            "{err:#}; the jobs already submitted ({}) could not be cancelled: {why:#}; `scancel {}` them",
            list.join(", "),
            list.join(" ")
        ),
    }
}

/// Where the run goes and what its jobs run: absolute paths, as the nodes need them.
fn run_layout(project: &Project, out: Option<&Path>) -> anyhow::Result<Run> {
    let dir = match out {
        Some(dir) => project.writable(dir, "--out")?,
        None => project.root.join("target/slurm").join(run_name()),
    };
    let dir =
        std::path::absolute(&dir).with_context(|| format!("cannot find {}", dir.display()))?;
    check_run_dir(&dir).map_err(|why| anyhow!(why))?;
    let root = std::fs::canonicalize(&project.root)
        .with_context(|| format!("cannot find the book's folder {}", project.root.display()))?;
    let exe = std::env::current_exe().context("cannot find the kernelbook executable")?;
    let recordings = project.recordings()?;
    let committed = (!recordings.folders().is_empty())
        .then(|| std::path::absolute(recordings.root()))
        .transpose()?;
    Ok(Run {
        dir,
        exe,
        root,
        committed,
    })
}

/// The run's folder name: the UTC time, e.g. `2026-12-01T14-37-22Z`.
fn run_name() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(':', "-")
}

fn write_script(script: &Script) -> anyhow::Result<()> {
    if let Some(dir) = script.path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
    }
    std::fs::write(&script.path, &script.text)
        .with_context(|| format!("cannot write {}", script.path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script.path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// `jobs.json` in the run's folder: the arrays' and the merge job's ids, for `squeue -j`.
fn write_jobs(run: &Run, arrays: &[u64], merge: u64) -> anyhow::Result<()> {
    let path = run.dir.join("jobs.json");
    let text = serde_json::json!({ "arrays": arrays, "merge": merge }).to_string();
    std::fs::write(&path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

/// The scripts, each under its path, then the commands that would submit them.
fn print_dry_run(scripts: &[Script], arrays: usize, sbatch: &str) -> anyhow::Result<ExitCode> {
    let out = &mut output::stdout();
    for script in scripts {
        say!(out, "# ==> {} <==", script.path.display())?;
        say!(out, "{}", script.text.trim_end())?;
        say!(out, "")?;
    }
    let ids: Vec<String> = (0..arrays).map(|i| format!("$array_{i}")).collect();
    for (i, script) in scripts[..arrays].iter().enumerate() {
        say!(
            out,
            "array_{i}=$({sbatch} --parsable {})",
            script.path.display()
        )?;
    }
    say!(
        out,
        "{sbatch} --parsable --dependency=afterany:{} {}",
        ids.join(":"),
        scripts[arrays].path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
