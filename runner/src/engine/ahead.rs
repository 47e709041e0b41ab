//! Work done ahead of the GPU, so that it never waits for the CPU between labs: every kernel of
//! the labs to come compiled on every core ([`CompilePool`]), and each coming lab's inputs
//! drawn and references computed (or handed to Python) while the GPU measures the lab before
//! it. A lab that nothing prepared is prepared when it comes up, as before.
//!
//! Only a few labs are prepared ahead ([`LOOK_AHEAD`]): their inputs and expected outputs are
//! hundreds of MiB each.

use super::EngineError;
use super::buffers::HostInputs;
use super::expected::{Expectations, ExternalReferences};
use crate::backend::Compiler;
use crate::ops::compile::CompilePool;
use crate::plan::LabPlan;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// Labs prepared and not yet measured, at most.
pub const LOOK_AHEAD: usize = 2;

/// NumPy references shared between the thread that prepares labs ahead and the one that
/// measures them.
pub type SharedReferences = Arc<Mutex<dyn ExternalReferences + Send>>;

/// What a lab needs before the GPU can start on it: its inputs, drawn, and the expected output
/// of every check its variants use, computed (built-in references) or submitted (NumPy ones).
#[derive(Debug)]
pub struct LabInputs {
    pub host: HostInputs,
    pub expectations: Expectations,
}

impl LabInputs {
    /// Draws `plan`'s inputs from `seed` and starts the checks `used` marks.
    pub fn prepare(
        plan: &LabPlan,
        seed: u64,
        used: &[bool],
        external: &mut dyn ExternalReferences,
    ) -> Result<LabInputs, EngineError> {
        super::buffers::check_host_memory(plan, super::buffers::available_host_memory())?;
        let host = HostInputs::draw(plan, seed);
        let expectations = Expectations::start(plan, &host, used, external)?;
        Ok(LabInputs { host, expectations })
    }
}

/// The checks the runnable variants of `plan` use (every variant, or those of `only`).
pub fn checks_used(plan: &LabPlan, only: Option<&[String]>) -> Vec<bool> {
    let mut used = vec![false; plan.checks.len()];
    let selected = plan
        .variants
        .iter()
        .filter(|v| only.is_none_or(|names| names.contains(&v.name)))
        .filter(|v| v.unsupported.is_none() && crate::ops::on_device(&v.op).is_some());
    for variant in selected {
        if let Some(slot) = used.get_mut(variant.check) {
            *slot = true;
        }
    }
    used
}

struct Queued {
    plan: LabPlan,
    seed: u64,
}

struct Ready {
    plan: LabPlan,
    seed: u64,
    inputs: Result<LabInputs, EngineError>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Queued>,
    ready: Vec<Ready>,
    /// The lab being prepared now, by name and seed.
    working: Option<(String, u64)>,
    worker: bool,
    /// Raised by every [`Ahead::prepare`], whose list replaces the one before: what the
    /// thread was preparing for an older list is dropped.
    generation: u64,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// See the module documentation. One per measuring process.
pub struct Ahead {
    compiles: CompilePool,
    inputs: Arc<Shared>,
}

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ahead")
            .field("compiles", &self.compiles)
            .finish_non_exhaustive()
    }
}

impl Ahead {
    /// Compiles with `compiler` on every core; prepares nothing until told to.
    pub fn new(compiler: Arc<dyn Compiler>) -> Ahead {
        Ahead::with_pool(CompilePool::new(compiler))
    }

