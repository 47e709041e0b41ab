//! kernelbook's mdBook preprocessor.
//!
//! It finds the CUDA kernel blocks (` ```cuda kernel=NAME `), lab directives
//! (`{{#lab NAME}}`) and diagram directives (`{{#warp-access ...}}`, `{{#banks ...}}`) of a book
//! ([`scan`]), asks the runner for each lab's results, and renders them into the chapter through
//! handlebars templates ([`render`], [`chart`], [`diagram`]). The same preprocessor runs
//! in-process under `kernelbook build` and as the `mdbook-kernelbook` binary under a stock
//! `mdbook build`.
//!
//! ```
//! use mdbook_kernelbook::scan::scan_chapter;
//! let chapter = "```cuda kernel=copy\nextern \"C\" __global__ void copy() {}\n```\n\n{{#lab copy}}\n";
//! let scan = scan_chapter(chapter, "copy.md".as_ref()).expect("well-formed");
//! assert_eq!(scan.kernels[0].kernel.name, "copy");
//! assert_eq!(scan.directives[0].lab, "copy");
//! ```

pub mod book;
pub mod chart;
pub mod config;
pub mod diagram;
pub mod figures;
pub mod format;
pub mod gpus;
pub mod include;
pub mod labs;
pub mod markdown;
pub mod preprocessor;
pub mod recorded;
pub mod render;
pub mod scan;
pub mod tangle;
pub mod templates;

pub use preprocessor::{KernelbookPreprocessor, NAME};
