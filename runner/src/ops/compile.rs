//! Kernel builds compiled on every core, ahead of need, each once per process.
//!
//! A measuring process hands the pool every build of every lab it is about to measure
//! ([`CompilePool::queue`]) before it measures the first; each lab then takes its images as its
//! variants come up ([`CompilePool::image`]), waiting only for one still compiling. Images are
//! kept for the life of the process (a serve session's child compiles an edited kernel, and
//! nothing else, after a save). Programs compile independently (NVRTC and hiprtc are
//! thread-safe per program).

use crate::backend::{CompileError, CompileRequest, CompiledKernel, Compiler};
use crate::plan::{KernelBuild, LabPlan};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// What is compiled: a kernel's source, its entry point, its options and its target. Two builds
/// with the same identity share one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildJob {
    pub name: String,
    pub source: String,
    pub arch: String,
    pub flags: Vec<String>,
}

impl BuildJob {
    /// Build `index` of `plan`, if it has one.
    pub fn of(plan: &LabPlan, index: usize) -> Option<BuildJob> {
        plan.builds
            .get(index)
            .map(|build| BuildJob::new(build, &plan.target.arch))
    }

    pub fn new(build: &KernelBuild, arch: &str) -> BuildJob {
        BuildJob {
            name: build.source.name.clone(),
            source: build.source.source.clone(),
            arch: arch.to_string(),
            flags: build.flags.clone(),
        }
    }

