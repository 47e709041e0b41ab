//! CPU references written in the book itself, as NumPy: a fenced block
//!
//! ````markdown
//! ```python reference=axpy
//! import numpy as np
//! def axpy(x, y, a):
//!     return (np.float32(a) * x + y).astype(np.float32)
//! ```
//! ````
//!
//! computes a check's expected output in a `python3` process that serves every such block of a
//! measurement ([`PythonReferences`]). [`submit`](PythonReferences::submit) hands a job over and
//! returns at once, so Python computes while the caller does GPU work;
//! [`wait`](PythonReferences::wait) collects the expected bytes.
//!
//! # What a reference block must do
//!
//! - **Define a function named as the block** (`reference=axpy` → `def axpy`). The block runs
//!   in a namespace of its own (it sees no other block's names), once per process: later jobs
//!   call the same function. It imports what it needs itself (`import numpy as np`); a module
//!   this `python3` lacks makes the reference unavailable here, not wrong.
//! - **Take its arguments by name.** Each parameter of the function's signature receives the
//!   input buffer or the parameter of that name: a buffer as a 1-D, read-only NumPy array of
//!   the buffer's type (f32 → `float32`, f64 → `float64`, i32 → `int32`, u32 → `uint32`,
//!   u64 → `uint64`), exactly the bytes the GPU received; a parameter (the lab's, and the
//!   check's own arguments) as a Python `int` when it is a whole number and a `float`
//!   otherwise. A `**kwargs` parameter receives every input and parameter that no other
//!   parameter names. A parameter with a default that nothing names keeps its default; one
//!   without is an error ([`UnknownArgument`](PythonReferenceError::UnknownArgument)), and so
//!   are a positional-only parameter without a default
//!   ([`BadSignature`](PythonReferenceError::BadSignature)) and a check whose input and
//!   parameter share a name ([`AmbiguousName`](PythonReferenceError::AmbiguousName)).
//! - **Return the output**: anything `np.asarray` accepts, of exactly the output buffer's type
//!   (a float64 result for an f32 buffer is an error, not a silent cast: add
//!   `.astype(np.float32)`) and with exactly as many elements as the buffer; any shape, read in
//!   C order (row-major).
//! - **Print freely**: prints go to stderr, never into the protocol.
//!
//! An exception, in the block or its function, is reported with the frames of its traceback
//! that are in the block, at the chapter's own lines (`File "chapter.md", line 14`): the block is
//! compiled with the chapter as its file name and as many empty lines above it as the chapter
//! has.
//!
//! # The process and its protocol
//!
//! The server is `server.py`, run with `python3 -c` (the interpreter
//! [`process::python_interpreter`] finds), started on the first
//! [`submit`](PythonReferences::submit), in a process group of its own that dies with this
//! process. It imports NumPy once, then reads one JSON job per line on
//! stdin and answers each, in order, with one JSON line on a private copy of its stdout:
//! `{"reply": "ready", "numpy": "2.4.6"}` first, then `{"id": 7, "reply": "done"}` or
//! `{"id": 7, "reply": "raised", "traceback": "…"}` and the like (`Reply` below). The bytes
//! travel in files of a temporary directory: each input written once (`np.fromfile` reads it),
//! the output written by `tofile` and read back; a job's files are removed when its
//! [`wait`](PythonReferences::wait) returns. A job past its deadline stops the process; every
//! job still pending on it fails, and the next [`submit`](PythonReferences::submit) starts a
//! fresh one. The first job's deadline includes Python's start and `import numpy` (a fraction
//! of a second). Without NumPy the server still answers each job, with
//! [`Unavailable`](PythonReferenceError::Unavailable).

