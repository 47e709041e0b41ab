//! The runner's facade: where a lab's numbers come from — the cache, a fresh measurement on
//! this machine's GPU, or the results recorded on real hardware and committed with the book.
//!
//! Callers hand over every lab they need at once ([`Runner::results`], [`Runner::measure_now`]):
//! the runner compiles each into a plan, serves what the cache holds, and gives the rest to the
//! [`Supervisor`], which decides the order and the processes.

use crate::backend::{self, BackendChoice, CompileError, CompileRequest, Compiler};
use crate::counters::{self, Counters, CountersJob, CountersPolicy};
use crate::engine::Progress;
use crate::exercise::{CheckPlan, LEARNER_VARIANT, Verdict};
use crate::plan::{self, LabPlan, Measurement, Target, Toolchain};
use crate::store::{self, Cache, CounterCache, Recorded};
use crate::supervisor::sanitize::Failure;
use crate::supervisor::{RunError, Supervisor};
use kernelbook_core::KernelSource;
use kernelbook_core::results::{LabResults, ProfileRun};
use kernelbook_core::spec::LabSpec;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

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
    /// The stopping rule and warm-up every lab starts from (its `[timing]` may override them).
    pub measurement: Measurement,
    /// Measure in child processes of this executable (which must answer
    /// [`CHILD_ARG`](crate::protocol::CHILD_ARG)), so that a faulting or hanging kernel
    /// cannot take the caller down; in-process when `None`.
    pub isolation: Option<PathBuf>,
    /// Which vendor's GPU to measure on (`kernelbook --device`); CUDA first, then HIP, by
    /// default.
    pub backend: BackendChoice,
}

/// A lab and the kernels of the book it runs.
#[derive(Debug, Clone, Copy)]
pub struct LabRequest<'a> {
    pub lab: &'a LabSpec,
    pub kernels: &'a BTreeMap<String, KernelSource>,
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
        /// Edited kernels that no longer compile (each build of the lab's plan, checked with
        /// the backend's compiler when it is present, even without a GPU), with the compiler's
        /// message in markdown coordinates.
        compile_errors: Vec<KernelProblem>,
    },
    /// Neither live nor recorded results exist.
    Missing { why: String },
}

/// A lab's results as far as they are known without measuring ([`Runner::lookup`]).
// One per lab of a build, each moved once: boxing either variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Lookup {
    /// What the book shows now: cached results, or recorded ones where none can be measured.
    Ready(LabOutcome),
    /// The cache lacks the lab's current plan: it is to be measured.
    Unmeasured(Unmeasured),
}

/// A lab to measure: its plan for this machine's GPU and the cache key of that plan.
#[derive(Debug, Clone)]
pub struct Unmeasured {
    /// The cache key: a different key is a different measurement.
    pub key: String,
    plan: LabPlan,
}

impl Unmeasured {
    /// The lab's name.
    pub fn lab(&self) -> &str {
        &self.plan.lab
    }
}

/// A kernel and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelProblem {
    pub kernel: String,
    pub message: String,
}

/// The GPU live results would come from, found on first use.
#[derive(Debug, Clone)]
struct Found {
    backend: BackendChoice,
    toolchain: Toolchain,
}

/// Reports one-line notices to the user (stderr by default).
pub type Notify = Box<dyn Fn(&str) + Send + Sync>;

/// Hands out lab results; opens the GPU only when a measurement is needed.
pub struct Runner {
    config: RunnerConfig,
    /// The vendor's GPU to measure on (`--devices`); its first when `None`.
    gpu: Option<usize>,
    cache: Cache,
    recorded: Recorded,
    found: OnceLock<Result<Found, String>>,
    supervisor: OnceLock<Supervisor>,
    notify: Notify,
    told_unavailable: AtomicBool,
    counters: Counters,
    counters_policy: CountersPolicy,
    /// Labs whose counters a build left to collect, by name (the newest plan of each).
    pending_counters: Mutex<BTreeMap<String, CountersJob>>,
    /// Labs whose counters could not be collected: the keys that were missing, and why.
    failed_counters: Mutex<BTreeMap<String, (Vec<String>, String)>>,
}

