//! The vocabulary every kernelbook crate shares, with no GPU code and no I/O beyond reading a
//! lab file.
//!
//! - [`access`]: what memory sees of one warp instruction (sectors, lines, banks, wavefronts),
//!   the model behind the book's diagrams;
//! - [`kernel`]: a CUDA kernel as the book defines it (name, source, markdown location);
//! - [`spec`]: a lab definition (`labs/*.toml`): buffers, launch shapes, bytes moved, the check;
//! - [`expr`]: the small integer expressions lab files use for sizes (`n * n`, `n / 32`);
//! - [`results`]: what a measurement produced, with provenance and raw samples (the results file);
//! - [`stats`]: sample summaries and the stopping rule;
//! - [`bandwidth`]: effective bandwidth, % of ceiling and % of theoretical peak;
//! - [`builtins`]: the table of operations the runner provides itself (copies, library peers);
//! - [`peaks`]: theoretical on-chip rates (shared memory, register operands, FP32) from the
//!   device's SM count and clock and cited per-architecture constants;
//! - [`textfile`]: a user's text source read safely (regular files only, a cap on the size);
//! - [`terminal`]: text from lab files and results made safe to print (control characters escaped).
//!
//! ```
//! use kernelbook_core::spec::{BytesMoved, LabSpec};
//! let lab = LabSpec::parse(
//!     r#"
//!     name = "copy"
//!     title = "Copy"
//!     bytes = "2 * n * 4"
//!     [params]
//!     n = 1024
//!     [[buffers]]
//!     name = "src"
//!     len = "n"
//!     fill = "random"
//!     [[buffers]]
//!     name = "dst"
//!     len = "n"
//!     fill = "poison"
//!     [check]
//!     reference = "copy"
//!     input = "src"
//!     output = "dst"
//!     [[variants]]
//!     name = "memcpy"
//!     builtin = "memcpy"
//!     args = ["dst", "src"]
//!     "#,
//!     "labs/copy.toml".as_ref(),
//! )
//! .expect("a valid lab");
//! let Some(BytesMoved::Expr(bytes)) = lab.bytes_for(&lab.variants[0]) else {
//!     panic!("the lab's bytes");
//! };
//! assert_eq!(bytes.eval(&lab.params), Ok(8192));
//! ```

pub mod access;
pub mod bandwidth;
pub mod builtins;
pub mod exercise;
pub mod expr;
pub mod kernel;
pub mod peaks;
pub mod results;
pub mod spec;
pub mod stats;
pub mod terminal;
pub mod textfile;

pub use kernel::{KernelSource, Language, SourceLocation};

/// Turns a byte offset into a 1-based line number.
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::line_of_offset;

    #[test]
    fn line_numbers_are_one_based_and_clamp_past_the_end() {
        let text = "a\nbc\n\nd";
        assert_eq!(line_of_offset(text, 0), 1);
        assert_eq!(line_of_offset(text, 2), 2);
        assert_eq!(line_of_offset(text, 5), 3);
        assert_eq!(line_of_offset(text, 6), 4);
        assert_eq!(line_of_offset(text, 999), 4);
    }
}
