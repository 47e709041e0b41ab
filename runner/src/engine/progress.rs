//! Progress reports for a terminal or a log, and two simple reporters.

use kernelbook_core::results::{Provenance, VariantResult};

/// Progress reports for a terminal or a log. Every method has a quiet default.
pub trait Progress {
    fn stage(&mut self, _message: &str) {}
    /// Variant `index` of `total` starts.
    fn variant(&mut self, _index: usize, _total: usize, _name: &str) {}
    fn samples(&mut self, _count: usize) {}
    /// The device, compiler and input are known; measuring begins.
    fn begin(&mut self, _provenance: &Provenance) {}
    /// A variant is done (measured, wrong or failed).
    fn finished(&mut self, _result: &VariantResult) {}
}

/// Reports nothing.
#[derive(Debug, Default)]
pub struct Quiet;
impl Progress for Quiet {}

/// Writes one line per stage and variant to stderr: for builds, where a progress bar would
/// garble mdBook's own output.
#[derive(Debug, Default)]
pub struct StageLog;

impl Progress for StageLog {
    fn stage(&mut self, message: &str) {
        eprintln!("kernelbook: {message}");
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        eprintln!("kernelbook:   [{}/{total}] {name}", index + 1);
    }
}
