//! The measuring child's protocol, in one place (as rust-analyzer keeps its proc-macro server's):
//! the parent writes one [`Request`] per line of JSON on the child's stdin; the child
//! answers with [`Event`]s, one JSON line each, on the private channel the runner gives it
//! (descriptor 3, [`crate::process::spawn_with_channel`]); its stdout, where a kernel's `printf`
//! goes, joins its stderr.

use crate::backend::BackendChoice;
use crate::engine::{RunOptions, VariantDiagnosis, VariantLaunches};
use crate::plan::LabPlan;
use crate::sanitizer::DeviceBuffer;
use kernelbook_core::results::{Clocks, Provenance, VariantResult};
use serde::{Deserialize, Serialize};

/// The first argument that makes a kernelbook binary act as a measuring child.
pub const CHILD_ARG: &str = "__measure-lab";

/// One line from the parent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// Measure a lab (or launch its variants once, for a profiler); answered with events that
    /// end in [`Event::Done`] or [`Event::Failed`].
    Measure(Box<ChildRequest>),
    /// Start compiling every kernel of these labs and preparing their inputs, in order, while
    /// the labs before them are measured; answered at once with [`Event::Prepared`].
    Prepare(PrepareRequest),
}

/// The labs a child is about to be asked to measure, each with the seed it will be measured
/// with (so that the inputs drawn ahead are the ones measured).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrepareRequest {
    pub backend: BackendChoice,
    #[serde(default)]
    pub ordinal: usize,
    pub labs: Vec<PreparedLab>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreparedLab {
    pub plan: LabPlan,
    pub seed: u64,
}

/// What the parent asks a child to measure. The plan is complete: the child reads no lab file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildRequest {
    pub backend: BackendChoice,
    /// Which of the vendor's GPUs to open, as its driver numbers them (`--devices`).
    #[serde(default)]
    pub ordinal: usize,
    pub plan: LabPlan,
    pub options: RunOptions,
}

/// One line of a child's channel to the runner.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
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
    /// A step of the work ended (for timelines: [`crate::engine::Progress::mark`]).
    Mark {
        step: String,
    },
    Begin {
        provenance: Box<Provenance>,
    },
    Finished {
        result: Box<VariantResult>,
    },
    /// Everything asked for was measured (or a sticky fault stopped it); the clocks right after
    /// the last sample.
    Done {
        #[serde(default)]
        clocks: Option<Clocks>,
        /// The process can measure another lab (its device is still usable).
        #[serde(default)]
        reusable: bool,
        /// What each variant launched, in a run that only launches them
        /// ([`crate::engine::Purpose::LaunchOnce`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        launches: Vec<VariantLaunches>,
        /// What each variant's output showed, in a run that diagnoses them
        /// ([`crate::engine::Purpose::Diagnose`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        diagnoses: Vec<VariantDiagnosis>,
        /// The lab's buffers and their device addresses, in such a run.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        buffers: Vec<DeviceBuffer>,
    },
    /// A [`Request::Prepare`] was taken: compiling and preparing go on in the background.
    Prepared,
    Failed {
        message: String,
    },
}

/// The events a child without a channel of its own wrote to its standard output, among the
/// other lines there (a profiler's or a sanitizer's, a kernel's `printf`).
pub fn events_in(stdout: &str) -> impl Iterator<Item = Event> + '_ {
    stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .filter_map(|line| serde_json::from_str(line).ok())
}
