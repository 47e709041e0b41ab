//! The one thread that uses the GPU: it measures the labs a build found unmeasured and grades
//! exercises, one job at a time, so that a check never shares the GPU with a measurement (each
//! would spoil the other's timings) and the runner keeps one measuring child for all of them.

use super::status::{Board, BoardProgress};
use kernelbook_core::results::LabResults;
use kernelbook_runner::exercise::{CheckPlan, Verdict};
use kernelbook_runner::{RunError, Runner, Unmeasured};
use std::sync::Arc;
use std::sync::mpsc;

/// What becomes of a measurement: one result per lab asked for.
pub type Measured = Box<dyn FnOnce(Vec<Result<LabResults, RunError>>) + Send>;

/// What becomes of a check: the measurement and the verdict.
pub type Checked = Box<dyn FnOnce(Result<(LabResults, Verdict), RunError>) + Send>;

/// What the GPU thread is asked to do; `done` is given the outcome.
pub enum Job {
    /// Measure these labs (one batch, as a build would) and keep their results in the cache.
    Measure {
        labs: Vec<Unmeasured>,
        done: Measured,
    },
    /// Grade a learner's kernel.
    Check { plan: Box<CheckPlan>, done: Checked },
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Measure { labs, .. } => f.debug_struct("Measure").field("labs", labs).finish(),
            Job::Check { plan, .. } => f
                .debug_struct("Check")
                .field("lab", &plan.lab.name)
                .finish(),
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

/// Starts the GPU thread: it runs the jobs of `jobs` with `runner` until every sender is gone.
pub fn spawn(
    runner: Arc<Runner>,
    board: Board,
    jobs: mpsc::Receiver<Job>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("kernelbook-gpu".into())
        .spawn(move || {
            for job in jobs {
                run(&runner, &board, job);
            }
        })
}

/// Runs one job.
pub fn run(runner: &Runner, board: &Board, job: Job) {
    let mut progress = BoardProgress::new(board);
    match job {
        Job::Measure { labs, done } => done(runner.measure_unmeasured(&labs, &mut progress)),
        Job::Check { plan, done } => {
            let name = plan.lab.name.clone();
            board.update(|status| status.checking = Some(name));
            let result = runner.check_exercise(&plan, &mut progress);
            board.update(|status| {
                status.checking = None;
                if status.measuring.is_empty() {
                    status.progress = None;
                }
            });
            done(result);
        }
    }
}
