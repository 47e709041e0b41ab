//! The measuring child's side: reads [`ChildRequest`]s from stdin, one per line, runs each plan
//! with the engine and reports on its channel to the parent; ends at the end of its input, after a lab fails, or
//! once its device is unusable.

use crate::backend::{self, BackendChoice, Compiler, Device};
use crate::engine::{self, Progress};
use crate::process;
use crate::protocol::{ChildRequest, Event};
use crate::references::python::PythonReferences;
use kernelbook_core::results::{Clocks, Provenance, VariantResult};
use std::io::{BufRead, Write};
use std::process::ExitCode;

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
}

/// The device a child opened for its first request, kept for the next.
struct ChildGpu {
    backend: BackendChoice,
    ordinal: usize,
    device: Box<dyn Device + Send>,
    compiler: Box<dyn Compiler + Send>,
}

/// The child's main loop (`kernelbook __measure-lab`).
pub fn child_main() -> ExitCode {
    // A child that another program started (ncu) dies with it, as one this runner started does.
    crate::process::die_with_parent();
    let mut events = EventWriter::to_parent();
    let mut gpu: Option<ChildGpu> = None;
    // Started on the first NumPy reference, then kept for every lab this process measures.
    let mut python = PythonReferences::new();
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
        match measure_request(&line, &mut gpu, &mut python, &mut events) {
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

/// Measures one request; returns the clocks after it and whether the device is still usable.
fn measure_request(
    line: &str,
    gpu: &mut Option<ChildGpu>,
    python: &mut PythonReferences,
    events: &mut EventWriter,
) -> Result<(Option<Clocks>, bool), String> {
    let request: ChildRequest =
        serde_json::from_str(line).map_err(|e| format!("malformed request: {e}"))?;
    if gpu
        .as_ref()
        .is_none_or(|g| (g.backend, g.ordinal) != (request.backend, request.ordinal))
    {
        let found =
            backend::find_gpu(request.backend, request.ordinal).map_err(|e| e.to_string())?;
        *gpu = Some(ChildGpu {
            backend: request.backend,
            ordinal: request.ordinal,
            device: backend::open(found.backend, request.ordinal).map_err(|e| e.to_string())?,
            compiler: found.compiler,
        });
    }
    let Some(ChildGpu {
        device, compiler, ..
    }) = gpu.as_mut()
    else {
        return Err("no GPU".into());
    };
    let run = engine::run(
        &request.plan,
        device.as_mut(),
        compiler.as_ref(),
        &request.options,
        python,
        events,
    );
    // Freeing the lab's buffers waits for the device: a fault earlier makes that fail, and the
    // process must not measure anything more.
    let released = device.release_lab().is_ok();
    match run {
        Ok(run) => Ok((
            run.results.provenance.clocks,
            released && run.faulted.is_none(),
        )),
        // The parent names the lab itself.
        Err(err) => Err(err.message),
    }
}
