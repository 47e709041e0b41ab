//! Peers measured outside the [`Device`](crate::backend::Device) trait, in the Python worker
//! (`worker.py`): PyTorch's own transpose and sum, and a Python block of the book (a Triton
//! kernel). The worker prepares a job, checks its output against a CPU reference, and returns
//! the samples it is asked for, each timed with CUDA events after the same L2 flush as the
//! course's kernels; the runner applies the [`StoppingRule`] and asks for more until it says stop.
//!
//! `import torch` alone takes seconds, so one Python process serves every request of a build:
//! [`PythonPeers::start`] launches it early, it imports while the course's own kernels are
//! measured, and then answers one JSON request per line (the protocol is at the top of
//! `worker.py`). It touches the GPU only while it answers a request, and the runner sends one
//! only when no lab is measuring.

use crate::process::{self, ChildProcess, Incoming, Spawn};
use kernelbook_core::KernelSource;
use kernelbook_core::results::Mismatch;
use kernelbook_core::stats::{StopReason, StoppingRule};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// What a peer run gave.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerRun {
    Measured {
        samples_ms: Vec<f64>,
        /// e.g. "torch 2.11.0".
        implementation: String,
        /// Why the runner's stopping rule stopped asking for samples.
        stop_reason: StopReason,
    },
    /// Its output differed from the CPU reference.
    Wrong {
        implementation: String,
        mismatch: Option<Mismatch>,
    },
    /// Not installed here (no python3, no torch, no GPU for torch), and why.
    Unavailable(String),
    Failed(String),
}

/// The worker's source: replies go to a private copy of stdout; the blocks' own prints (and
/// Triton's) go to stderr, so they cannot break the protocol.
const WORKER: &str = include_str!("worker.py");

/// What the worker is to time: one of the jobs of `worker.py`'s `JOBS` table, by its builtin's
/// name, told its parameters (a transpose's `rows` and `cols`, a sum's `n`, `rtol` and `atol`)
/// and, for a Python block of the book, the block.
#[derive(Debug, Clone, Copy)]
pub struct PeerJob<'a> {
    pub name: &'a str,
    pub params: &'a BTreeMap<String, f64>,
    pub block: Option<&'a KernelSource>,
}

/// One measurement asked of the worker.
#[derive(Debug, Clone, Copy)]
pub struct PeerRequest<'a> {
    pub job: PeerJob<'a>,
    pub rule: &'a StoppingRule,
    pub flush_bytes: u64,
    pub warmup_runs: usize,
}

#[derive(Serialize)]
struct WireJob<'a> {
    op: &'a str,
    #[serde(flatten)]
    params: &'a BTreeMap<String, f64>,
    block: Option<&'a Path>,
}

/// A line to the worker (see `worker.py`).
#[derive(Serialize)]
#[serde(untagged)]
enum Wire<'a> {
    Start {
        job: WireJob<'a>,
        flush_bytes: u64,
        warmup: usize,
        take: usize,
    },
    More {
        more: usize,
    },
    Release {
        release: bool,
    },
}

/// The first line the worker writes.
#[derive(Deserialize)]
struct Hello {
    #[serde(default)]
    ready: Option<String>,
    #[serde(default)]
    unavailable: Option<String>,
}

#[derive(Deserialize)]
struct TorchReport {
    #[serde(default)]
    unavailable: Option<String>,
    #[serde(default)]
    ok: bool,
    #[serde(default)]
    mismatch: Option<Mismatch>,
    #[serde(default)]
    samples_ms: Vec<f64>,
    #[serde(default)]
    version: String,
    /// The block raised: the last frames of its traceback.
    #[serde(default)]
    error: Option<String>,
}

/// How long `import torch` (and Triton) may take before the process counts as stuck.
const STARTUP_LIMIT: Duration = Duration::from_secs(180);
/// The last lines of the server's stderr kept for error messages.
const STDERR_LINES: usize = 20;

