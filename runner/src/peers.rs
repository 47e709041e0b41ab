//! Peers measured outside the [`Device`](crate::backend::Device) trait, in a `python3` process:
//! PyTorch's own transpose, and a Python block of the book (a Triton kernel). Timed there with
//! CUDA events under the same stopping rule and L2 flush as the course's kernels, and checked
//! against a CPU transpose.
//!
//! `import torch` alone takes seconds, so one Python process serves every request of a build:
//! [`PythonPeers::start`] launches it early, it imports while the course's own kernels are
//! measured, and then answers one JSON request per line. It touches the GPU only while it
//! answers a request, and the runner sends one only when no lab is measuring.

use crate::process::{self, ChildProcess, Incoming, Spawn};
use kernelbook_core::KernelSource;
use kernelbook_core::results::Mismatch;
use kernelbook_core::stats::StoppingRule;
use serde::{Deserialize, Serialize};
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

/// The Python side. Replies go to a private copy of stdout; the blocks' own prints (and
/// Triton's) go to stderr, so they cannot break the protocol.
///
/// Each sample queues a GPU-side sleep, the L2 flush, the start event, the operation and the end
/// event. The sleep keeps the GPU busy while Python enqueues the rest, so the flush, the start
/// event and the operation then run back to back, as they do for the course's kernels: the time
/// between the events is the operation's, not Python's launch overhead (tens of microseconds for
/// a Triton launch, comparable to the kernel itself), and the operation starts right after the
/// flush, not after an idle gap.
const SERVER: &str = r#"
import json, os, sys, time, traceback
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr

def reply(message):
    proto.write(json.dumps(message) + "\n")
    proto.flush()

try:
    import torch
except Exception as error:
    reply({"unavailable": "python3 has no torch (" + type(error).__name__ + ")"})
    sys.exit(0)
try:
    import triton  # imported now, while nothing waits for it
except Exception:
    pass
reply({"ready": "torch " + torch.__version__})

SLEEP_CYCLES = 1_000_000  # about 0.5 ms at 2 GHz: longer than any Python launch

def enough(rule, n, mean, m2, total, began):
    if n >= rule["max_samples"] or time.time() - began >= rule["max_wall_s"]:
        return True
    if n < rule["min_samples"] or total < rule["min_gpu_ms"]:
        return False
    spread = (m2 / (n - 1)) ** 0.5 / mean
    return spread / n ** 0.5 <= rule["target_rel_error"]

HOST = {}

def host_buffers(x):
    # Page-locked copies of the input and of its transpose, kept for the next request of the
    # same shape: copying 256 MiB into fresh pageable memory takes longer than the kernel's
    # whole measurement.
    key = (tuple(x.shape), x.dtype)
    if key not in HOST:
        HOST.clear()
        rows, cols = x.shape
        HOST[key] = (torch.empty(rows, cols, dtype=x.dtype, pin_memory=True),
                     torch.empty(cols, rows, dtype=x.dtype, pin_memory=True))
    return HOST[key]

def transpose(request):
    if not torch.cuda.is_available():
        return {"unavailable": "torch " + torch.__version__ + " sees no CUDA GPU"}
    rows, cols, rule = request["rows"], request["cols"], request["rule"]
    version = "torch " + torch.__version__
    block_path = request.get("block")
    if block_path:
        # A Python block of the book: it must define transpose(x) returning the transpose.
        namespace = {"__name__": "kernelbook_block"}
        try:
            exec(compile(open(block_path).read(), block_path, "exec"), namespace)
        except ModuleNotFoundError as error:
            return {"unavailable": "python3 has no " + str(error.name) + " (the block imports it)"}
        except Exception:
            return {"error": traceback.format_exc(limit=-3)}
        if not callable(namespace.get("transpose")):
            return {"error": "the block defines no function transpose(x)"}
        op = namespace["transpose"]
        if "triton" in sys.modules:
            version = "triton " + sys.modules["triton"].__version__ + ", " + version
    else:
        op = lambda x: x.t().contiguous()
    x = torch.rand(rows, cols, device="cuda") * 2 - 1
    try:
        y = op(x)
        torch.cuda.synchronize()
    except Exception:
        return {"error": traceback.format_exc(limit=-3)}
    x_host, y_host = host_buffers(x)
    x_host.copy_(x)
    expected = x_host.t().contiguous()
    if tuple(y.shape) == tuple(expected.shape):
        y_host.copy_(y)
        actual = y_host
    else:
        actual = y.cpu()
    ok = tuple(actual.shape) == tuple(expected.shape) and torch.equal(actual, expected)
    if not ok:
        mismatch = None
        if actual.shape == expected.shape:
            wrong = (actual != expected).flatten().nonzero()
            i = int(wrong[0]) if len(wrong) else 0
            mismatch = {"index": i, "expected": repr(float(expected.flatten()[i])),
                        "actual": repr(float(actual.flatten()[i])), "count": int(len(wrong))}
        return {"ok": False, "mismatch": mismatch, "version": version}
    del expected, actual, x_host, y_host
    flush = torch.empty(request["flush_bytes"], dtype=torch.uint8, device="cuda")
    for _ in range(request["warmup"]):
        y = op(x)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, began = [], time.time()
    n, mean, m2, total = 0, 0.0, 0.0, 0.0  # Welford's running mean and squared deviations
    while not enough(rule, n, mean, m2, total, began):
        torch.cuda._sleep(SLEEP_CYCLES)
        flush.fill_(n % 251)
        start.record()
        y = op(x)
        end.record()
        end.synchronize()
        sample = start.elapsed_time(end)
        samples.append(sample)
        n, total = n + 1, total + sample
        delta = sample - mean
        mean += delta / n
        m2 += delta * (sample - mean)
    return {"ok": True, "samples_ms": samples, "version": version}

