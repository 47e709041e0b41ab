//! Watch, rebuild, reload. The builder thread waits for a change (a file saved, or labs
//! measured), then builds the whole book at once from what is known: labs whose current plan
//! the cache holds show their numbers, and the others show their recorded numbers with a note
//! that the GPU is measuring them ([`ServeResults`]) while the GPU thread measures them. When
//! the new book is in place its version goes up and every page reloads; when the measurement is
//! done, the builder builds again, and the pages reload with the new numbers. No build waits for
//! a measurement, and a build that fails leaves the last good book served, its error shown in
//! every page and on the terminal until a save fixes it.

use super::App;
use super::exercises::Catalog;
use super::gpu::{GpuQueue, Job};
use super::status::Board;
use crate::cmd::build::render;
use crate::output::notice;
use crate::project::{Context, Project};
use kernelbook_core::results::LabResults;
use kernelbook_runner::engine::{Progress, Quiet};
use kernelbook_runner::{LabOutcome, LabRequest, Lookup, RunError, Runner, Unmeasured};
use mdbook_kernelbook::KernelbookPreprocessor;
use mdbook_kernelbook::preprocessor::ResultSource;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Instant;

/// Why the builder builds again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// These files changed.
    Changed(Vec<PathBuf>),
    /// Labs were measured: their numbers are in the cache.
    Measured,
    /// Labs' counters were collected: they are in the counters cache.
    Counters,
}

/// Why a lab shows its recorded numbers while it is being measured.
pub const MEASURING_NOW: &str = "your GPU is measuring this lab now, and the page reloads with its \
    numbers when they are ready";

/// Why a lab shows its recorded numbers after a measurement that the cache did not keep.
const NOT_KEPT: &str =
    "it was measured, but the results could not be kept in the cache (the terminal says why)";

/// What became of a measurement asked for (by cache key: a key is asked for once).
#[derive(Debug, Clone)]
enum Asked {
    Queued,
    Done,
    Failed(String),
}

/// A measurement asked for: its lab, what became of it, and whether a build has shown it since
/// it ended (until then, the pages still say the lab is being measured).
#[derive(Debug, Clone)]
struct Measurement {
    lab: String,
    asked: Asked,
    shown: bool,
}

/// The measurements asked for, by cache key.
type Measurements = BTreeMap<String, Measurement>;

/// The build's results: the runner's cache and recordings, never a measurement during the
/// build; what is not cached is queued for the GPU thread.
#[derive(Debug)]
pub struct ServeResults {
    runner: Arc<Runner>,
    gpu: GpuQueue,
    board: Board,
    triggers: mpsc::Sender<Trigger>,
    measurements: Arc<Mutex<Measurements>>,
}

impl ServeResults {
    pub fn new(
        runner: Arc<Runner>,
        gpu: GpuQueue,
        board: Board,
        triggers: mpsc::Sender<Trigger>,
    ) -> Self {
        ServeResults {
            runner,
            gpu,
            board,
            triggers,
            measurements: Arc::default(),
        }
    }

    /// The measurements that ended and no build has shown yet: the build about to start will.
    pub fn ended_unshown(&self) -> Vec<String> {
        lock(&self.measurements)
            .iter()
            .filter(|(_, m)| !m.shown && !matches!(m.asked, Asked::Queued))
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// A build showed the measurements `keys`: their labs are no longer "being measured".
    pub fn shown(&self, keys: &[String]) {
        let mut measurements = lock(&self.measurements);
        for key in keys {
            if let Some(measurement) = measurements.get_mut(key) {
                measurement.shown = true;
            }
        }
        publish(&self.board, &measurements);
    }

    /// Forgets the measurements that failed, so that the next build asks for them again: a
    /// save retries them (a measurement's own end never does, or a lab that cannot be measured
    /// would be asked for forever).
    pub fn forget_failures(&self) {
        lock(&self.measurements).retain(|_, m| !matches!(m.asked, Asked::Failed(_)));
    }

    /// Asks the GPU thread to measure `labs`, one job each: when a lab is done, the builder
    /// builds again, so that its pages get its numbers without waiting for the others.
    fn queue(&self, labs: Vec<Unmeasured>) {
        let names: Vec<String> = labs.iter().map(|lab| lab.lab().to_string()).collect();
        notice(&format!(
            "kernelbook: measuring {} on the GPU",
            names.join(", ")
        ));
        for lab in labs {
            let (name, key) = (lab.lab().to_string(), lab.key.clone());
            let measurements = Arc::clone(&self.measurements);
            let triggers = self.triggers.clone();
            let started = Instant::now();
            let done = move |result: Result<LabResults, RunError>| {
                let asked = match result {
                    Ok(_) => Asked::Done,
                    Err(err) => failed(&name, &err.to_string()),
                };
                if let Some(measurement) = lock(&measurements).get_mut(&key) {
                    measurement.asked = asked;
                }
                notice(&format!(
                    "kernelbook: measured {name} in {:.1} s",
                    started.elapsed().as_secs_f64()
                ));
                let _ = triggers.send(Trigger::Measured);
            };
            let job = Job::Measure {
                lab: Box::new(lab),
                done: Box::new(done),
            };
            if let Err(Job::Measure { done, .. }) = self.gpu.send(job) {
                done(Err(RunError::Unavailable(
                    "the GPU thread has stopped".into(),
                )));
            }
        }
    }

    /// Tells the GPU thread that a build left counters to collect, if it did.
    pub fn counters_pending(&self) {
        if !self.runner.pending_counters().is_empty() {
            let _ = self.gpu.send(Job::Counters);
        }
    }
}

fn lock(measurements: &Mutex<Measurements>) -> std::sync::MutexGuard<'_, Measurements> {
    measurements.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tells the pages which labs are being measured: those queued, or measured and not yet shown.
fn publish(board: &Board, measurements: &Measurements) {
    let mut labs: Vec<String> = Vec::new();
    for measurement in measurements.values().filter(|m| !m.shown) {
        if !labs.contains(&measurement.lab) {
            labs.push(measurement.lab.clone());
        }
    }
    board.update(|status| {
        if labs.is_empty() {
            status.progress = None;
        }
        status.measuring = labs;
    });
}

/// A failed measurement, told on the terminal; the page shows `why` in the lab's place.
fn failed(lab: &str, why: &str) -> Asked {
    let why = format!("measuring lab `{lab}` failed: {why}");
    notice(&format!("kernelbook: {why}"));
    Asked::Failed(why)
}

impl ResultSource for ServeResults {
    fn recorded(
        &self,
        lab: &kernelbook_core::spec::LabSpec,
    ) -> Option<kernelbook_core::results::LabResults> {
        kernelbook_runner::Runner::recorded(&self.runner)
            .get(lab)
            .ok()
            .flatten()
    }

