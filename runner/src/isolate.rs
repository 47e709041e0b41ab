//! Measuring in a child process, so that a kernel that faults or hangs cannot take the build
//! down with it.
//!
//! A CUDA context that saw an illegal address or a trap is unusable until the process ends, and
//! a kernel that never returns holds the GPU. So the runner re-runs its own executable with
//! [`CHILD_ARG`]: the child reads one [`ChildRequest`] per line on stdin, measures that lab,
//! reports each variant as a line of JSON on stdout, frees the lab's buffers and waits for the
//! next. One child serves lab after lab ([`MeasuringProcess`]), so a build opens the GPU once.
//! The parent enforces the lab's time limit per variant, kills a child that overruns, records
//! the variant that was running as hung or crashed, and starts a fresh child for the variants
//! left. A variant whose launch fails with a driver error ends its child the same way
//! ([`MeasureOptions::stop_after_device_error`]), and so does a lab after which the device
//! cannot even free its buffers.

use crate::backend::{self, BackendChoice};
use crate::exercise::{CheckPlan, LearnerVariant, with_learner_variant};
use crate::measure::{self, MeasureError, MeasureOptions, Progress};
use crate::peers::PythonPeers;
use crate::process::{self, ChildProcess, Incoming, Spawn};
use crate::runner::RunError;
use kernelbook_core::KernelSource;
use kernelbook_core::expr::Params;
use kernelbook_core::results::{
    Clocks, FailureStage, LabResults, Outcome, Provenance, VariantResult,
};
use kernelbook_core::spec::{Builtin, LabSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
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
        /// The process can measure another lab (its device is still usable).
        #[serde(default)]
        reusable: bool,
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

/// The child's side: reads [`ChildRequest`]s from stdin, one per line, and measures each,
/// reporting on stdout; ends at the end of its input, after a lab fails, or once its device is
/// unusable.
pub fn child_main() -> ExitCode {
    // Left running, it would hold the GPU: it ends with its parent, the runner or ncu.
    process::die_with_parent();
    let mut events = EventWriter;
    let mut gpu: Option<ChildGpu> = None;
    for line in std::io::stdin().lock().lines() {
        let line = match line {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => line,
            Err(err) => {
                events.send(&Event::Failed {
                    message: format!("cannot read the request: {err}"),
                });
                return ExitCode::FAILURE;
            }
        };
        match measure_request(&line, &mut gpu, &mut events) {
            Ok((clocks, reusable)) => {
                events.send(&Event::Done { clocks, reusable });
                if !reusable {
                    return ExitCode::SUCCESS;
                }
            }
            Err(message) => {
                events.send(&Event::Failed { message });
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The device a child opened for its first request, kept for the next.
struct ChildGpu {
    backend: BackendChoice,
    device: Box<dyn backend::Device + Send>,
    compiler: Box<dyn backend::Compiler + Send>,
}

/// Measures one request; returns the clocks after it and whether the device is still usable.
fn measure_request(
    line: &str,
    gpu: &mut Option<ChildGpu>,
    events: &mut EventWriter,
) -> Result<(Option<Clocks>, bool), String> {
    let request: ChildRequest =
        serde_json::from_str(line).map_err(|e| format!("malformed request: {e}"))?;
    let lab = LabSpec::load(&request.lab_file)
        .and_then(|lab| lab.with_params(&request.params))
        .map_err(|e| e.to_string())?;
    let lab = match &request.learner {
        Some(learner) => with_learner_variant(&lab, &learner.starter, &learner.kernel_key)?,
        None => lab,
    };
    if gpu.as_ref().is_none_or(|g| g.backend != request.backend) {
        let found = backend::find(request.backend)?;
        *gpu = Some(ChildGpu {
            backend: request.backend,
            device: backend::open(found.backend)?,
            compiler: found.compiler,
        });
    }
    let Some(ChildGpu {
        device, compiler, ..
    }) = gpu.as_mut()
    else {
        return Err("no GPU".into());
    };
    let measured = measure::measure_lab(
        &lab,
        &request.kernels,
        device.as_mut(),
        compiler.as_ref(),
        &request.options,
        events,
    );
    // Freeing the lab's buffers waits for the device: a fault earlier makes that fail, and the
    // process must not measure anything more.
    let reusable = device.release_lab().is_ok();
    measured
        .map(|results| (results.provenance.clocks, reusable))
        // The parent names the lab itself.
        .map_err(|MeasureError::Lab { message, .. }| message)
}

/// The measuring process a build keeps between labs: started for the first lab, reused while
/// it is healthy, replaced after it crashes, hangs or reports its device unusable.
#[derive(Debug)]
pub struct MeasuringProcess {
    exe: PathBuf,
    live: Mutex<Option<LiveChild>>,
}

/// Where a lab's measurements run: its kernels in the measuring process, on `backend`; its
/// Python rows in `peers`, in this process.
#[derive(Debug, Clone, Copy)]
pub struct Isolation<'a> {
    pub process: &'a MeasuringProcess,
    pub backend: BackendChoice,
    pub peers: &'a PythonPeers,
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

    /// Keeps `child` for the next lab.
    fn put_back(&self, child: LiveChild) {
        if let Ok(mut live) = self.live.lock() {
            *live = Some(child);
        }
    }
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

impl LiveChild {
    fn spawn(exe: &Path, backend: BackendChoice) -> Result<LiveChild, ChildFailure> {
        let mut command = Command::new(exe);
        command.arg(CHILD_ARG);
        // In this process's group: Ctrl-C reaches it as it reaches us.
        let how = Spawn {
            own_group: false,
            stderr_lines: STDERR_LINES,
        };
        let mut process = process::spawn(command, how)
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

/// The parent's side: measures `lab` in the measuring process, again in a fresh one after a
/// crash or a hang, until every variant has a result.
///
/// The variants that run in Python are measured afterwards by `isolation.peers`, in this
/// process: one Python process serves the whole build, so `import torch` is paid once.
pub fn measure_isolated(
    isolation: Isolation<'_>,
    lab: &LabSpec,
    kernels: &BTreeMap<String, KernelSource>,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
) -> Result<LabResults, RunError> {
    measure_children(isolation, lab, kernels, None, options, progress)
}

/// [`measure_isolated`] for `kernelbook check`: `plan.lab` holds the learner's variant, which
/// each child adds again after reading the lab file.
pub fn measure_check_isolated(
    isolation: Isolation<'_>,
    plan: &CheckPlan,
    options: &MeasureOptions,
    progress: &mut dyn Progress,
) -> Result<LabResults, RunError> {
    measure_children(
        isolation,
        &plan.lab,
        &plan.kernels,
        Some(&plan.learner),
        options,
        progress,
    )
}

fn measure_children(
    isolation: Isolation<'_>,
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
    let in_python = |name: &String| {
        lab.variant(name)
            .and_then(|v| v.builtin)
            .is_some_and(Builtin::runs_in_python)
    };
    let (python, mut remaining): (Vec<String>, Vec<String>) =
        wanted.iter().cloned().partition(in_python);
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

    // At least one child runs, even for a lab of Python peers only: it reports the device.
    let mut first = true;
    while first || !remaining.is_empty() {
        first = false;
        let request = ChildRequest {
            backend: isolation.backend,
            lab_file: lab.file.clone(),
            params: lab.params.clone(),
            kernels: kernels.clone(),
            options: MeasureOptions {
                only: Some(remaining.clone()),
                stop_after_device_error: true,
                defer_python: true,
                seed: Some(seed),
                ..options.clone()
            },
            learner: learner.cloned(),
        };
        let before = remaining.len();
        let ended = run_one_child(
            isolation.process,
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
        if before > 0 && remaining.len() == before {
            return Err(lab_error(
                "the measuring process made no progress; giving up on the lab".into(),
            ));
        }
    }

    let provenance =
        provenance.ok_or_else(|| lab_error("no measuring process reported its device".into()))?;
    // The GPU is free now: no child is measuring.
    let options = &MeasureOptions {
        rule: lab.stopping_rule(&options.rule),
        ..options.clone()
    };
    for name in &python {
        let (Some(index), Some(variant)) = (
            lab.variants.iter().position(|v| v.name == *name),
            lab.variant(name),
        ) else {
            continue;
        };
        progress.variant(index, lab.variants.len(), name);
        let bytes_moved = lab.bytes_moved(variant, &lab.params).unwrap_or(0);
        let mut result = measure::result_template(variant, kernels, bytes_moved);
        measure::measure_python_variant(
            &mut result,
            lab,
            variant,
            kernels,
            &provenance.device,
            options,
            isolation.peers,
        );
        progress.finished(&result);
        done.insert(name.clone(), result);
    }
    let variants = wanted.iter().filter_map(|name| done.remove(name)).collect();
    Ok(measure::lab_results(lab, provenance, started, variants))
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
    process: &MeasuringProcess,
    request: &ChildRequest,
    timeout: Duration,
    progress: &mut dyn Progress,
    on_result: &mut dyn FnMut(VariantResult),
    provenance: &mut Option<Provenance>,
) -> Result<ChildEnd, ChildFailure> {
    let mut child = process.take(request.backend)?;
    let line = serde_json::to_string(request).map_err(|e| ChildFailure::Spawn(e.to_string()))?;
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
            Ok(Event::Done { clocks, reusable }) => {
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::measure::Quiet;

    /// The measuring tests' lab: variants `memcpy`, `good`, `wrong` and `broken`.
    fn lab() -> LabSpec {
        LabSpec::parse(crate::measure::tests::LAB, Path::new("t.toml")).expect("lab")
    }

    /// A provenance to report, from a recording committed with the book.
    fn begin() -> Event {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../labs/recorded/bandwidth.json");
        let text = std::fs::read_to_string(path).expect("a recording");
        let results: LabResults = serde_json::from_str(&text).expect("recorded results");
        Event::Begin {
            provenance: Box::new(results.provenance),
        }
    }

    /// What a child reports for the variants `from` on: each started, then finished.
    fn variants_from(lab: &LabSpec, from: usize) -> Vec<Event> {
        let total = lab.variants.len();
        lab.variants
            .iter()
            .enumerate()
            .skip(from)
            .flat_map(|(index, variant)| {
                let mut result = measure::result_template(variant, &BTreeMap::new(), 1024);
                result.outcome = Outcome::Unavailable {
                    reason: "measured by a stand-in".into(),
                };
                [
                    Event::Started {
                        index,
                        total,
                        name: variant.name.clone(),
                    },
                    Event::Finished {
                        result: Box::new(result),
                    },
                ]
            })
            .collect()
    }

    fn done(reusable: bool) -> Event {
        Event::Done {
            clocks: None,
            reusable,
        }
    }

    /// Writes `events` as the protocol's lines to `dir/name`.
    fn reply(dir: &Path, name: &str, events: &[Event]) {
        let lines: Vec<String> = events
            .iter()
            .map(|e| serde_json::to_string(e).expect("event"))
            .collect();
        std::fs::write(dir.join(name), lines.join("\n") + "\n").expect("reply");
    }

    /// A stand-in for the kernelbook binary: counts its starts in `dir/starts`, then runs
    /// `body` (a shell script; `$n` is the start's number).
    fn fake_child(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("kernelbook");
        let script = format!(
            "#!/bin/sh\ncd '{}'\necho started >> starts\nn=$(wc -l < starts)\n{body}\n",
            dir.display()
        );
        std::fs::write(&path, script).expect("write the stand-in");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn starts(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("starts"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn measure(process: &MeasuringProcess) -> LabResults {
        let peers = PythonPeers::with_python("/nonexistent/python3");
        let isolation = Isolation {
            process,
            backend: BackendChoice::Cuda,
            peers: &peers,
        };
        let options = MeasureOptions {
            seed: Some(1),
            ..MeasureOptions::default()
        };
        measure_isolated(isolation, &lab(), &BTreeMap::new(), &options, &mut Quiet)
            .expect("measured")
    }

    fn outcome<'a>(results: &'a LabResults, name: &str) -> &'a Outcome {
        &results.variant(name).expect("variant").outcome
    }

    #[test]
    fn one_process_measures_lab_after_lab() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lab = lab();
        let events: Vec<Event> = std::iter::once(begin())
            .chain(variants_from(&lab, 0))
            .chain([done(true)])
            .collect();
        reply(dir.path(), "reply", &events);
        let exe = fake_child(dir.path(), "while read line; do cat reply; done");
        let process = MeasuringProcess::new(&exe);
        for _ in 0..3 {
            let results = measure(&process);
            assert_eq!(results.variants.len(), 4);
            assert!(matches!(
                outcome(&results, "broken"),
                Outcome::Unavailable { .. }
            ));
        }
        assert_eq!(starts(dir.path()), 1, "one process for three labs");
    }

    #[test]
    fn a_process_whose_device_is_unusable_is_not_asked_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lab = lab();
        let events: Vec<Event> = std::iter::once(begin())
            .chain(variants_from(&lab, 0))
            .chain([done(false)])
            .collect();
        reply(dir.path(), "reply", &events);
        let exe = fake_child(dir.path(), "read line\ncat reply");
        let process = MeasuringProcess::new(&exe);
        measure(&process);
        measure(&process);
        assert_eq!(starts(dir.path()), 2);
    }

    #[test]
    fn a_crash_fails_the_running_variant_and_a_fresh_process_measures_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lab = lab();
        let mut first = vec![begin()];
        first.extend(variants_from(&lab, 0).into_iter().take(1));
        reply(dir.path(), "first", &first);
        let second: Vec<Event> = std::iter::once(begin())
            .chain(variants_from(&lab, 1))
            .chain([done(true)])
            .collect();
        reply(dir.path(), "second", &second);
        let exe = fake_child(
            dir.path(),
            "read line\nif [ \"$n\" -eq 1 ]; then cat first; echo 'CUDA_ERROR_ILLEGAL_ADDRESS' >&2; exit 1; fi\ncat second\nwhile read line; do :; done",
        );
        let process = MeasuringProcess::new(&exe);
        let results = measure(&process);
        match outcome(&results, "memcpy") {
            Outcome::Failed { stage, message } => {
                assert_eq!(*stage, FailureStage::Crash);
                assert!(message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{message}");
            }
            other => panic!("expected a crash, got {other:?}"),
        }
        for name in ["good", "wrong", "broken"] {
            assert!(matches!(
                outcome(&results, name),
                Outcome::Unavailable { .. }
            ));
        }
        assert_eq!(starts(dir.path()), 2);
    }
}
