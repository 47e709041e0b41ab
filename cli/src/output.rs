//! Everything the CLI prints goes through here, with control characters escaped
//! ([`kernelbook_core::terminal`]): a lab title cannot colour or retitle the terminal.
//!
//! - stdout is a [`Write`] that returns errors instead of panicking as `println!` does; a write
//!   to a closed pipe (`kernelbook list | head -1`) comes back as an error that
//!   [`is_closed_stdout`] recognises, and `main` ends the command quietly with status 0, as
//!   ripgrep does, except that a command's verdict ([`verdict`]) stands;
//! - notices on stderr are best-effort ([`notice`]): a closed or full stderr must not stop a
//!   build.

use kernelbook_core::terminal;
use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// The process's stdout, locked, with errors that say what failed.
pub struct Stdout(io::StdoutLock<'static>);

/// Locks stdout for a command's output.
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(failed)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(failed)
    }
}

/// The error a write to a closed stdout becomes.
#[derive(Debug)]
struct StdoutClosed;

impl fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for StdoutClosed {}

fn failed(err: io::Error) -> io::Error {
    if err.kind() == io::ErrorKind::BrokenPipe {
        io::Error::new(io::ErrorKind::BrokenPipe, StdoutClosed)
    } else {
        io::Error::new(err.kind(), format!("cannot write to stdout: {err}"))
    }
}

/// Whether `err` is an [`io::Error`] from writing to a closed stdout.
pub fn is_closed_stdout_io(err: &io::Error) -> bool {
    err.get_ref()
        .is_some_and(|inner| inner.is::<StdoutClosed>())
}

/// Whether `err` comes, at its root, from writing to a closed stdout.
pub fn is_closed_stdout(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .any(is_closed_stdout_io)
}

/// A command's exit status `code` once its report was `printed`: a closed stdout cuts the
/// report short but never changes a verdict (`check`'s grade, `tangle --check`, `run`'s failed
/// rows); any other write error is an error.
pub fn verdict(printed: io::Result<()>, code: ExitCode) -> io::Result<ExitCode> {
    match printed {
        Err(err) if is_closed_stdout_io(&err) => Ok(code),
        Err(err) => Err(err),
        Ok(()) => Ok(code),
    }
}

/// Writes `text` and a newline to `out`, control characters escaped.
pub fn line(out: &mut impl Write, text: &str) -> io::Result<()> {
    writeln!(out, "{}", terminal::safe(text))
}

/// `say!(out, "format", args…)`: one line through [`line`]; an `io::Result<()>`.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        $crate::output::line($out, &format!($($arg)*))
    };
}
pub(crate) use say;

/// A line on stderr, control characters escaped; if stderr is closed or full, nothing.
pub fn notice(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{}", terminal::safe(text));
}

/// Table cells with control characters escaped, so that the table's widths are those shown.
pub fn cells<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> Vec<String> {
    cells
        .into_iter()
        .map(|cell| terminal::safe(cell.as_ref()).into_owned())
        .collect()
}