    pub fn with_pool(compiles: CompilePool) -> Ahead {
        Ahead {
            compiles,
            inputs: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            }),
        }
    }

    pub fn compiles(&self) -> &CompilePool {
        &self.compiles
    }

    /// Queues every build the runnable variants of `plans` launch, in the plans' order.
    pub fn compile(&self, plans: &[LabPlan]) {
        for plan in plans {
            let runnable = plan.variants.iter().filter(|v| v.unsupported.is_none());
            let builds = crate::ops::kernel::builds_of(runnable);
            self.compiles.queue(CompilePool::jobs_of(plan, &builds));
        }
    }

    /// Prepares `labs` (each plan with the seed it will be measured with), in order, on a
    /// thread of their own, [`LOOK_AHEAD`] at most waiting to be measured. The list replaces
    /// what an earlier call queued or prepared and nobody took.
    pub fn prepare(&self, labs: Vec<(LabPlan, u64)>, external: SharedReferences) {
        let mut state = self.lock();
        state.generation += 1;
        state.ready.clear();
        state.queue.clear();
        self.inputs.changed.notify_all();
        state
            .queue
            .extend(labs.into_iter().map(|(plan, seed)| Queued { plan, seed }));
        if state.worker || state.queue.is_empty() {
            return;
        }
        state.worker = true;
        let shared = Arc::clone(&self.inputs);
        let spawned = std::thread::Builder::new()
            .name("kernelbook-inputs".into())
            .spawn(move || work(&shared, &external));
        if spawned.is_err() {
            // Without the thread each lab is prepared when it comes up.
            state.worker = false;
            state.queue.clear();
        }
    }

    /// What was prepared for `plan` measured with `seed`: ready, or waited for while it is
    /// being prepared. `None` where nothing was (or it is still queued: preparing it now is
    /// sooner than waiting for the labs before it).
    pub fn take(&self, plan: &LabPlan, seed: u64) -> Option<Result<LabInputs, EngineError>> {
        let mut state = self.lock();
        loop {
            if let Some(at) = state
                .ready
                .iter()
                .position(|r| r.seed == seed && r.plan == *plan)
            {
                let ready = state.ready.remove(at);
                self.inputs.changed.notify_all();
                return Some(ready.inputs);
            }
            let working = state
                .working
                .as_ref()
                .is_some_and(|(lab, s)| *lab == plan.lab && *s == seed);
            if !working {
                state
                    .queue
                    .retain(|q| !(q.seed == seed && q.plan.lab == plan.lab));
                return None;
            }
            state = self
                .inputs
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.inputs)
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The preparing thread: one lab after another, waiting while [`LOOK_AHEAD`] are ready.
fn work(shared: &Shared, external: &SharedReferences) {
    loop {
        let next = {
            let mut state = lock(shared);
            while state.ready.len() >= LOOK_AHEAD && !state.queue.is_empty() {
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            match state.queue.pop_front() {
                Some(next) => {
                    state.working = Some((next.plan.lab.clone(), next.seed));
                    (next, state.generation)
                }
                None => {
                    state.worker = false;
                    return;
                }
            }
        };
        let (next, generation) = next;
        let used = checks_used(&next.plan, None);
        // The lock is taken for each call to the references, not while built-in ones compute.
        let inputs = LabInputs::prepare(&next.plan, next.seed, &used, &mut Locked(&**external));
        let mut state = lock(shared);
        state.working = None;
        if state.generation == generation {
            state.ready.push(Ready {
                plan: next.plan,
                seed: next.seed,
                inputs,
            });
        }
        shared.changed.notify_all();
    }
}

/// [`ExternalReferences`] through a lock taken for each call: the measuring thread's view of
/// the references it shares with the preparing thread.
#[derive(Debug)]
pub struct Locked<'a, T: ?Sized>(pub &'a Mutex<T>);

impl<T: ExternalReferences + ?Sized> ExternalReferences for Locked<'_, T> {
    fn submit(
        &mut self,
        job: &crate::references::python::ReferenceJob<'_>,
    ) -> Result<crate::references::python::JobId, crate::references::python::PythonReferenceError>
    {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .submit(job)
    }
    fn wait(
        &mut self,
        id: crate::references::python::JobId,
        deadline: std::time::Instant,
    ) -> Result<Vec<u8>, crate::references::python::PythonReferenceError> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .wait(id, deadline)
    }
}
