//! `kernelbook slurm`: the labs recorded on a cluster by Slurm, no scheduler of our own. One
//! job array per set of `sbatch` options (a GPU type's `--gres`, its partition), one array task
//! per configured node or GPU type, each recording every lab in an `srun` job step into its own
//! results folder (`kernelbook record --out`), on a node of its own (`--exclusive`, unless
//! `exclusive = false`), and writing its exit status; then a merge job, with its own partition
//! and resources, `--dependency=afterany` on every array, that reports the tasks that failed,
//! collects the others' folders (`kernelbook merge`) and builds the book with the "GPUs
//! compared" chapter from them. Job names carry the run's name, so that two runs' jobs differ.
//!
//! In data-flow order: [`SlurmConfig`] (book.toml's `[preprocessor.kernelbook.slurm]`, with the
//! command line's flags over it), [`plan`] (the arrays and the merge job, pure), [`scripts`]
//! (the job scripts, from handlebars templates), [`sbatch`] (submitting, reading
//! `--parsable`'s answer).

pub mod plan;
pub mod sbatch;
pub mod scripts;

use serde::Deserialize;

/// The book.toml table of the Slurm settings.
pub const CONFIG_KEY: &str = "preprocessor.kernelbook.slurm";

/// book.toml's `[preprocessor.kernelbook.slurm]`:
///
/// ```toml
/// [preprocessor.kernelbook.slurm]
/// partition = "gpu"
/// account = "my-project"
/// time = "01:00:00"
/// cpus-per-task = 8
/// mem = "32G"
/// sbatch-options = ["--qos=high", "--reservation=course"]
/// setup = ["module load cuda"]
///
/// [preprocessor.kernelbook.slurm.merge]
/// partition = "cpu"
/// mem = "8G"
///
/// [[preprocessor.kernelbook.slurm.task]]
/// name = "h200"
/// gres = "gpu:h200:1"
///
/// [[preprocessor.kernelbook.slurm.task]]
/// name = "a100"
/// gres = "gpu:a100:1"
/// partition = "a100"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SlurmConfig {
    /// `--partition` of every job (a task's own partition overrides it).
    pub partition: Option<String>,
    /// `--account` of every job.
    pub account: Option<String>,
    /// `--time` of every job, e.g. "01:00:00".
    pub time: Option<String>,
    /// Which GPUs of its allocation each task records on (`record --devices`): all of them by
    /// default, as Slurm leaves visible.
    pub devices: Option<String>,
    /// Whether each recording task has its node to itself (`--exclusive`): yes by default, so
    /// that no other job's traffic shares the GPU's host or its PCIe links.
    pub exclusive: Option<bool>,
    /// `--cpus-per-task` of each recording task.
    pub cpus_per_task: Option<u32>,
    /// `--mem` of each recording task, e.g. "32G".
    pub mem: Option<String>,
    /// More `sbatch` options for every recording task, each one word (`--qos=high`,
    /// `--reservation=course`, `--gpus=1`).
    #[serde(default)]
    pub sbatch_options: Vec<String>,
    /// Shell lines every job runs before kernelbook (`module load cuda`), after `set -euo
    /// pipefail`; in a recording task, `$task` is the task's name.
    #[serde(default)]
    pub setup: Vec<String>,
    /// The merge job's own settings; what it does not set comes from the table's `partition`,
    /// `account` and `time`.
    #[serde(default)]
    pub merge: MergeConfig,
    /// One array task per entry.
    #[serde(default, rename = "task")]
    pub tasks: Vec<TaskConfig>,
}

/// `[preprocessor.kernelbook.slurm.merge]`: the merge job needs no GPU, and a site may want it
/// on another partition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MergeConfig {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub time: Option<String>,
    pub cpus_per_task: Option<u32>,
    pub mem: Option<String>,
    /// `--gres`, for a site that accepts no job without one on the partition it names.
    pub gres: Option<String>,
    #[serde(default)]
    pub sbatch_options: Vec<String>,
}

/// One array task: a node or a GPU type to record the labs on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TaskConfig {
    /// Its results folder's name; unique.
    pub name: String,
    /// `--gres`, e.g. "gpu:h200:1".
    pub gres: Option<String>,
    /// `--partition`, over the table's.
    pub partition: Option<String>,
    /// `--constraint`, e.g. a node feature.
    pub constraint: Option<String>,
    /// `--nodelist`: one node.
    pub nodelist: Option<String>,
    /// More `sbatch` options for this task, after the table's.
    #[serde(default)]
    pub sbatch_options: Vec<String>,
}

/// The command line's settings, over book.toml's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub time: Option<String>,
    /// `--gres`, repeated: one task per value, instead of book.toml's tasks.
    pub gres: Vec<String>,
    /// `--exclusive` or `--no-exclusive`.
    pub exclusive: Option<bool>,
    pub cpus_per_task: Option<u32>,
    pub mem: Option<String>,
    /// `--sbatch-option`, repeated: after book.toml's.
    pub sbatch_options: Vec<String>,
    /// `--setup`, repeated: after book.toml's.
    pub setup: Vec<String>,
    pub merge_partition: Option<String>,
    /// `--merge-sbatch-option`, repeated: after book.toml's.
    pub merge_sbatch_options: Vec<String>,
}

impl SlurmConfig {
    /// This configuration with `overrides` applied: the flags' values over the table's, and
    /// the `--gres` values (if any) as the tasks, each named from its GPU type
    /// (`gpu:h200:1` → `h200`) or its place.
    pub fn with(mut self, overrides: Overrides) -> SlurmConfig {
        self.partition = overrides.partition.or(self.partition);
        self.account = overrides.account.or(self.account);
        self.time = overrides.time.or(self.time);
        self.exclusive = overrides.exclusive.or(self.exclusive);
        self.cpus_per_task = overrides.cpus_per_task.or(self.cpus_per_task);
        self.mem = overrides.mem.or(self.mem);
        self.sbatch_options.extend(overrides.sbatch_options);
        self.setup.extend(overrides.setup);
        self.merge.partition = overrides.merge_partition.or(self.merge.partition);
        self.merge
            .sbatch_options
            .extend(overrides.merge_sbatch_options);
        if !overrides.gres.is_empty() {
            let mut tasks: Vec<TaskConfig> = Vec::new();
            for (index, gres) in overrides.gres.iter().enumerate() {
                let mut name = task_name(gres, index);
                if tasks.iter().any(|t| t.name == name) {
                    name = format!("{name}-{index}");
                }
                tasks.push(TaskConfig {
                    name,
                    gres: Some(gres.clone()),
                    ..TaskConfig::default()
                });
            }
            self.tasks = tasks;
        }
        self
    }
}

/// A task's name from its `--gres`: the GPU type (`gpu:h200:1` → `h200`, `gpu:h200:1,x` → `h200`)
/// where there is one, else `task-N`.
fn task_name(gres: &str, index: usize) -> String {
    let first = gres.split(',').next().unwrap_or_default();
    let parts: Vec<&str> = first.split(':').collect();
    match parts.as_slice() {
        [_, kind, count] if count.parse::<u32>().is_ok() && plan::is_name(kind) => kind.to_string(),
        [_, kind] if kind.parse::<u32>().is_err() && plan::is_name(kind) => kind.to_string(),
        _ => format!("task-{index}"),
    }
}

#[cfg(test)]
mod tests;
