//! Where a lab's numbers come from: the cache, a fresh measurement on this machine's GPU, or
//! the results recorded on real hardware and committed with the book.

use crate::backend::cuda::Nvrtc;
use crate::backend::{self, BackendChoice};
use crate::backend::{Compiler, Device};
use crate::exercise::{CheckPlan, Verdict};
use crate::isolate::{Isolation, MeasuringProcess};
use crate::measure::{self, MeasureError, MeasureOptions, Progress};
use crate::peers::PythonPeers;
use crate::store::{self, Cache, Recorded, Toolchain};
use kernelbook_core::KernelSource;
use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the runner may use the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Measure on the local GPU when there is one (using the cache), else show recorded results.
    #[default]
    Auto,
    /// Never touch a GPU: show recorded results.
    RecordedOnly,
}

#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub cache_dir: PathBuf,
    pub recorded_dir: PathBuf,
    pub mode: Mode,
    pub options: MeasureOptions,
    /// Measure in child processes of this executable (which must answer
    /// [`isolate::CHILD_ARG`](crate::isolate::CHILD_ARG)), so that a faulting or hanging kernel
    /// cannot take the caller down; in-process when `None`.
    pub isolation: Option<PathBuf>,
    /// Which vendor's GPU to measure on (`kernelbook --device`); CUDA first, then HIP, by
    /// default.
    pub backend: BackendChoice,
}

/// A lab's results and where they came from.
#[derive(Debug, Clone)]
pub enum LabOutcome {
    /// Measured on this machine, now (`cached: false`) or by an earlier build (`cached: true`).
    Measured { results: LabResults, cached: bool },
    /// Recorded on real hardware and committed with the book; `why` says why no live numbers.
    Recorded {
        results: LabResults,
        why: String,
        /// Kernels edited since the recording: their rows show older code's numbers.
        stale_kernels: Vec<String>,
        /// Edited kernels that no longer compile (checked with NVRTC when it is present, even
        /// without a GPU), with the compiler's message in markdown coordinates.
        compile_errors: Vec<KernelProblem>,
    },
    /// Neither live nor recorded results exist.
    Missing { why: String },
}

/// A kernel and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelProblem {
    pub kernel: String,
    pub message: String,
}

/// Why a fresh measurement could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Measure(#[from] MeasureError),
}

struct Gpu {
    backend: BackendChoice,
    toolchain: Toolchain,
    compiler: Box<dyn Compiler + Send>,
    device: Option<Box<dyn Device + Send>>,
}

/// Reports one-line notices to the user (stderr by default).
pub type Notify = Box<dyn Fn(&str) + Send + Sync>;