/// The build's Python worker, started on first use (or early, by [`start`](Self::start)) and
/// restarted after it dies or is stopped for overrunning.
pub struct PythonPeers {
    python: String,
    /// The GPU PyTorch and Triton are to use (a UUID for `CUDA_VISIBLE_DEVICES`), where the
    /// lab is measured on another than the first.
    gpu: Option<String>,
    server: Mutex<Option<Server>>,
}

impl Default for PythonPeers {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for PythonPeers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PythonPeers")
            .field("python", &self.python)
            .finish_non_exhaustive()
    }
}

impl PythonPeers {
    /// Peers run by the project's interpreter ([`process::python_interpreter`]).
    pub fn new() -> Self {
        Self::with_python(&process::python_interpreter())
    }

    /// Peers run by another interpreter (tests use a missing one).
    pub fn with_python(python: &str) -> Self {
        PythonPeers {
            python: python.to_string(),
            gpu: None,
            server: Mutex::new(None),
        }
    }

    /// Peers that see only the NVIDIA GPU with this UUID (as `CUDA_VISIBLE_DEVICES`), so that
    /// PyTorch's rows are measured on the GPU the lab's other rows were.
    pub fn on_gpu(mut self, uuid: &str) -> Self {
        self.gpu = Some(uuid.to_string());
        self
    }

    /// Starts the Python process now, if it is not running, so that its imports overlap other
    /// work. Quietly does nothing when it cannot start: the first request says why.
    pub fn start(&self) {
        if let Ok(mut server) = self.server.lock()
            && server.is_none()
        {
            *server = Server::spawn(&self.python, self.gpu.as_deref()).ok();
        }
    }

    /// Times a job (see [`PeerRequest`]) until the request's stopping rule stops. A
    /// measurement that takes longer than `timeout` stops the process; the next request starts
    /// a fresh one.
    pub fn measure(&self, request: &PeerRequest<'_>, timeout: Duration) -> PeerRun {
        let block = request.job.block;
        // The block goes to a file: Triton reads a kernel's source back from its file.
        let file = match block.map(write_block).transpose() {
            Ok(file) => file,
            Err(message) => return PeerRun::Failed(message),
        };
        let job = WireJob {
            op: request.job.name,
            params: request.job.params,
            block: file.as_ref().map(|f| f.path()),
        };
        let run = self.sample(request, job, timeout);
        match (run, block, &file) {
            (PeerRun::Failed(message), Some(block), Some(file)) => PeerRun::Failed(map_traceback(
                &message,
                &file.path().to_string_lossy(),
                block,
            )),
            (run, _, _) => run,
        }
    }

    /// Asks for the rule's first samples, then for more while the rule wants them.
    fn sample(&self, request: &PeerRequest<'_>, job: WireJob<'_>, timeout: Duration) -> PeerRun {
        let began = Instant::now();
        let rule = request.rule;
        let start = Wire::Start {
            job,
            flush_bytes: request.flush_bytes,
            warmup: request.warmup_runs,
            take: rule.min_samples.clamp(1, rule.max_samples.max(1)),
        };
        let (mut samples_ms, implementation) = match self.exchange(&start, timeout) {
            Ok(answer) => answer,
            Err(run) => return run,
        };
        let stop_reason = loop {
            if let Some(reason) = rule.verdict(&samples_ms, began.elapsed().as_secs_f64()) {
                break reason;
            }
            let left = rule.max_samples.saturating_sub(samples_ms.len()).max(1);
            let more = Wire::More {
                more: (samples_ms.len() / 2).clamp(1, left),
            };
            match self.exchange(&more, timeout.saturating_sub(began.elapsed())) {
                Ok((batch, _)) => samples_ms.extend(batch),
                Err(run) => return run,
            }
        };
        // The worker frees the job's memory; its answer says nothing the row needs.
        let _ = self.line(&Wire::Release { release: true }, timeout);
        PeerRun::Measured {
            samples_ms,
            implementation,
            stop_reason,
        }
    }

    /// One request and its samples, or what else the worker answered.
    fn exchange(&self, wire: &Wire<'_>, timeout: Duration) -> Result<(Vec<f64>, String), PeerRun> {
        let (line, tail) = self.line(wire, timeout)?;
        parse_torch_report(&line, &tail)
    }

