//! From the settings to the jobs: the tasks that ask for the same `sbatch` options share one
//! job array (a job array has one set of options: a second GPU type needs an array of its
//! own), and the merge job asks for its own settings over the table's partition, account and
//! time, and no GPU unless told. Pure.

use super::{SlurmConfig, TaskConfig};
use kernelbook_runner::backend::select::DeviceSelection;

/// The `sbatch` options of one job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobOptions {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub time: Option<String>,
    pub gres: Option<String>,
    pub constraint: Option<String>,
    pub nodelist: Option<String>,
    pub cpus_per_task: Option<u32>,
    pub mem: Option<String>,
    /// `--exclusive`: the node to itself.
    pub exclusive: bool,
    /// Free-form options, each one word, after the others.
    pub extra: Vec<String>,
}

impl JobOptions {
    fn named(&self) -> [(&'static str, Option<String>); 8] {
        [
            ("partition", self.partition.clone()),
            ("account", self.account.clone()),
            ("time", self.time.clone()),
            ("gres", self.gres.clone()),
            ("constraint", self.constraint.clone()),
            ("nodelist", self.nodelist.clone()),
            ("cpus-per-task", self.cpus_per_task.map(|n| n.to_string())),
            ("mem", self.mem.clone()),
        ]
    }

    /// The options as `sbatch` takes them: `--partition=gpu`, …, `--exclusive`, then the
    /// free-form ones.
    pub fn flags(&self) -> Vec<String> {
        self.named()
            .into_iter()
            .filter_map(|(name, value)| value.map(|v| format!("--{name}={v}")))
            .chain(self.exclusive.then(|| "--exclusive".to_string()))
            .chain(self.extra.iter().cloned())
            .collect()
    }
}

/// One job array: its options and its tasks' names, in order (task `i` is array index `i`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayJob {
    pub options: JobOptions,
    pub tasks: Vec<String>,
}

/// Every job of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub arrays: Vec<ArrayJob>,
    pub merge: JobOptions,
    /// `record --devices` in each task.
    pub devices: String,
    /// Shell lines every job runs first.
    pub setup: Vec<String>,
}

/// Settings that make no jobs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "no tasks to submit: add [[preprocessor.kernelbook.slurm.task]] entries to book.toml (name, gres), or give --gres"
    )]
    NoTasks,
    #[error(
        "task name `{0}`: a task's name is its results folder: letters, digits, `_`, `-` and `.`"
    )]
    BadName(String),
    #[error("two tasks are named `{0}`: each task's name is its own results folder")]
    Duplicate(String),
    #[error(
        "{option} `{value}`: an sbatch option's value has no spaces, quotes, `#` or control characters"
    )]
    BadValue { option: &'static str, value: String },
    #[error("devices `{0}`: {1}")]
    BadDevices(String, String),
    #[error(
        "sbatch option `{0}`: a free-form option is one word that starts with `-` (`--qos=high`), with no quotes, `#` or control characters"
    )]
    BadOption(String),
    #[error("set-up line `{0}`: one line of shell, not empty")]
    BadSetup(String),
}

/// Whether `name` can name a results folder: letters, digits, `_`, `-` and `.` (not only dots).
pub fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().any(|c| c != '.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The jobs `config` asks for, every value checked.
pub fn plan(config: &SlurmConfig) -> Result<Plan, PlanError> {
    if config.tasks.is_empty() {
        return Err(PlanError::NoTasks);
    }
    let devices = config.devices.clone().unwrap_or_else(|| "all".into());
    devices
        .parse::<DeviceSelection>()
        .map_err(|err| PlanError::BadDevices(devices.clone(), err.to_string()))?;
    for line in &config.setup {
        if line.trim().is_empty() || line.chars().any(char::is_control) {
            return Err(PlanError::BadSetup(
                kernelbook_core::terminal::one_line(line).into_owned(),
            ));
        }
    }
    let mut arrays: Vec<ArrayJob> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for task in &config.tasks {
        if !is_name(&task.name) {
            return Err(PlanError::BadName(task.name.clone()));
        }
        if names.contains(&task.name.as_str()) {
            return Err(PlanError::Duplicate(task.name.clone()));
        }
        names.push(&task.name);
        let options = task_options(config, task);
        check_values(&options)?;
        match arrays.iter_mut().find(|array| array.options == options) {
            Some(array) => array.tasks.push(task.name.clone()),
            None => arrays.push(ArrayJob {
                options,
                tasks: vec![task.name.clone()],
            }),
        }
    }
    let merge = merge_options(config);
    check_values(&merge)?;
    Ok(Plan {
        arrays,
        merge,
        devices,
        setup: config.setup.clone(),
    })
}

/// A recording task's options: the task's over the table's; the node to itself unless
/// `exclusive = false`.
fn task_options(config: &SlurmConfig, task: &TaskConfig) -> JobOptions {
    JobOptions {
        partition: task.partition.clone().or_else(|| config.partition.clone()),
        account: config.account.clone(),
        time: config.time.clone(),
        gres: task.gres.clone(),
        constraint: task.constraint.clone(),
        nodelist: task.nodelist.clone(),
        cpus_per_task: config.cpus_per_task,
        mem: config.mem.clone(),
        exclusive: config.exclusive.unwrap_or(true),
        extra: config
            .sbatch_options
            .iter()
            .chain(&task.sbatch_options)
            .cloned()
            .collect(),
    }
}

/// The merge job's options: its own table's over the table's partition, account and time.
fn merge_options(config: &SlurmConfig) -> JobOptions {
    let merge = &config.merge;
    JobOptions {
        partition: merge.partition.clone().or_else(|| config.partition.clone()),
        account: merge.account.clone().or_else(|| config.account.clone()),
        time: merge.time.clone().or_else(|| config.time.clone()),
        gres: merge.gres.clone(),
        cpus_per_task: merge.cpus_per_task,
        mem: merge.mem.clone(),
        extra: merge.sbatch_options.clone(),
        ..JobOptions::default()
    }
}

/// Whether `value` is one word an `#SBATCH` line can hold.
fn is_word(value: &str) -> bool {
    !value.is_empty()
        && !value.chars().any(|c| {
            c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '#' | '`' | '\\')
        })
}

/// Every value is one word a job script's `#SBATCH` line can hold; every free-form option
/// starts with `-`.
fn check_values(options: &JobOptions) -> Result<(), PlanError> {
    for (option, value) in options.named() {
        let Some(value) = value else { continue };
        if !is_word(&value) {
            return Err(PlanError::BadValue {
                option,
                value: kernelbook_core::terminal::one_line(&value).into_owned(),
            });
        }
    }
    if let Some(bad) = options
        .extra
        .iter()
        .find(|option| !option.starts_with('-') || !is_word(option))
    {
        return Err(PlanError::BadOption(
            kernelbook_core::terminal::one_line(bad).into_owned(),
        ));
    }
    Ok(())
}
