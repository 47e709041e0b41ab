//! A failing variant's whole sanitizer session: its tools run in turn until one finds
//! something ([`sanitize`]), and what the learner is told ([`Verdict`]): the diagnoses, or
//! which tools ran and found nothing and what the output shows, or, once, why the tool could
//! not run here.

use super::explain::{Context, Diagnosis, diagnose};
use super::finding::{Report, Tool};
use super::locate::DeviceBuffer;
use super::output::OutputPattern;
use super::tool::SanitizerError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How one tool's run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum RunResult {
    /// It reported this many records.
    Found { records: usize },
    /// It ran to its end and found nothing.
    Clean,
    /// It timed out, crashed or failed: the next tool is tried.
    Failed { why: String },
}

/// One tool's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRun {
    pub tool: Tool,
    /// Wall-clock seconds, the child's start included: the time the check added.
    pub seconds: f64,
    #[serde(flatten)]
    pub result: RunResult,
}

/// What the sanitizer says about a failing variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sanitizer", rename_all = "snake_case")]
pub enum Verdict {
    /// A tool found the error.
    Found {
        diagnoses: Vec<Diagnosis>,
        runs: Vec<ToolRun>,
    },
    /// Every tool ran and none found anything; what the wrong output shows, where known.
    NothingFound {
        runs: Vec<ToolRun>,
        output: Option<String>,
    },
    /// The tool cannot run here (missing, refused by the machine, not an NVIDIA GPU): one line.
    Unavailable { why: String },
}

/// What one tool's run gave: its report, and where the checked program's buffers were in that
/// run, where it said (the tool's own allocations, `--padding` among them, move them from run
/// to run).
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    pub report: Report,
    pub buffers: Option<Vec<DeviceBuffer>>,
}

impl From<Report> for Ran {
    fn from(report: Report) -> Ran {
        Ran {
            report,
            buffers: None,
        }
    }
}

/// Runs `tools` in turn with `run_tool` (one run of one tool: its report or why there is
/// none, and how long it took), until one finds something; a run's findings are read against
/// `context`, with the buffers where that run said they were. A tool that cannot run at all
/// ([`SanitizerError::Missing`], [`SanitizerError::Refused`]) ends the session as
/// [`Verdict::Unavailable`]; one that hangs or fails is recorded, and the next one tried.
pub fn sanitize(
    tools: &[Tool],
    mut run_tool: impl FnMut(Tool) -> (Result<Ran, SanitizerError>, Duration),
    context: &Context<'_>,
    output: Option<&OutputPattern>,
) -> Verdict {
    let mut runs = Vec::new();
    for &tool in tools {
        let (outcome, took) = run_tool(tool);
        let seconds = took.as_secs_f64();
        let Ran { report, buffers } = match outcome {
            Ok(ran) => ran,
            Err(err @ (SanitizerError::Missing(_) | SanitizerError::Refused(_))) => {
                return Verdict::Unavailable {
                    why: err.to_string(),
                };
            }
            Err(err) => {
                runs.push(ToolRun {
                    tool,
                    seconds,
                    result: RunResult::Failed {
                        why: err.to_string(),
                    },
                });
                continue;
            }
        };
        let context = Context {
            buffers: buffers.as_deref().unwrap_or(context.buffers),
            ..*context
        };
        let diagnoses = diagnose(tool, &report, &context);
        let result = match report.findings.len() {
            0 => RunResult::Clean,
            records => RunResult::Found { records },
        };
        runs.push(ToolRun {
            tool,
            seconds,
            result,
        });
        if !diagnoses.is_empty() {
            return Verdict::Found { diagnoses, runs };
        }
    }
    Verdict::NothingFound {
        runs,
        output: output.map(OutputPattern::describe),
    }
}

impl Verdict {
    /// The verdict as lines for a terminal, under the FAIL line.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Verdict::Found { diagnoses, runs } => {
                let mut lines: Vec<String> = diagnoses
                    .iter()
                    .flat_map(|d| {
                        d.to_string()
                            .lines()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .collect();
                lines.push(format!("(compute-sanitizer: {})", ran(runs)));
                lines
            }
            Verdict::NothingFound { runs, output } => {
                let mut lines = vec![nothing_found(runs)];
                if let Some(output) = output {
                    lines.push(format!("The output: {output}"));
                }
                lines
            }
            Verdict::Unavailable { why } => vec![format!("No sanitizer check: {why}.")],
        }
    }

    /// The seconds the tools took in all.
    pub fn seconds(&self) -> f64 {
        match self {
            Verdict::Found { runs, .. } | Verdict::NothingFound { runs, .. } => {
                runs.iter().map(|r| r.seconds).sum()
            }
            Verdict::Unavailable { .. } => 0.0,
        }
    }
}

/// "memcheck 1.9 s, racecheck 2.4 s".
fn ran(runs: &[ToolRun]) -> String {
    runs.iter()
        .map(|r| format!("{} {:.1} s", r.tool, r.seconds))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "memcheck, racecheck and initcheck ran and found nothing; synccheck failed: …".
fn nothing_found(runs: &[ToolRun]) -> String {
    let clean: Vec<String> = runs
        .iter()
        .filter(|r| r.result == RunResult::Clean)
        .map(|r| r.tool.to_string())
        .collect();
    let mut parts = Vec::new();
    match clean.as_slice() {
        [] => {}
        [one] => parts.push(format!("{one} ran and found nothing")),
        [rest @ .., last] => parts.push(format!(
            "{} and {last} ran and found nothing",
            rest.join(", ")
        )),
    }
    for run in runs {
        if let RunResult::Failed { why } = &run.result {
            parts.push(why.clone());
        }
    }
    if parts.is_empty() {
        return "No sanitizer tool was run.".to_string();
    }
    let total: f64 = runs.iter().map(|r| r.seconds).sum();
    format!("compute-sanitizer: {} ({total:.1} s).", parts.join("; "))
}
