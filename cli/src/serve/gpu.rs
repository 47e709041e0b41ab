//! The one thread that uses the GPU: it grades exercises, measures the labs builds found
//! unmeasured, and collects the counters they left pending, one job at a time, so that a check
//! never shares the GPU with a measurement (each would spoil the other's timings) and the
//! runner keeps one measuring child for all of them.
//!
//! What comes next is chosen each time ([`pick`]): a check first (a learner waits for it), then
//! numbers, then counters — numbers never wait for counters —, and among labs those shown on a
//! page open in a browser first ([`OpenLabs`]). Each lab's numbers (or counters) are handed
//! back as soon as that lab is done, so its pages get them without waiting for the others.

use super::status::{Board, BoardProgress, OpenLabs};
use kernelbook_core::results::LabResults;
use kernelbook_runner::exercise::CheckPlan;
use kernelbook_runner::{CheckedExercise, RunError, Runner, Unmeasured};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc;

/// What becomes of a lab's measurement.
pub type Measured = Box<dyn FnOnce(Result<LabResults, RunError>) + Send>;

/// What becomes of a check: the measurement and the verdict.
pub type Checked = Box<dyn FnOnce(Result<CheckedExercise, RunError>) + Send>;

/// Told the labs whose counters were collected, for a build to show them.
pub type CountersCollected = Box<dyn Fn(&[String]) + Send>;

/// What the GPU thread is asked to do; `done` is given the outcome.
pub enum Job {
    /// Measure this lab's numbers and keep them in the cache.
    Measure {
        lab: Box<Unmeasured>,
        done: Measured,
    },
    /// Grade a learner's kernel.
    Check { plan: Box<CheckPlan>, done: Checked },
    /// A build left counters pending: collect them once nothing else waits.
    Counters,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Measure { lab, .. } => f.debug_struct("Measure").field("lab", &lab.lab()).finish(),
            Job::Check { plan, .. } => f
                .debug_struct("Check")
                .field("lab", &plan.book_lab.name)
                .finish(),
            Job::Counters => f.write_str("Counters"),
        }
    }
}

/// Where jobs for the GPU thread go.
#[derive(Debug, Clone)]
pub struct GpuQueue(mpsc::Sender<Job>);

impl GpuQueue {
    /// A queue whose jobs `receiver` gets (the GPU thread, or a test).
    pub fn new() -> (GpuQueue, mpsc::Receiver<Job>) {
        let (sender, receiver) = mpsc::channel();
        (GpuQueue(sender), receiver)
    }

    /// Queues `job`; gives it back if the GPU thread has stopped.
    pub fn send(&self, job: Job) -> Result<(), Job> {
        self.0.send(job).map_err(|err| err.0)
    }
}

/// The GPU thread's own queue: the jobs it has and not yet done.
#[derive(Default)]
pub struct Waiting {
    checks: VecDeque<(Box<CheckPlan>, Checked)>,
    measurements: Vec<(Box<Unmeasured>, Measured)>,
}

impl Waiting {
    fn push(&mut self, job: Job) {
        match job {
            Job::Check { plan, done } => self.checks.push_back((plan, done)),
            Job::Measure { lab, done } => self.measurements.push((lab, done)),
            Job::Counters => {}
        }
    }
}

/// What the GPU does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The first check waiting.
    Check,
    /// The measurement waiting at this index.
    Measure(usize),
    /// The counters of this lab.
    Counters(String),
    Idle,
}

/// The next job: a check, else the numbers of a lab (one on an open page first, else the one
/// asked for first), else the counters of a lab (likewise).
pub fn pick(
    checks: usize,
    measurements: &[&str],
    pending_counters: &[String],
    open: &dyn Fn(&str) -> bool,
) -> Next {
    if checks > 0 {
        return Next::Check;
    }
    if let Some(index) = first_open(measurements.iter().copied(), open) {
        return Next::Measure(index);
    }
    match first_open(pending_counters.iter().map(String::as_str), open) {
        Some(index) => Next::Counters(pending_counters[index].clone()),
        None => Next::Idle,
    }
}

/// The index of the first lab shown on an open page, else 0; `None` if there is none.
fn first_open<'a>(
    labs: impl Iterator<Item = &'a str> + Clone,
    open: &dyn Fn(&str) -> bool,
) -> Option<usize> {
    labs.clone()
        .position(open)
        .or_else(|| labs.clone().next().map(|_| 0))
}

