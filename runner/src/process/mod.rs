//! Child processes, written once for the measuring child ([`isolate`](crate::isolate)), the
//! Python process ([`peers`](crate::peers)) and Nsight Compute ([`profile`](crate::profile)).
//! This module knows how to start, read, time and end a child, nothing of what the child does.
//!
//! - [`spawn`] starts a [`Command`] with piped stdin, stdout and stderr, in a process group of
//!   its own where [`Spawn::own_group`] asks, so that killing it kills what it started too
//!   (Triton's compilers, the program ncu profiles); [`spawn_with_channel`] gives the child a
//!   private pipe to answer on ([`CHANNEL_FD`]), its stdout joined to its stderr, so that
//!   whatever else it prints (a kernel's `printf`) cannot garble its answers;
//! - [`ChildProcess::json_lines`], [`lines`](ChildProcess::lines) and
//!   [`stdout_to_end`](ChildProcess::stdout_to_end) read stdout on a thread of their own into an
//!   [`Incoming`], received under a deadline; [`read_json_lines`] and friends read any other pipe;
//! - [`StderrTail`] keeps the last lines of stderr for the message that reports the child's end;
//! - [`ChildProcess::wait_timeout`] waits with a time limit; [`ChildProcess::kill`] and `Drop`
//!   kill the whole group with SIGKILL, then reap the child.
//!
//! # Every child dies with its parent
//!
//! A measuring child left running holds the GPU, so no child may outlive kernelbook:
//!
//! - On Linux each child gets SIGKILL when this process ends, however it ends (the parent-death
//!   signal, set between fork and exec). Linux sends it when the *thread* that forked the child
//!   ends, so every child is forked by one thread that lives as long as the process.
//! - A kernelbook process started by another program (a measuring child under `ncu`) asks for
//!   the same itself, first thing: [`die_with_parent`].
//! - Ctrl-C reaches the terminal's foreground process group only, SIGTERM this process only: a
//!   child in a group of its own would run on until this process ends, and on other systems
//!   than Linux after it. [`end_children_on_signal`], called by each binary's `main`, kills every
//!   live child's group on SIGINT, SIGTERM or SIGHUP, then ends the process as the signal would.
//! - A child whose own children the parent-death signal cannot reach (`ncu`, a shell script that
//!   runs the real `ncu`) is started under a keeper ([`under_keeper`]), which kills its whole
//!   process group when kernelbook ends.
//!
//! ```no_run
//! use kernelbook_runner::process::{self, Spawn};
//! use std::time::{Duration, Instant};
//! # fn main() -> std::io::Result<()> {
//! let mut command = std::process::Command::new("python3");
//! command.arg("server.py");
//! let mut child = process::spawn(command, Spawn { own_group: true, stderr_lines: 20 })?;
//! let replies = child.json_lines::<serde_json::Value>();
//! child.send_line(r#"{"rows": 64}"#)?;
//! match replies.recv_until(Instant::now() + Duration::from_secs(10)) {
//!     Ok(reply) => println!("{reply}"),
//!     Err(_) => eprintln!("no answer: {}", child.stderr_tail(3)),
//! }
//! # Ok(()) }
//! // Dropping `child` kills its group and reaps it.
//! ```

mod keeper;
#[cfg(not(unix))]
mod other;
mod read;
#[cfg(unix)]
mod unix;

#[cfg(not(unix))]
use other as sys;
#[cfg(unix)]
use unix as sys;

pub use keeper::{KEEPER_ARG, keeper_main, under_keeper};
pub use read::{Incoming, StderrTail, read_json_lines, read_lines, read_to_end};

use serde::de::DeserializeOwned;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How to start a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spawn {
    /// In a process group of its own, which [`ChildProcess::kill`] kills whole; the child then
    /// gets no Ctrl-C from the terminal ([`end_children_on_signal`] stands in for it).
    pub own_group: bool,
    /// How many of its last stderr lines to keep ([`ChildProcess::stderr_tail`]).
    pub stderr_lines: usize,
}