use crate::process::{self, ChildProcess, Incoming, Spawn};
use crate::references::HostBuffer;
use kernelbook_core::spec::ElemType;
use kernelbook_core::{KernelSource, SourceLocation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

#[cfg(test)]
mod tests;

/// The server's source (see the module's documentation).
const SERVER: &str = include_str!("server.py");
/// The last lines of the server's stderr kept for the message that reports its end.
const STDERR_LINES: usize = 20;
/// How many of those lines such a message quotes.
const QUOTED_LINES: usize = 3;
/// How long a server whose replies ended may take to exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// One job handed to [`PythonReferences::submit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(u64);

/// What one check asks of its reference block.
#[derive(Debug, Clone)]
pub struct ReferenceJob<'a> {
    /// The ` ```python reference=NAME ` block; `NAME` is `block.name`.
    pub block: &'a KernelSource,
    /// Exactly the bytes the GPU received, by buffer name.
    pub inputs: Vec<HostBuffer<'a>>,
    /// The lab's parameters and the check's own arguments (integers as whole floats).
    pub params: &'a BTreeMap<String, f64>,
    /// The output buffer's name, for messages.
    pub output: &'a str,
    pub output_elem: ElemType,
    /// The output buffer's length in elements.
    pub output_len: usize,
}

/// Why a reference block gave no expected output. Each names the block and where it stands in
/// the chapter, so that the author knows what to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PythonReferenceError {
    /// No interpreter, or no NumPy (or another module the block imports) in it: one line that
    /// says what to install.
    #[error("{0}")]
    Unavailable(String),
    /// The block or its function raised: the traceback's frames in the block, at the chapter's
    /// lines.
    #[error("the block `{name}` ({origin}) raised an exception:\n{}", .traceback.trim_end())]
    Raised {
        name: String,
        origin: SourceLocation,
        traceback: String,
    },
    #[error("the block `{name}` ({origin}) defines no function `{name}`")]
    NoFunction {
        name: String,
        origin: SourceLocation,
    },
    /// The function's signature cannot be bound by name (a positional-only parameter).
    #[error("the block `{name}` ({origin}): the function `{name}` cannot be called: {reason}")]
    BadSignature {
        name: String,
        origin: SourceLocation,
        reason: String,
    },
    #[error(
        "the block `{name}` ({origin}): `{name}` asks for `{argument}`, which is neither an input \
         buffer nor a parameter of the check (inputs: {}; parameters: {})",
        list(.inputs), list(.params)
    )]
    UnknownArgument {
        name: String,
        origin: SourceLocation,
        argument: String,
        /// Boxed slices, to keep the error small.
        inputs: Box<[String]>,
        params: Box<[String]>,
    },
    #[error(
        "the block `{name}` ({origin}): `{argument}` is both an input buffer and a parameter of \
         the check, so `{name}` cannot be told which it gets; rename one of them"
    )]
    AmbiguousName {
        name: String,
        origin: SourceLocation,
        argument: String,
    },
    #[error(
        "the block `{name}` ({origin}): `{name}` returns {returned}; output buffer `{output}` is \
         {} ({}) — add .astype(np.{})",
        elem_name(*.elem), dtype(*.elem), dtype(*.elem)
    )]
    WrongDtype {
        name: String,
        origin: SourceLocation,
        returned: String,
        output: String,
        elem: ElemType,
    },
    #[error(
        "the block `{name}` ({origin}): `{name}` returns shape ({}), {} element(s); output buffer \
         `{output}` holds {expected}",
        shape_text(.shape), .shape.iter().product::<u64>()
    )]
    WrongSize {
        name: String,
        origin: SourceLocation,
        shape: Vec<u64>,
        output: String,
        expected: usize,
    },
    /// No answer by the deadline: the process was stopped. `earlier` jobs submitted before this
    /// one were still unanswered (the server answers in order, so one of them may be the slow
    /// one).
    #[error(
        "the block `{name}` ({origin}) gave no answer in {:.1} s{}; its Python process was stopped",
        .ran.as_secs_f64(), earlier_text(*.earlier)
    )]
    Timeout {
        name: String,
        origin: SourceLocation,
        ran: Duration,
        earlier: usize,
    },
    /// The process ended, or was stopped for another job, before answering this one.
    #[error("the block `{name}` ({origin}) got no answer: {detail}")]
    Crashed {
        name: String,
        origin: SourceLocation,
        detail: String,
    },
    /// `wait` for a job that was never submitted or was already waited for.
    #[error("no reference job {0} is pending")]
    NotPending(u64),
    /// A job's files could not be written or read, or the server failed on a job outside the
    /// block (the message says which).
    #[error("{0}")]
    Io(String),
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn shape_text(shape: &[u64]) -> String {
    match shape {
        [one] => format!("{one},"),
        _ => shape
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn earlier_text(earlier: usize) -> String {
    match earlier {
        0 => String::new(),
        n => format!(" ({n} job(s) submitted before it were still unanswered)"),
    }
}

/// How lab files name the type.
fn elem_name(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F32 => "f32",
        ElemType::F64 => "f64",
        ElemType::I32 => "i32",
        ElemType::U32 => "u32",
        ElemType::U64 => "u64",
    }
}

/// The NumPy dtype of a buffer of `elem` (little-endian, as every supported machine is).
fn dtype(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F32 => "float32",
        ElemType::F64 => "float64",
        ElemType::I32 => "int32",
        ElemType::U32 => "uint32",
        ElemType::U64 => "uint64",
    }
}

