//! A failing variant under NVIDIA's compute-sanitizer: the measuring child runs it once more
//! without the tool, to see what its output shows ([`Purpose::Diagnose`]), then under the
//! tools that symptom points at, one process each, until one finds something
//! ([`sanitizer::sanitize`]). Every run has a time limit, in a process group of its own that
//! dies with kernelbook: a hang or a crash of the tool is reported, never waited for.

use crate::backend::BackendChoice;
use crate::engine::{DiagnosedRun, Purpose, RunOptions, VariantDiagnosis};
use crate::plan::LabPlan;
use crate::process::{self, Spawn};
use crate::protocol::{CHILD_ARG, ChildRequest, Event, Request};
use crate::sanitizer::{
    self, Check, Context, DeviceBuffer, Launch, OutputPattern, Ran, SanitizerError, Sources,
    Symptom, Tool, Verdict,
};
use kernelbook_core::results::{FailureStage, Outcome};
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// How a variant failed when it was measured: what the sanitizer is asked to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Its output differed from the reference.
    Wrong,
    /// It faulted, or its process died.
    Fault,
    /// It ran past its time limit.
    Hang,
    /// It passed its check, and is checked for what a run can get right by luck (a race).
    Passed,
}

impl Failure {
    /// The failure of a measured outcome, where the sanitizer may find its cause (not where
    /// the kernel did not compile, or the reference failed).
    pub fn of(outcome: &Outcome) -> Option<Failure> {
        match outcome {
            Outcome::WrongResult { .. } => Some(Failure::Wrong),
            Outcome::Failed { stage, .. } => match stage {
                FailureStage::Launch | FailureStage::Crash | FailureStage::Timing => {
                    Some(Failure::Fault)
                }
                FailureStage::Timeout => Some(Failure::Hang),
                FailureStage::Compile | FailureStage::Load | FailureStage::Reference => None,
            },
            _ => None,
        }
    }
}

/// What a diagnostic run of the child reported.
#[derive(Debug, Default)]
struct ChildReport {
    diagnoses: Vec<VariantDiagnosis>,
    buffers: Vec<DeviceBuffer>,
}

/// The time a run under a tool may take beyond the lab's own limit: the tools slow kernels
/// down tens of times, and start slowly.
const TOOL_GRACE: Duration = Duration::from_secs(60);

/// Runs `variant` of `plan` (on the input of `seed`) under compute-sanitizer: see the module
/// documentation.
pub(super) fn sanitize_variant(
    exe: &Path,
    (backend, ordinal): (BackendChoice, usize),
    plan: &LabPlan,
    seed: u64,
    variant: &str,
    failure: Failure,
) -> Verdict {
    if let Some(why) = backend.sanitizer_unavailable() {
        return Verdict::Unavailable { why: why.into() };
    }
    let Some(tool_path) = sanitizer::find_sanitizer() else {
        return Verdict::Unavailable {
            why: SanitizerError::Missing(None).to_string(),
        };
    };
    let Some(kernel) = plan
        .variant(variant)
        .and_then(|v| plan.kernel_of(v))
        .map(|build| build.source.clone())
    else {
        return Verdict::Unavailable {
            why: format!("variant `{variant}` runs no kernel of its own to check"),
        };
    };
    let body = match request_body(backend, ordinal, plan, seed, variant) {
        Ok(body) => body,
        Err(why) => return Verdict::Unavailable { why },
    };
    let limit = plan.timeout() + TOOL_GRACE;
    // A hang is not run again without a tool: it would only hang again.
    let plain = match failure {
        Failure::Hang => ChildReport::default(),
        Failure::Wrong | Failure::Fault | Failure::Passed => {
            run_plain(exe, &body, limit).unwrap_or_default()
        }
    };
    let diagnosis = plain.diagnoses.iter().find(|d| d.variant == variant);
    let pattern = diagnosis.and_then(|d| match &d.run {
        DiagnosedRun::Wrong { pattern } => Some(pattern.clone()),
        DiagnosedRun::Right | DiagnosedRun::Failed { .. } => None,
    });
    // Right this time, after a wrong result: a race, most likely.
    let no_pattern = OutputPattern::default();
    let symptom = match (failure, &pattern) {
        (Failure::Hang, _) => Symptom::Hang,
        (_, Some(pattern)) => Symptom::Wrong(pattern),
        (Failure::Fault, None) => Symptom::Fault,
        (Failure::Wrong | Failure::Passed, None) => Symptom::Wrong(&no_pattern),
    };
    let first_launch = own_launch(plan, variant);
    let shared_memory =
        kernel.source.contains("__shared__") || first_launch.is_some_and(|l| l.shared_bytes > 0);
    let tools = sanitizer::tools_for(symptom, shared_memory);
    let folder = match tempfile::tempdir() {
        Ok(folder) => folder,
        Err(err) => {
            return Verdict::Unavailable {
                why: format!("cannot make a folder for its reports: {err}"),
            };
        }
    };
    let kernels = [kernel];
    let context = Context {
        sources: Sources { kernels: &kernels },
        buffers: &plain.buffers,
        launch: diagnosis
            .and_then(|d| d.launch)
            .or(first_launch.map(|l| Launch {
                grid: l.grid,
                block: l.block,
            })),
    };
    let run_tool = |tool: Tool| {
        let started = Instant::now();
        let log = folder.path().join(format!("{tool}.log"));
        let check = Check {
            tool,
            kernel: &kernels[0].name,
            shared_memory,
            log_file: &log,
        };
        let mut command = sanitizer::command(&tool_path, &check, exe, &[OsString::from(CHILD_ARG)]);
        crate::backend::pass_environment_to_child(&mut command);
        let command = process::under_keeper(exe, &command);
        let ran = sanitizer::run_capturing(command, tool, &log, Some(&body), limit).map(
            |(report, stdout)| Ran {
                report,
                buffers: child_report(&stdout).map(|r| r.buffers),
            },
        );
        (ran, started.elapsed())
    };
    sanitizer::sanitize(&tools, run_tool, &context, pattern.as_ref())
}

