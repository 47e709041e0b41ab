//! A kernel as the book defines it.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// Where something was written: a file (relative to the book's source folder where it came from
/// a chapter) and a 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceLocation {
    pub file: PathBuf,
    pub line: usize,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One CUDA kernel block of the book: the exact text the reader sees and the runner compiles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSource {
    /// The name from the info string (` ```cuda kernel=NAME `), also the `extern "C"` entry point.
    pub name: String,
    /// The block's text, unchanged.
    pub source: String,
    /// Where the first line of the source (the line after the opening fence) stands.
    pub origin: SourceLocation,
}

impl KernelSource {
    /// A short, stable fingerprint of the source text: what results and caches are keyed by.
    pub fn source_hash(&self) -> String {
        crate::results::fingerprint(self.source.as_bytes())
    }
}