    fn outcomes(&self, requests: &[LabRequest<'_>], _: &mut dyn Progress) -> Vec<LabOutcome> {
        let lookups = self.runner.lookup(requests);
        let mut to_measure = Vec::new();
        let outcomes = {
            let mut measurements = lock(&self.measurements);
            let outcomes = lookups
                .into_iter()
                .zip(requests)
                .map(|(lookup, request)| {
                    let lab = match lookup {
                        Lookup::Ready(outcome) => return outcome,
                        Lookup::Unmeasured(lab) => lab,
                    };
                    let why = match measurements.get(&lab.key).map(|m| &m.asked) {
                        None => {
                            let measurement = Measurement {
                                lab: lab.lab().to_string(),
                                asked: Asked::Queued,
                                shown: false,
                            };
                            measurements.insert(lab.key.clone(), measurement);
                            to_measure.push(lab);
                            MEASURING_NOW.to_string()
                        }
                        Some(Asked::Queued) => MEASURING_NOW.to_string(),
                        Some(Asked::Done) => NOT_KEPT.to_string(),
                        Some(Asked::Failed(why)) => why.clone(),
                    };
                    self.runner.recorded_outcome(request, why)
                })
                .collect();
            publish(&self.board, &measurements);
            outcomes
        };
        if !to_measure.is_empty() {
            self.queue(to_measure);
        }
        outcomes
    }
}

/// Builds the book whenever it is told to.
#[derive(Debug)]
pub struct Builder {
    pub ctx: Context,
    pub app: Arc<App>,
    pub results: Arc<ServeResults>,
}

impl Builder {
    /// Builds once per batch of triggers until every sender is gone.
    pub fn run(self, triggers: mpsc::Receiver<Trigger>) {
        while let Ok(first) = triggers.recv() {
            let mut changed = Vec::new();
            let mut measured = false;
            for trigger in std::iter::once(first).chain(triggers.try_iter()) {
                match trigger {
                    Trigger::Changed(paths) => changed.extend(paths),
                    Trigger::Measured | Trigger::Counters => measured = true,
                }
            }
            if !changed.is_empty() {
                self.results.forget_failures();
                notice(&format!(
                    "kernelbook: {} changed: rebuilding",
                    shown_paths(&self.ctx.root, &changed)
                ));
            } else if measured {
                notice("kernelbook: rebuilding with the new results");
            }
            self.pass();
        }
    }

    /// One build: the new book put in place and every page told, or the error shown.
    pub fn pass(&self) {
        let board = &self.app.board;
        board.update(|status| status.building = true);
        // Measurements that ended before this build are shown by it (or by none, if it fails:
        // then the error is what the pages show).
        let ending = self.results.ended_unshown();
        let started = Instant::now();
        let built = self.build();
        self.results.shown(&ending);
        self.results.counters_pending();
        match built {
            Ok(()) => {
                board.update(|status| {
                    status.building = false;
                    status.error = None;
                    status.version += 1;
                });
                notice(&format!(
                    "kernelbook: book rebuilt in {:.1} s",
                    started.elapsed().as_secs_f64()
                ));
            }
            Err(err) => {
                let message = format!("{err:#}");
                notice(&format!("kernelbook: the book does not build:\n{message}"));
                board.update(|status| {
                    status.building = false;
                    status.error = Some(message);
                });
            }
        }
    }

    fn build(&self) -> anyhow::Result<()> {
        let project = Project::load(&self.ctx)?;
        self.app.set_catalog(Catalog::of(&project));
        let results: Box<dyn ResultSource> = Box::new(Arc::clone(&self.results));
        render(
            project.book,
            KernelbookPreprocessor::with_results(results, Box::new(Quiet)),
        )?;
        Ok(())
    }
}

/// "book/src/a.md, labs/b.toml": the changed files under the book's root, at most three.
fn shown_paths(root: &Path, paths: &[PathBuf]) -> String {
    let mut shown: Vec<String> = paths
        .iter()
        .map(|path| {
            path.strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
    shown.sort();
    shown.dedup();
    let more = shown.len().saturating_sub(3);
    shown.truncate(3);
    if more > 0 {
        shown.push(format!("{more} more"));
    }
    shown.join(", ")
}
