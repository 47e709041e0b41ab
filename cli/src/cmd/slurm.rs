//! `kernelbook slurm`: writes a run's job scripts and submits them with `sbatch`: the job
//! arrays that record the labs on the cluster's GPUs, and the merge job that builds the book
//! from what they recorded once all have succeeded (see [`crate::slurm`]). `--dry-run`
//! prints the scripts and the `sbatch` commands instead.

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
    /// The run's folder, which the cluster's nodes must see (default: target/slurm/<UTC time>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The sbatch to run.
    #[arg(long, value_name = "PROGRAM", default_value = "sbatch")]
    sbatch: String,
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
        let id = sbatch::submit(&args.sbatch, &[], &script.path)?;
        say!(out, "submitted job array {id}: {}", script.path.display())?;
        ids.push(id);
    }
    let merge = &scripts[arrays];
    let merge_id =
        sbatch::submit(&args.sbatch, &[dependency(&ids)], &merge.path).map_err(|err| {
            anyhow!("{err:#}; the job arrays {ids:?} were submitted without it: `scancel` them")
        })?;
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

/// `--dependency=afterok:1:2`: the merge job starts once every array's every task succeeded.
pub fn dependency(ids: &[u64]) -> String {
    let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("--dependency=afterok:{}", ids.join(":"))
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
        "{sbatch} --parsable --dependency=afterok:{} {}",
        ids.join(":"),
        scripts[arrays].path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