/// Why a lab's counters could not be collected, and whether no other lab's can be either.
#[derive(Debug)]
struct CountersFailure {
    why: String,
    fatal: bool,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A learner's kernel graded ([`Runner::check_exercise`]).
#[derive(Debug, Clone)]
pub struct CheckedExercise {
    /// The starter's, the learner's and the solution's rows.
    pub results: LabResults,
    pub verdict: Verdict,
    /// What compute-sanitizer found, where the learner's kernel failed in a way it can explain.
    pub sanitizer: Option<crate::sanitizer::Verdict>,
}

/// A variant of a lab run under compute-sanitizer after `kernelbook run` measured it
/// ([`Runner::sanitize_lab`]): because it failed, or because the lab asks (`sanitize = true`).
#[derive(Debug, Clone)]
pub struct SanitizedVariant {
    pub variant: String,
    pub verdict: crate::sanitizer::Verdict,
    /// The sizes the tools ran it at where they are not the measured ones (`sanitize_params`).
    pub sizes: kernelbook_core::expr::Params,
}

impl SanitizedVariant {
    /// Whether the tool found an error in it.
    pub fn found(&self) -> bool {
        matches!(self.verdict, crate::sanitizer::Verdict::Found { .. })
    }
}

impl Runner {
    pub fn new(config: RunnerConfig) -> Self {
        Runner {
            gpu: None,
            cache: Cache::new(&config.cache_dir),
            recorded: Recorded::new(&config.recorded_dir),
            found: OnceLock::new(),
            supervisor: OnceLock::new(),
            // Best-effort, as the build's other notices (`engine::progress::notice`).
            notify: Box::new(|message| crate::engine::notice(&format!("kernelbook: {message}"))),
            told_unavailable: AtomicBool::new(false),
            counters: Counters::new(CounterCache::new(config.cache_dir.join("counters"))),
            counters_policy: CountersPolicy::default(),
            pending_counters: Mutex::new(BTreeMap::new()),
            failed_counters: Mutex::new(BTreeMap::new()),
            config,
        }
    }

    /// Whether builds collect counters ([`CountersPolicy::Skip`]: `--no-counters`).
    pub fn with_counters(mut self, policy: CountersPolicy) -> Self {
        self.counters_policy = policy;
        self
    }

    /// Measures on the vendor's GPU `ordinal` (as its driver numbers them) instead of its first:
    /// one runner per GPU of `--devices`, each with its own measuring process. The cache keeps
    /// each GPU's results apart (the key holds the GPU's UUID).
    pub fn with_gpu(mut self, ordinal: usize) -> Self {
        self.gpu = Some(ordinal);
        self
    }

