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
    /// A step of the work has ended ("inputs uploaded", "checked"): for timelines
    /// ([`Traced`]), never shown on a terminal.
    fn mark(&mut self, _step: &str) {}
}

/// Another reporter, plus a timeline of every report with its time since the start, one JSON
/// line each, in the file `KERNELBOOK_TRACE` names (`scripts/bench` reads it to say where a
/// build's time went). Without the variable it is only the reporter inside.
#[derive(Debug)]
pub struct Traced<P> {
    inner: P,
    file: Option<std::io::BufWriter<std::fs::File>>,
    started: std::time::Instant,
}

/// The variable that names the timeline's file.
pub const TRACE_ENV: &str = "KERNELBOOK_TRACE";

impl<P: Progress> Traced<P> {
    /// `inner`, traced into the file `KERNELBOOK_TRACE` names (appended to), if it names one
    /// that can be opened.
    pub fn from_env(inner: P) -> Self {
        let file = std::env::var_os(TRACE_ENV).and_then(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()
                .map(std::io::BufWriter::new)
        });
        // One clock for every timeline of the process: a build traces its numbers and its
        // counters through two of them, and their times must add up.
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        Traced {
            inner,
            file,
            started: *START.get_or_init(std::time::Instant::now),
        }
    }

    fn write(&mut self, kind: &str, what: &str) {
        use std::io::Write;
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let line = serde_json::json!({
            "t": self.started.elapsed().as_secs_f64(),
            "kind": kind,
            "what": what,
        });
        // A timeline that cannot be written is no reason to stop measuring.
        let _ = writeln!(file, "{line}");
        let _ = file.flush();
    }
}

impl<P: Progress> Progress for Traced<P> {
    fn stage(&mut self, message: &str) {
        self.write("stage", message);
        self.inner.stage(message);
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        self.write("variant", name);
        self.inner.variant(index, total, name);
    }
    fn samples(&mut self, count: usize) {
        self.inner.samples(count);
    }
    fn begin(&mut self, provenance: &Provenance) {
        self.write("begin", &provenance.device.name);
        self.inner.begin(provenance);
    }
    fn finished(&mut self, result: &VariantResult) {
        self.write("finished", &result.name);
        self.inner.finished(result);
    }
    fn mark(&mut self, step: &str) {
        self.write("mark", step);
        self.inner.mark(step);
    }
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
