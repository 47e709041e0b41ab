//! NVIDIA's compute-sanitizer, for a kernel that failed its check or faulted: which of its
//! tools to run, its command line, its output read into findings, and each finding said at
//! the reader's line of the chapter, in a sentence a learner can act on.
//!
//! In data-flow order:
//!
//! - [`tools_for`] (`order.rs`): the tools to try for a [`Symptom`] (a fault, a hang, a wrong
//!   output and its [`OutputPattern`]), most likely first;
//! - [`find_sanitizer`], [`command`] and [`run`] (`tool.rs`): the tool found like `ncu`
//!   (`$KERNELBOOK_SANITIZER`, `PATH`, the toolkit), one [`Check`]'s command line, the run
//!   under a time limit in a process group of its own, its `--log-file` read and classified
//!   ([`SanitizerError`]: missing, refused by the machine, timed out, failed);
//! - [`parse`] (`parse.rs`): the text → a [`Report`] of [`Finding`]s (`finding.rs`);
//! - [`Sources`] and [`spot`] (`locate.rs`): a site's `NAME.cu:N` → the chapter's line, an
//!   address → an element of one of the lab's [`DeviceBuffer`]s;
//! - [`diagnose`] (`explain.rs`): findings of one kind at one line → one [`Diagnosis`];
//! - [`analyse`] (`output.rs`): what a wrong output shows by itself, for when no tool finds
//!   anything;
//! - [`sanitize`] (`verdict.rs`): a session, tool after tool, into a [`Verdict`].
//!
//! Everything but [`run`] is pure and tested on fixtures (`runner/tests/fixtures/sanitizer/`:
//! hand-made ones in the documented format, and the probes whose captured runs replace them).
//! Nothing here knows how the program under the tool runs a variant: the caller gives the
//! child's command line, its input, the kernels' sources and the buffers' device addresses.
//!
//! ```
//! use kernelbook_core::{KernelSource, SourceLocation, spec::ElemType};
//! use kernelbook_runner::sanitizer::{self, Context, DeviceBuffer, Launch, Sources, Tool};
//!
//! let log = "\
//! ========= Invalid __global__ write of size 4 bytes
//! =========     at shift+0x90 in shift.cu:4
//! =========     by thread (255,0,0) in block (3,0,0)
//! =========     Access to 0x7f0000001000 is out of bounds
//! ========= ERROR SUMMARY: 1 error
//! ";
//! let kernels = [KernelSource {
//!     name: "shift".into(),
//!     source: "extern \"C\" __global__ void shift(const float* in, float* out, int n) {\n\
//!              int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
//!              if (i < n)\n\
//!                  out[i + 1] = in[i];\n}\n".into(),
//!     origin: SourceLocation { file: "book/src/exercises/shift.md".into(), line: 20 },
//!     language: Default::default(),
//! }];
//! let buffers = [DeviceBuffer {
//!     name: "out".into(),
//!     elem: ElemType::F32,
//!     address: 0x7f00_0000_0000,
//!     bytes: 4096,
//! }];
//! let context = Context {
//!     sources: Sources { kernels: &kernels },
//!     buffers: &buffers,
//!     launch: Some(Launch { grid: [4, 1, 1], block: [256, 1, 1] }),
//! };
//! let found = sanitizer::diagnose(Tool::Memcheck, &sanitizer::parse(log), &context);
//! assert_eq!(found[0].at.as_ref().map(|p| p.at.to_string()).as_deref(),
//!            Some("book/src/exercises/shift.md:23"));
//! assert_eq!(found[0].sentence,
//!            "thread 255 of block 3 writes `out[1024]`, one element past the end of `out` \
//!             (1024 floats): the bounds test lets the last thread through");
//! ```

mod explain;
mod finding;
mod locate;
mod order;
mod output;
mod parse;
#[cfg(test)]
mod tests;
mod tool;
mod verdict;

pub use explain::*;
pub use finding::*;
pub use locate::*;
pub use order::*;
pub use output::*;
pub use parse::*;
pub use tool::*;
pub use verdict::*;
