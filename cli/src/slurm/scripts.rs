//! The job scripts, from handlebars templates (`cli/templates/slurm-*.sh.hbs`). Every value
//! that reaches the shell is single-quoted here ([`shell_quote`]); every value on an
//! `#SBATCH` line was checked to be one word ([`super::plan`]).

use super::plan::{ArrayJob, Plan};
use handlebars::Handlebars;
use serde_json::json;
use std::path::{Path, PathBuf};

const ARRAY_TEMPLATE: &str = include_str!("../../templates/slurm-array.sh.hbs");
const MERGE_TEMPLATE: &str = include_str!("../../templates/slurm-merge.sh.hbs");

/// Where a run lives and what its jobs run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The run's folder (absolute): scripts, logs, results, the merged recordings, the book.
    pub dir: PathBuf,
    /// The `kernelbook` the jobs run (absolute; the nodes must see it, as they see `dir`).
    pub exe: PathBuf,
    /// The book's root (absolute).
    pub root: PathBuf,
    /// The book's own recordings, merged first (the cluster's GPUs beside them).
    pub committed: Option<PathBuf>,
}

impl Run {
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }
    pub fn results(&self) -> PathBuf {
        self.dir.join("results")
    }
    pub fn recorded(&self) -> PathBuf {
        self.dir.join("recorded")
    }
    pub fn book(&self) -> PathBuf {
        self.dir.join("book")
    }
    /// Where each task writes its exit status, a file named after it.
    pub fn status(&self) -> PathBuf {
        self.dir.join("status")
    }
    /// The run's name in its jobs' names (`kernelbook-labs-NAME`): its folder's name, with
    /// anything but letters, digits, `_`, `-` and `.` written `-`.
    pub fn id(&self) -> String {
        let name = self
            .dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id: String = name
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    true => c,
                    false => '-',
                },
            )
            .collect();
        if id.is_empty() { "run".into() } else { id }
    }
}

/// A job script: where it is written, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub path: PathBuf,
    pub text: String,
}

/// `text` as one shell word: in single quotes, each `'` written `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn quoted(path: &Path) -> String {
    shell_quote(&path.to_string_lossy())
}

/// Why a run's folder cannot hold job scripts: `#SBATCH --output=` takes one word.
pub fn check_run_dir(dir: &Path) -> Result<(), String> {
    let text = dir.to_string_lossy();
    if text
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '#')
    {
        return Err(format!(
            "the run's folder {} has a space or `#` in its path, which an #SBATCH line cannot hold: give another with --out",
            dir.display()
        ));
    }
    Ok(())
}

fn templates() -> Handlebars<'static> {
    let mut handlebars = Handlebars::new();
    handlebars.set_strict_mode(true);
    // Shell scripts, not HTML: values are quoted for the shell before they reach a template.
    handlebars.register_escape_fn(handlebars::no_escape);
    for (name, text) in [("array", ARRAY_TEMPLATE), ("merge", MERGE_TEMPLATE)] {
        if let Err(err) = handlebars.register_template_string(name, text) {
            panic!("templates/slurm-{name}.sh.hbs does not parse: {err}");
        }
    }
    handlebars
}

/// Every script of `plan`: an array script per job array (`labs-N.sh`), then the merge job's
/// (`merge.sh`).
pub fn scripts(run: &Run, plan: &Plan) -> Result<Vec<Script>, handlebars::RenderError> {
    let handlebars = templates();
    let mut scripts: Vec<Script> = plan
        .arrays
        .iter()
        .enumerate()
        .map(|(index, array)| array_script(&handlebars, run, index, array, plan))
        .collect::<Result<_, _>>()?;
    let tasks: Vec<String> = plan
        .arrays
        .iter()
        .flat_map(|array| array.tasks.iter().map(|t| shell_quote(t)))
        .collect();
    let data = json!({
        "run": run.dir.display().to_string(),
        "id": run.id(),
        "logs": run.logs().display().to_string(),
        "options": plan.merge.flags(),
        "setup": plan.setup,
        "tasks": tasks,
        "status": quoted(&run.status()),
        "failed": quoted(&run.dir.join("failed-tasks.txt")),
        "exe": quoted(&run.exe),
        "root": quoted(&run.root),
        "recorded": quoted(&run.recorded()),
        "committed": run.committed.as_deref().map(quoted),
        "results": quoted(&run.results()),
        "book": quoted(&run.book()),
    });
    scripts.push(Script {
        path: run.dir.join("merge.sh"),
        text: handlebars.render("merge", &data)?,
    });
    Ok(scripts)
}

fn array_script(
    handlebars: &Handlebars<'_>,
    run: &Run,
    index: usize,
    array: &ArrayJob,
    plan: &Plan,
) -> Result<Script, handlebars::RenderError> {
    let data = json!({
        "index": index,
        "id": run.id(),
        "setup": plan.setup,
        "status": quoted(&run.status()),
        "run": run.dir.display().to_string(),
        "last": array.tasks.len().saturating_sub(1),
        "logs": run.logs().display().to_string(),
        "options": array.options.flags(),
        "tasks": array.tasks.iter().map(|t| shell_quote(t)).collect::<Vec<_>>(),
        "exe": quoted(&run.exe),
        "root": quoted(&run.root),
        "devices": shell_quote(&plan.devices),
        "results": quoted(&run.results()),
    });
    Ok(Script {
        path: run.dir.join(format!("labs-{index}.sh")),
        text: handlebars.render("array", &data)?,
    })
}