    /// Sends one line and reads the answer, with the end of the worker's stderr.
    fn line(&self, wire: &Wire<'_>, timeout: Duration) -> Result<(String, String), PeerRun> {
        let Ok(mut guard) = self.server.lock() else {
            return Err(PeerRun::Failed(
                "the Python process's state was poisoned by a panic".into(),
            ));
        };
        if guard.is_none() {
            let server =
                Server::spawn(&self.python, self.gpu.as_deref()).map_err(PeerRun::Unavailable)?;
            *guard = Some(server);
        }
        let Some(server) = guard.as_mut() else {
            return Err(PeerRun::Failed("the Python process did not start".into()));
        };
        let line = serde_json::to_string(wire)
            .map_err(|err| PeerRun::Failed(format!("cannot encode the request: {err}")))?;
        let (answer, keep) = server.ask(&line, timeout);
        if !keep {
            *guard = None;
        }
        answer
    }
}

/// A running Python process and its pipes.
struct Server {
    /// `None` once handed over to end in the background.
    process: Option<ChildProcess>,
    lines: Incoming<String>,
    /// What its first line said: ready (`Ok`) or unavailable and why; `None` until read.
    hello: Option<Result<(), String>>,
}

/// How long the Python process may take to exit at the end of its input before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(10);

impl Server {
    fn spawn(python: &str, gpu: Option<&str>) -> Result<Server, String> {
        let mut command = Command::new(python);
        command.args(["-c", WORKER]);
        if let Some(uuid) = gpu {
            command.env("CUDA_VISIBLE_DEVICES", uuid);
        }
        // Its own process group, so that stopping it also stops Triton's compiler processes.
        let how = Spawn {
            own_group: true,
            stderr_lines: STDERR_LINES,
        };
        let mut process =
            process::spawn(command, how).map_err(|err| format!("no {python} ({err})"))?;
        Ok(Server {
            lines: process.lines(),
            process: Some(process),
            hello: None,
        })
    }

    /// Sends one line and waits for the answer (with the end of stderr). The second value is
    /// whether the process is still fit for the next request.
    fn ask(&mut self, line: &str, timeout: Duration) -> (Result<(String, String), PeerRun>, bool) {
        if self.hello.is_none() {
            match self.next_line(STARTUP_LIMIT.max(timeout)) {
                Ok(line) => {
                    self.hello = Some(match serde_json::from_str::<Hello>(&line) {
                        Ok(Hello { ready: Some(_), .. }) => Ok(()),
                        Ok(Hello {
                            unavailable: Some(why),
                            ..
                        }) => Err(why),
                        _ => Err(format!("the Python process said `{line}` on starting")),
                    })
                }
                Err(failure) => return (Err(PeerRun::Failed(failure)), false),
            }
        }
        if let Some(Err(why)) = &self.hello {
            return (Err(PeerRun::Unavailable(why.clone())), true);
        }
        let sent = self.process.as_mut().map(|p| p.send_line(line));
        if !matches!(sent, Some(Ok(()))) {
            let failure = format!(
                "the Python process stopped reading requests{}",
                self.stderr_tail()
            );
            return (Err(PeerRun::Failed(failure)), false);
        }
        match self.next_line(timeout) {
            Ok(line) => (Ok((line, self.stderr_tail())), true),
            Err(failure) => (Err(PeerRun::Failed(failure)), false),
        }
    }

