//! The supervisor: which process measures what, and when.
//!
//! Device rows run in the measuring child ([`measuring`]): one process for the whole build,
//! replaced after a crash, a hang or a sticky fault, the remaining rows measured by its
//! successor. Python rows run afterwards in the build's one Python process ([`PythonPeers`]),
//! when no child holds the GPU; labs with Python rows are measured last, so that `import torch`
//! (seconds) overlaps the other labs. Labs that ask for it are then profiled under Nsight
//! Compute (`profile`, with the ncu tool of [`crate::profile`]). Without isolation (tests, and a caller that wants it), device
//! rows run in this process instead.

mod child;
pub mod measuring;
mod profile;

pub use child::child_main;

use crate::backend::{self, BackendChoice, Compiler, Device};
use crate::engine::{self, EngineError, Progress, RunOptions};
use crate::ops;
use crate::peers::PythonPeers;
use crate::plan::{LabPlan, OpPlan};
use crate::references::python::PythonReferences;
use kernelbook_core::results::{LabResults, Provenance, VariantResult};
use measuring::MeasuringProcess;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

/// Why a lab could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No GPU, driver or compiler to measure with, or no measuring process could start.
    #[error("{0}")]
    Unavailable(String),
    /// The lab file does not compile into a plan for this device.
    #[error(transparent)]
    Plan(#[from] kernelbook_core::spec::LabError),
    #[error(transparent)]
    Lab(#[from] EngineError),
}

impl RunError {
    /// An error about the whole lab `lab`.
    pub fn lab(lab: &str, message: impl Into<String>) -> RunError {
        RunError::Lab(EngineError::lab(lab, message.into()))
    }
}

/// A GPU opened in this process and its compiler, once the first lab needs them.
type LocalGpu = Mutex<Option<(Box<dyn Device + Send>, Box<dyn Compiler + Send>)>>;

/// Where device rows are measured.
enum Place {
    /// In child processes of this executable, which must answer
    /// [`CHILD_ARG`](crate::protocol::CHILD_ARG).
    Children {
        exe: PathBuf,
        process: MeasuringProcess,
    },
    /// In this process, on a device opened on first use.
    InProcess(LocalGpu),
}

/// Schedules measurements: see the module documentation.
pub struct Supervisor {
    backend: BackendChoice,
    /// Which of the vendor's GPUs measures (`--devices`): 0 unless [`on_gpu`](Self::on_gpu).
    ordinal: usize,
    place: Place,
    python: PythonPeers,
    /// NumPy references of labs measured in this process (a measuring child keeps its own).
    references: Mutex<PythonReferences>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// Measures on `backend` in child processes of `exe` (`Some`), or in this process.
    pub fn new(backend: BackendChoice, isolation: Option<PathBuf>) -> Supervisor {
        let place = match isolation {
            Some(exe) => Place::Children {
                process: MeasuringProcess::new(&exe),
                exe,
            },
            None => Place::InProcess(Mutex::new(None)),
        };
        Supervisor {
            backend,
            ordinal: 0,
            place,
            python: PythonPeers::new(),
            references: Mutex::new(PythonReferences::new()),
        }
    }

    /// Measures on the vendor's GPU `ordinal`, whose UUID is `uuid`: the measuring children
    /// open that GPU, and the Python rows see only it (an NVIDIA GPU's UUID is what
    /// `CUDA_VISIBLE_DEVICES` takes).
    pub fn on_gpu(mut self, ordinal: usize, uuid: &str) -> Supervisor {
        self.ordinal = ordinal;
        if self.backend == BackendChoice::Cuda {
            self.python = self.python.on_gpu(uuid);
        }
        self
    }

    /// Runs the Python rows with another interpreter (tests use stand-ins).
    pub fn with_python(mut self, python: PythonPeers) -> Supervisor {
        self.python = python;
        self
    }

    /// Measures every plan, in the order that suits the GPU: the Python process is started
    /// first if any plan needs it, and labs with Python rows go last. Results come back in the
    /// order of `plans`.
    pub fn measure_all(
        &self,
        plans: &[&LabPlan],
        progress: &mut dyn Progress,
    ) -> Vec<Result<LabResults, RunError>> {
        if plans.iter().any(|plan| plan.runs_python()) {
            self.python.start();
        }
        let mut order: Vec<usize> = (0..plans.len()).collect();
        order.sort_by_key(|&i| plans[i].runs_python());
        let mut results: Vec<Option<Result<LabResults, RunError>>> =
            plans.iter().map(|_| None).collect();
        for i in order {
            results[i] = Some(self.measure(plans[i], progress));
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(RunError::Unavailable("not measured".into()))))
            .collect()
    }

    /// Measures one plan: its device rows, then its Python rows, then its profile.
    pub fn measure(
        &self,
        plan: &LabPlan,
        progress: &mut dyn Progress,
    ) -> Result<LabResults, RunError> {
        let started = Instant::now();
        let seed = fastrand::u64(..);
        let (mut rows, provenance) = match &self.place {
            Place::Children { process, .. } => {
                progress.stage(&format!(
                    "lab `{}`: measuring in a separate process",
                    plan.lab
                ));
                measuring::measure_in_children(
                    process,
                    (self.backend, self.ordinal),
                    plan,
                    seed,
                    progress,
                )?
            }
            Place::InProcess(device) => self.measure_here(device, plan, seed, progress)?,
        };
        self.measure_python_rows(plan, &provenance, &mut rows, progress);
        let variants = plan
            .variants
            .iter()
            .filter_map(|v| rows.remove(&v.name))
            .collect();
        let mut results = engine::lab_results(plan, provenance, started, variants);
        if let (true, Place::Children { exe, .. }) = (plan.profile, &self.place) {
            results.profile = Some(profile::profile_lab(
                exe,
                (self.backend, self.ordinal),
                plan,
                &results,
                progress,
            ));
        }
        // What the book would distrust on load is not shown now either, nor cached.
        results.validate().map_err(|err| {
            RunError::lab(&plan.lab, format!("the measurement is implausible: {err}"))
        })?;
        Ok(results)
    }

    /// Profiles under Nsight Compute the kernel variants of `plan` that `results` shows
    /// measured, on `results`' input seed: counters for a lab measured earlier. Profiling needs
    /// the measuring child processes (ncu runs one), so without isolation it is refused.
    pub fn profile(
        &self,
        plan: &LabPlan,
        results: &LabResults,
        progress: &mut dyn Progress,
    ) -> Result<kernelbook_core::results::ProfileRun, RunError> {
        match &self.place {
            Place::Children { exe, .. } => Ok(profile::profile_lab(
                exe,
                (self.backend, self.ordinal),
                plan,
                results,
                progress,
            )),
            Place::InProcess(_) => Err(RunError::Unavailable(
                "profiling runs a measuring process under Nsight Compute, and this runner measures in its own process"
                    .into(),
            )),
        }
    }

    /// The device rows of `plan`, measured in this process.
    fn measure_here(
        &self,
        device: &LocalGpu,
        plan: &LabPlan,
        seed: u64,
        progress: &mut dyn Progress,
    ) -> Result<(BTreeMap<String, VariantResult>, Provenance), RunError> {
        let mut guard = device
            .lock()
            .map_err(|_| RunError::Unavailable("the GPU state was poisoned by a panic".into()))?;
        if guard.is_none() {
            progress.stage("opening the GPU");
            let unavailable = |e: backend::BackendError| RunError::Unavailable(e.to_string());
            let found = backend::find_gpu(self.backend, self.ordinal).map_err(unavailable)?;
            let opened = backend::open(found.backend, self.ordinal).map_err(unavailable)?;
            *guard = Some((opened, found.compiler));
        }
        let Some((device, compiler)) = guard.as_mut() else {
            return Err(RunError::Unavailable("no GPU".into()));
        };
        let options = RunOptions { seed, only: None };
        let mut python = self.references.lock().map_err(|_| {
            RunError::Unavailable("the NumPy references' state was poisoned".into())
        })?;
        let run = engine::run(
            plan,
            device.as_mut(),
            compiler.as_ref(),
            &options,
            &mut *python,
            progress,
        )?;
        let rows = run
            .results
            .variants
            .into_iter()
            .map(|r| (r.name.clone(), r))
            .collect();
        Ok((rows, run.results.provenance))
    }

    /// Measures the Python rows of `plan` in the Python process, now that no child holds the
    /// GPU.
    fn measure_python_rows(
        &self,
        plan: &LabPlan,
        provenance: &Provenance,
        rows: &mut BTreeMap<String, VariantResult>,
        progress: &mut dyn Progress,
    ) {
        for (index, variant) in plan.variants.iter().enumerate() {
            let OpPlan::Python(op) = &variant.op else {
                continue;
            };
            progress.variant(index, plan.variants.len(), &variant.name);
            let (outcome, implementation) =
                ops::python::measure(plan, op, &provenance.device, &self.python);
            let mut result = engine::result_template(plan, variant, outcome);
            result.implementation = implementation;
            progress.finished(&result);
            rows.insert(variant.name.clone(), result);
        }
    }
}

#[cfg(all(test, unix))]
mod tests;
