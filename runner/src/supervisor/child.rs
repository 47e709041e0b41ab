//! The measuring child's side: reads [`Request`]s from stdin, one per line — labs to prepare
//! ahead, and labs to measure —, runs each plan with the engine and reports on its channel to
//! the parent; ends at the end of its input, after a lab fails, or once its device is unusable.

use crate::backend::{self, BackendChoice, Compiler, Device};
use crate::engine::{self, Ahead, LabBuffers, Locked, Progress, SharedReferences};
use crate::process;
use crate::protocol::{ChildRequest, Event, PrepareRequest, Request};
use crate::references::python::PythonReferences;
use kernelbook_core::results::{Clocks, Provenance, VariantResult};
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Writes events one JSON line each, at once so the parent sees progress: to the private
/// channel the runner gave this process ([`process::spawn_with_channel`]), where a kernel's
/// `printf` to stdout cannot garble them; to stdout where there is none (a child run under ncu,
/// whose events nobody reads).
struct EventWriter {
    channel: Option<std::fs::File>,
}

impl EventWriter {
    fn to_parent() -> Self {
        EventWriter {
            channel: process::channel_to_parent(),
        }
    }

    fn send(&mut self, event: &Event) {
        let Ok(mut line) = serde_json::to_string(event) else {
            return;
        };
        line.push('\n');
        // A parent that went away cannot be told anything more.
        match &mut self.channel {
            Some(channel) => {
                let _ = channel.write_all(line.as_bytes());
            }
            None => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
            }
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
    fn mark(&mut self, step: &str) {
        self.send(&Event::Mark {
            step: step.to_string(),
        });
    }
}

/// The device a child opened for its first request, kept for the next, with the work done
/// ahead of it (kernels compiled, labs' inputs prepared).
struct ChildGpu {
    backend: BackendChoice,
    ordinal: usize,
    device: Box<dyn Device + Send>,
    ahead: Ahead,
}

/// What a measuring child keeps from request to request.
struct ChildState {
    gpu: Option<ChildGpu>,
    /// Started on the first NumPy reference, then kept for every lab this process measures;
    /// shared with the thread that prepares labs ahead.
    python: Arc<Mutex<PythonReferences>>,
}

impl ChildState {
    /// The GPU `backend`'s `ordinal`, opened on first use (or when a request names another).
    fn gpu(&mut self, backend: BackendChoice, ordinal: usize) -> Result<&mut ChildGpu, String> {
        if self
            .gpu
            .as_ref()
            .is_none_or(|g| (g.backend, g.ordinal) != (backend, ordinal))
        {
            let found = backend::find_gpu(backend, ordinal).map_err(|e| e.to_string())?;
            let compiler: Arc<dyn Compiler + Send> = Arc::from(found.compiler);
            self.gpu = Some(ChildGpu {
                backend,
                ordinal,
                device: backend::open(found.backend, ordinal).map_err(|e| e.to_string())?,
                ahead: Ahead::new(compiler),
            });
        }
        self.gpu.as_mut().ok_or_else(|| "no GPU".to_string())
    }
}

/// The child's main loop (`kernelbook __measure-lab`).
pub fn child_main() -> ExitCode {
    // A child that another program started (ncu) dies with it, as one this runner started does.
    crate::process::die_with_parent();
    let mut events = EventWriter::to_parent();
    let mut state = ChildState {
        gpu: None,
        python: Arc::new(Mutex::new(PythonReferences::new())),
    };
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
        let request = match serde_json::from_str::<Request>(&line) {
            Ok(request) => request,
            Err(err) => {
                events.send(&Event::Failed {
                    message: format!("malformed request: {err}"),
                });
                return ExitCode::FAILURE;
            }
        };
        let request = match request {
            Request::Prepare(prepare) => {
                // Whatever fails here fails again, and is reported, when the lab is measured.
                let _ = prepare_labs(&mut state, prepare);
                events.send(&Event::Prepared);
                continue;
            }
            Request::Measure(request) => request,
        };
        match measure_request(*request, &mut state, &mut events) {
            Ok(done) => {
                let reusable = done.reusable;
                events.send(&Event::Done {
                    clocks: done.clocks,
                    reusable,
                    launches: done.launches,
                    diagnoses: done.diagnoses,
                    buffers: done.buffers,
                });
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

/// Starts compiling every kernel of the labs to come, and preparing their inputs.
fn prepare_labs(state: &mut ChildState, request: PrepareRequest) -> Result<(), String> {
    let python: SharedReferences = state.python.clone();
    let gpu = state.gpu(request.backend, request.ordinal)?;
    let plans: Vec<_> = request.labs.iter().map(|lab| lab.plan.clone()).collect();
    gpu.ahead.compile(&plans);
    // A lab too large for the device is not drawn ahead: its measurement says why it cannot
    // run, and drawing its inputs could exhaust the host's memory first.
    let labs = request
        .labs
        .into_iter()
        .filter(|lab| LabBuffers::check_fits(&lab.plan, gpu.device.as_ref()).is_ok())
        .map(|lab| (lab.plan, lab.seed))
        .collect();
    gpu.ahead.prepare(labs, python);
    Ok(())
}

/// How a measurement ended, for [`Event::Done`].
struct Measured {
    clocks: Option<Clocks>,
    /// The device is still usable.
    reusable: bool,
    launches: Vec<crate::engine::VariantLaunches>,
    diagnoses: Vec<crate::engine::VariantDiagnosis>,
    buffers: Vec<crate::sanitizer::DeviceBuffer>,
}

/// Measures one request.
fn measure_request(
    request: ChildRequest,
    state: &mut ChildState,
    events: &mut EventWriter,
) -> Result<Measured, String> {
    let python = state.python.clone();
    let gpu = state.gpu(request.backend, request.ordinal)?;
    let run = engine::run(
        &request.plan,
        gpu.device.as_mut(),
        &gpu.ahead,
        &request.options,
        &mut Locked(&*python),
        events,
    );
    // Freeing the lab's buffers waits for the device: a fault earlier makes that fail, and the
    // process must not measure anything more.
    let released = gpu.device.release_lab().is_ok();
    match run {
        Ok(run) => Ok(Measured {
            clocks: run.results.provenance.clocks,
            reusable: released && run.faulted.is_none(),
            launches: run.launches,
            diagnoses: run.diagnoses,
            buffers: run.buffers,
        }),
        // The parent names the lab itself.
        Err(err) => Err(err.message),
    }
}