/// The NumPy reference server, started on first use and replaced after it dies or overruns.
#[derive(Debug)]
pub struct PythonReferences {
    python: String,
    /// Declared before `dir`, so dropped first: the process is killed before its files go.
    server: Option<Server>,
    /// NumPy's version ("2.4.6"), once the server has said it.
    numpy: Option<String>,
    dir: Option<tempfile::TempDir>,
    next_id: u64,
    pending: BTreeMap<JobId, Pending>,
}

impl Default for PythonReferences {
    fn default() -> Self {
        Self::new()
    }
}

impl PythonReferences {
    /// References run by the project's interpreter ([`process::python_interpreter`]).
    pub fn new() -> Self {
        Self::with_python(&process::python_interpreter())
    }

    /// References run by another interpreter (tests use a missing one).
    pub fn with_python(program: &str) -> Self {
        PythonReferences {
            python: program.to_string(),
            server: None,
            numpy: None,
            dir: None,
            next_id: 0,
            pending: BTreeMap::new(),
        }
    }

    /// The NumPy that computes the references ("numpy 2.4.6"), once the server has said.
    pub fn implementation(&self) -> Option<String> {
        self.numpy
            .as_ref()
            .map(|version| format!("numpy {version}"))
    }

    /// Writes the inputs to files and sends the request; returns at once (Python computes while
    /// the caller does GPU work). Starts the server on first use, and after it was stopped.
    pub fn submit(&mut self, job: &ReferenceJob<'_>) -> Result<JobId, PythonReferenceError> {
        check_names(job)?;
        self.ensure_server()?;
        let id = JobId(self.next_id);
        self.next_id += 1;
        let dir = self.dir()?;
        let (line, files) = request(job, id, &dir)?;
        let sent = self.server.as_ref().is_some_and(|s| s.send(line));
        if !sent {
            let detail = self.lose_server("the Python reference process stopped reading jobs");
            self.fail_pending(&detail);
            return Err(crashed(job.block, detail));
        }
        self.pending.insert(id, Pending::new(job, files));
        Ok(id)
    }

    /// Waits for one job's expected output: little-endian bytes of the output's element type,
    /// exactly `output_len` elements. Past `deadline` the server is stopped (the next
    /// [`submit`](Self::submit) starts a fresh one) and every job pending on it fails. Replies
    /// to other jobs that arrive meanwhile are kept for their own `wait`.
    pub fn wait(&mut self, id: JobId, deadline: Instant) -> Result<Vec<u8>, PythonReferenceError> {
        loop {
            match self.pending.get(&id).map(|p| p.answer.is_some()) {
                None => return Err(PythonReferenceError::NotPending(id.0)),
                Some(false) => self.receive(id, deadline),
                Some(true) => {
                    return match self.pending.remove(&id) {
                        Some(pending) => pending.outcome(&self.python),
                        None => Err(PythonReferenceError::NotPending(id.0)),
                    };
                }
            }
        }
    }

    /// Receives one message from the server (or learns that none will come) and files it.
    fn receive(&mut self, id: JobId, deadline: Instant) {
        let Some(server) = self.server.as_ref() else {
            self.fail_pending("the Python reference process is gone");
            return;
        };
        match server.replies.recv_until(deadline) {
            Ok(message) => self.file(message),
            Err(RecvTimeoutError::Timeout) => self.time_out(id),
            Err(RecvTimeoutError::Disconnected) => {
                let tail = self.lose_server("the Python reference process ended");
                self.fail_pending(&tail);
            }
        }
    }

