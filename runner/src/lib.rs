//! The kernelbook runner: compiles the book's kernels at run time, launches them on the local
//! GPU, checks their output against a CPU reference, times them, and keeps the results.
//!
//! - [`backend`]: the [`Device`](backend::Device) and [`Compiler`](backend::Compiler) traits and
//!   the CUDA backend (cudarc, loaded at run time: the build needs no CUDA toolkit);
//! - [`measure`]: the measurement loop, written once against those traits;
//! - [`reference`]: input generation, CPU references and output comparison;
//! - [`exercise`]: grading a learner's kernel against an exercise's starter (`kernelbook check`);
//! - [`process`]: child processes (the measuring child, Python, ncu): spawn, read, time out,
//!   kill the whole group; none outlives the runner;
//! - [`store`]: the cache and the recorded results, with atomic writes;
//! - [`runner`]: [`Runner`], which decides between cache, GPU and recorded results.
//!
//! ```no_run
//! use kernelbook_runner::{Runner, RunnerConfig, Mode, LabOutcome};
//! use kernelbook_runner::measure::{MeasureOptions, Quiet};
//! # let lab: kernelbook_core::spec::LabSpec = unimplemented!();
//! # let kernels = std::collections::BTreeMap::new();
//! let runner = Runner::new(RunnerConfig {
//!     cache_dir: ".kernelbook/cache".into(),
//!     recorded_dir: "labs/recorded".into(),
//!     mode: Mode::Auto,
//!     options: MeasureOptions::default(),
//!     isolation: None,
//!     backend: Default::default(),
//! });
//! match runner.results_for(&lab, &kernels, &mut Quiet) {
//!     LabOutcome::Measured { results, .. } => println!("{} variants measured", results.variants.len()),
//!     LabOutcome::Recorded { why, .. } => println!("recorded results ({why})"),
//!     LabOutcome::Missing { why } => println!("no results: {why}"),
//! }
//! ```

pub mod backend;
pub mod diagnostics;
pub mod exercise;
pub mod isolate;
pub mod measure;
pub mod peers;
pub mod process;
pub mod profile;
pub mod reference;
pub mod runner;
pub mod store;

pub use runner::{KernelProblem, LabOutcome, Mode, RunError, Runner, RunnerConfig};