/// The descriptor on which a child started by [`spawn_with_channel`] finds the write end of its
/// private channel to the parent.
pub const CHANNEL_FD: i32 = 3;

/// The environment variable that tells such a child its channel's descriptor
/// ([`channel_to_parent`]); no other child has it.
pub const CHANNEL_ENV: &str = "KERNELBOOK_CHANNEL_FD";

/// Starts `command` with stdin, stdout and stderr piped (whatever `command` said of them), its
/// stderr read at once into a [`StderrTail`]. On Linux it dies when this process does.
pub fn spawn(mut command: Command, how: Spawn) -> io::Result<ChildProcess> {
    command.env_remove(CHANNEL_ENV);
    start(command, how, None)
}

/// As [`spawn`], and the child answers on a pipe of its own: it finds the pipe's write end on
/// descriptor [`CHANNEL_FD`] ([`CHANNEL_ENV`] says so), its stdout goes where its stderr goes
/// (into the [`StderrTail`]), and [`ChildProcess::json_lines`], [`lines`](ChildProcess::lines)
/// and [`stdout_to_end`](ChildProcess::stdout_to_end) read the channel. A print without a
/// newline, a library's banner, a kernel's `printf`: none of it reaches the channel. Off Unix
/// it is [`spawn`], the child answering on stdout.
pub fn spawn_with_channel(mut command: Command, how: Spawn) -> io::Result<ChildProcess> {
    let channel = sys::give_channel(&mut command)?;
    start(command, how, channel)
}

/// The write end of the channel a parent gave this process with [`spawn_with_channel`], if it
/// did; marked close-on-exec so that this process's own children do not inherit it. Call it
/// once: the descriptor is owned by what it returns.
pub fn channel_to_parent() -> Option<std::fs::File> {
    sys::channel_to_parent()
}

fn start(mut command: Command, how: Spawn, channel: Option<Pipe>) -> io::Result<ChildProcess> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = sys::spawn(command, how.own_group)?;
    let stderr = StderrTail::start(child.stderr.take(), how.stderr_lines);
    let stdout = child.stdout.take().map(|stdout| Pipe(Box::new(stdout)));
    Ok(ChildProcess {
        stdin: child.stdin.take(),
        // With a channel, the child's stdout was joined to its stderr: nothing comes here.
        stdout: channel.or(stdout),
        child,
        own_group: how.own_group,
        status: None,
        reaped: false,
        stderr,
    })
}

/// For a kernelbook process that another program started (a measuring child, run by the runner
/// or by `ncu`): on Linux, asks for SIGKILL when the parent ends, and exits at once if it
/// already has. Call it on the main thread: Linux forgets the request when the thread that made
/// it ends. A parent that ends before this call, between its fork and here, goes unnoticed; the
/// runner's own children are covered from their fork on by [`spawn`].
pub fn die_with_parent() {
    sys::die_with_parent();
}

/// Makes SIGINT, SIGTERM and SIGHUP kill every live child's group (and every child that has
/// none of its own) before this process ends as the signal would have ended it. Call it once,
/// early in `main`, in a process that starts children; it starts one thread that waits for
/// the signals.
pub fn end_children_on_signal() -> io::Result<()> {
    sys::end_children_on_signal()
}

/// The reading end of a pipe a child writes to.
pub(crate) struct Pipe(Box<dyn Read + Send>);

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pipe")
    }
}

/// A running (or ended, not yet reaped) child and its pipes. Dropping it kills its group and
/// reaps it.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    own_group: bool,
    /// How it ended, once seen. It stays a zombie until reaped, so its pid and group id cannot
    /// be given to another process while a kill may still be sent to them.
    status: Option<ExitStatus>,
    reaped: bool,
    stdin: Option<ChildStdin>,
    /// What the child answers on: its stdout, or the channel of [`spawn_with_channel`].
    stdout: Option<Pipe>,
    stderr: StderrTail,
}