    fn file(&mut self, message: Message) {
        match (message.id, message.reply) {
            (_, Reply::Ready { numpy }) => self.numpy = Some(numpy),
            (Some(id), reply) => {
                if let Some(pending) = self.pending.get_mut(&JobId(id)) {
                    pending.answer = Some(Answer::Reply(reply));
                }
            }
            // Not ours to file (the server could not read the job's id).
            (None, _) => {}
        }
    }

    /// Stops the server for overrunning on job `id`; every other pending job fails with it.
    fn time_out(&mut self, id: JobId) {
        // Replies that arrived at the very deadline are kept.
        self.drain(Instant::now());
        if self.pending.get(&id).is_some_and(|p| p.answer.is_some()) {
            return;
        }
        let earlier = self
            .pending
            .range(..id)
            .filter(|(_, p)| p.answer.is_none())
            .count();
        // Dropping it kills its process group at once.
        self.server = None;
        let Some(pending) = self.pending.get_mut(&id) else {
            return;
        };
        pending.answer = Some(Answer::Failed(PythonReferenceError::Timeout {
            name: pending.name.clone(),
            origin: pending.origin.clone(),
            ran: pending.submitted.elapsed(),
            earlier,
        }));
        let culprit = format!(
            "its Python process was stopped when the block `{}` ({}) ran past its deadline",
            pending.name, pending.origin
        );
        self.fail_pending(&culprit);
    }

    /// Files every reply already received, or received by `until` (a process that has ended
    /// may still have replies in the pipe; the channel ends after the last).
    fn drain(&mut self, until: Instant) {
        while let Some(Ok(message)) = self.server.as_ref().map(|s| s.replies.recv_until(until)) {
            self.file(message);
        }
    }

    /// Forgets a server that ended (or stopped reading), killing what is left of it; returns
    /// `what` with how it ended and its last words.
    fn lose_server(&mut self, what: &str) -> String {
        match self.server.take() {
            Some(mut server) => format!("{what}{}", server.end()),
            None => what.to_string(),
        }
    }

    /// Every pending job without an answer gets `detail` as its failure.
    fn fail_pending(&mut self, detail: &str) {
        for pending in self.pending.values_mut() {
            if pending.answer.is_none() {
                pending.answer = Some(Answer::Failed(PythonReferenceError::Crashed {
                    name: pending.name.clone(),
                    origin: pending.origin.clone(),
                    detail: detail.to_string(),
                }));
            }
        }
    }

    /// A running server: the one there is, unless it has ended (its pending jobs then fail),
    /// or a new one.
    fn ensure_server(&mut self) -> Result<(), PythonReferenceError> {
        if let Some(server) = self.server.as_mut()
            && !server.process.is_running()
        {
            // Jobs it answered before it ended keep their answers.
            self.drain(Instant::now() + EXIT_GRACE);
            let detail = self.lose_server("the Python reference process ended");
            self.fail_pending(&detail);
        }
        if self.server.is_none() {
            self.server = Some(Server::spawn(&self.python)?);
        }
        Ok(())
    }

    /// The directory the jobs' files live in, made on first use.
    fn dir(&mut self) -> Result<PathBuf, PythonReferenceError> {
        if self.dir.is_none() {
            let dir = tempfile::Builder::new()
                .prefix("kernelbook-references-")
                .tempdir()
                .map_err(|err| {
                    PythonReferenceError::Io(format!(
                        "cannot make a directory for the reference jobs: {err}"
                    ))
                })?;
            self.dir = Some(dir);
        }
        match &self.dir {
            Some(dir) => Ok(dir.path().to_path_buf()),
            None => Err(PythonReferenceError::Io("no directory for the jobs".into())),
        }
    }
}