    /// The next line of the protocol, or why there is none (the process is then stopped).
    fn next_line(&mut self, timeout: Duration) -> Result<String, String> {
        let started = Instant::now();
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => {
                if let Some(process) = self.process.as_mut() {
                    process.kill();
                }
                Err(format!(
                    "stopped after {:.0} s, the lab's time limit (`timeout_s`): the Python peer did not answer",
                    started.elapsed().as_secs_f64()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => {
                if let Some(process) = self.process.as_mut() {
                    let _ = process.wait_timeout(EXIT_GRACE);
                }
                Err(format!("the Python process ended{}", self.stderr_tail()))
            }
        }
    }

    /// `: line / line` from the end of stderr, or nothing.
    fn stderr_tail(&mut self) -> String {
        let tail = self
            .process
            .as_mut()
            .map(|p| p.stderr_tail(2))
            .unwrap_or_default();
        if tail.is_empty() {
            tail
        } else {
            format!(": {tail}")
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Closing its stdin ends the request loop and the process exits by itself; tearing
        // down its CUDA context takes a second, which nobody needs to wait for.
        if let Some(process) = self.process.take() {
            process.end_in_background(EXIT_GRACE);
        }
    }
}

/// The block's source in a temporary `.py` file, removed when dropped.
fn write_block(block: &KernelSource) -> Result<tempfile::NamedTempFile, String> {
    let mut file = tempfile::Builder::new()
        .prefix(&format!("{}-", block.name))
        .suffix(".py")
        .tempfile()
        .map_err(|err| format!("cannot write the block to a file: {err}"))?;
    file.write_all(block.source.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|err| format!("cannot write the block to a file: {err}"))?;
    Ok(file)
}

/// Rewrites `File "TMP", line N` in a traceback to the chapter's file and line.
fn map_traceback(text: &str, temp_path: &str, block: &KernelSource) -> String {
    let needle = format!("File \"{temp_path}\", line ");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        out.push_str(&rest[..at]);
        let after = &rest[at + needle.len()..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse::<usize>() {
            Ok(line) => out.push_str(&format!(
                "{}:{}",
                block.origin.file.display(),
                block.origin.line + line - 1
            )),
            Err(_) => out.push_str(&needle),
        }
        rest = &after[digits.len()..];
    }
    out.push_str(rest);
    out
}

/// Reads a reply line: its samples and the implementation's name, or what else it said;
/// `stderr_tail` (`: …`, or empty) goes into a message about a garbled one.
fn parse_torch_report(line: &str, stderr_tail: &str) -> Result<(Vec<f64>, String), PeerRun> {
    match serde_json::from_str::<TorchReport>(line) {
        Ok(TorchReport {
            unavailable: Some(why),
            ..
        }) => Err(PeerRun::Unavailable(why)),
        Ok(TorchReport {
            error: Some(traceback),
            ..
        }) => Err(PeerRun::Failed(format!(
            "the block raised an exception:\n{}",
            traceback.trim_end()
        ))),
        Ok(report) if !report.ok => Err(PeerRun::Wrong {
            implementation: report.version,
            mismatch: report.mismatch,
        }),
        Ok(report) if report.samples_ms.is_empty() => {
            Err(PeerRun::Failed("torch reported no samples".into()))
        }
        Ok(report) => Ok((report.samples_ms, report.version)),
        Err(_) => Err(PeerRun::Failed(format!(
            "the Python peer answered `{}`{stderr_tail}",
            line.chars().take(200).collect::<String>()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_kind_of_report() {
        assert_eq!(
            parse_torch_report(
                r#"{"unavailable": "python3 has no torch (ModuleNotFoundError)"}"#,
                ""
            ),
            Err(PeerRun::Unavailable(
                "python3 has no torch (ModuleNotFoundError)".into()
            ))
        );
        assert_eq!(
            parse_torch_report(
                r#"{"ok": true, "samples_ms": [0.5, 0.6], "version": "torch 2.11.0"}"#,
                ""
            ),
            Ok((vec![0.5, 0.6], "torch 2.11.0".into()))
        );
        assert_eq!(
            parse_torch_report(
                r#"{"ok": false, "mismatch": {"index": 3, "expected": "0.5", "actual": "0.25", "count": 1}, "version": "torch 2.11.0"}"#,
                ""
            ),
            Err(PeerRun::Wrong {
                implementation: "torch 2.11.0".into(),
                mismatch: Some(Mismatch {
                    index: 3,
                    expected: "0.5".into(),
                    actual: "0.25".into(),
                    count: 1
                })
            })
        );
        assert_eq!(
            parse_torch_report("not json", ": RuntimeError: CUDA out of memory"),
            Err(PeerRun::Failed(
                "the Python peer answered `not json`: RuntimeError: CUDA out of memory".into()
            ))
        );
    }

    static TRANSPOSE: std::sync::LazyLock<BTreeMap<String, f64>> = std::sync::LazyLock::new(|| {
        BTreeMap::from([("rows".to_string(), 64.0), ("cols".to_string(), 32.0)])
    });

    fn request(rule: &StoppingRule) -> PeerRequest<'_> {
        PeerRequest {
            job: PeerJob {
                name: "torch_transpose",
                params: &TRANSPOSE,
                block: None,
            },
            rule,
            flush_bytes: 1 << 20,
            warmup_runs: 1,
        }
    }

    /// A rule the first answer satisfies: two samples, any spread.
    fn lenient() -> StoppingRule {
        StoppingRule {
            min_samples: 2,
            min_gpu_ms: 0.0,
            target_rel_error: 10.0,
            ..StoppingRule::default()
        }
    }

    #[test]
    fn the_real_server_reports_rather_than_fails() {
        // This machine's python3 may or may not have torch (and a GPU); either way the answer
        // is a report, twice from the same process.
        let peers = PythonPeers::new();
        peers.start();
        let rule = StoppingRule::default();
        for _ in 0..2 {
            match peers.measure(&request(&rule), Duration::from_secs(120)) {
                PeerRun::Failed(why) => panic!("the server itself failed: {why}"),
                other => eprintln!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_missing_interpreter_is_unavailable() {
        let peers = PythonPeers::with_python("/nonexistent/python3");
        let rule = StoppingRule::default();
        match peers.measure(&request(&rule), Duration::from_secs(5)) {
            PeerRun::Unavailable(why) => {
                assert!(why.starts_with("no /nonexistent/python3"), "{why}")
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
    }

    /// A stand-in interpreter: a shell script that ignores `-c WORKER`, counts its starts in
    /// `starts`, then runs `body`.
    #[cfg(unix)]
    fn fake_python(dir: &Path, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("python3");
        let starts = dir.join("starts");
        let script = format!(
            "#!/bin/sh\necho started >> '{}'\n{body}\n",
            starts.display()
        );
        std::fs::write(&path, script).expect("write the fake");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path.to_string_lossy().into_owned()
    }

    #[cfg(unix)]
    fn starts(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("starts"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    #[cfg(unix)]
    const READY: &str = r#"echo '{"ready": "torch 9.9"}'"#;

    #[cfg(unix)]
    #[test]
    fn one_process_answers_every_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let answer = r#"{"ok": true, "samples_ms": [0.5, 0.25], "version": "torch 9.9"}"#;
        let python = fake_python(
            dir.path(),
            &format!("{READY}\nwhile read line; do echo '{answer}'; done"),
        );
        let peers = PythonPeers::with_python(&python);
        peers.start();
        let rule = lenient();
        for _ in 0..3 {
            assert_eq!(
                peers.measure(&request(&rule), Duration::from_secs(10)),
                PeerRun::Measured {
                    samples_ms: vec![0.5, 0.25],
                    implementation: "torch 9.9".into(),
                    stop_reason: StopReason::Converged,
                }
            );
        }
        assert_eq!(starts(dir.path()), 1);
    }

    #[cfg(unix)]
    #[test]
    fn an_unavailable_answer_on_starting_holds_for_every_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let python = fake_python(
            dir.path(),
            r#"echo '{"unavailable": "python3 has no torch (ModuleNotFoundError)"}'
cat > /dev/null"#,
        );
        let peers = PythonPeers::with_python(&python);
        let rule = StoppingRule::default();
        for _ in 0..2 {
            assert_eq!(
                peers.measure(&request(&rule), Duration::from_secs(10)),
                PeerRun::Unavailable("python3 has no torch (ModuleNotFoundError)".into())
            );
        }
        assert_eq!(starts(dir.path()), 1, "not started again to hear the same");
    }

    #[cfg(unix)]
    #[test]
    fn a_request_past_the_limit_stops_the_process_and_the_next_starts_a_fresh_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let python = fake_python(
            dir.path(),
            &format!("{READY}\nwhile read line; do sleep 30; done"),
        );
        let peers = PythonPeers::with_python(&python);
        let rule = StoppingRule::default();
        let started = Instant::now();
        match peers.measure(&request(&rule), Duration::from_millis(300)) {
            PeerRun::Failed(why) => assert!(why.contains("did not answer"), "{why}"),
            other => panic!("expected a failure, got {other:?}"),
        }
        let _ = peers.measure(&request(&rule), Duration::from_millis(300));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not waited out"
        );
        assert_eq!(starts(dir.path()), 2);
    }

    #[cfg(unix)]
    #[test]
    fn a_process_that_dies_is_reported_with_its_last_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let python = fake_python(
            dir.path(),
            &format!("{READY}\nread line\necho 'RuntimeError: boom' >&2\nexit 3"),
        );
        let peers = PythonPeers::with_python(&python);
        let rule = StoppingRule::default();
        assert_eq!(
            peers.measure(&request(&rule), Duration::from_secs(10)),
            PeerRun::Failed("the Python process ended: RuntimeError: boom".into())
        );
    }

    #[test]
    fn a_traceback_from_a_block_points_at_the_chapter() {
        let block = KernelSource {
            name: "triton_transpose".into(),
            source: "import torch\n".into(),
            origin: kernelbook_core::SourceLocation {
                file: "exercises/stretch-triton.md".into(),
                line: 28,
            },
            language: kernelbook_core::Language::Python,
        };
        let text = "Traceback (most recent call last):\n  File \"/tmp/t-1.py\", line 5, in transpose\nValueError: bad";
        assert_eq!(
            map_traceback(text, "/tmp/t-1.py", &block),
            "Traceback (most recent call last):\n  exercises/stretch-triton.md:32, in transpose\nValueError: bad"
        );
        assert_eq!(
            parse_torch_report(r#"{"error": "ValueError: bad\n"}"#, ""),
            Err(PeerRun::Failed(
                "the block raised an exception:\nValueError: bad".into()
            ))
        );
    }

    /// The worker returns samples; the runner's rule decides how many: five first (its
    /// `min_samples`), then more in batches until `max_samples`, then the job is released. The
    /// job is a stand-in peer's, which only the stand-in worker knows: the protocol carries any
    /// job of the table by name.
    #[cfg(unix)]
    #[test]
    fn the_runner_applies_the_stopping_rule_to_the_workers_samples() {
        let dir = tempfile::tempdir().expect("tempdir");
        let heard = dir.path().join("heard");
        // One sample per sample asked for, spread so that the mean never settles.
        let body = format!(
            r#"{READY}
while read line; do
  echo "$line" >> '{}'
  case "$line" in
    *'"take":5'*) echo '{{"ok": true, "samples_ms": [1, 3, 1, 3, 1], "version": "torch 9.9"}}' ;;
    *'"more":2'*) echo '{{"ok": true, "samples_ms": [3, 1]}}' ;;
    *release*) echo '{{"released": true}}' ;;
    *) echo '{{"error": "unexpected"}}' ;;
  esac
done"#,
            heard.display()
        );
        let python = fake_python(dir.path(), &body);
        let peers = PythonPeers::with_python(&python);
        let rule = StoppingRule {
            min_samples: 5,
            max_samples: 7,
            min_gpu_ms: 0.0,
            target_rel_error: 1e-9,
            ..StoppingRule::default()
        };
        // A stand-in peer: a job no real worker knows, answered by the stand-in worker.
        let params = BTreeMap::from([("n".to_string(), 1024.0)]);
        let sum = PeerRequest {
            job: PeerJob {
                name: "stand_in_peer",
                params: &params,
                block: None,
            },
            ..request(&rule)
        };
        assert_eq!(
            peers.measure(&sum, Duration::from_secs(10)),
            PeerRun::Measured {
                samples_ms: vec![1.0, 3.0, 1.0, 3.0, 1.0, 3.0, 1.0],
                implementation: "torch 9.9".into(),
                stop_reason: StopReason::MaxSamples,
            }
        );
        let heard = std::fs::read_to_string(heard).expect("what the worker heard");
        let lines: Vec<&str> = heard.lines().collect();
        assert_eq!(lines.len(), 3, "{heard}");
        assert!(
            lines[0].contains(r#""job":{"op":"stand_in_peer","n":1024.0,"block":null}"#),
            "{heard}"
        );
        assert_eq!(lines[1..], [r#"{"more":2}"#, r#"{"release":true}"#]);
    }

    /// The real worker's source parses as Python and names every job the runner sends.
    #[test]
    fn the_worker_knows_every_job() {
        use kernelbook_core::spec::Builtin;
        for builtin in Builtin::ALL.into_iter().filter(|b| b.runs_in_python()) {
            let entry = format!("\"{}\": ", builtin.name());
            assert!(WORKER.contains(&entry), "worker.py's JOBS has no {entry}");
        }
        let python = process::python_interpreter();
        let checked = Command::new(&python)
            .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                if let Some(mut stdin) = child.stdin.take() {
                    stdin.write_all(WORKER.as_bytes())?;
                }
                child.wait()
            });
        match checked {
            Ok(status) => assert!(status.success(), "worker.py does not parse"),
            Err(err) => eprintln!("no {python} here ({err}): not parsed"),
        }
    }

    /// The real `worker.py` under a stand-in PyTorch (NumPy on the CPU, 1 ms per timed
    /// operation): its torch_sum job checks its sum and returns the samples the runner's rule
    /// asks for, in the protocol the runner speaks.
    #[test]
    fn the_real_worker_sums_and_transposes_under_a_stand_in_torch() {
        let dir = tempfile::tempdir().expect("tempdir");
        let torch = include_str!("stand_in_torch.py");
        std::fs::write(dir.path().join("torch.py"), torch).expect("the stand-in torch");
        let python = process::python_interpreter();
        let has_numpy = Command::new(&python)
            .args(["-c", "import numpy"])
            .status()
            .is_ok_and(|status| status.success());
        if !has_numpy {
            eprintln!("no NumPy in {python}: the stand-in torch cannot run");
            return;
        }
        let wrapper = fake_python(
            dir.path(),
            &format!(
                "PYTHONPATH='{}' exec '{python}' \"$@\"",
                dir.path().display()
            ),
        );
        let peers = PythonPeers::with_python(&wrapper);
        let rule = StoppingRule {
            min_samples: 4,
            max_samples: 9,
            min_gpu_ms: 0.0,
            target_rel_error: 0.0,
            ..StoppingRule::default()
        };
        let params = |rtol: f64, atol: f64| {
            BTreeMap::from([
                ("n".to_string(), 4096.0),
                ("rtol".to_string(), rtol),
                ("atol".to_string(), atol),
            ])
        };
        let sum = |params| PeerRequest {
            job: PeerJob {
                name: "torch_sum",
                params,
                block: None,
            },
            ..request(&rule)
        };
        let close = params(1e-5, 0.05);
        match peers.measure(&sum(&close), Duration::from_secs(60)) {
            PeerRun::Measured {
                samples_ms,
                implementation,
                stop_reason,
            } => {
                // Samples with no spread: the rule is satisfied at its `min_samples`.
                assert_eq!(samples_ms, vec![1.0; 4]);
                assert_eq!(implementation, "torch 0.0-stand-in");
                assert_eq!(stop_reason, StopReason::Converged);
            }
            other => panic!("expected samples, got {other:?}"),
        }
        // A tolerance of nothing at all: the float32 sum is not the float64 one.
        let exact = params(0.0, 0.0);
        match peers.measure(&sum(&exact), Duration::from_secs(60)) {
            PeerRun::Wrong { mismatch, .. } => {
                assert!(mismatch.is_some_and(|m| m.count == 1));
            }
            other => panic!("expected a wrong sum, got {other:?}"),
        }
        // The same process, PyTorch's transpose next: checked, then sampled.
        match peers.measure(&request(&rule), Duration::from_secs(60)) {
            PeerRun::Measured { samples_ms, .. } => assert_eq!(samples_ms, vec![1.0; 4]),
            other => panic!("expected samples, got {other:?}"),
        }
    }
}