impl ChildProcess {
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Writes `line` and a newline to the child's stdin, and flushes it.
    pub fn send_line(&mut self, line: &str) -> io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin is closed"))?;
        writeln!(stdin, "{line}").and_then(|()| stdin.flush())
    }

    /// The child's stdin, to write it elsewhere (dropping it closes it).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Closes the child's stdin: it reads the end of its input.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Stdout's lines that are JSON `T`s; the channel ends when stdout does.
    pub fn json_lines<T: DeserializeOwned + Send + 'static>(&mut self) -> Incoming<T> {
        self.stdout
            .take()
            .map_or_else(Incoming::ended, read_json_lines)
    }

    /// Stdout's lines; the channel ends when stdout does.
    pub fn lines(&mut self) -> Incoming<String> {
        self.stdout.take().map_or_else(Incoming::ended, read_lines)
    }

    /// All of stdout, as one value once it ends.
    pub fn stdout_to_end(&mut self) -> Incoming<String> {
        self.stdout.take().map_or_else(Incoming::ended, read_to_end)
    }

    pub fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// The last `count` non-blank lines of stderr, joined by " / " (see [`StderrTail::last`]);
    /// if the child has ended, with its last words.
    pub fn stderr_tail(&mut self, count: usize) -> String {
        let ended = !self.is_running();
        self.stderr.last(count, ended)
    }

    /// How the child ended, if it has (it is not reaped: see [`ChildProcess::kill`]).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = sys::exited(&mut self.child, false)?;
        }
        Ok(self.status)
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.try_wait(), Ok(None))
    }

    /// Waits for the child to end.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = sys::exited(&mut self.child, true)?
            .ok_or_else(|| io::Error::other("the child did not end"))?;
        self.status = Some(status);
        Ok(status)
    }

    /// Waits `limit` at most for the child to end; `None` if it is still running.
    pub fn wait_timeout(&mut self, limit: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            std::thread::sleep(left.min(Duration::from_millis(10)));
        }
    }

    /// Kills the child with SIGKILL — its whole group where it leads one, which also ends what
    /// it left running after it ended itself — then reaps it; returns how it ended.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.stdin = None;
        if !self.reaped {
            sys::kill(&mut self.child, self.own_group);
            self.reaped = true;
            if let Ok(status) = self.child.wait() {
                self.status.get_or_insert(status);
            }
        }
        self.status
    }

    /// Closes stdin and leaves the child `grace` to end by itself on a thread of its own,
    /// then kills it: for a child that exits at the end of its input but takes a while to,
    /// which nobody needs to wait for.
    pub fn end_in_background(mut self, grace: Duration) {
        self.close_stdin();
        std::thread::spawn(move || {
            let _ = self.wait_timeout(grace);
            drop(self);
        });
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests;

/// The Python interpreter every Python worker runs (the peers' and the NumPy references'): the
/// one `KERNELBOOK_PYTHON` names, else the project's virtualenv (`.venv-nvrtc`, then `.venv`, in
/// the working folder or a folder above it), else the `python3` on the `PATH`.
pub fn python_interpreter() -> String {
    let cwd = std::env::current_dir().ok();
    python_interpreter_in(
        std::env::var("KERNELBOOK_PYTHON").ok().as_deref(),
        cwd.as_deref(),
    )
}

/// [`python_interpreter`] with the variable's value and the working folder given.
pub fn python_interpreter_in(variable: Option<&str>, cwd: Option<&std::path::Path>) -> String {
    if let Some(python) = variable.filter(|python| !python.trim().is_empty()) {
        return python.to_string();
    }
    cwd.into_iter()
        .flat_map(std::path::Path::ancestors)
        .flat_map(|dir| [".venv-nvrtc", ".venv"].map(|venv| dir.join(venv).join("bin/python3")))
        .find(|python| python.is_file())
        .map_or_else(
            || "python3".to_string(),
            |python| python.display().to_string(),
        )
}