    /// The vendor's GPU this runner measures on.
    pub fn gpu(&self) -> usize {
        self.gpu.unwrap_or(0)
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
    pub fn toolchain(&self) -> Result<Toolchain, RunError> {
        self.found().map(|found| found.toolchain)
    }

    fn found(&self) -> Result<Found, RunError> {
        let choice = self.config.backend;
        self.found
            .get_or_init(|| {
                let found = backend::find_gpu(choice, self.gpu()).map_err(|e| e.to_string())?;
                Ok(Found {
                    backend: found.backend,
                    toolchain: Toolchain {
                        device: found.info,
                        driver_version: found.driver_version,
                        compiler_version: found.compiler.version(),
                    },
                })
            })
            .clone()
            .map_err(RunError::Unavailable)
    }

    fn supervisor(&self, found: &Found) -> &Supervisor {
        self.supervisor.get_or_init(|| {
            let supervisor = Supervisor::new(found.backend, self.config.isolation.clone());
            match self.gpu {
                Some(ordinal) => supervisor.on_gpu(ordinal, &found.toolchain.device.uuid),
                None => supervisor,
            }
        })
    }

    /// The plan `request`'s lab compiles to for `device` (what a measurement on it ran): e.g.
    /// which variants it marks unsupported there.
    pub fn plan_for(
        &self,
        request: &LabRequest<'_>,
        device: &kernelbook_core::results::DeviceInfo,
    ) -> Result<LabPlan, RunError> {
        plan::compile(
            request.lab,
            request.kernels,
            &Target::of(device),
            &self.config.measurement,
        )
        .map_err(RunError::Plan)
    }

    /// Compiles `lab` for the device live results would come from.
    fn plan(&self, request: &LabRequest<'_>, found: &Found) -> Result<LabPlan, RunError> {
        let target = Target::of(&found.toolchain.device);
        plan::compile(
            request.lab,
            request.kernels,
            &target,
            &self.config.measurement,
        )
        .map_err(RunError::Plan)
    }

    /// Results for the book, one per request in the same order: cached, measured now, or
    /// recorded, in that order of preference. Only numbers are measured: the counters the
    /// counters cache holds are attached, the rest marked pending and left for
    /// [`collect_counters`](Self::collect_counters), after every number.
    pub fn results(
        &self,
        requests: &[LabRequest<'_>],
        progress: &mut dyn Progress,
    ) -> Vec<LabOutcome> {
        let lookups = self.lookup(requests);
        let unmeasured: Vec<Unmeasured> = lookups
            .iter()
            .filter_map(|lookup| match lookup {
                Lookup::Unmeasured(lab) => Some(lab.clone()),
                Lookup::Ready(_) => None,
            })
            .collect();
        let mut measured = self.measure_unmeasured(&unmeasured, progress).into_iter();
        lookups
            .into_iter()
            .zip(requests)
            .map(|(lookup, request)| match lookup {
                Lookup::Ready(outcome) => outcome,
                Lookup::Unmeasured(_) => match measured.next() {
                    Some(Ok(mut results)) => {
                        self.attach_counters(request, &mut results);
                        LabOutcome::Measured {
                            results,
                            cached: false,
                        }
                    }
                    Some(Err(err)) => {
                        let why = format!("measuring lab `{}` failed: {err}", request.lab.name);
                        (self.notify)(&why);
                        self.recorded_outcome(request, why)
                    }
                    None => self.recorded_outcome(request, "not measured".into()),
                },
            })
            .collect()
    }

    /// What [`results`](Self::results) would give for each request without measuring anything
    /// now: a ready outcome (cached, or recorded where nothing can be measured or the lab does
    /// not plan for this device), or the plan to measure. `kernelbook serve` builds the book
    /// from these at once and measures the rest in the background.
    pub fn lookup(&self, requests: &[LabRequest<'_>]) -> Vec<Lookup> {
        let found = match (self.config.mode, self.found()) {
            (Mode::RecordedOnly, _) => Err("recorded results requested".to_string()),
            (Mode::Auto, Err(why)) => {
                let why = why.to_string();
                self.tell_unavailable(&why);
                Err(why)
            }
            (Mode::Auto, Ok(found)) => Ok(found),
        };
        let found = match found {
            Ok(found) => found,
            Err(why) => {
                return requests
                    .iter()
                    .map(|r| Lookup::Ready(self.recorded_outcome(r, why.clone())))
                    .collect();
            }
        };
        requests
            .iter()
            .map(|request| match self.plan(request, &found) {
                Ok(plan) => {
                    let key = plan.key(&found.toolchain);
                    match self.cache.get(request.lab, &key) {
                        Ok(Some(mut results)) => {
                            self.attach_known_counters(request, &plan, &mut results);
                            Lookup::Ready(LabOutcome::Measured {
                                results,
                                cached: true,
                            })
                        }
                        Ok(None) => Lookup::Unmeasured(Unmeasured { key, plan }),
                        Err(distrust) => {
                            (self.notify)(&format!("{distrust}; measuring again"));
                            Lookup::Unmeasured(Unmeasured { key, plan })
                        }
                    }
                }
                Err(err) => {
                    (self.notify)(&err.to_string());
                    Lookup::Ready(self.recorded_outcome(request, err.to_string()))
                }
            })
            .collect()
    }

    /// Measures labs [`lookup`](Self::lookup) found unmeasured, all in one batch, and keeps
    /// each result in the cache under its key. One result per lab, in the same order.
    pub fn measure_unmeasured(
        &self,
        labs: &[Unmeasured],
        progress: &mut dyn Progress,
    ) -> Vec<Result<LabResults, RunError>> {
        if labs.is_empty() {
            return Vec::new();
        }
        let found = match self.found() {
            Ok(found) => found,
            Err(err) => {
                let why = err.to_string();
                return labs
                    .iter()
                    .map(|_| Err(RunError::Unavailable(why.clone())))
                    .collect();
            }
        };
        let plans: Vec<&LabPlan> = labs.iter().map(|lab| &lab.plan).collect();
        let measured = self.supervisor(&found).measure_all(&plans, progress);
        for (lab, result) in labs.iter().zip(&measured) {
            if let Ok(results) = result {
                self.keep(&lab.key, results);
            }
        }
        measured
    }

    /// Measures every request now, ignoring what the cache holds, and keeps the results in the
    /// cache (for `kernelbook run` and `record`), then adds each lab's counters (from the
    /// counters cache, or collected now). One result per request, in the same order.
    pub fn measure_now(
        &self,
        requests: &[LabRequest<'_>],
        progress: &mut dyn Progress,
    ) -> Vec<Result<LabResults, RunError>> {
        let found = match self.found() {
            Ok(found) => found,
            Err(err) => {
                let why = err.to_string();
                return requests
                    .iter()
                    .map(|_| Err(RunError::Unavailable(why.clone())))
                    .collect();
            }
        };
        let plans: Vec<Result<LabPlan, RunError>> =
            requests.iter().map(|r| self.plan(r, &found)).collect();
        let ready: Vec<&LabPlan> = plans.iter().filter_map(|p| p.as_ref().ok()).collect();
        let mut measured = self
            .supervisor(&found)
            .measure_all(&ready, progress)
            .into_iter();
        plans
            .into_iter()
            .map(|plan| {
                let plan = plan?;
                let mut results = measured
                    .next()
                    .unwrap_or_else(|| Err(RunError::Unavailable("not measured".into())))?;
                self.keep(&plan.key(&found.toolchain), &results);
                self.counters_now(&plan, &mut results, progress);
                Ok(results)
            })
            .collect()
    }

    /// [`measure_now`](Self::measure_now) for one lab.
    pub fn measure(
        &self,
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        progress: &mut dyn Progress,
    ) -> Result<LabResults, RunError> {
        let request = LabRequest { lab, kernels };
        self.measure_now(&[request], progress)
            .pop()
            .unwrap_or_else(|| Err(RunError::lab(&lab.name, "not measured")))
    }

    /// Nsight Compute's counters for `recorded`, results of `request`'s lab measured earlier
    /// (`kernelbook profile`): its kernel variants profiled now on this machine's GPU, with the
    /// recording's input seed, and the GPU and time they were taken on. The recording's timings
    /// stay its own, so the counters must describe the same code on the same kind of GPU: a
    /// recording with other parameters, kernels edited since, or another GPU is refused.
    pub fn profile_recorded(
        &self,
        request: &LabRequest<'_>,
        recorded: &LabResults,
        progress: &mut dyn Progress,
    ) -> Result<kernelbook_core::results::ProfileRun, RunError> {
        let lab = request.lab;
        let refuse = |why: String| Err(RunError::lab(&lab.name, why));
        if recorded.params != lab.params {
            return refuse("the recording was measured with other parameters than the lab has now: record the lab instead (`kernelbook record`)".into());
        }
        let stale = store::stale_kernels(recorded, request.kernels);
        if !stale.is_empty() {
            return refuse(format!(
                "{} changed since the recording: counters of the code shown would sit beside timings of older code; record the lab instead (`kernelbook record {}`)",
                stale.join(", "),
                lab.name
            ));
        }
        let found = self.found()?;
        let (here, there) = (
            &found.toolchain.device.name,
            &recorded.provenance.device.name,
        );
        if here != there {
            return refuse(format!(
                "the recording is from an {there} and this GPU is an {here}: record the lab here instead (`kernelbook record {}`)",
                lab.name
            ));
        }
        let plan = self.plan(request, &found)?;
        let mut recorded = recorded.clone();
        self.counters_now(&plan, &mut recorded, progress);
        recorded
            .profile
            .ok_or_else(|| RunError::lab(&lab.name, "the lab is not profiled (`profile = true`)"))
    }

    /// Attaches to `results` (measured now) the counters the counters cache holds, the rest
    /// pending (or the recording's, where this build collects none).
    fn attach_counters(&self, request: &LabRequest<'_>, results: &mut LabResults) {
        let Ok(found) = self.found() else { return };
        if let Ok(plan) = self.plan(request, &found) {
            self.attach_known_counters(request, &plan, results);
        }
    }

    /// [`attach_counters`](Self::attach_counters) with the lab's plan at hand: what is pending
    /// is kept to collect later ([`collect_counters`](Self::collect_counters)).
    fn attach_known_counters(
        &self,
        request: &LabRequest<'_>,
        plan: &LabPlan,
        results: &mut LabResults,
    ) {
        if !plan.profile {
            results.profile = None;
            return;
        }
        let stand_in = || {
            let recorded = self.recorded.get(request.lab).ok().flatten()?;
            let missing: Vec<String> = counters::profiled_variants(plan, results)
                .map(|v| v.name.clone())
                .collect();
            counters::recorded_stand_in(&recorded, request.kernels, &missing)
        };
        let Some(known) = self.counters.known(plan, results) else {
            // No profiler here: the recording's counters, where the kernels are unchanged.
            let problem = crate::profile::ProfileError::NcuMissing(None).to_string();
            results.profile = Some(match stand_in() {
                Some(run) => ProfileRun {
                    problem: Some(problem),
                    ..run
                },
                None => ProfileRun {
                    tool: "Nsight Compute (ncu)".into(),
                    problem: Some(problem),
                    ..ProfileRun::default()
                },
            });
            return;
        };
        let mut pending = lock(&self.pending_counters);
        if known.missing.is_empty() {
            pending.remove(&plan.lab);
            results.profile = Some(known.run);
            return;
        }
        let failed = lock(&self.failed_counters)
            .get(&plan.lab)
            .filter(|(keys, _)| *keys == known.keys)
            .map(|(_, why)| why.clone());
        if let Some(why) = failed {
            pending.remove(&plan.lab);
            results.profile = Some(ProfileRun {
                problem: Some(why),
                pending: Vec::new(),
                ..known.run
            });
            return;
        }
        results.profile = Some(match self.counters_policy {
            CountersPolicy::Collect => {
                let job = CountersJob {
                    plan: plan.clone(),
                    seed: results.provenance.input_seed,
                    missing: known.missing,
                    keys: known.keys,
                };
                pending.insert(plan.lab.clone(), job);
                known.run
            }
            CountersPolicy::Skip => {
                let mut run = counters::merge_stand_in(known.run, stand_in());
                if !run.pending.is_empty() {
                    run.problem = Some(format!(
                        "no counters of {}: this build collected none (`--no-counters`); a build without it adds them",
                        run.pending.join(", ")
                    ));
                    run.pending.clear();
                }
                run
            }
        });
    }

    /// Profiles the kernel variants of `results` (measured now) that the counters cache lacks,
    /// at once, and attaches the counters.
    fn counters_now(&self, plan: &LabPlan, results: &mut LabResults, progress: &mut dyn Progress) {
        let Some(known) = self.counters.known(plan, results) else {
            if plan.profile {
                results.profile = Some(ProfileRun {
                    tool: "Nsight Compute (ncu)".into(),
                    problem: Some(crate::profile::ProfileError::NcuMissing(None).to_string()),
                    ..ProfileRun::default()
                });
            }
            return;
        };
        let mut problem = None;
        if !known.missing.is_empty() {
            let job = CountersJob {
                plan: plan.clone(),
                seed: results.provenance.input_seed,
                missing: known.missing,
                keys: known.keys,
            };
            problem = self.collect_one(&job, progress).err().map(|f| f.why);
        }
        let mut run = self
            .counters
            .known(plan, results)
            .map_or(known.run, |k| k.run);
        if run.problem.is_none() {
            run.problem = problem.or_else(|| {
                (!run.pending.is_empty())
                    .then(|| format!("no counters for {}", run.pending.join(", ")))
            });
        }
        run.pending.clear();
        results.profile = Some(run);
    }

    /// Profiles one lab's missing variants; the seconds the session took, or its problem. A
    /// lab whose counters failed is not asked for again until its kernels change (its
    /// missing counters' keys): a build after the failure shows the problem instead.
    fn collect_one(
        &self,
        job: &CountersJob,
        progress: &mut dyn Progress,
    ) -> Result<f64, CountersFailure> {
        let found = self.found().map_err(|e| CountersFailure {
            why: e.to_string(),
            fatal: true,
        })?;
        let session = self
            .counters
            .collect(
                self.supervisor(&found),
                job,
                &found.toolchain.device,
                progress,
            )
            .map_err(|e| CountersFailure {
                why: e.to_string(),
                fatal: true,
            })?;
        match session.problem {
            Some(problem) => {
                let why = problem.to_string();
                lock(&self.failed_counters)
                    .insert(job.plan.lab.clone(), (job.keys.clone(), why.clone()));
                Err(CountersFailure {
                    why,
                    fatal: session.fatal,
                })
            }
            None => Ok(session.seconds),
        }
    }

    /// The labs whose counters the builds so far left to collect.
    pub fn pending_counters(&self) -> Vec<String> {
        lock(&self.pending_counters).keys().cloned().collect()
    }

    /// Collects the counters the builds so far left pending: of the labs `labs` names, in that
    /// order (`None`: of every lab); one Nsight Compute session per lab. `progress` hears which
    /// lab it is at, how many are left and about how long they will take. The next build finds
    /// them in the counters cache. Returns each lab profiled and how that went.
    pub fn collect_counters(
        &self,
        labs: Option<&[String]>,
        progress: &mut dyn Progress,
    ) -> Vec<(String, Result<(), String>)> {
        let jobs: Vec<CountersJob> = {
            let mut pending = lock(&self.pending_counters);
            match labs {
                None => std::mem::take(&mut *pending).into_values().collect(),
                Some(labs) => labs.iter().filter_map(|lab| pending.remove(lab)).collect(),
            }
        };
        let mut estimate = counters::Estimate::default();
        let mut done = Vec::new();
        let total = jobs.len();
        for (index, job) in jobs.iter().enumerate() {
            let left: usize = jobs[index..].iter().map(|j| j.missing.len()).sum();
            progress.stage(&format!(
                "counters: lab {} of {total} (`{}`, {} kernel{}), about {:.0} s left",
                index + 1,
                job.plan.lab,
                job.missing.len(),
                if job.missing.len() == 1 { "" } else { "s" },
                estimate.seconds(total - index, left)
            ));
            let outcome = self.collect_one(job, progress);
            if let Ok(seconds) = &outcome {
                estimate.observe(*seconds, job.missing.len());
            }
            let fatal = outcome.as_ref().is_err_and(|failure| failure.fatal);
            done.push((job.plan.lab.clone(), outcome.map(drop).map_err(|f| f.why)));
            if fatal {
                for job in &jobs[index + 1..] {
                    done.push((
                        job.plan.lab.clone(),
                        Err("not profiled: see the first lab's problem".into()),
                    ));
                }
                break;
            }
        }
        done
    }

    /// Writes `results` to the cache under `key`; a failure is only a notice.
    fn keep(&self, key: &str, results: &LabResults) {
        if let Err(err) = self.cache.put(key, results) {
            (self.notify)(&format!("could not write the cache: {err}"));
        }
    }

    /// Grades a learner's kernel (`kernelbook check`): measures the starter, the learner's
    /// kernel and the solution now, and gives the verdict; where the learner's kernel gave a
    /// wrong result, faulted or hung, runs it again under compute-sanitizer to say why. Never
    /// reads or writes the cache or the recorded results: a learner's edit is not the book's
    /// kernel.
    pub fn check_exercise(
        &self,
        check: &CheckPlan,
        progress: &mut dyn Progress,
    ) -> Result<CheckedExercise, RunError> {
        let found = self.found()?;
        let request = LabRequest {
            lab: &check.book_lab,
            kernels: &check.kernels,
        };
        let plan = check
            .learner_plan(&self.plan(&request, &found)?)
            .map_err(|err| RunError::lab(&check.book_lab.name, err.to_string()))?;
        progress.stage(&format!("exercise `{}`: measuring", check.book_lab.name));
        let results = self.supervisor(&found).measure(&plan, progress)?;
        let verdict = check
            .verdict(&results)
            .map_err(|err| RunError::lab(&check.book_lab.name, err.to_string()))?;
        let failure = results
            .variant(LEARNER_VARIANT)
            .and_then(|learner| Failure::of(&learner.outcome))
            .filter(|_| verdict.is_graded())
            .or((check.spec.sanitize && verdict.is_pass()).then_some(Failure::Passed));
        let small = failure
            .map(|_| self.sanitizer_plan(check, &found))
            .transpose()?
            .flatten();
        let sanitizer = failure.map(|failure| {
            self.supervisor(&found).sanitize(
                small.as_ref().unwrap_or(&plan),
                results.provenance.input_seed,
                LEARNER_VARIANT,
                failure,
                progress,
            )
        });
        // A kernel that passed, in which the sanitizer found an error, is right by luck.
        let verdict = match &sanitizer {
            Some(crate::sanitizer::Verdict::Found { diagnoses, .. }) if verdict.is_pass() => {
                Verdict::Hazard {
                    tool: diagnoses
                        .first()
                        .map(|d| d.tool.to_string())
                        .unwrap_or_default(),
                }
            }
            _ => verdict,
        };
        Ok(CheckedExercise {
            results,
            verdict,
            sanitizer,
        })
    }

    /// The learner's plan at the exercise's `sanitize_params` sizes, for the sanitizer's runs;
    /// `None` where it names none (the measured plan's sizes serve).
    fn sanitizer_plan(
        &self,
        check: &CheckPlan,
        found: &Found,
    ) -> Result<Option<LabPlan>, RunError> {
        if check.spec.sanitize_params.is_empty() {
            return Ok(None);
        }
        let request = LabRequest {
            lab: &check.book_lab,
            kernels: &check.kernels,
        };
        let plan = self.plan_at(&request, &check.spec.sanitize_params, found)?;
        check
            .learner_plan(&plan)
            .map(Some)
            .map_err(|err| RunError::lab(&check.book_lab.name, err.to_string()))
    }

    /// `request`'s lab compiled with `sizes` in place of its own parameters.
    fn plan_at(
        &self,
        request: &LabRequest<'_>,
        sizes: &kernelbook_core::expr::Params,
        found: &Found,
    ) -> Result<LabPlan, RunError> {
        let small = request
            .lab
            .with_params(sizes)
            .map_err(|err| RunError::lab(&request.lab.name, err.to_string()))?;
        let request = LabRequest {
            lab: &small,
            kernels: request.kernels,
        };
        self.plan(&request, found)
    }

    /// Runs under compute-sanitizer, after `kernelbook run` measured `results` of `request`,
    /// every kernel variant that failed its check or faulted, and, where the lab asks for it
    /// (`sanitize = true`), every one that passed: what each run found, in the results' order,
    /// at the lab's `sanitize_params` sizes where it names them (else its exercise's). A lab
    /// whose variants all passed, and that does not ask, runs nothing.
    pub fn sanitize_lab(
        &self,
        request: &LabRequest<'_>,
        results: &LabResults,
        progress: &mut dyn Progress,
    ) -> Result<Vec<SanitizedVariant>, RunError> {
        let lab = request.lab;
        let asked: Vec<(&str, Failure)> = results
            .variants
            .iter()
            .filter_map(|v| {
                let passed = matches!(
                    v.outcome,
                    kernelbook_core::results::Outcome::Measured { .. }
                );
                let failure =
                    Failure::of(&v.outcome).or((lab.sanitize && passed).then_some(Failure::Passed));
                failure.map(|failure| (v.name.as_str(), failure))
            })
            .collect();
        if asked.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.found()?;
        // An exercise's sizes serve its lab where the lab names none of its own.
        let sizes = match &lab.exercise {
            Some(exercise) if lab.sanitize_params.is_empty() => &exercise.sanitize_params,
            _ => &lab.sanitize_params,
        };
        let plan = if sizes.is_empty() {
            self.plan(request, &found)?
        } else {
            self.plan_at(request, sizes, &found)?
        };
        let supervisor = self.supervisor(&found);
        Ok(asked
            .into_iter()
            .filter(|(name, _)| plan.variant(name).and_then(|v| plan.kernel_of(v)).is_some())
            .map(|(variant, failure)| SanitizedVariant {
                variant: variant.to_string(),
                sizes: sizes.clone(),
                verdict: supervisor.sanitize(
                    &plan,
                    results.provenance.input_seed,
                    variant,
                    failure,
                    progress,
                ),
            })
            .collect())
    }

    /// The lab's recorded results, shown because of `why` (or why there are none).
    pub fn recorded_outcome(&self, request: &LabRequest<'_>, why: String) -> LabOutcome {
        let lab = request.lab;
        match self.recorded.get(lab) {
            Ok(Some(results)) => {
                let stale_kernels = store::stale_kernels(&results, request.kernels);
                LabOutcome::Recorded {
                    compile_errors: self.compile_check(request, &results, &stale_kernels),
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

    /// Compiles the kernels edited since `recorded`, so that an author without a GPU still
    /// learns when an edit broke one: the lab's plan for the recording's device, each of its
    /// builds of an edited kernel (with that build's definitions), through the compiler of the
    /// chosen backend (with `Auto`, of the recording's). Quietly does nothing without that
    /// compiler, or where the lab does not plan (its error is reported on its own).
    fn compile_check(
        &self,
        request: &LabRequest<'_>,
        recorded: &LabResults,
        stale: &[String],
    ) -> Vec<KernelProblem> {
        if stale.is_empty() {
            return Vec::new();
        }
        let device = &recorded.provenance.device;
        let Ok(compiler) = self.config.backend.or_of(device).compiler() else {
            return Vec::new();
        };
        match self.plan_for(request, device) {
            Ok(plan) => compile_builds(&plan, stale, compiler.as_ref()),
            Err(_) => Vec::new(),
        }
    }

    fn tell_unavailable(&self, why: &str) {
        if !self.told_unavailable.swap(true, Ordering::Relaxed) {
            (self.notify)(&format!(
                "{why}: showing results recorded on real hardware ({})",
                self.config.recorded_dir.display()
            ));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Compiles `plan`'s builds of the kernels named in `stale` for the plan's target: the first
/// problem of each kernel (one of its builds failing is enough to say it is broken).
fn compile_builds(plan: &LabPlan, stale: &[String], compiler: &dyn Compiler) -> Vec<KernelProblem> {
    let mut problems: Vec<KernelProblem> = Vec::new();
    let edited = plan.builds.iter().filter(|build| {
        stale.contains(&build.source.name)
            // Python blocks are run, not compiled: nothing to check without a GPU.
            && !matches!(
                build.source.language,
                kernelbook_core::Language::Python | kernelbook_core::Language::PythonReference
            )
    });
    for build in edited {
        let kernel = &build.source;
        if problems.iter().any(|p| p.kernel == kernel.name) {
            continue;
        }
        let request = CompileRequest {
            name: &kernel.name,
            source: &kernel.source,
            arch: &plan.target.arch,
            flags: &build.flags,
        };
        let message = match compiler.compile(&request) {
            Ok(_) => continue,
            Err(CompileError::Rejected { log, .. }) => {
                crate::diagnostics::map_compile_log(&log, kernel)
            }
            Err(CompileError::Compiler(message)) => message,
        };
        problems.push(KernelProblem {
            kernel: kernel.name.clone(),
            message,
        });
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Quiet;
    use std::path::Path;

    /// Lab 3's file and its recording, as the repository has them.
    fn lab_and_recording() -> (LabSpec, LabResults) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let lab = LabSpec::load(&root.join("labs/profile_transpose.toml")).expect("the lab");
        let text = std::fs::read_to_string(
            root.join("labs/recorded/nvidia-h200-882b8b4e/profile_transpose.json"),
        )
        .expect("the recording");
        (lab, LabResults::from_json(&text).expect("parses"))
    }

    fn runner(dir: &Path) -> Runner {
        Runner::new(RunnerConfig {
            cache_dir: dir.join("cache"),
            recorded_dir: dir.join("recorded"),
            mode: Mode::Auto,
            measurement: Measurement::default(),
            isolation: None,
            backend: BackendChoice::default(),
        })
    }

    /// Counters added to a recording must describe the code and sizes it timed: a recording of
    /// other parameters, or of kernels edited since, is refused before any GPU is looked for.
    #[test]
    fn counters_are_not_added_to_a_recording_of_other_code_or_sizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runner = runner(dir.path());
        let (lab, recorded) = lab_and_recording();
        let mut other_sizes = recorded.clone();
        other_sizes.params.insert("n".into(), 4096);
        let edited = BTreeMap::new();
        let request = LabRequest {
            lab: &lab,
            kernels: &edited,
        };
        let err = runner
            .profile_recorded(&request, &other_sizes, &mut Quiet)
            .expect_err("other parameters");
        assert!(err.to_string().contains("other parameters"), "{err}");
        let err = runner
            .profile_recorded(&request, &recorded, &mut Quiet)
            .expect_err("edited kernels");
        assert!(
            err.to_string().contains("copy_tile, transpose_naive, transpose_tiled, transpose_padded changed since the recording"),
            "{err}"
        );
    }

    /// Compiles as NVRTC would a kernel that needs `WIDTH` defined and rejects `WIDTH = 4`,
    /// keeping every request's options.
    #[derive(Default)]
    struct NeedsWidth(Mutex<Vec<Vec<String>>>);

    impl Compiler for NeedsWidth {
        fn version(&self) -> String {
            "stand-in".into()
        }
        fn compile(
            &self,
            request: &CompileRequest<'_>,
        ) -> Result<crate::backend::CompiledKernel, CompileError> {
            lock(&self.0).push(request.flags.to_vec());
            let defines = |value: &str| request.flags.iter().any(|f| f.ends_with(value));
            let log = match (defines("WIDTH=1"), defines("WIDTH=4")) {
                (true, _) => return crate::backend::fake::FakeCompiler.compile(request),
                (_, true) => format!("{}.cu(3): error: WIDTH = 4 is not supported", request.name),
                _ => format!("{}.cu(1): error: WIDTH is undefined", request.name),
            };
            Err(CompileError::Rejected {
                log,
                options: request.flags.to_vec(),
            })
        }
    }

    /// The stale-kernel check compiles the plan's builds, each with its variant's definitions:
    /// a kernel that compiles with one variant's `defines` and not with another's is reported,
    /// at the chapter's line; one unchanged since the recording is not compiled at all.
    #[test]
    fn the_stale_check_compiles_each_build_with_its_variants_defines() {
        let copy = include_str!("../../labs/fixtures/copy.toml");
        let memcpy =
            "[[variants]]\nname = \"memcpy\"\nbuiltin = \"memcpy\"\nargs = [\"dst\", \"src\"]\n\n";
        let text = copy
            .replace(memcpy, "")
            .replace("ceiling = \"memcpy\"\n", "")
            + "defines = { WIDTH = \"1\" }\n\n[[variants]]\nname = \"wide\"\nkernel = \"copy_scalar\"\n\
               grid = [\"n / 256\"]\nblock = [256]\nargs = [\"dst\", \"src\", \"n\"]\n\
               defines = { WIDTH = \"4\" }\n";
        let lab = LabSpec::parse(&text, Path::new("labs/copy.toml")).expect("the lab");
        let kernel = KernelSource {
            name: "copy_scalar".into(),
            source: "extern \"C\" __global__ void copy_scalar() {}\n".into(),
            origin: kernelbook_core::SourceLocation {
                file: "chapter.md".into(),
                line: 10,
            },
            language: Default::default(),
        };
        let kernels = BTreeMap::from([("copy_scalar".to_string(), kernel)]);
        let device = crate::plan::tests::h200();
        let plan = plan::compile(
            &lab,
            &kernels,
            &Target::of(&device),
            &Measurement::default(),
        )
        .expect("a plan");
        let compiler = NeedsWidth::default();
        let problems = compile_builds(&plan, &["copy_scalar".into()], &compiler);
        let seen = lock(&compiler.0).clone();
        assert_eq!(seen.len(), 2, "one compile per build: {seen:?}");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kernel, "copy_scalar");
        assert!(
            problems[0].message.contains("WIDTH = 4 is not supported"),
            "{}",
            problems[0].message
        );
        assert!(
            problems[0].message.contains("chapter.md"),
            "{}",
            problems[0].message
        );
        assert!(compile_builds(&plan, &["other".into()], &compiler).is_empty());
        assert_eq!(
            lock(&compiler.0).len(),
            2,
            "an unchanged kernel is not compiled"
        );
    }

    /// `Auto` checks a recording with its own vendor's compiler; a named backend with its own.
    #[test]
    fn the_stale_check_uses_the_chosen_or_the_recordings_backend() {
        let mut device = crate::plan::tests::h200();
        assert_eq!(BackendChoice::Auto.or_of(&device), BackendChoice::Cuda);
        device.backend = kernelbook_core::results::DeviceApi::Hip;
        assert_eq!(BackendChoice::Auto.or_of(&device), BackendChoice::Hip);
        assert_eq!(BackendChoice::Fake.or_of(&device), BackendChoice::Fake);
    }
}
