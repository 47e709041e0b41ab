//! What `kernelbook check` says of a learner's kernel, as data: the verdict, the table's rows,
//! the compiler's errors and the sanitizer's findings at lines of the learner's file. The page
//! of `kernelbook serve` shows it beside the editor; `kernelbook check --json` prints it.

use super::check::{REPORT_HEADER, measured_on, report_rows};
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::CheckedExercise;
use kernelbook_runner::exercise::Verdict;
use kernelbook_runner::sanitizer::Verdict as SanitizerVerdict;
use mdbook_kernelbook::render::format_params;
use serde::Serialize;

/// What the page shows beside the editor: `kernelbook check`'s verdict and table.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// `pass`, `fail`, or `not_graded` (the starter itself did not run).
    pub verdict: &'static str,
    /// The verdict as `kernelbook check` prints it.
    pub message: String,
    pub title: String,
    pub header: [&'static str; 7],
    pub rows: Vec<[String; 7]>,
    pub measured_on: String,
    /// The compiler's errors, at lines of the learner's kernel.
    pub errors: Vec<ErrorLine>,
    /// What compute-sanitizer said, where the kernel failed and it ran: its lines as
    /// `kernelbook check` prints them, and each finding at its line of the learner's kernel.
    pub sanitizer: Vec<String>,
    pub findings: Vec<ErrorLine>,
}

/// A compiler message at a line of the learner's kernel (counted from 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorLine {
    pub line: usize,
    pub message: String,
}

impl CheckReport {
    pub fn new(lab: &LabSpec, checked: &CheckedExercise, file: &std::path::Path) -> Self {
        let (results, verdict) = (&checked.results, &checked.verdict);
        let errors = match verdict {
            Verdict::DoesNotCompile { message } => error_lines(message, file),
            _ => Vec::new(),
        };
        CheckReport {
            verdict: if verdict.is_pass() {
                "pass"
            } else if verdict.is_graded() {
                "fail"
            } else {
                "not_graded"
            },
            message: verdict.to_string(),
            title: lab.title.clone(),
            header: REPORT_HEADER,
            rows: report_rows(lab, results, file),
            measured_on: measured_on(results),
            errors,
            sanitizer: sanitizer_lines(lab, checked),
            findings: checked
                .sanitizer
                .as_ref()
                .map(|found| finding_lines(found, file))
                .unwrap_or_default(),
        }
    }
}

/// The sanitizer's findings that sit at a line of the learner's kernel `file`.
fn finding_lines(found: &SanitizerVerdict, file: &std::path::Path) -> Vec<ErrorLine> {
    let SanitizerVerdict::Found { diagnoses, .. } = found else {
        return Vec::new();
    };
    diagnoses
        .iter()
        .filter_map(|diagnosis| {
            let placed = diagnosis.at.as_ref()?;
            (placed.at.file == file).then(|| ErrorLine {
                line: placed.at.line,
                message: format!("{}: {}", diagnosis.kind.title(), diagnosis.sentence),
            })
        })
        .collect()
}

/// The lines of a compiler `log` that point into `file` (`FILE:LINE: message` or
/// `FILE:LINE:COLUMN: message`, as the runner writes them for the learner's kernel).
pub fn error_lines(log: &str, file: &std::path::Path) -> Vec<ErrorLine> {
    let prefix = format!("{}:", file.display());
    log.lines()
        .filter_map(|text| {
            let at = text.find(&prefix)?;
            let rest = &text[at + prefix.len()..];
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            let line: usize = rest[..digits].parse().ok().filter(|&line| line > 0)?;
            let mut message = rest[digits..].trim_start_matches(':');
            // A column, where the compiler gives one.
            let column = message.chars().take_while(char::is_ascii_digit).count();
            if column > 0 && message[column..].starts_with(':') {
                message = &message[column + 1..];
            }
            Some(ErrorLine {
                line,
                message: message.trim().to_string(),
            })
        })
        .collect()
}

/// What compute-sanitizer said, as `kernelbook check` prints it under the verdict, with the
/// sizes it ran at where the exercise names smaller ones than the lab's.
pub fn sanitizer_lines(lab: &LabSpec, checked: &CheckedExercise) -> Vec<String> {
    let Some(verdict) = &checked.sanitizer else {
        return Vec::new();
    };
    let mut lines = verdict.lines();
    let small = lab
        .exercise
        .as_ref()
        .map(|exercise| &exercise.sanitize_params)
        .filter(|params| !params.is_empty());
    if let (Some(params), false) = (
        small,
        matches!(verdict, SanitizerVerdict::Unavailable { .. }),
    ) {
        lines.push(format!(
            "(the sanitizer's runs used {}, the exercise's `sanitize_params`: the tools slow a kernel down a hundredfold)",
            format_params(params)
        ));
    }
    lines
}