/// Starts the GPU thread: it runs the jobs of `jobs` with `runner` until every sender is gone.
pub fn spawn(
    runner: Arc<Runner>,
    board: Board,
    open: OpenLabs,
    jobs: mpsc::Receiver<Job>,
    collected: CountersCollected,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("kernelbook-gpu".into())
        .spawn(move || {
            let mut waiting = Waiting::default();
            loop {
                if !step(&runner, &board, &open, &mut waiting, &collected) {
                    // Nothing to do: wait for a job.
                    match jobs.recv() {
                        Ok(job) => waiting.push(job),
                        Err(_) => return,
                    }
                }
                waiting_jobs(&jobs, &mut waiting);
            }
        })
}

fn waiting_jobs(jobs: &mpsc::Receiver<Job>, waiting: &mut Waiting) {
    for job in jobs.try_iter() {
        waiting.push(job);
    }
}

/// Does the next job of `waiting` (or pending counters); false if there was none.
pub fn step(
    runner: &Runner,
    board: &Board,
    open: &OpenLabs,
    waiting: &mut Waiting,
    collected: &CountersCollected,
) -> bool {
    let labs: Vec<&str> = waiting
        .measurements
        .iter()
        .map(|(lab, _)| lab.lab())
        .collect();
    let pending = runner.pending_counters();
    let next = pick(waiting.checks.len(), &labs, &pending, &|lab| {
        open.contains(lab)
    });
    let mut progress = BoardProgress::new(board);
    match next {
        Next::Idle => return false,
        Next::Check => {
            if let Some((plan, done)) = waiting.checks.pop_front() {
                check(runner, board, &plan, done);
            }
        }
        Next::Measure(index) => {
            let (lab, done) = waiting.measurements.remove(index);
            let measured = runner
                .measure_unmeasured(std::slice::from_ref(&*lab), &mut progress)
                .pop()
                .unwrap_or_else(|| Err(RunError::Unavailable("not measured".into())));
            done(measured);
        }
        Next::Counters(lab) => {
            board.update(|status| status.counting = vec![lab.clone()]);
            let done = runner.collect_counters(Some(std::slice::from_ref(&lab)), &mut progress);
            board.update(|status| {
                status.counting.clear();
                status.progress = None;
            });
            for (lab, outcome) in &done {
                if let Err(why) = outcome {
                    crate::output::notice(&format!("kernelbook: counters of lab `{lab}`: {why}"));
                }
            }
            let labs: Vec<String> = done.into_iter().map(|(lab, _)| lab).collect();
            collected(&labs);
        }
    }
    true
}

fn check(runner: &Runner, board: &Board, plan: &CheckPlan, done: Checked) {
    let mut progress = BoardProgress::new(board);
    let name = plan.book_lab.name.clone();
    board.update(|status| status.checking = Some(name));
    let result = runner.check_exercise(plan, &mut progress);
    board.update(|status| {
        status.checking = None;
        if status.measuring.is_empty() {
            status.progress = None;
        }
    });
    done(result);
}

/// Runs `job` now (tests: the GPU thread's work without the thread).
#[cfg(test)]
pub fn run(runner: &Runner, board: &Board, job: Job) {
    let mut waiting = Waiting::default();
    waiting.push(job);
    let open = OpenLabs::default();
    let collected: CountersCollected = Box::new(|_| {});
    while !waiting.checks.is_empty() || !waiting.measurements.is_empty() {
        step(runner, board, &open, &mut waiting, &collected);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(labs: &[&str]) -> Vec<String> {
        labs.iter().map(|l| l.to_string()).collect()
    }

    /// After a save, the labs of the pages open in a browser are measured first, and their
    /// counters collected first; a check comes before both, numbers before counters.
    #[test]
    fn open_pages_come_first_checks_before_numbers_before_counters() {
        let open = |lab: &str| lab == "bandwidth";
        let queued = ["fusion", "bulk_copy_sweep", "bandwidth"];
        assert_eq!(pick(0, &queued, &[], &open), Next::Measure(2));
        assert_eq!(pick(1, &queued, &[], &open), Next::Check);
        assert_eq!(
            pick(0, &["fusion", "strided"], &[], &open),
            Next::Measure(0)
        );
        let pending = names(&["strided", "bandwidth"]);
        assert_eq!(pick(0, &["fusion"], &pending, &open), Next::Measure(0));
        assert_eq!(
            pick(0, &[], &pending, &open),
            Next::Counters("bandwidth".into())
        );
        assert_eq!(
            pick(0, &[], &pending, &|_| false),
            Next::Counters("strided".into())
        );
        assert_eq!(pick(0, &[], &[], &open), Next::Idle);
    }
}
