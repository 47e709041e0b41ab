//! Measuring in a child process, so that a kernel that faults or hangs cannot take the build
//! down with it.
//!
//! A CUDA context that saw an illegal address or a trap is unusable until the process ends, and
//! a kernel that never returns holds the GPU. So the runner re-runs its own executable with
//! [`CHILD_ARG`]: the child measures the lab and reports each variant as a line of JSON on
//! stdout. The parent enforces the lab's time limit per variant, kills a child that overruns,
//! records the variant that was running as hung or crashed, and starts a fresh child for the
//! variants left. A variant whose launch fails with a driver error ends its child the same way
//! ([`MeasureOptions::stop_after_device_error`]).

use crate::backend::{self, BackendChoice};
use crate::exercise::{CheckPlan, LearnerVariant, with_learner_variant};
use crate::measure::{self, MeasureError, MeasureOptions, Progress};
use crate::runner::RunError;
use kernelbook_core::KernelSource;
use kernelbook_core::expr::Params;
use kernelbook_core::results::{
    Clocks, FORMAT_VERSION, FailureStage, LabResults, Outcome, Provenance, VariantResult,
};
use kernelbook_core::spec::LabSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The first argument that makes a kernelbook binary act as a measuring child.
pub const CHILD_ARG: &str = "__measure-lab";

/// What the parent asks a child to measure (JSON on the child's stdin).
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildRequest {
    pub backend: BackendChoice,
    pub lab_file: PathBuf,
    pub params: Params,
    pub kernels: BTreeMap<String, KernelSource>,
    pub options: MeasureOptions,
    /// For `kernelbook check`: the learner's variant, which the lab file does not hold, to add
    /// after reading it (its kernel is in `kernels`).
    #[serde(default)]
    pub learner: Option<LearnerVariant>,
}

/// One line of a child's stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    Stage {
        message: String,
    },
    Started {
        index: usize,
        total: usize,
        name: String,
    },
    Samples {
        count: usize,
    },
    Begin {
        provenance: Box<Provenance>,
    },
    Finished {
        result: Box<VariantResult>,
    },
    /// Everything asked for was measured; the clocks right after the last sample.
    Done {
        #[serde(default)]
        clocks: Option<Clocks>,
    },
    Failed {
        message: String,
    },
}

/// Writes events to stdout, one JSON line each, flushed at once so the parent sees progress.
struct EventWriter;

