//! The measuring process a build keeps between labs, and the loop that measures one lab's
//! device rows in it: started for the first lab, reused while it is healthy, replaced after it
//! crashes, hangs or reports its device unusable, the variants left measured by its successor.

use super::RunError;
use crate::backend::BackendChoice;
use crate::engine::{EngineError, Progress, Purpose, RunOptions, failed_result};
use crate::plan::{LabPlan, OpPlan};
use crate::process::{self, ChildProcess, Incoming, Spawn};
use crate::protocol::{CHILD_ARG, ChildRequest, Event, PrepareRequest, Request};
use kernelbook_core::results::{FailureStage, Provenance, VariantResult};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The measuring process a build keeps between labs.
#[derive(Debug)]
pub struct MeasuringProcess {
    exe: PathBuf,
    live: Mutex<Option<LiveChild>>,
}

impl MeasuringProcess {
    /// Children of `exe`, which must answer [`CHILD_ARG`].
    pub fn new(exe: &Path) -> Self {
        MeasuringProcess {
            exe: exe.to_path_buf(),
            live: Mutex::new(None),
        }
    }

    /// The live child for `backend`, or a new one.
    fn take(&self, backend: BackendChoice) -> Result<LiveChild, ChildFailure> {
        let reusable = self
            .live
            .lock()
            .ok()
            .and_then(|mut live| live.take())
            .filter(|child| child.backend == backend)
            .and_then(LiveChild::if_running);
        match reusable {
            Some(child) => Ok(child),
            None => LiveChild::spawn(&self.exe, backend),
        }
    }

    /// Tells the live child (started now if there is none) which labs come next, so that it
    /// compiles their kernels and prepares their inputs while it measures. A child that does
    /// not take the request is let go: the next lab starts another.
    pub fn prepare(&self, request: &PrepareRequest) -> Result<(), String> {
        let mut child = self
            .take(request.backend)
            .map_err(|failure| match failure {
                ChildFailure::Spawn(message) | ChildFailure::Lab(message) => message,
            })?;
        let line =
            serde_json::to_string(&Request::Prepare(request.clone())).map_err(|e| e.to_string())?;
        if let Err(err) = child.process.send_line(&line) {
            child.kill();
            return Err(format!("cannot send the labs to prepare: {err}"));
        }
        match child.events.recv_until(Instant::now() + PREPARE_ANSWER) {
            Ok(Event::Prepared) => {
                self.put_back(child);
                Ok(())
            }
            Ok(other) => {
                child.kill();
                Err(format!(
                    "the measuring process answered {other:?} to the labs to prepare"
                ))
            }
            Err(_) => {
                child.kill();
                Err("the measuring process did not take the labs to prepare".into())
            }
        }
    }

    /// Keeps `child` for the next lab.
    fn put_back(&self, child: LiveChild) {
        if let Ok(mut live) = self.live.lock() {
            *live = Some(child);
        }
    }
}

/// Measures the device rows of `plan` in `process`, again in a fresh process after a crash,
/// a hang or a sticky fault, until every one has a result. Returns the rows by name and the
/// provenance the first child reported.
pub fn measure_in_children(
    process: &MeasuringProcess,
    (backend, ordinal): (BackendChoice, usize),
    plan: &LabPlan,
    seed: u64,
    progress: &mut dyn Progress,
) -> Result<(BTreeMap<String, VariantResult>, Provenance), RunError> {
    let lab_error = |message: String| RunError::Lab(EngineError::lab(&plan.lab, message));
    let mut remaining: Vec<String> = plan
        .variants
        .iter()
        .filter(|v| !matches!(v.op, OpPlan::Python(_)))
        .map(|v| v.name.clone())
        .collect();
    let mut done: BTreeMap<String, VariantResult> = BTreeMap::new();
    let mut provenance: Option<Provenance> = None;
    // At least one child runs, even for a lab of Python rows only: it reports the device.
    let mut first = true;
    while first || !remaining.is_empty() {
        first = false;
        let request = ChildRequest {
            backend,
            ordinal,
            plan: plan.clone(),
            options: RunOptions {
                seed,
                only: Some(remaining.clone()),
                purpose: Purpose::Measure,
            },
        };
        let before = remaining.len();
        let mut on_result = |result: VariantResult| {
            remaining.retain(|name| *name != result.name);
            done.insert(result.name.clone(), result);
        };
        let ended = run_one_child(
            process,
            &request,
            plan.timeout(),
            progress,
            &mut on_result,
            &mut provenance,
        )
        .map_err(|failure| match failure {
            ChildFailure::Spawn(message) => RunError::Unavailable(message),
            ChildFailure::Lab(message) => lab_error(message),
        })?;
        if let ChildEnd::Stopped {
            running,
            stage,
            message,
        } = ended
        {
            // The variant that was running (or, before any started, the next one) gets the
            // blame; the next child starts after it.
            let name = running.or_else(|| remaining.first().cloned());
            if let Some(variant) = name.and_then(|name| plan.variant(&name)) {
                remaining.retain(|n| *n != variant.name);
                done.insert(
                    variant.name.clone(),
                    failed_result(plan, variant, stage, message),
                );
            }
        }
        if before > 0 && remaining.len() == before {
            return Err(lab_error(
                "the measuring process made no progress; giving up on the lab".into(),
            ));
        }
    }
    let provenance =
        provenance.ok_or_else(|| lab_error("no measuring process reported its device".into()))?;
    Ok((done, provenance))
}