    /// A digest of everything that decides the image.
    fn identity(&self) -> String {
        let mut hash = Sha256::new();
        for part in [&self.name, &self.source, &self.arch] {
            hash.update(part.len().to_le_bytes());
            hash.update(part.as_bytes());
        }
        for flag in &self.flags {
            hash.update(flag.len().to_le_bytes());
            hash.update(flag.as_bytes());
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

type Image = Result<CompiledKernel, CompileError>;

#[derive(Debug)]
enum Slot {
    /// Waiting in the queue, or being compiled.
    Pending,
    Ready(Image),
}

#[derive(Default)]
struct State {
    queue: VecDeque<(String, BuildJob)>,
    slots: HashMap<String, Slot>,
    workers: usize,
}

struct Shared {
    compiler: Arc<dyn Compiler>,
    threads: usize,
    state: Mutex<State>,
    /// Signalled whenever an image becomes ready.
    ready: Condvar,
}

/// See the module documentation. Cloning shares the pool.
#[derive(Clone)]
pub struct CompilePool {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CompilePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompilePool")
            .field("threads", &self.shared.threads)
            .finish_non_exhaustive()
    }
}

impl CompilePool {
    /// A pool compiling with `compiler` on as many threads as there are cores.
    pub fn new(compiler: Arc<dyn Compiler>) -> CompilePool {
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        CompilePool::with_threads(compiler, threads)
    }

    pub fn with_threads(compiler: Arc<dyn Compiler>, threads: usize) -> CompilePool {
        CompilePool {
            shared: Arc::new(Shared {
                compiler,
                threads: threads.max(1),
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
            }),
        }
    }

    /// The compiler's version, for provenance.
    pub fn compiler(&self) -> &dyn Compiler {
        self.shared.compiler.as_ref()
    }

    /// Queues `jobs` (those not already compiled or queued), in order, and starts workers for
    /// them; returns at once.
    pub fn queue(&self, jobs: impl IntoIterator<Item = BuildJob>) {
        let mut state = self.lock();
        for job in jobs {
            let id = job.identity();
            if !state.slots.contains_key(&id) {
                state.slots.insert(id.clone(), Slot::Pending);
                state.queue.push_back((id, job));
            }
        }
        let wanted = self.shared.threads.min(state.queue.len() + state.workers);
        while state.workers < wanted {
            state.workers += 1;
            let pool = self.clone();
            let spawned = std::thread::Builder::new()
                .name("kernelbook-compile".into())
                .spawn(move || pool.work());
            if spawned.is_err() {
                // No thread: `image` compiles what is left on the caller's thread.
                state.workers -= 1;
                break;
            }
        }
    }

    /// Every job of `plan`'s builds `indices`, for [`queue`](Self::queue).
    pub fn jobs_of(plan: &LabPlan, indices: &[usize]) -> Vec<BuildJob> {
        indices
            .iter()
            .filter_map(|&index| BuildJob::of(plan, index))
            .collect()
    }

    /// The image of `job`: compiled already, waited for if compiling, compiled now on this
    /// thread if nobody queued it (or it is still waiting in the queue).
    pub fn image(&self, job: &BuildJob) -> Image {
        let id = job.identity();
        let mut state = self.lock();
        loop {
            match state.slots.get(&id) {
                Some(Slot::Ready(image)) => return image.clone(),
                Some(Slot::Pending) => {
                    if let Some(at) = state.queue.iter().position(|(queued, _)| *queued == id) {
                        // Still queued: compiling it here is sooner than waiting for a worker.
                        state.queue.remove(at);
                        drop(state);
                        return self.compile_and_keep(id, job);
                    }
                    state = self
                        .shared
                        .ready
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                None => {
                    state.slots.insert(id.clone(), Slot::Pending);
                    drop(state);
                    return self.compile_and_keep(id, job);
                }
            }
        }
    }

    fn work(&self) {
        loop {
            let next = {
                let mut state = self.lock();
                match state.queue.pop_front() {
                    Some(next) => next,
                    None => {
                        state.workers -= 1;
                        return;
                    }
                }
            };
            let (id, job) = next;
            // The image is kept in its slot for whoever asks.
            let _image = self.compile_and_keep(id, &job);
        }
    }

    fn compile_and_keep(&self, id: String, job: &BuildJob) -> Image {
        let image = compile(self.shared.compiler.as_ref(), job);
        self.lock().slots.insert(id, Slot::Ready(image.clone()));
        self.shared.ready.notify_all();
        image
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Compiles `job`; a compiler that panics fails its kernel's variants, not the lab.
fn compile(compiler: &dyn Compiler, job: &BuildJob) -> Image {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        compiler.compile(&CompileRequest {
            name: &job.name,
            source: &job.source,
            arch: &job.arch,
            flags: &job.flags,
        })
    }))
    .unwrap_or_else(|_| Err(CompileError::Compiler("the compiler panicked".into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts compilations; fails a source that says `#error`.
    struct Counting(AtomicUsize);

    impl Compiler for Counting {
        fn version(&self) -> String {
            "counting".into()
        }
        fn compile(&self, request: &CompileRequest<'_>) -> Result<CompiledKernel, CompileError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            if request.source.contains("#error") {
                return Err(CompileError::Rejected {
                    log: "error".into(),
                    options: Vec::new(),
                });
            }
            Ok(CompiledKernel {
                name: request.name.to_string(),
                image: request.source.as_bytes().to_vec(),
                log: String::new(),
                options: request.flags.to_vec(),
            })
        }
    }

    fn job(name: &str, source: &str, flags: &[&str]) -> BuildJob {
        BuildJob {
            name: name.into(),
            source: source.into(),
            arch: "sm_90".into(),
            flags: flags.iter().map(|f| f.to_string()).collect(),
        }
    }

    /// A build queued by several labs, and asked for again later, compiles once; another
    /// option set is another build.
    #[test]
    fn each_build_compiles_once_per_process() {
        let compiler = Arc::new(Counting(AtomicUsize::new(0)));
        let pool = CompilePool::with_threads(compiler.clone(), 4);
        let a = job("a", "kernel a", &["-DX=1"]);
        let a2 = job("a", "kernel a", &["-DX=2"]);
        let b = job("b", "kernel b", &[]);
        pool.queue([a.clone(), b.clone(), a.clone()]);
        pool.queue([a.clone(), a2.clone()]);
        assert_eq!(pool.image(&a).expect("a").image, b"kernel a");
        assert_eq!(pool.image(&a2).expect("a2").options, ["-DX=2"]);
        assert_eq!(pool.image(&b).expect("b").name, "b");
        assert_eq!(pool.image(&a).expect("a again").name, "a");
        assert_eq!(compiler.0.load(Ordering::SeqCst), 3);
    }

    /// A build nobody queued is compiled on the asking thread; a failure is kept like an image.
    #[test]
    fn unqueued_builds_compile_on_demand_and_failures_are_kept() {
        let compiler = Arc::new(Counting(AtomicUsize::new(0)));
        let pool = CompilePool::with_threads(compiler.clone(), 2);
        let bad = job("bad", "#error no", &[]);
        assert!(matches!(
            pool.image(&bad),
            Err(CompileError::Rejected { .. })
        ));
        assert!(matches!(
            pool.image(&bad),
            Err(CompileError::Rejected { .. })
        ));
        assert_eq!(compiler.0.load(Ordering::SeqCst), 1);
    }
}
