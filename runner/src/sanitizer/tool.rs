//! Finding compute-sanitizer, its command line for one tool and one kernel, and running it
//! with a time limit: found like `ncu` ([`crate::profile::find_ncu`]), run like it (its own
//! process group, killed whole at the limit), its text read from `--log-file` so that the
//! program's own output cannot mix with it.

use super::finding::{Report, Tool};
use super::parse::parse;
use crate::process::{self, Spawn};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Overrides where compute-sanitizer is looked for.
pub const SANITIZER_ENV: &str = "KERNELBOOK_SANITIZER";

/// Where the CUDA toolkit puts it, when it is not on `PATH` (after `$CUDA_HOME/bin`).
pub const TOOLKIT_PATHS: [&str; 3] = [
    "/usr/local/cuda/bin/compute-sanitizer",
    "/usr/local/cuda/compute-sanitizer/compute-sanitizer",
    "/opt/cuda/bin/compute-sanitizer",
];

/// The exit status the tool is asked to give when it found errors in a program that itself
/// succeeded (`--error-exitcode`).
pub const FOUND_ERRORS_EXIT: i32 = 86;

/// Records printed at most per run (`--print-limit`): enough to see which threads and blocks
/// share an error, few enough to keep the run short.
pub const PRINT_LIMIT: u32 = 64;

/// Bytes of padding memcheck puts after every allocation (`--padding`): the lab's buffers are
/// allocated back to back, so a write just past one would otherwise land in the next one,
/// unseen.
pub const PADDING_BYTES: u32 = 4096;

/// Where compute-sanitizer is: `$KERNELBOOK_SANITIZER` if set (and `None` if that is not an
/// executable file: a path given on purpose is not replaced by another), else
/// `compute-sanitizer` on `PATH`, else `$CUDA_HOME/bin`, else the toolkit's usual places.
pub fn find_sanitizer() -> Option<PathBuf> {
    let cuda_home = std::env::var_os("CUDA_HOME").or_else(|| std::env::var_os("CUDA_PATH"));
    find_in(
        std::env::var_os(SANITIZER_ENV),
        std::env::var_os("PATH"),
        cuda_home.map(|home| PathBuf::from(home).join("bin/compute-sanitizer")),
        &TOOLKIT_PATHS.map(PathBuf::from),
    )
}

pub(super) fn find_in(
    override_path: Option<OsString>,
    path_var: Option<OsString>,
    cuda_home: Option<PathBuf>,
    fallbacks: &[PathBuf],
) -> Option<PathBuf> {
    if let Some(path) = override_path.filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return is_executable(&path).then_some(path);
    }
    path_var
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("compute-sanitizer"))
        .chain(cuda_home)
        .chain(fallbacks.iter().cloned())
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

/// One run of one tool over one kernel.
#[derive(Debug, Clone, Copy)]
pub struct Check<'a> {
    pub tool: Tool,
    /// The kernel's entry point. kernelbook's kernels are `extern "C"`, so this is also the
    /// mangled name the tool's filter matches (`--kernel-name kne=NAME`).
    pub kernel: &'a str,
    /// Whether the kernel uses shared memory: initcheck then checks it too (a halo never
    /// loaded is a read of shared memory nothing wrote, which it misses by default).
    pub shared_memory: bool,
    /// Where the tool writes its report.
    pub log_file: &'a Path,
}

/// The command line of `check` over `child` (run with `child_args`):
///
/// `compute-sanitizer --tool TOOL --log-file LOG --print-limit 64 --error-exitcode 86
/// --show-backtrace device --launch-timeout 60 --kernel-name kne=KERNEL --launch-count 1
/// [memcheck: --padding 4096] [racecheck: --racecheck-report all] -- CHILD ARGS…`
///
/// initcheck checks global memory only: the CUDA 13.0 tool refuses an option to check shared
/// memory (`--initcheck-address-space`: "unrecognised option", on an H200), so a read of shared
/// memory nothing wrote is left to what the wrong output shows.
///
/// - `--show-backtrace device` keeps the device frames (a fault in a `__device__` helper is
///   placed at the kernel's line that called it) and drops the host's, which name only
///   kernelbook's own code;
/// - `--launch-count 1`: the first launch of the kernel is checked, the child's later ones
///   (none, when it runs the variant once) are not;
/// - `--launch-timeout`: the child starts (and opens the GPU) before its first CUDA call.
pub fn command(
    sanitizer: &Path,
    check: &Check<'_>,
    child: &Path,
    child_args: &[OsString],
) -> Command {
    let mut command = Command::new(sanitizer);
    command
        .arg("--tool")
        .arg(check.tool.name())
        .arg("--log-file")
        .arg(check.log_file)
        .args(["--print-limit", &PRINT_LIMIT.to_string()])
        .args(["--error-exitcode", &FOUND_ERRORS_EXIT.to_string()])
        .args(["--show-backtrace", "device", "--launch-timeout", "60"])
        .arg("--kernel-name")
        .arg(format!("kne={}", check.kernel))
        .args(["--launch-count", "1"]);
    match check.tool {
        Tool::Memcheck => {
            command.args(["--padding", &PADDING_BYTES.to_string()]);
        }
        Tool::Racecheck => {
            command.args(["--racecheck-report", "all"]);
        }
        Tool::Initcheck | Tool::Synccheck => {}
    }
    command.arg("--").arg(child).args(child_args);
    command
}