impl EventWriter {
    fn send(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        if let Ok(line) = serde_json::to_string(event) {
            // A parent that went away cannot be told anything more.
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

impl Progress for EventWriter {
    fn stage(&mut self, message: &str) {
        self.send(&Event::Stage {
            message: message.to_string(),
        });
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        self.send(&Event::Started {
            index,
            total,
            name: name.to_string(),
        });
    }
    fn samples(&mut self, count: usize) {
        if count.is_multiple_of(25) {
            self.send(&Event::Samples { count });
        }
    }
    fn begin(&mut self, provenance: &Provenance) {
        self.send(&Event::Begin {
            provenance: Box::new(provenance.clone()),
        });
    }
    fn finished(&mut self, result: &VariantResult) {
        self.send(&Event::Finished {
            result: Box::new(result.clone()),
        });
    }
}

/// The child's side: reads a [`ChildRequest`] from stdin, measures, reports on stdout.
pub fn child_main() -> ExitCode {
    let mut events = EventWriter;
    match run_child(&mut events) {
        Ok(clocks) => {
            events.send(&Event::Done { clocks });
            ExitCode::SUCCESS
        }
        Err(message) => {
            events.send(&Event::Failed { message });
            ExitCode::FAILURE
        }
    }
}

fn run_child(events: &mut EventWriter) -> Result<Option<Clocks>, String> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("cannot read the request: {e}"))?;
    let request: ChildRequest =
        serde_json::from_str(&input).map_err(|e| format!("malformed request: {e}"))?;
    let lab = LabSpec::load(&request.lab_file)
        .and_then(|lab| lab.with_params(&request.params))
        .map_err(|e| e.to_string())?;
    let lab = match &request.learner {
        Some(learner) => with_learner_variant(&lab, &learner.starter, &learner.kernel_key)?,
        None => lab,
    };
    let found = backend::find(request.backend)?;
    let mut device = backend::open(found.backend)?;
    measure::measure_lab(
        &lab,
        &request.kernels,
        device.as_mut(),
        found.compiler.as_ref(),
        &request.options,
        events,
    )
    .map(|results| results.provenance.clocks)
    // The parent names the lab itself.
    .map_err(|MeasureError::Lab { message, .. }| message)
}

/// The parent's side: measures `lab` through children of `exe`, one after another until every
/// variant has a result.
pub fn measure_isolated(
    exe: &Path,
    backend: BackendChoice,
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
) -> Result<LabResults, RunError> {
    measure_children(exe, backend, lab, kernels, None, options, progress)
}

/// [`measure_isolated`] for `kernelbook check`: `plan.lab` holds the learner's variant, which
/// each child adds again after reading the lab file.
pub fn measure_check_isolated(
    exe: &Path,
    backend: BackendChoice,
    plan: &CheckPlan,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
) -> Result<LabResults, RunError> {
    measure_children(
        exe,
        backend,
        &plan.lab,
        &plan.kernels,
        Some(&plan.learner),
        options,
        progress,
    )
}

fn measure_children(
    exe: &Path,
    backend: BackendChoice,
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
    learner: Option<&LearnerVariant>,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
) -> Result<LabResults, RunError> {
    let started = Instant::now();
    let wanted: Vec<String> = match &options.only {
        Some(only) => only.clone(),
        None => lab.variants.iter().map(|v| v.name.clone()).collect(),
    };
    let mut remaining = wanted.clone();
    let mut done: BTreeMap<String, VariantResult> = BTreeMap::new();
    let mut provenance: Option<Provenance> = None;
    // Every child verifies against the same input.
    let seed = options.seed.unwrap_or_else(|| fastrand::u64(..));
    let lab_error = |message: String| {
        RunError::Measure(MeasureError::Lab {
            lab: lab.name.clone(),
            message,
        })
    };

    while !remaining.is_empty() {
        let request = ChildRequest {
            backend,
            lab_file: lab.file.clone(),
            params: lab.params.clone(),
            kernels: kernels.clone(),
            options: MeasureOptions {
                only: Some(remaining.clone()),
                stop_after_device_error: true,
                seed: Some(seed),
                ..options.clone()
            },
            learner: learner.cloned(),
        };
        let before = remaining.len();
        let ended = run_one_child(
            exe,
            &request,
            lab.timeout(),
            progress,
            &mut |result| {
                remaining.retain(|name| *name != result.name);
                done.insert(result.name.clone(), result);
            },
            &mut provenance,
        )
        .map_err(|e| match e {
            ChildFailure::Spawn(message) => RunError::Unavailable(message),
            ChildFailure::Lab(message) => lab_error(message),
        })?;
        match ended {
            ChildEnd::Done => {}
            ChildEnd::Stopped {
                running,
                stage,
                message,
            } => {
                // The variant that was running (or, before any started, the next one) gets the
                // blame; the next child starts after it.
                let name = running.or_else(|| remaining.first().cloned());
                if let Some(name) = name {
                    remaining.retain(|n| *n != name);
                    let variant = lab.variant(&name);
                    done.insert(
                        name.clone(),
                        VariantResult {
                            kernel: variant.and_then(|v| v.kernel_name()).map(str::to_string),
                            source_hash: variant
                                .and_then(|v| v.kernel_name())
                                .and_then(|k| kernels.get(k))
                                .map(KernelSource::source_hash),
                            compile_flags: Vec::new(),
                            bytes_moved: variant
                                .and_then(|v| lab.bytes_moved(v, &lab.params).ok())
                                .unwrap_or(0),
                            launch: None,
                            resources: None,
                            outcome: Outcome::Failed { stage, message },
                            implementation: None,
                            work: None,
                            counter: None,
                            other_kernels: Default::default(),
                            name,
                        },
                    );
                }
            }
        }
        if remaining.len() == before {
            return Err(lab_error(
                "the measuring process made no progress; giving up on the lab".into(),
            ));
        }
    }

    let mut provenance =
        provenance.ok_or_else(|| lab_error("no measuring process reported its device".into()))?;
    provenance.measured_at = measure::now_rfc3339();
    provenance.wall_seconds = started.elapsed().as_secs_f64();
    Ok(LabResults {
        format_version: FORMAT_VERSION,
        lab: lab.name.clone(),
        params: lab.params.clone(),
        provenance,
        ceiling: lab.ceiling.clone(),
        variants: wanted.iter().filter_map(|name| done.remove(name)).collect(),
        profile: None,
    })
}

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

enum ChildFailure {
    Spawn(String),
    Lab(String),
}

fn run_one_child(
    exe: &Path,
    request: &ChildRequest,
    timeout: Duration,
    progress: &mut dyn Progress,
    on_result: &mut dyn FnMut(VariantResult),
    provenance: &mut Option<Provenance>,
) -> Result<ChildEnd, ChildFailure> {
    let mut child = Command::new(exe)
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ChildFailure::Spawn(format!("cannot start {}: {e}", exe.display())))?;
    let body = serde_json::to_vec(request).map_err(|e| ChildFailure::Spawn(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&body)
            .map_err(|e| ChildFailure::Spawn(format!("cannot send the request: {e}")))?;
    }
    let (events_tx, events_rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // A line that is not an event (it should not happen) is passed over.
                if let Ok(event) = serde_json::from_str::<Event>(&line)
                    && events_tx.send(event).is_err()
                {
                    break;
                }
            }
        });
    }
    let stderr_reader = child.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        })
    });
    let stderr_tail = |reader: Option<std::thread::JoinHandle<String>>| -> String {
        let text = reader.and_then(|r| r.join().ok()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(3)..].join(" / ")
    };

    let mut running: Option<String> = None;
    let mut deadline = Instant::now() + timeout;
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        match events_rx.recv_timeout(wait) {
            Ok(Event::Stage { message }) => progress.stage(&message),
            Ok(Event::Samples { count }) => progress.samples(count),
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
            Ok(Event::Done { clocks }) => {
                let _ = child.wait();
                if let (Some(clocks), Some(provenance)) = (clocks, provenance.as_mut()) {
                    provenance.clocks = Some(clocks);
                }
                return Ok(ChildEnd::Done);
            }
            Ok(Event::Failed { message }) => {
                let _ = child.wait();
                return Err(ChildFailure::Lab(message));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
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
                let status = child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string());
                let tail = stderr_tail(stderr_reader);
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
