//! Submitting a job script with `sbatch --parsable` and reading the job id it answers;
//! cancelling jobs with `scancel`.

use kernelbook_runner::process::{self, Spawn};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long `sbatch` may take to answer: it retries an unreachable controller for a while, and
/// a command that cannot submit must say so rather than hang.
const ANSWER_LIMIT: Duration = Duration::from_secs(120);

/// The job id in `sbatch --parsable`'s answer: `1234`, or `1234;cluster` on a federation.
pub fn parse_job_id(answer: &str) -> Result<u64, String> {
    let line = answer
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .ok_or_else(|| "sbatch answered nothing".to_string())?;
    let id = line.split(';').next().unwrap_or_default();
    id.parse::<u64>().map_err(|_| {
        format!(
            "sbatch answered `{}`, not a job id",
            kernelbook_core::terminal::one_line(line)
        )
    })
}

/// `sbatch --parsable ARGS… SCRIPT`, run by `program`: the job id, or why there is none
/// (sbatch's own message).
pub fn submit(program: &str, args: &[String], script: &Path) -> anyhow::Result<u64> {
    let mut command = Command::new(program);
    command.arg("--parsable").args(args).arg(script);
    let shown = format!(
        "{program} --parsable {} {}",
        args.join(" "),
        script.display()
    );
    let how = Spawn {
        own_group: true,
        stderr_lines: 10,
    };
    let mut child = process::spawn(command, how)
        .map_err(|err| anyhow::anyhow!("cannot run `{program}`: {err}; is Slurm installed?"))?;
    let answer = child.stdout_to_end();
    let deadline = Instant::now() + ANSWER_LIMIT;
    let stdout = answer.recv_until(deadline).unwrap_or_default();
    let status = child
        .wait_timeout(deadline.saturating_duration_since(Instant::now()))?
        .ok_or_else(|| {
            child.kill();
            anyhow::anyhow!(
                "`{shown}` did not answer in {} s; is the Slurm controller up?",
                ANSWER_LIMIT.as_secs()
            )
        })?;
    if !status.success() {
        anyhow::bail!("`{shown}` failed ({status}): {}", child.stderr_tail(5));
    }
    parse_job_id(&stdout).map_err(|why| anyhow::anyhow!("`{shown}`: {why}"))
}

/// `scancel IDS…`, run by `program`, within the same time limit as a submission.
pub fn cancel(program: &str, ids: &[u64]) -> anyhow::Result<()> {
    let mut command = Command::new(program);
    command.args(ids.iter().map(u64::to_string));
    let how = Spawn {
        own_group: true,
        stderr_lines: 10,
    };
    let mut child = process::spawn(command, how)
        .map_err(|err| anyhow::anyhow!("cannot run `{program}`: {err}"))?;
    let status = child.wait_timeout(ANSWER_LIMIT)?.ok_or_else(|| {
        child.kill();
        anyhow::anyhow!("`{program}` did not answer in {} s", ANSWER_LIMIT.as_secs())
    })?;
    if !status.success() {
        anyhow::bail!("`{program}` failed ({status}): {}", child.stderr_tail(5));
    }
    Ok(())
}
