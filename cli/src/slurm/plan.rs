//! From the settings to the jobs: the tasks that ask for the same `sbatch` options share one
//! job array (a job array has one set of options: a second GPU type needs an array of its
//! own), and the merge job asks for the table's partition, account and time, no GPU. Pure.

use super::SlurmConfig;
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
}

impl JobOptions {
    /// The options as `sbatch` takes them: `--partition=gpu`, ….
    pub fn flags(&self) -> Vec<String> {
        [
            ("partition", &self.partition),
            ("account", &self.account),
            ("time", &self.time),
            ("gres", &self.gres),
            ("constraint", &self.constraint),
            ("nodelist", &self.nodelist),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_ref().map(|v| format!("--{name}={v}")))
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
        let options = JobOptions {
            partition: task.partition.clone().or_else(|| config.partition.clone()),
            account: config.account.clone(),
            time: config.time.clone(),
            gres: task.gres.clone(),
            constraint: task.constraint.clone(),
            nodelist: task.nodelist.clone(),
        };
        check_values(&options)?;
        match arrays.iter_mut().find(|array| array.options == options) {
            Some(array) => array.tasks.push(task.name.clone()),
            None => arrays.push(ArrayJob {
                options,
                tasks: vec![task.name.clone()],
            }),
        }
    }
    let merge = JobOptions {
        partition: config.partition.clone(),
        account: config.account.clone(),
        time: config.time.clone(),
        ..JobOptions::default()
    };
    Ok(Plan {
        arrays,
        merge,
        devices,
    })
}

/// Every value is one word a job script's `#SBATCH` line can hold.
fn check_values(options: &JobOptions) -> Result<(), PlanError> {
    let values = [
        ("partition", &options.partition),
        ("account", &options.account),
        ("time", &options.time),
        ("gres", &options.gres),
        ("constraint", &options.constraint),
        ("nodelist", &options.nodelist),
    ];
    for (option, value) in values {
        let Some(value) = value else { continue };
        let bad = value.is_empty()
            || value.chars().any(|c| {
                c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '#' | '`' | '\\')
            });
        if bad {
            return Err(PlanError::BadValue {
                option,
                value: kernelbook_core::terminal::one_line(value).into_owned(),
            });
        }
    }
    Ok(())
}
