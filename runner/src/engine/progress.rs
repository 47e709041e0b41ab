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
/// garble mdBook's own output. Best-effort: a closed or full stderr must not stop a build.
#[derive(Debug, Default)]
pub struct StageLog;

impl Progress for StageLog {
    fn stage(&mut self, message: &str) {
        notice(&format!("kernelbook: {message}"));
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        notice(&format!("kernelbook:   [{}/{total}] {name}", index + 1));
    }
}

/// Writes `line` to stderr, control characters escaped (lab titles and variant names come from
/// lab files); if stderr is closed or full, nothing: these are notices, and the build goes on.
pub fn notice(line: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}",
        kernelbook_core::terminal::safe(line)
    );
}