for line in sys.stdin:
    try:
        answer = transpose(json.loads(line))
    except Exception:
        answer = {"error": traceback.format_exc(limit=-3)}
    # Give the memory back: the labs measured next may need all of it.
    torch.cuda.empty_cache()
    reply(answer)
"#;

/// What one request asks: a `rows × cols` fp32 transpose, by PyTorch (`block: None`) or by the
/// `transpose(x)` a Python block of the book defines.
#[derive(Debug, Clone, Copy)]
pub struct TransposeRequest<'a> {
    pub rows: usize,
    pub cols: usize,
    pub rule: &'a StoppingRule,
    pub flush_bytes: u64,
    pub warmup_runs: usize,
    pub block: Option<&'a KernelSource>,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    rows: usize,
    cols: usize,
    rule: &'a StoppingRule,
    flush_bytes: u64,
    warmup: usize,
    block: Option<&'a Path>,
}

/// The first line the server writes.
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

/// The build's Python process, started on first use (or early, by [`start`](Self::start)) and
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
    /// Peers run by the `python3` on the `PATH`.
    pub fn new() -> Self {
        Self::with_python("python3")
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

    /// Times a transpose (see [`TransposeRequest`]). A request that takes longer than `timeout`
    /// stops the process; the next request starts a fresh one.
    pub fn transpose(&self, request: &TransposeRequest<'_>, timeout: Duration) -> PeerRun {
        // The block goes to a file: Triton reads a kernel's source back from its file.
        let file = match request.block.map(write_block).transpose() {
            Ok(file) => file,
            Err(message) => return PeerRun::Failed(message),
        };
        let wire = WireRequest {
            rows: request.rows,
            cols: request.cols,
            rule: request.rule,
            flush_bytes: request.flush_bytes,
            warmup: request.warmup_runs,
            block: file.as_ref().map(|f| f.path()),
        };
        let run = self.ask(&wire, timeout);
        match (run, request.block, &file) {
            (PeerRun::Failed(message), Some(block), Some(file)) => PeerRun::Failed(map_traceback(
                &message,
                &file.path().to_string_lossy(),
                block,
            )),
            (run, _, _) => run,
        }
    }

    fn ask(&self, request: &WireRequest<'_>, timeout: Duration) -> PeerRun {
        let Ok(mut guard) = self.server.lock() else {
            return PeerRun::Failed("the Python process's state was poisoned by a panic".into());
        };
        if guard.is_none() {
            match Server::spawn(&self.python, self.gpu.as_deref()) {
                Ok(server) => *guard = Some(server),
                Err(why) => return PeerRun::Unavailable(why),
            }
        }
        let Some(server) = guard.as_mut() else {
            return PeerRun::Failed("the Python process did not start".into());
        };
        let (run, keep) = server.ask(request, timeout);
        if !keep {
            *guard = None;
        }
        run
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
        command.args(["-c", SERVER]);
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

    /// Sends one request and waits for its answer. The second value is whether the process is
    /// still fit for the next request.
    fn ask(&mut self, request: &WireRequest<'_>, timeout: Duration) -> (PeerRun, bool) {
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
                Err(failure) => return (PeerRun::Failed(failure), false),
            }
        }
        if let Some(Err(why)) = &self.hello {
            return (PeerRun::Unavailable(why.clone()), true);
        }
        let line = match serde_json::to_string(request) {
            Ok(line) => line,
            Err(err) => {
                return (
                    PeerRun::Failed(format!("cannot encode the request: {err}")),
                    true,
                );
            }
        };
        let sent = self.process.as_mut().map(|p| p.send_line(&line));
        if !matches!(sent, Some(Ok(()))) {
            return (
                PeerRun::Failed(format!(
                    "the Python process stopped reading requests{}",
                    self.stderr_tail()
                )),
                false,
            );
        }
        match self.next_line(timeout) {
            Ok(line) => {
                let tail = self.stderr_tail();
                (parse_torch_report(&line, &tail), true)
            }
            Err(failure) => (PeerRun::Failed(failure), false),
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

/// Reads a reply line; `stderr_tail` (`: …`, or empty) goes into a message about a garbled one.
fn parse_torch_report(line: &str, stderr_tail: &str) -> PeerRun {
    match serde_json::from_str::<TorchReport>(line) {
        Ok(TorchReport {
            unavailable: Some(why),
            ..
        }) => PeerRun::Unavailable(why),
        Ok(TorchReport {
            error: Some(traceback),
            ..
        }) => PeerRun::Failed(format!(
            "the block raised an exception:\n{}",
            traceback.trim_end()
        )),
        Ok(report) if !report.ok => PeerRun::Wrong {
            implementation: report.version,
            mismatch: report.mismatch,
        },
        Ok(report) if report.samples_ms.is_empty() => {
            PeerRun::Failed("torch reported no samples".into())
        }
        Ok(report) => PeerRun::Measured {
            samples_ms: report.samples_ms,
            implementation: report.version,
        },
        Err(_) => PeerRun::Failed(format!(
            "the Python peer answered `{}`{stderr_tail}",
            line.chars().take(200).collect::<String>()
        )),
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
            PeerRun::Unavailable("python3 has no torch (ModuleNotFoundError)".into())
        );
        assert_eq!(
            parse_torch_report(
                r#"{"ok": true, "samples_ms": [0.5, 0.6], "version": "torch 2.11.0"}"#,
                ""
            ),
            PeerRun::Measured {
                samples_ms: vec![0.5, 0.6],
                implementation: "torch 2.11.0".into()
            }
        );
        assert_eq!(
            parse_torch_report(
                r#"{"ok": false, "mismatch": {"index": 3, "expected": "0.5", "actual": "0.25", "count": 1}, "version": "torch 2.11.0"}"#,
                ""
            ),
            PeerRun::Wrong {
                implementation: "torch 2.11.0".into(),
                mismatch: Some(Mismatch {
                    index: 3,
                    expected: "0.5".into(),
                    actual: "0.25".into(),
                    count: 1
                })
            }
        );
        assert_eq!(
            parse_torch_report("not json", ": RuntimeError: CUDA out of memory"),
            PeerRun::Failed(
                "the Python peer answered `not json`: RuntimeError: CUDA out of memory".into()
            )
        );
    }

    fn request(rule: &StoppingRule) -> TransposeRequest<'_> {
        TransposeRequest {
            rows: 64,
            cols: 32,
            rule,
            flush_bytes: 1 << 20,
            warmup_runs: 1,
            block: None,
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
            match peers.transpose(&request(&rule), Duration::from_secs(120)) {
                PeerRun::Failed(why) => panic!("the server itself failed: {why}"),
                other => eprintln!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_missing_interpreter_is_unavailable() {
        let peers = PythonPeers::with_python("/nonexistent/python3");
        let rule = StoppingRule::default();
        match peers.transpose(&request(&rule), Duration::from_secs(5)) {
            PeerRun::Unavailable(why) => {
                assert!(why.starts_with("no /nonexistent/python3"), "{why}")
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
    }

    /// A stand-in interpreter: a shell script that ignores `-c SERVER`, counts its starts in
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
        let rule = StoppingRule::default();
        for _ in 0..3 {
            assert_eq!(
                peers.transpose(&request(&rule), Duration::from_secs(10)),
                PeerRun::Measured {
                    samples_ms: vec![0.5, 0.25],
                    implementation: "torch 9.9".into()
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
                peers.transpose(&request(&rule), Duration::from_secs(10)),
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
        match peers.transpose(&request(&rule), Duration::from_millis(300)) {
            PeerRun::Failed(why) => assert!(why.contains("did not answer"), "{why}"),
            other => panic!("expected a failure, got {other:?}"),
        }
        let _ = peers.transpose(&request(&rule), Duration::from_millis(300));
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
            peers.transpose(&request(&rule), Duration::from_secs(10)),
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
            PeerRun::Failed("the block raised an exception:\nValueError: bad".into())
        );
    }
}
