//! The supervisor: which process measures what, and when.
//!
//! Device rows run in the measuring child ([`measuring`]): one process for the whole build,
//! told every lab to come before the first (it compiles every kernel and prepares each lab's
//! inputs ahead), replaced after a crash, a hang or a sticky fault, the remaining rows measured
//! by its successor. Python rows run afterwards in the build's one Python process
//! ([`PythonPeers`]), when no child holds the GPU; labs with Python rows are measured last, so
//! that `import torch` (seconds) overlaps the other labs. Counters are a second layer,
//! collected only when asked ([`Supervisor::counters`]: one Nsight Compute session per lab,
//! [`profile`]), never on the way to a lab's numbers. Without isolation (tests, and a caller
//! that wants it), device rows run in this process instead.

mod child;
pub mod measuring;
pub mod profile;
pub mod sanitize;

pub use child::child_main;

use crate::backend::{self, BackendChoice, Device};
use crate::engine::{
    self, Ahead, EngineError, Locked, Progress, Purpose, RunOptions, SharedReferences,
};
use crate::ops;
use crate::peers::PythonPeers;
use crate::plan::{LabPlan, OpPlan};
use crate::protocol::{PrepareRequest, PreparedLab};
use crate::references::python::PythonReferences;
use kernelbook_core::results::{LabResults, Provenance, VariantResult};
use measuring::MeasuringProcess;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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