/// The variant's first launch, where it launches a kernel.
fn own_launch<'p>(plan: &'p LabPlan, variant: &str) -> Option<&'p crate::plan::LaunchPlan> {
    match &plan.variant(variant)?.op {
        crate::plan::OpPlan::Kernel(op) => op.launches().next(),
        _ => None,
    }
}

/// The child's request: run `variant` once, compare, say where the buffers are.
fn request_body(
    backend: BackendChoice,
    ordinal: usize,
    plan: &LabPlan,
    seed: u64,
    variant: &str,
) -> Result<Vec<u8>, String> {
    let request = Request::Measure(Box::new(ChildRequest {
        backend,
        ordinal,
        plan: plan.clone(),
        options: RunOptions {
            seed,
            only: Some(vec![variant.to_string()]),
            purpose: Purpose::Diagnose,
        },
    }));
    let mut body = serde_json::to_vec(&request).map_err(|err| format!("the request: {err}"))?;
    body.push(b'\n');
    Ok(body)
}

/// The diagnostic run without a tool: what the variant's output shows.
fn run_plain(exe: &Path, body: &[u8], limit: Duration) -> Option<ChildReport> {
    let mut command = Command::new(exe);
    command.arg(CHILD_ARG);
    crate::backend::pass_environment_to_child(&mut command);
    let how = Spawn {
        own_group: true,
        stderr_lines: 64,
    };
    let mut child = process::spawn(command, how).ok()?;
    if let Some(mut stdin) = child.take_stdin() {
        let body = body.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&body);
        });
    }
    child.close_stdin();
    let stdout = child.stdout_to_end();
    // Dropping `child` at a time-out kills its group.
    child.wait_timeout(limit).ok()??;
    let stdout = stdout
        .recv_until(Instant::now() + Duration::from_secs(2))
        .ok()?;
    child_report(&stdout)
}

/// The `done` event among a child's lines on its standard output.
fn child_report(stdout: &str) -> Option<ChildReport> {
    crate::protocol::events_in(stdout).find_map(|event| match event {
        Event::Done {
            diagnoses, buffers, ..
        } => Some(ChildReport { diagnoses, buffers }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_read_from_the_measured_outcome() {
        let failed = |stage| Outcome::Failed {
            stage,
            message: "x".into(),
        };
        assert_eq!(
            Failure::of(&failed(FailureStage::Timeout)),
            Some(Failure::Hang)
        );
        assert_eq!(
            Failure::of(&failed(FailureStage::Launch)),
            Some(Failure::Fault)
        );
        assert_eq!(
            Failure::of(&failed(FailureStage::Crash)),
            Some(Failure::Fault)
        );
        assert_eq!(Failure::of(&failed(FailureStage::Compile)), None);
        assert_eq!(Failure::of(&failed(FailureStage::Reference)), None);
    }

    #[test]
    fn the_childs_report_is_found_among_the_tools_lines() {
        let done = Event::Done {
            clocks: None,
            reusable: false,
            launches: Vec::new(),
            diagnoses: vec![VariantDiagnosis {
                variant: "yours".into(),
                launch: Some(Launch {
                    grid: [4, 1, 1],
                    block: [256, 1, 1],
                }),
                run: DiagnosedRun::Right,
            }],
            buffers: vec![DeviceBuffer {
                name: "out".into(),
                elem: kernelbook_core::spec::ElemType::F32,
                address: 0x7f00_0000_0000,
                bytes: 4096,
            }],
        };
        let stdout = format!(
            "========= COMPUTE-SANITIZER\n{}\n========= ERROR SUMMARY: 0 errors\n",
            serde_json::to_string(&done).expect("json")
        );
        let report = child_report(&stdout).expect("a report");
        assert_eq!(report.diagnoses[0].variant, "yours");
        assert_eq!(report.buffers[0].name, "out");
        assert!(child_report("no events here\n").is_none());
    }
}