/// Rejects a check whose input and parameter share a name: which one the function gets would
/// be a rule the author has to know.
fn check_names(job: &ReferenceJob<'_>) -> Result<(), PythonReferenceError> {
    match job
        .inputs
        .iter()
        .find(|input| job.params.contains_key(input.name))
    {
        Some(input) => Err(PythonReferenceError::AmbiguousName {
            name: job.block.name.clone(),
            origin: job.block.origin.clone(),
            argument: input.name.to_string(),
        }),
        None => Ok(()),
    }
}

fn crashed(block: &KernelSource, detail: String) -> PythonReferenceError {
    PythonReferenceError::Crashed {
        name: block.name.clone(),
        origin: block.origin.clone(),
        detail,
    }
}

/// A running server: the process, its replies, and the thread that writes its jobs.
#[derive(Debug)]
struct Server {
    /// Each job's line, written to the server's stdin by a thread of its own, so that `submit`
    /// never waits for a server that is busy (and not reading) or stuck.
    requests: mpsc::Sender<String>,
    replies: Incoming<Message>,
    process: ChildProcess,
}

impl Server {
    fn spawn(python: &str) -> Result<Server, PythonReferenceError> {
        let mut command = Command::new(python);
        command.args(["-c", SERVER]);
        let how = Spawn {
            own_group: true,
            stderr_lines: STDERR_LINES,
        };
        let mut process = process::spawn(command, how).map_err(|err| not_started(python, &err))?;
        let stdin = process.take_stdin().ok_or_else(|| {
            PythonReferenceError::Io("the Python reference process has no stdin".into())
        })?;
        let requests = write_lines(stdin)?;
        Ok(Server {
            requests,
            replies: process.json_lines(),
            process,
        })
    }

    /// Queues one line for the server; `false` if it no longer reads them.
    fn send(&self, line: String) -> bool {
        self.requests.send(line).is_ok()
    }

    /// For a process that ended or is ending: gives it a moment to, kills what is left, and
    /// says how it ended and what it last wrote (` (exit status: 3): MemoryError`).
    fn end(&mut self) -> String {
        let status = self.process.wait_timeout(EXIT_GRACE).ok().flatten();
        self.process.kill();
        let mut text = status.map(|s| format!(" ({s})")).unwrap_or_default();
        let tail = self.process.stderr_tail(QUOTED_LINES);
        if !tail.is_empty() {
            text.push_str(&format!(": {tail}"));
        }
        text
    }
}

/// A thread that writes each line it is sent to `stdin`, until the sender is dropped (which
/// closes stdin) or the process stops reading.
fn write_lines(
    mut stdin: std::process::ChildStdin,
) -> Result<mpsc::Sender<String>, PythonReferenceError> {
    let (sender, lines) = mpsc::channel::<String>();
    std::thread::Builder::new()
        .name("kernelbook-references-jobs".into())
        .spawn(move || {
            for line in lines {
                if writeln!(stdin, "{line}")
                    .and_then(|()| stdin.flush())
                    .is_err()
                {
                    return;
                }
            }
        })
        .map_err(|err| PythonReferenceError::Io(format!("cannot start a thread: {err}")))?;
    Ok(sender)
}

/// Why the interpreter did not start, in one line.
fn not_started(python: &str, err: &std::io::Error) -> PythonReferenceError {
    let on_path = !python.contains('/');
    PythonReferenceError::Unavailable(match (err.kind(), on_path) {
        (std::io::ErrorKind::NotFound, true) => format!(
            "no {python} on the PATH ({err}): install Python 3 with NumPy, or name an \
             interpreter in KERNELBOOK_PYTHON"
        ),
        (std::io::ErrorKind::NotFound, false) => format!("no {python} ({err})"),
        _ => format!("cannot run {python}: {err}"),
    })
}

/// One line the server writes: a reply, and the job it answers (none for `ready`).
#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<u64>,
    #[serde(flatten)]
    reply: Reply,
}