/// Hands out lab results; opens the GPU only when a measurement is needed.
pub struct Runner {
    config: RunnerConfig,
    cache: Cache,
    recorded: Recorded,
    gpu: Mutex<Option<Result<Gpu, String>>>,
    notify: Notify,
    told_unavailable: AtomicBool,
    /// The build's Python process, for the PyTorch and Triton peers.
    peers: PythonPeers,
    /// The process that measures lab after lab, when measuring is isolated.
    measuring: Option<MeasuringProcess>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Runner {
    pub fn new(config: RunnerConfig) -> Self {
        Runner {
            cache: Cache::new(&config.cache_dir),
            recorded: Recorded::new(&config.recorded_dir),
            measuring: config.isolation.as_deref().map(MeasuringProcess::new),
            gpu: Mutex::new(None),
            notify: Box::new(|message| eprintln!("kernelbook: {message}")),
            told_unavailable: AtomicBool::new(false),
            peers: PythonPeers::new(),
            config,
        }
    }

    /// Sends notices somewhere other than stderr.
    pub fn with_notify(mut self, notify: Notify) -> Self {
        self.notify = notify;
        self
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.config
    }

    pub fn recorded(&self) -> &Recorded {
        &self.recorded
    }

    /// The device, driver and compiler live results would come from, or why there are none.
    pub fn toolchain(&self) -> Result<Toolchain, String> {
        self.with_gpu(|gpu| Ok(gpu.toolchain.clone()))
    }

    /// Gets ready for a build of `labs`: when one of them will be measured now (it is not
    /// cached) and runs a variant in Python, the Python process starts at once, so that its
    /// imports (seconds, for `import torch`) overlap the measurements before it. Does nothing
    /// without a GPU.
    pub fn prepare(&self, labs: &[(&LabSpec, &BTreeMap<String, KernelSource>)]) {
        if !self.measures_in_children() {
            return;
        }
        let Ok(toolchain) = self.toolchain() else {
            return;
        };
        if labs
            .iter()
            .any(|(lab, kernels)| lab.runs_python() && !self.is_cached(lab, kernels, &toolchain))
        {
            self.peers.start();
        }
    }

    /// [`prepare`](Self::prepare) for [`refresh`](Self::refresh)ing `labs`, which measures
    /// whatever the cache holds.
    pub fn prepare_refresh(&self, labs: &[&LabSpec]) {
        if self.measures_in_children()
            && labs.iter().any(|lab| lab.runs_python())
            && self.toolchain().is_ok()
        {
            self.peers.start();
        }
    }

    /// Whether measurements go to child processes (and Python peers to `self.peers`).
    fn measures_in_children(&self) -> bool {
        self.config.mode == Mode::Auto && self.config.isolation.is_some()
    }

    fn is_cached(
        &self,
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        toolchain: &Toolchain,
    ) -> bool {
        let key = store::cache_key(lab, kernels, toolchain, &self.config.options.rule);
        matches!(self.cache.get(&lab.name, &key), Ok(Some(_)))
    }

    /// Results for the book: cached, measured now, or recorded, in that order of preference.
    pub fn results_for(
        &self,
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        progress: &mut dyn Progress,
    ) -> LabOutcome {
        let why = if self.config.mode == Mode::RecordedOnly {
            "recorded results requested".to_string()
        } else {
            match self.toolchain() {
                Err(why) => {
                    self.tell_unavailable(&why);
                    why
                }
                Ok(toolchain) => {
                    let key = store::cache_key(lab, kernels, &toolchain, &self.config.options.rule);
                    match self.cache.get(&lab.name, &key) {
                        Ok(Some(results)) => {
                            return LabOutcome::Measured {
                                results,
                                cached: true,
                            };
                        }
                        Ok(None) => {}
                        Err(distrust) => (self.notify)(&format!("{distrust}; measuring again")),
                    }
                    match self.measure(lab, kernels, progress) {
                        Ok(results) => {
                            if let Err(err) = self.cache.put(&key, &results) {
                                (self.notify)(&format!("could not write the cache: {err}"));
                            }
                            return LabOutcome::Measured {
                                results,
                                cached: false,
                            };
                        }
                        Err(err) => {
                            let why = format!("measuring lab `{}` failed: {err}", lab.name);
                            (self.notify)(&why);
                            why
                        }
                    }
                }
            }
        };
        self.recorded_outcome(lab, kernels, why)
    }

    /// Measures `lab` now, ignoring what the cache holds, and stores the result in the cache
    /// (for `kernelbook run` and `record`).
    pub fn refresh(
        &self,
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        progress: &mut dyn Progress,
    ) -> Result<LabResults, RunError> {
        let results = self.measure(lab, kernels, progress)?;
        if let Ok(toolchain) = self.toolchain() {
            let key = store::cache_key(lab, kernels, &toolchain, &self.config.options.rule);
            if let Err(err) = self.cache.put(&key, &results) {
                (self.notify)(&format!("could not write the cache: {err}"));
            }
        }
        Ok(results)
    }

    /// Measures `lab` now on the GPU.
    pub fn measure(
        &self,
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        progress: &mut dyn Progress,
    ) -> Result<LabResults, RunError> {
        if let (Some(exe), Some(process)) = (&self.config.isolation, &self.measuring) {
            // The parent only needs to know that a GPU is there; the child opens it.
            self.toolchain().map_err(RunError::Unavailable)?;
            progress.stage(&format!(
                "lab `{}`: measuring in a separate process",
                lab.name
            ));
            let backend = self
                .with_gpu(|gpu| Ok(gpu.backend))
                .map_err(RunError::Unavailable)?;
            let isolation = Isolation {
                process,
                backend,
                peers: &self.peers,
            };
            let mut results = crate::isolate::measure_isolated(
                isolation,
                lab,
                kernels,
                &self.config.options,
                progress,
            )?;
            if lab.profile {
                results.profile = Some(crate::profile::profile_lab(
                    exe, backend, lab, kernels, &results, progress,
                ));
            }
            return Ok(results);
        }
        self.measure_in_process(lab, kernels, &self.config.options, progress)
    }

    /// Grades a learner's kernel (`kernelbook check`): measures the starter, the learner's
    /// kernel and the solution of `plan` now, and gives the verdict. Never reads or writes the
    /// cache or the recorded results: a learner's edit is not the book's kernel.
    pub fn check_exercise(
        &self,
        plan: &CheckPlan,
        progress: &mut dyn Progress,
    ) -> Result<(LabResults, Verdict), RunError> {
        let options = MeasureOptions {
            only: Some(plan.variants()),
            ..self.config.options.clone()
        };
        let results = match &self.measuring {
            Some(process) => {
                let backend = self
                    .with_gpu(|gpu| Ok(gpu.backend))
                    .map_err(RunError::Unavailable)?;
                progress.stage(&format!(
                    "exercise `{}`: measuring in a separate process",
                    plan.lab.name
                ));
                let isolation = Isolation {
                    process,
                    backend,
                    peers: &self.peers,
                };
                crate::isolate::measure_check_isolated(isolation, plan, &options, progress)?
            }
            None => self.measure_in_process(&plan.lab, &plan.kernels, &options, progress)?,
        };
        let verdict = plan.verdict(&results).map_err(|message| {
            RunError::Measure(MeasureError::Lab {
                lab: plan.lab.name.clone(),
                message,
            })
        })?;
        Ok((results, verdict))
    }

    fn measure_in_process(
        &self,
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        options: &MeasureOptions,
        progress: &mut dyn Progress,
    ) -> Result<LabResults, RunError> {
        self.with_gpu(|gpu| {
            if gpu.device.is_none() {
                progress.stage("opening the GPU");
                gpu.device = Some(backend::open(gpu.backend).map_err(|e| e.to_string())?);
            }
            Ok(())
        })
        .map_err(RunError::Unavailable)?;
        let mut guard = self.gpu.lock().map_err(|_| {
            RunError::Unavailable("the GPU state was poisoned by an earlier panic".into())
        })?;
        let Some(Ok(gpu)) = guard.as_mut() else {
            return Err(RunError::Unavailable("no GPU".into()));
        };
        let Gpu {
            compiler, device, ..
        } = gpu;
        let Some(device) = device.as_mut() else {
            return Err(RunError::Unavailable("no GPU".into()));
        };
        Ok(measure::measure_lab(
            lab,
            kernels,
            device.as_mut(),
            compiler.as_ref(),
            options,
            progress,
        )?)
    }

    fn recorded_outcome(
        &self,
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        why: String,
    ) -> LabOutcome {
        match self.recorded.get(&lab.name) {
            Ok(Some(results)) => {
                let stale_kernels = store::stale_kernels(&results, kernels);
                let arch = results.provenance.device.arch.clone();
                LabOutcome::Recorded {
                    compile_errors: self.compile_check(
                        &stale_kernels,
                        kernels,
                        &arch,
                        &lab.compile_flags,
                    ),
                    stale_kernels,
                    results,
                    why,
                }
            }
            Ok(None) => LabOutcome::Missing {
                why: format!(
                    "{why}, and no recorded results exist at {}",
                    self.recorded.path(&lab.name).display()
                ),
            },
            Err(distrust) => {
                (self.notify)(&distrust.to_string());
                LabOutcome::Missing {
                    why: format!(
                        "{why}, and the recorded results could not be used ({})",
                        distrust.reason
                    ),
                }
            }
        }
    }

    /// Compiles the kernels edited since their recording, so that an author without a GPU still
    /// learns when an edit broke one. Quietly does nothing without NVRTC.
    fn compile_check(
        &self,
        names: &[String],
        kernels: &BTreeMap<String, KernelSource>,
        arch: &str,
        flags: &[String],
    ) -> Vec<KernelProblem> {
        if names.is_empty() {
            return Vec::new();
        }
        let Ok(nvrtc) = Nvrtc::load() else {
            return Vec::new();
        };
        names
            .iter()
            .filter_map(|name| kernels.get(name))
            // Python blocks are run, not compiled: nothing to check without a GPU.
            .filter(|kernel| kernel.language == kernelbook_core::Language::Cuda)
            .filter_map(|kernel| {
                let request = crate::backend::CompileRequest {
                    name: &kernel.name,
                    source: &kernel.source,
                    arch,
                    flags,
                };
                match nvrtc.compile(&request) {
                    Ok(_) => None,
                    Err(crate::backend::CompileError::Rejected { log, .. }) => {
                        Some(KernelProblem {
                            kernel: kernel.name.clone(),
                            message: crate::diagnostics::map_compile_log(&log, kernel),
                        })
                    }
                    Err(crate::backend::CompileError::Compiler(message)) => Some(KernelProblem {
                        kernel: kernel.name.clone(),
                        message,
                    }),
                }
            })
            .collect()
    }

    fn tell_unavailable(&self, why: &str) {
        if !self.told_unavailable.swap(true, Ordering::Relaxed) {
            (self.notify)(&format!(
                "{why}: showing results recorded on real hardware ({})",
                self.config.recorded_dir.display()
            ));
        }
    }

    /// Runs `f` on the GPU state, probing the driver and compiler on first use.
    fn with_gpu<T>(&self, f: impl FnOnce(&mut Gpu) -> Result<T, String>) -> Result<T, String> {
        let mut guard = self
            .gpu
            .lock()
            .map_err(|_| "the GPU state was poisoned by an earlier panic".to_string())?;
        let choice = self.config.backend;
        let state = guard.get_or_insert_with(|| {
            let found = backend::find(choice).map_err(|e| e.to_string())?;
            Ok(Gpu {
                backend: found.backend,
                toolchain: Toolchain {
                    device: found.info,
                    driver_version: found.driver_version,
                    compiler_version: found.compiler.version(),
                },
                compiler: found.compiler,
                device: None,
            })
        });
        match state {
            Ok(gpu) => f(gpu),
            Err(why) => Err(why.clone()),
        }
    }
}
