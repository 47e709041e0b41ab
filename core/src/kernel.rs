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

/// What a kernel block is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// CUDA C++, compiled at run time with NVRTC (or hiprtc).
    #[default]
    Cuda,
    /// Python (a Triton kernel and its launcher), run by a `python3` with torch and Triton.
    Python,
    /// A NumPy reference (` ```python reference=NAME `): the expected output of a lab's check,
    /// computed by a `python3` with NumPy.
    PythonReference,
}

impl Language {
    /// The extension of its tangled file.
    pub fn extension(self) -> &'static str {
        match self {
            Language::Cuda => "cu",
            Language::Python | Language::PythonReference => "py",
        }
    }
}

/// One kernel block of the book: the exact text the reader sees and the runner compiles (or,
/// for Python, runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSource {
    /// The name from the info string (` ```cuda kernel=NAME `), also the `extern "C"` entry point.
    pub name: String,
    /// The block's text, unchanged.
    pub source: String,
    /// Where the first line of the source (the line after the opening fence) stands.
    pub origin: SourceLocation,
    #[serde(default)]
    pub language: Language,
}

impl KernelSource {
    /// A short, stable fingerprint of the source text: what results and caches are keyed by.
    pub fn source_hash(&self) -> String {
        crate::results::fingerprint(self.source.as_bytes())
    }
}