/// What the server says, by its `reply` field.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
enum Reply {
    /// First, once NumPy is imported.
    Ready {
        numpy: String,
    },
    /// The output is in the job's output file.
    Done,
    /// `import numpy` failed: the exception, in one line.
    NoNumpy {
        reason: String,
    },
    /// The block imports a module this interpreter lacks.
    MissingModule {
        module: String,
    },
    Raised {
        traceback: String,
    },
    NoFunction,
    BadSignature {
        reason: String,
    },
    UnknownArgument {
        argument: String,
    },
    WrongDtype {
        returned: String,
    },
    WrongSize {
        shape: Vec<u64>,
    },
    /// The server itself failed on the job (it could not read an input file).
    Failed {
        error: String,
    },
}

/// A job's answer: the server's reply, or why none will come.
#[derive(Debug)]
enum Answer {
    Reply(Reply),
    Failed(PythonReferenceError),
}

/// A submitted job, until its `wait` returns.
#[derive(Debug)]
struct Pending {
    name: String,
    origin: SourceLocation,
    output: String,
    output_elem: ElemType,
    output_len: usize,
    inputs: Vec<String>,
    params: Vec<String>,
    files: JobFiles,
    submitted: Instant,
    answer: Option<Answer>,
}

impl Pending {
    fn new(job: &ReferenceJob<'_>, files: JobFiles) -> Self {
        Pending {
            name: job.block.name.clone(),
            origin: job.block.origin.clone(),
            output: job.output.to_string(),
            output_elem: job.output_elem,
            output_len: job.output_len,
            inputs: job.inputs.iter().map(|i| i.name.to_string()).collect(),
            params: job.params.keys().cloned().collect(),
            files,
            submitted: Instant::now(),
            answer: None,
        }
    }

    /// The expected bytes, or the error the answer stands for. The job's files are removed
    /// when `self` is dropped, on return.
    fn outcome(mut self, python: &str) -> Result<Vec<u8>, PythonReferenceError> {
        let reply = match self.answer.take() {
            None => return Err(PythonReferenceError::Io("the job has no answer yet".into())),
            Some(Answer::Failed(error)) => return Err(error),
            Some(Answer::Reply(Reply::Done)) => return self.read_output(),
            Some(Answer::Reply(reply)) => reply,
        };
        let (name, origin) = (self.name, self.origin);
        Err(match reply {
            Reply::NoNumpy { reason } => PythonReferenceError::Unavailable(format!(
                "{python} has no numpy ({reason}): `{python} -m pip install numpy`"
            )),
            Reply::MissingModule { module } => PythonReferenceError::Unavailable(format!(
                "{python} has no module `{module}`, which the block `{name}` ({origin}) imports"
            )),
            Reply::Raised { traceback } => PythonReferenceError::Raised {
                name,
                origin,
                traceback,
            },
            Reply::NoFunction => PythonReferenceError::NoFunction { name, origin },
            Reply::BadSignature { reason } => PythonReferenceError::BadSignature {
                name,
                origin,
                reason,
            },
            Reply::UnknownArgument { argument } => PythonReferenceError::UnknownArgument {
                name,
                origin,
                argument,
                inputs: self.inputs.into(),
                params: self.params.into(),
            },
            Reply::WrongDtype { returned } => PythonReferenceError::WrongDtype {
                name,
                origin,
                returned,
                output: self.output,
                elem: self.output_elem,
            },
            Reply::WrongSize { shape } => PythonReferenceError::WrongSize {
                name,
                origin,
                shape,
                output: self.output,
                expected: self.output_len,
            },
            Reply::Failed { error } => PythonReferenceError::Io(format!(
                "the reference server failed on the block `{name}` ({origin}):\n{}",
                error.trim_end()
            )),
            Reply::Ready { .. } | Reply::Done => PythonReferenceError::Io(format!(
                "the reference server gave the block `{name}` ({origin}) no answer"
            )),
        })
    }

    fn read_output(&self) -> Result<Vec<u8>, PythonReferenceError> {
        let bytes = std::fs::read(&self.files.output).map_err(|err| {
            PythonReferenceError::Io(format!(
                "cannot read the output of the block `{}` ({}): {err}",
                self.name, self.origin
            ))
        })?;
        let expected = self.output_len.saturating_mul(self.output_elem.size());
        if bytes.len() != expected {
            return Err(PythonReferenceError::Io(format!(
                "the block `{}` ({}) wrote {} bytes for `{}`; {expected} were expected",
                self.name,
                self.origin,
                bytes.len(),
                self.output
            )));
        }
        Ok(bytes)
    }
}