/// Why a tool's run gave no report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SanitizerError {
    #[error(
        "compute-sanitizer was not found{}: it comes with the CUDA toolkit; put it on PATH or set {SANITIZER_ENV} to it",
        tried(.0)
    )]
    Missing(Option<PathBuf>),
    #[error("compute-sanitizer cannot check kernels on this machine: {0}")]
    Refused(String),
    #[error(
        "compute-sanitizer ({tool}) did not finish within {} and was stopped",
        humantime::format_duration(*.limit)
    )]
    Timeout { tool: Tool, limit: Duration },
    #[error("compute-sanitizer ({tool}) failed ({status}): {tail}")]
    Failed {
        tool: Tool,
        status: String,
        tail: String,
    },
    #[error("cannot run compute-sanitizer: {0}")]
    Io(String),
}

fn tried(path: &Option<PathBuf>) -> String {
    match path {
        Some(path) => format!(" at {}", path.display()),
        None => String::new(),
    }
}

/// Runs a command from [`command`], writing `input` to the program's stdin (the measuring
/// child's request) where given, and reads the report from `log_file`. After `timeout` it
/// kills the tool and the program it checks.
pub fn run(
    command: Command,
    tool: Tool,
    log_file: &Path,
    input: Option<&[u8]>,
    timeout: Duration,
) -> Result<Report, SanitizerError> {
    run_capturing(command, tool, log_file, input, timeout).map(|(report, _)| report)
}

/// [`run`], and the checked program's standard output with it (where kernelbook's measuring
/// child, without a channel of its own, writes its events).
pub fn run_capturing(
    command: Command,
    tool: Tool,
    log_file: &Path,
    input: Option<&[u8]>,
    timeout: Duration,
) -> Result<(Report, String), SanitizerError> {
    let program = PathBuf::from(command.get_program());
    let how = Spawn {
        own_group: true,
        stderr_lines: usize::MAX,
    };
    let mut child = process::spawn(command, how).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            SanitizerError::Missing(Some(program.clone()))
        } else {
            SanitizerError::Io(format!("cannot start {}: {err}", program.display()))
        }
    })?;
    if let (Some(input), Some(mut stdin)) = (input, child.take_stdin()) {
        let input = input.to_vec();
        // A program that never reads its stdin must not block us.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    child.close_stdin();
    let stdout = child.stdout_to_end();
    let deadline = Instant::now() + timeout;
    let status = match child.wait_timeout(timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            return Err(SanitizerError::Timeout {
                tool,
                limit: timeout,
            });
        }
        Err(err) => return Err(SanitizerError::Io(format!("cannot wait for it: {err}"))),
    };
    // A process the tool left behind may hold the pipes open: it has what is left of the time
    // limit, two seconds at least; then dropping `child` kills the group.
    let until = deadline.max(Instant::now() + Duration::from_secs(2));
    let stdout = stdout.recv_until(until).unwrap_or_default();
    child.stderr().wait_for_end(until);
    let log = std::fs::read_to_string(log_file).unwrap_or_default();
    classify(
        tool,
        &status.to_string(),
        &log,
        &stdout,
        &child.stderr().text(),
    )
    .map(|report| (report, stdout))
}

/// What a finished run gave: its report, or why there is none.
pub fn classify(
    tool: Tool,
    status: &str,
    log: &str,
    stdout: &str,
    stderr: &str,
) -> Result<Report, SanitizerError> {
    // Without --log-file (or where the tool failed before opening it) the report is on stdout.
    let report = if log.trim().is_empty() {
        parse(stdout)
    } else {
        parse(log)
    };
    if let Some(why) = refusal(&report, stderr) {
        return Err(SanitizerError::Refused(why));
    }
    let ran = report.banner && (report.finished() || !report.findings.is_empty());
    if !ran || (report.findings.is_empty() && !report.tool_errors.is_empty()) {
        return Err(SanitizerError::Failed {
            tool,
            status: status.to_string(),
            tail: failure_tail(&report, stdout, stderr),
        });
    }
    Ok(report)
}

/// The tool's words where it refused the machine (an unsupported GPU, a sandbox without the
/// debugger interface, no permission).
fn refusal(report: &Report, stderr: &str) -> Option<String> {
    const REFUSALS: [&str; 7] = [
        "not supported",
        "internal sanitizer error",
        "unable to",
        "permission",
        "debugger",
        "failed to initialize",
        "initialization failed",
    ];
    report
        .tool_errors
        .iter()
        .map(String::as_str)
        .chain(stderr.lines().map(str::trim))
        .find(|line| {
            let lower = line.to_ascii_lowercase();
            REFUSALS.iter().any(|r| lower.contains(r))
        })
        .map(|line| line.trim_start_matches('=').trim().to_string())
}

/// The lines worth showing of a failed run: the tool's errors, else the end of its stderr (or
/// stdout), at most three, joined into one line.
fn failure_tail(report: &Report, stdout: &str, stderr: &str) -> String {
    const LINES: usize = 3;
    let lines: Vec<&str> = if report.tool_errors.is_empty() {
        let text = if stderr.trim().is_empty() {
            stdout
        } else {
            stderr
        };
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect()
    } else {
        report.tool_errors.iter().map(String::as_str).collect()
    };
    if lines.is_empty() {
        return "it printed nothing".to_string();
    }
    lines[lines.len().saturating_sub(LINES)..].join(" / ")
}