/// A GPU opened in this process, with the work done ahead of it.
type OpenedGpu = (Box<dyn Device + Send>, Ahead);
/// The GPU of this process, opened once the first lab needs it.
type LocalGpu = Mutex<Option<OpenedGpu>>;

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
    references: Arc<Mutex<PythonReferences>>,
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
            references: Arc::new(Mutex::new(PythonReferences::new())),
        }
    }

    /// Measures on the vendor's GPU `ordinal`, whose UUID is `uuid`: the measuring children
    /// open that GPU, and the Python rows see only it (an NVIDIA GPU's UUID is what
    /// `CUDA_VISIBLE_DEVICES` takes).
    pub fn on_gpu(mut self, ordinal: usize, uuid: &str) -> Supervisor {
        self.ordinal = ordinal;
        if self.backend.runs_python_rows() {
            self.python = self.python.on_gpu(uuid);
        }
        self
    }

    /// Runs the Python rows with another interpreter (tests use stand-ins).
    pub fn with_python(mut self, python: PythonPeers) -> Supervisor {
        self.python = python;
        self
    }

    /// Measures every plan, in the order that suits the GPU, and gives the results in the
    /// order of `plans`. Before the first: the Python process is started if any plan needs it
    /// (`import torch` takes seconds), and the measuring process is told every lab to come,
    /// so that it compiles all their kernels on every core and prepares each lab's inputs and
    /// references while the GPU measures the lab before ([`crate::engine::Ahead`]). Labs with
    /// Python rows go last.
    pub fn measure_all(
        &self,
        plans: &[&LabPlan],
        progress: &mut dyn Progress,
    ) -> Vec<Result<LabResults, RunError>> {
        if plans.iter().any(|plan| plan.runs_python()) {
            self.python.start();
        }
        let order = measuring_order(plans);
        let seeds: Vec<u64> = plans.iter().map(|_| fastrand::u64(..)).collect();
        if plans.len() > 1 {
            let labs = order
                .iter()
                .map(|&i| PreparedLab {
                    plan: plans[i].clone(),
                    seed: seeds[i],
                })
                .collect();
            self.prepare(labs, progress);
        }
        let mut results: Vec<Option<Result<LabResults, RunError>>> =
            plans.iter().map(|_| None).collect();
        for (position, &i) in order.iter().enumerate() {
            progress.stage(&format!(
                "numbers: lab {} of {} (`{}`)",
                position + 1,
                plans.len(),
                plans[i].lab
            ));
            results[i] = Some(self.measure_seeded(plans[i], seeds[i], progress));
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(RunError::Unavailable("not measured".into()))))
            .collect()
    }

    /// Tells whoever measures which labs come, and with which seeds. Best-effort: a lab that
    /// was not prepared is prepared when it comes up.
    fn prepare(&self, labs: Vec<PreparedLab>, progress: &mut dyn Progress) {
        match &self.place {
            Place::Children { process, .. } => {
                let request = PrepareRequest {
                    backend: self.backend,
                    ordinal: self.ordinal,
                    labs,
                };
                if let Err(why) = process.prepare(&request) {
                    progress.stage(&format!("not preparing labs ahead: {why}"));
                }
            }
            Place::InProcess(device) => {
                let Ok(mut guard) = self.local_gpu(device, progress) else {
                    return;
                };
                if let Some((_, ahead)) = guard.as_mut() {
                    let plans: Vec<LabPlan> = labs.iter().map(|lab| lab.plan.clone()).collect();
                    ahead.compile(&plans);
                    let references: SharedReferences = self.references.clone();
                    ahead.prepare(
                        labs.into_iter().map(|lab| (lab.plan, lab.seed)).collect(),
                        references,
                    );
                }
            }
        }
    }

    /// Measures one plan, on fresh random input: its device rows, then its Python rows.
    pub fn measure(
        &self,
        plan: &LabPlan,
        progress: &mut dyn Progress,
    ) -> Result<LabResults, RunError> {
        self.measure_seeded(plan, fastrand::u64(..), progress)
    }

    fn measure_seeded(
        &self,
        plan: &LabPlan,
        seed: u64,
        progress: &mut dyn Progress,
    ) -> Result<LabResults, RunError> {
        let started = Instant::now();
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
        progress.mark("device rows measured");
        self.measure_python_rows(plan, &provenance, &mut rows, progress);
        progress.mark("Python rows measured");
        let variants = plan
            .variants
            .iter()
            .filter_map(|v| rows.remove(&v.name))
            .collect();
        let results = engine::lab_results(plan, provenance, started, variants);
        // What the book would distrust on load is not shown now either, nor cached.
        results.validate().map_err(|err| {
            RunError::lab(&plan.lab, format!("the measurement is implausible: {err}"))
        })?;
        Ok(results)
    }

    /// Nsight Compute's counters for the kernel variants `variants` of `plan`, in one ncu
    /// session that launches each once on the input of `seed` (as its check did). Profiling
    /// needs the measuring child processes (ncu runs one), so without isolation it is refused.
    pub fn counters(
        &self,
        plan: &LabPlan,
        seed: u64,
        variants: &[String],
        progress: &mut dyn Progress,
    ) -> Result<profile::Session, RunError> {
        match &self.place {
            Place::Children { exe, .. } => Ok(profile::profile_variants(
                exe,
                (self.backend, self.ordinal),
                plan,
                seed,
                variants,
                progress,
            )),
            Place::InProcess(_) => Err(RunError::Unavailable(
                "profiling runs a measuring process under Nsight Compute, and this runner measures in its own process"
                    .into(),
            )),
        }
    }

    /// Runs `variant` of `plan`, which failed as `failure` says, under compute-sanitizer on the
    /// input of `seed` ([`sanitize`]): what it found, or why it could not run. It runs the
    /// measuring child under the tool, so without isolation it says it cannot.
    pub fn sanitize(
        &self,
        plan: &LabPlan,
        seed: u64,
        variant: &str,
        failure: sanitize::Failure,
        progress: &mut dyn Progress,
    ) -> crate::sanitizer::Verdict {
        match &self.place {
            Place::Children { exe, .. } => {
                progress.stage(&format!(
                    "lab `{}`: `{variant}` under compute-sanitizer",
                    plan.lab
                ));
                sanitize::sanitize_variant(
                    exe,
                    (self.backend, self.ordinal),
                    plan,
                    seed,
                    variant,
                    failure,
                )
            }
            Place::InProcess(_) => crate::sanitizer::Verdict::Unavailable {
                why: "the sanitizer runs a measuring process under compute-sanitizer, and this runner measures in its own process".into(),
            },
        }
    }

    /// The GPU of this process, opened now if it is not yet.
    fn local_gpu<'d>(
        &self,
        device: &'d LocalGpu,
        progress: &mut dyn Progress,
    ) -> Result<std::sync::MutexGuard<'d, Option<OpenedGpu>>, RunError> {
        let mut guard = device
            .lock()
            .map_err(|_| RunError::Unavailable("the GPU state was poisoned by a panic".into()))?;
        if guard.is_none() {
            progress.stage("opening the GPU");
            let unavailable = |e: backend::BackendError| RunError::Unavailable(e.to_string());
            let found = backend::find_gpu(self.backend, self.ordinal).map_err(unavailable)?;
            let opened = backend::open(found.backend, self.ordinal).map_err(unavailable)?;
            let compiler: Arc<dyn crate::backend::Compiler + Send> = Arc::from(found.compiler);
            *guard = Some((opened, Ahead::new(compiler)));
        }
        Ok(guard)
    }

    /// The device rows of `plan`, measured in this process.
    fn measure_here(
        &self,
        device: &LocalGpu,
        plan: &LabPlan,
        seed: u64,
        progress: &mut dyn Progress,
    ) -> Result<(BTreeMap<String, VariantResult>, Provenance), RunError> {
        let mut guard = self.local_gpu(device, progress)?;
        let Some((device, ahead)) = guard.as_mut() else {
            return Err(RunError::Unavailable("no GPU".into()));
        };
        let options = RunOptions {
            seed,
            only: None,
            purpose: Purpose::Measure,
        };
        let run = engine::run(
            plan,
            device.as_mut(),
            ahead,
            &options,
            &mut Locked(&*self.references),
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

/// The order to measure `plans` in (indices): labs with Python rows last, so that `import
/// torch` overlaps the others; the rest as given.
fn measuring_order(plans: &[&LabPlan]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| plans[i].runs_python());
    order
}

#[cfg(all(test, unix))]
mod tests;