/// A running measuring process and its pipes.
#[derive(Debug)]
struct LiveChild {
    backend: BackendChoice,
    process: ChildProcess,
    events: Incoming<Event>,
}

/// The last lines of a child's stderr kept for a crash report.
const STDERR_LINES: usize = 20;
/// How long a child that said it is done, or closed its stdout, may take to exit (a CUDA
/// context takes a moment to tear down) before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(10);
/// How long a child may take to take the labs to prepare (it opens the GPU first, if it has
/// not yet: a CUDA context takes a moment).
const PREPARE_ANSWER: Duration = Duration::from_secs(30);

impl LiveChild {
    fn spawn(exe: &Path, backend: BackendChoice) -> Result<LiveChild, ChildFailure> {
        let mut command = Command::new(exe);
        command.arg(CHILD_ARG);
        crate::backend::pass_environment_to_child(&mut command);
        // In this process's group: Ctrl-C reaches it as it reaches us.
        let how = Spawn {
            own_group: false,
            stderr_lines: STDERR_LINES,
        };
        // Events come on a channel of their own: what the kernels print cannot garble them.
        let mut process = process::spawn_with_channel(command, how)
            .map_err(|e| ChildFailure::Spawn(format!("cannot start {}: {e}", exe.display())))?;
        Ok(LiveChild {
            backend,
            events: process.json_lines(),
            process,
        })
    }

    /// `self`, if the process has not ended.
    fn if_running(mut self) -> Option<LiveChild> {
        self.process.is_running().then_some(self)
    }

    /// Waits for the process to end (it has, or is about to); returns its exit status and the
    /// last three lines of its stderr, joined.
    fn finish(mut self) -> (String, String) {
        let status = match self.process.wait_timeout(EXIT_GRACE) {
            Ok(Some(status)) => status.to_string(),
            Ok(None) => {
                self.process.kill();
                "it did not exit, so it was killed".to_string()
            }
            Err(err) => err.to_string(),
        };
        (status, self.process.stderr_tail(3))
    }

    fn kill(mut self) {
        self.process.kill();
    }
}

/// How a child's turn ended.
enum ChildEnd {
    /// The child measured everything it was asked to.
    Done,
    /// The child stopped early: it was killed after the time limit or it died.
    Stopped {
        running: Option<String>,
        stage: FailureStage,
        message: String,
    },
}

/// Why a child could not be asked at all, or what it said went wrong with the whole lab.
enum ChildFailure {
    Spawn(String),
    Lab(String),
}

fn run_one_child(
    process: &MeasuringProcess,
    request: &ChildRequest,
    timeout: Duration,
    progress: &mut dyn Progress,
    on_result: &mut dyn FnMut(VariantResult),
    provenance: &mut Option<Provenance>,
) -> Result<ChildEnd, ChildFailure> {
    let mut child = process.take(request.backend)?;
    let line = serde_json::to_string(&Request::Measure(Box::new(request.clone())))
        .map_err(|e| ChildFailure::Spawn(e.to_string()))?;
    if let Err(err) = child.process.send_line(&line) {
        child.kill();
        return Err(ChildFailure::Spawn(format!(
            "cannot send the request: {err}"
        )));
    }

    let mut running: Option<String> = None;
    let mut deadline = Instant::now() + timeout;
    loop {
        match child.events.recv_until(deadline) {
            Ok(Event::Stage { message }) => {
                progress.stage(&message);
                // A stage is progress too: the end of a wait for a NumPy reference restarts the
                // clock, so the wait does not eat the variant's own time limit.
                deadline = Instant::now() + timeout;
            }
            Ok(Event::Samples { count }) => progress.samples(count),
            Ok(Event::Mark { step }) => progress.mark(&step),
            Ok(Event::Begin { provenance: p }) => {
                progress.begin(&p);
                provenance.get_or_insert(*p);
            }
            Ok(Event::Started { index, total, name }) => {
                progress.variant(index, total, &name);
                running = Some(name);
                deadline = Instant::now() + timeout;
            }
            Ok(Event::Finished { result }) => {
                progress.finished(&result);
                running = None;
                on_result(*result);
            }
            Ok(Event::Prepared) => {}
            Ok(Event::Done {
                clocks, reusable, ..
            }) => {
                if let (Some(clocks), Some(provenance)) = (clocks, provenance.as_mut()) {
                    provenance.clocks = Some(clocks);
                }
                if reusable {
                    process.put_back(child);
                } else {
                    child.finish();
                }
                return Ok(ChildEnd::Done);
            }
            Ok(Event::Failed { message }) => {
                child.finish();
                return Err(ChildFailure::Lab(message));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                child.kill();
                return Ok(ChildEnd::Stopped {
                    running,
                    stage: FailureStage::Timeout,
                    message: format!(
                        "stopped after {} s, the lab's time limit (`timeout_s`): the kernel did not finish",
                        timeout.as_secs()
                    ),
                });
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let (status, tail) = child.finish();
                return Ok(ChildEnd::Stopped {
                    running,
                    stage: FailureStage::Crash,
                    message: if tail.is_empty() {
                        format!("the measuring process died ({status})")
                    } else {
                        format!("the measuring process died ({status}): {tail}")
                    },
                });
            }
        }
    }
}
