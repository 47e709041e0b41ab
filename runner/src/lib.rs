//! The kernelbook runner: compiles a lab into a plan, runs it on the local GPU (kernels
//! compiled at run time, checked against a CPU reference, timed), and keeps the results.
//!
//! In data-flow order (see ARCHITECTURE.md at the repository root):
//!
//! - [`plan`]: a lab file and the device's limits → a [`LabPlan`](plan::LabPlan), every number
//!   evaluated; its hash is the cache key;
//! - [`references`]: the CPU references, one per file behind a trait, and input generation;
//! - [`backend`]: the [`Device`](backend::Device) and [`Compiler`](backend::Compiler) traits,
//!   CUDA (cudarc, loaded at run time: the build needs no CUDA toolkit) and HIP;
//! - [`ops`]: one kind of variant each (kernel, device copy, host copy, library, Python);
//! - [`engine`]: runs one plan on one device;
//! - [`supervisor`]: which process measures what, and when (the measuring child, the Python
//!   process, Nsight Compute), over [`protocol`];
//! - [`process`]: child processes (the measuring child, Python, ncu): spawn, read, time out,
//!   kill the whole group; none outlives the runner;
//! - [`store`]: the cache, the counters cache and the recorded results, with atomic writes;
//! - [`counters`]: Nsight Compute's counters as a second layer, after a lab's numbers, cached
//!   by kernel;
//! - [`exercise`]: grading a learner's kernel (`kernelbook check`);
//! - [`runner`]: [`Runner`], the facade that decides between cache, GPU and recorded results.
//!
//! ```no_run
//! use kernelbook_runner::{LabOutcome, LabRequest, Mode, Runner, RunnerConfig};
//! use kernelbook_runner::engine::Quiet;
//! # let lab: kernelbook_core::spec::LabSpec = unimplemented!();
//! # let kernels = std::collections::BTreeMap::new();
//! let runner = Runner::new(RunnerConfig {
//!     cache_dir: ".kernelbook/cache".into(),
//!     recorded_dir: "labs/recorded/nvidia-h200-882b8b4e".into(),
//!     mode: Mode::Auto,
//!     measurement: Default::default(),
//!     isolation: None,
//!     backend: Default::default(),
//! });
//! let request = LabRequest { lab: &lab, kernels: &kernels };
//! for outcome in runner.results(&[request], &mut Quiet) {
//!     match outcome {
//!         LabOutcome::Measured { results, .. } => println!("{} variants measured", results.variants.len()),
//!         LabOutcome::Recorded { why, .. } => println!("recorded results ({why})"),
//!         LabOutcome::Missing { why } => println!("no results: {why}"),
//!     }
//! }
//! ```

pub mod backend;
pub mod counters;
pub mod diagnostics;
pub mod engine;
pub mod exercise;
#[cfg(any(test, feature = "testing"))]
pub mod fake_ncu;
pub mod ops;
pub mod peers;
pub mod plan;
pub mod process;
pub mod profile;
pub mod protocol;
pub mod references;
pub mod runner;
pub mod sanitizer;
pub mod store;
pub mod supervisor;

pub use counters::CountersPolicy;
pub use runner::{
    CheckedExercise, KernelProblem, LabOutcome, LabRequest, Lookup, Mode, Runner, RunnerConfig,
    SanitizedVariant, Unmeasured,
};

/// Runs the stand-in ncu if `args` ask for it and this is a test build
/// ([`fake_ncu`]); `None` otherwise.
pub fn fake_ncu_main(args: &[std::ffi::OsString]) -> Option<std::process::ExitCode> {
    #[cfg(any(test, feature = "testing"))]
    if args.get(1).is_some_and(|a| a == fake_ncu::FAKE_NCU_ARG) {
        return Some(fake_ncu::main(&args[2..]));
    }
    let _ = args;
    None
}
pub use supervisor::RunError;