/// A job's files: removed when dropped, whether or not they were all written.
#[derive(Debug)]
struct JobFiles {
    inputs: Vec<PathBuf>,
    output: PathBuf,
}

impl Drop for JobFiles {
    fn drop(&mut self) {
        for path in self.inputs.iter().chain([&self.output]) {
            // Missing is fine: an output the server never wrote, an input never written.
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A job as the server reads it (one JSON line).
#[derive(Serialize)]
struct WireJob<'a> {
    id: u64,
    block: WireBlock<'a>,
    inputs: Vec<WireBuffer<'a>>,
    params: BTreeMap<&'a str, WireParam>,
    output: WireBuffer<'a>,
}

#[derive(Serialize)]
struct WireBlock<'a> {
    name: &'a str,
    source: &'a str,
    /// With the rest, what the server's cache of executed blocks is keyed by.
    hash: String,
    /// The chapter, as tracebacks name it.
    file: String,
    /// The chapter's line of the source's first line.
    line: usize,
}

#[derive(Serialize)]
struct WireBuffer<'a> {
    name: &'a str,
    dtype: &'static str,
    path: &'a Path,
    /// Elements: only the output's is checked (an input is what its file holds).
    len: usize,
}

/// A parameter: a whole number as a JSON integer (a Python `int`), NaN and the infinities, which
/// JSON has no number for, as `"nan"`, `"inf"` and `"-inf"`.
#[derive(Serialize)]
#[serde(untagged)]
enum WireParam {
    Int(i64),
    Float(f64),
    Special(&'static str),
}

impl From<f64> for WireParam {
    fn from(value: f64) -> Self {
        // Every whole f64 below 2^63 in magnitude converts to i64 exactly.
        const LIMIT: f64 = 9_223_372_036_854_775_808.0;
        if value.is_nan() {
            WireParam::Special("nan")
        } else if value.is_infinite() {
            WireParam::Special(if value > 0.0 { "inf" } else { "-inf" })
        } else if value.fract() == 0.0 && value.abs() < LIMIT {
            WireParam::Int(value as i64)
        } else {
            WireParam::Float(value)
        }
    }
}

/// Writes `job`'s inputs to files in `dir` (each buffer once, as it is) and returns the line
/// that asks the server for it, with the files it names.
fn request(
    job: &ReferenceJob<'_>,
    id: JobId,
    dir: &Path,
) -> Result<(String, JobFiles), PythonReferenceError> {
    let mut files = JobFiles {
        inputs: Vec::with_capacity(job.inputs.len()),
        output: dir.join(format!("{}-out.bin", id.0)),
    };
    for (index, input) in job.inputs.iter().enumerate() {
        let path = dir.join(format!("{}-in{index}.bin", id.0));
        files.inputs.push(path.clone());
        std::fs::write(&path, input.bytes).map_err(|err| {
            PythonReferenceError::Io(format!(
                "cannot write the input `{}` of the block `{}` to {}: {err}",
                input.name,
                job.block.name,
                path.display()
            ))
        })?;
    }
    let wire = WireJob {
        id: id.0,
        block: WireBlock {
            name: &job.block.name,
            source: &job.block.source,
            hash: job.block.source_hash(),
            file: job.block.origin.file.to_string_lossy().into_owned(),
            line: job.block.origin.line,
        },
        inputs: job
            .inputs
            .iter()
            .zip(&files.inputs)
            .map(|(input, path)| WireBuffer {
                name: input.name,
                dtype: dtype(input.elem),
                path,
                len: input.bytes.len() / input.elem.size(),
            })
            .collect(),
        params: job
            .params
            .iter()
            .map(|(name, &value)| (name.as_str(), WireParam::from(value)))
            .collect(),
        output: WireBuffer {
            name: job.output,
            dtype: dtype(job.output_elem),
            path: &files.output,
            len: job.output_len,
        },
    };
    let line = serde_json::to_string(&wire)
        .map_err(|err| PythonReferenceError::Io(format!("cannot encode the job: {err}")))?;
    Ok((line, files))
}
