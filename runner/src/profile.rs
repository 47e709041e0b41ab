//! Hardware counters from NVIDIA Nsight Compute (`ncu`): the bank conflicts, sectors per request
//! and DRAM bytes that Lab 3 reads, collected by running a program under `ncu` and parsing its
//! CSV.
//!
//! [`command`] builds the `ncu` command line (`--csv --page raw`: one row per profiled launch,
//! one column per metric), [`profile`] runs it with a time limit and turns what went wrong into
//! one instructive line ([`ProfileError`]), [`parse_csv`] reads the table and [`summarize`]
//! derives the figures the book shows ([`KernelProfile`]). Everything but [`profile`] is pure, so
//! it is tested on recorded output (`runner/tests/fixtures/ncu/`) on machines without a GPU.
//!
//! The raw page looks like this (one header row of column names, one row of units, then one row
//! per launch; numbers may carry thousands separators; `==PROF==` lines and the program's own
//! output come first):
//!
//! ```text
//! ==PROF== Connected to process 48213 (/work/main/target/release/kernelbook)
//! "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum",...
//! "","","","","","","","","","","","byte",...
//! "0","48213","kernelbook","127.0.0.1","transpose_naive","1","7","(32, 8, 1)","(256, 256, 1)","0","9.0","268,501,248",...
//! ```

use crate::process::{self, Spawn};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Overrides where `ncu` is looked for.
pub const NCU_ENV: &str = "KERNELBOOK_NCU";

/// Where the CUDA toolkit puts `ncu` when it is not on `PATH`.
pub const DEFAULT_NCU: &str = "/usr/local/cuda/bin/ncu";

pub const SHARED_LOAD_CONFLICTS: &str = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
pub const SHARED_STORE_CONFLICTS: &str = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
pub const SHARED_LOAD_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
pub const SHARED_LOAD_INSTRUCTIONS: &str = "smsp__sass_inst_executed_op_shared_ld.sum";
pub const SHARED_STORE_WAVEFRONTS: &str = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
pub const SHARED_STORE_INSTRUCTIONS: &str = "smsp__sass_inst_executed_op_shared_st.sum";
pub const GLOBAL_LOAD_SECTORS: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
pub const GLOBAL_LOAD_REQUESTS: &str = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
pub const GLOBAL_STORE_SECTORS: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
pub const GLOBAL_STORE_REQUESTS: &str = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
pub const DRAM_READ_BYTES: &str = "dram__bytes_read.sum";
pub const DRAM_WRITE_BYTES: &str = "dram__bytes_write.sum";
pub const L2_WRITE_SECTORS_FROM_L1: &str = "lts__t_sectors_srcunit_tex_op_write.sum";
pub const DURATION: &str = "gpu__time_duration.sum";
/// Achieved occupancy: the average share of the SMs' warp slots that held a warp while active.
pub const ACHIEVED_OCCUPANCY: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
/// Warp instructions executed, all kinds: with the bytes moved, the instructions a byte costs.
pub const WARP_INSTRUCTIONS: &str = "smsp__inst_executed.sum";
/// How many full rounds of resident blocks the grid needs: a fractional last wave is the tail.
pub const WAVES_PER_SM: &str = "launch__waves_per_multiprocessor";
/// DRAM throughput as a share of its peak over the kernel's time.
pub const DRAM_THROUGHPUT_PCT: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";

/// The L2's hit rate over every sector looked up (reads and writes, from the L1 and from
/// elsewhere): whether a buffer stayed in the L2 (the L2-control lab's window).
pub const L2_HIT_RATE: &str = "lts__t_sector_hit_rate.pct";

/// The bytes in one L1/L2 sector.
pub const SECTOR_BYTES: f64 = 32.0;

/// One Nsight Compute metric the course reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// ncu's name, as given to `--metrics`.
    pub name: &'static str,
    /// A short human label.
    pub label: &'static str,
    /// The unit of the value in [`KernelCounters::base_value`].
    pub unit: &'static str,
    /// Not needed for the core figures: [`summarize`] leaves what depends on it `None`.
    pub optional: bool,
}

/// The metrics the course shows (Lab 3's table), in the order the book lists them.
pub const METRICS: &[Metric] = &[
    Metric {
        name: SHARED_LOAD_CONFLICTS,
        label: "shared-load bank conflicts",
        unit: "conflicts",
        optional: false,
    },
    Metric {
        name: SHARED_STORE_CONFLICTS,
        label: "shared-store bank conflicts",
        unit: "conflicts",
        optional: false,
    },
    Metric {
        name: GLOBAL_LOAD_SECTORS,
        label: "global load sectors",
        unit: "sectors",
        optional: false,
    },
    Metric {
        name: GLOBAL_LOAD_REQUESTS,
        label: "global load requests",
        unit: "requests",
        optional: false,
    },
    Metric {
        name: GLOBAL_STORE_SECTORS,
        label: "global store sectors",
        unit: "sectors",
        optional: false,
    },
    Metric {
        name: GLOBAL_STORE_REQUESTS,
        label: "global store requests",
        unit: "requests",
        optional: false,
    },
    Metric {
        name: DRAM_READ_BYTES,
        label: "DRAM bytes read",
        unit: "bytes",
        optional: false,
    },
    Metric {
        name: DRAM_WRITE_BYTES,
        label: "DRAM bytes written",
        unit: "bytes",
        optional: false,
    },
    Metric {
        name: SHARED_LOAD_INSTRUCTIONS,
        label: "shared load instructions",
        unit: "warp instructions",
        optional: true,
    },
    Metric {
        name: SHARED_LOAD_WAVEFRONTS,
        label: "shared load wavefronts",
        unit: "wavefronts",
        optional: true,
    },
    Metric {
        name: SHARED_STORE_INSTRUCTIONS,
        label: "shared store instructions",
        unit: "warp instructions",
        optional: true,
    },
    Metric {
        name: SHARED_STORE_WAVEFRONTS,
        label: "shared store wavefronts",
        unit: "wavefronts",
        optional: true,
    },
    Metric {
        name: L2_WRITE_SECTORS_FROM_L1,
        label: "L1 → L2 write sectors",
        unit: "sectors",
        optional: true,
    },
    Metric {
        name: ACHIEVED_OCCUPANCY,
        label: "achieved occupancy",
        unit: "%",
        optional: true,
    },
    Metric {
        name: WARP_INSTRUCTIONS,
        label: "warp instructions executed",
        unit: "warp instructions",
        optional: true,
    },
    Metric {
        name: WAVES_PER_SM,
        label: "waves per SM",
        unit: "waves",
        optional: true,
    },
    Metric {
        name: DRAM_THROUGHPUT_PCT,
        label: "DRAM throughput",
        unit: "% of peak",
        optional: true,
    },
    Metric {
        name: L2_HIT_RATE,
        label: "L2 sector hit rate",
        unit: "%",
        optional: true,
    },
    Metric {
        name: DURATION,
        label: "kernel duration",
        unit: "ns",
        optional: false,
    },
];

/// The names of [`METRICS`], for [`command`]; `with_optional` false leaves out the optional ones
/// (for an ncu or GPU that rejects one of them).
pub fn metric_names(with_optional: bool) -> Vec<&'static str> {
    METRICS
        .iter()
        .filter(|m| with_optional || !m.optional)
        .map(|m| m.name)
        .collect()
}

/// The label and unit of one of [`METRICS`].
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// Why profiling gave no counters. Each message is one line that says what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "Nsight Compute (`ncu`) was not found{}: install Nsight Compute (it comes with the CUDA toolkit) and put `ncu` on PATH, or set {NCU_ENV} to its path",
        tried(.0)
    )]
    NcuMissing(Option<PathBuf>),
    #[error(
        "ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): run it as root, or let every user profile by loading the nvidia driver with NVreg_RestrictProfilingToAdminUsers=0 (see https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
    )]
    Permission,
    #[error("ncu failed ({status}): {tail}")]
    Failed { status: String, tail: String },
    #[error("{}", no_kernel_message(.filter, .available))]
    NoKernelMatched {
        /// The `--kernel-name` filter, where known.
        filter: Option<String>,
        /// The kernels the program launched, where ncu listed them.
        available: Vec<String>,
    },
    #[error(
        "ncu did not finish within {} and was stopped: it replays every profiled launch many times, so profile fewer launches (--launch-count) or a smaller problem",
        humantime::format_duration(*.limit)
    )]
    Timeout { limit: Duration },
    #[error("cannot read ncu's CSV output (line {line}): {why}")]
    Malformed { line: usize, why: String },
    #[error("cannot run ncu: {0}")]
    Io(String),
}

fn tried(path: &Option<PathBuf>) -> String {
    match path {
        Some(path) => format!(" at {}", path.display()),
        None => String::new(),
    }
}

fn no_kernel_message(filter: &Option<String>, available: &[String]) -> String {
    let mut message = match filter {
        Some(filter) => format!("ncu profiled no kernel: no launch matched `{filter}`"),
        None => "ncu profiled no kernel: no launch matched the kernel filter".to_string(),
    };
    if available.is_empty() {
        message.push_str(" (check the kernel's name, and that the program launches it)");
    } else {
        const SHOWN: usize = 8;
        let mut names = available[..available.len().min(SHOWN)].join(", ");
        if available.len() > SHOWN {
            names.push_str(&format!(" and {} more", available.len() - SHOWN));
        }
        message.push_str(&format!("; the program launched {names}"));
    }
    message
}

/// One value as ncu printed it: the number and its unit (empty for plain counts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counter {
    pub value: f64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
}

impl Counter {
    /// The value in the unit's base: bytes, sectors, … without a K/M/G/T prefix, and times in
    /// nanoseconds. (With `--print-units base`, which [`command`] passes, ncu prints these
    /// already.)
    pub fn base_value(&self) -> f64 {
        self.value * unit_scale(&self.unit)
    }
}

/// How many base units one `unit` is.
fn unit_scale(unit: &str) -> f64 {
    match unit {
        "nsecond" | "ns" => return 1.0,
        "usecond" | "us" => return 1e3,
        "msecond" | "ms" => return 1e6,
        "second" | "s" => return 1e9,
        _ => {}
    }
    // ncu scales with decimal prefixes: Kbyte, Mbyte, Gsector, ...
    let mut chars = unit.chars();
    let factor = match chars.next() {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some('T') => 1e12,
        Some('P') => 1e15,
        _ => return 1.0,
    };
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() => factor,
        _ => 1.0,
    }
}

/// The counters of one profiled kernel launch (one row of ncu's raw page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCounters {
    /// ncu's ID of the launch, counted over the profiled launches of the session.
    pub id: u64,
    /// The kernel's function name (`Kernel Name`).
    pub kernel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Compute capability, e.g. "9.0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<[u32; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u32; 3]>,
    /// Metric name → numeric value.
    pub metrics: BTreeMap<String, Counter>,
    /// Metric name → what ncu printed where it gave no number (e.g. "n/a").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub text: BTreeMap<String, String>,
}

impl KernelCounters {
    /// The value of `metric` as printed.
    pub fn value(&self, metric: &str) -> Option<f64> {
        self.metrics.get(metric).map(|c| c.value)
    }

    /// The value of `metric` in its base unit ([`Counter::base_value`]).
    pub fn base_value(&self, metric: &str) -> Option<f64> {
        self.metrics.get(metric).map(Counter::base_value)
    }
}

pub use kernelbook_core::results::KernelProfile;

/// The figures of [`KernelProfile`] from one launch's counters.
pub fn summarize(counters: &KernelCounters) -> KernelProfile {
    let get = |name: &str| counters.base_value(name);
    let ratio = |num: Option<f64>, den: Option<f64>| match (num, den) {
        (Some(num), Some(den)) if den > 0.0 => Some(num / den),
        _ => None,
    };
    let shared_loads = get(SHARED_LOAD_INSTRUCTIONS);
    let shared_stores = get(SHARED_STORE_INSTRUCTIONS);
    let (read, write) = (get(DRAM_READ_BYTES), get(DRAM_WRITE_BYTES));
    KernelProfile {
        kernel: counters.kernel.clone(),
        launch_id: counters.id,
        duration_ns: get(DURATION),
        shared_load_bank_conflicts: get(SHARED_LOAD_CONFLICTS),
        shared_store_bank_conflicts: get(SHARED_STORE_CONFLICTS),
        shared_load_instructions: shared_loads,
        conflicts_per_shared_load: ratio(get(SHARED_LOAD_CONFLICTS), shared_loads),
        wavefronts_per_shared_load: ratio(get(SHARED_LOAD_WAVEFRONTS), shared_loads),
        shared_store_instructions: shared_stores,
        conflicts_per_shared_store: ratio(get(SHARED_STORE_CONFLICTS), shared_stores),
        wavefronts_per_shared_store: ratio(get(SHARED_STORE_WAVEFRONTS), shared_stores),
        global_load_sectors_per_request: ratio(get(GLOBAL_LOAD_SECTORS), get(GLOBAL_LOAD_REQUESTS)),
        global_store_sectors_per_request: ratio(
            get(GLOBAL_STORE_SECTORS),
            get(GLOBAL_STORE_REQUESTS),
        ),
        dram_read_bytes: read,
        dram_write_bytes: write,
        dram_bytes: read.zip(write).map(|(r, w)| r + w),
        l2_write_bytes_from_l1: get(L2_WRITE_SECTORS_FROM_L1).map(|s| s * SECTOR_BYTES),
        achieved_occupancy_pct: get(ACHIEVED_OCCUPANCY),
        warp_instructions: get(WARP_INSTRUCTIONS),
        waves_per_sm: get(WAVES_PER_SM),
        dram_throughput_pct: get(DRAM_THROUGHPUT_PCT),
        l2_hit_rate_pct: get(L2_HIT_RATE),
    }
}

/// Where `ncu` is: `$KERNELBOOK_NCU` if set (and `None` if that is not an executable file: a
/// path given on purpose is not silently replaced by another), else `ncu` on `PATH`, else
/// [`DEFAULT_NCU`]; `None` if there is none.
pub fn find_ncu() -> Option<PathBuf> {
    find_ncu_in(
        std::env::var_os(NCU_ENV),
        std::env::var_os("PATH"),
        Path::new(DEFAULT_NCU),
    )
}

fn find_ncu_in(
    override_path: Option<OsString>,
    path_var: Option<OsString>,
    fallback: &Path,
) -> Option<PathBuf> {
    if let Some(path) = override_path.filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return is_executable(&path).then_some(path);
    }
    path_var
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("ncu"))
        .chain(std::iter::once(fallback.to_path_buf()))
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

/// The `ncu` command that profiles the launches of `child` (run with `child_args`) whose
/// function name matches `kernel_regex`, collecting `metrics`:
///
/// `ncu --csv --page raw --print-units base --print-kernel-base function --kernel-name-base
/// function --clock-control none --target-processes all --metrics M1,M2,… --kernel-name
/// regex:REGEX [--launch-count N] CHILD ARGS…`
///
/// - `--print-units base` keeps every value in its base unit (byte, nsecond), not rescaled per
///   launch;
/// - `--print-kernel-base function` and `--kernel-name-base function` name and filter kernels by
///   their bare function name (`transpose_tiled`, not a signature);
/// - `--clock-control none` profiles at the clocks the timed runs use (by default ncu locks them
///   to base clocks, which changes durations but not counts);
/// - ncu matches the regex anywhere in the name: anchor it (`^transpose_tiled$`) to pick one;
/// - `launch_count` stops after that many matching launches (the runner launches each kernel
///   many times, and ncu replays every profiled launch once per counter pass).
///
/// The locale's numeric format is set to C, so that numbers come with `.` as decimal point.
pub fn command(
    ncu: &Path,
    metrics: &[&str],
    kernel_regex: &str,
    launch_count: Option<u32>,
    child: &Path,
    child_args: &[OsString],
) -> Command {
    let mut command = Command::new(ncu);
    command.args([
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--print-kernel-base",
        "function",
        "--kernel-name-base",
        "function",
        "--clock-control",
        "none",
        "--target-processes",
        "all",
    ]);
    if !metrics.is_empty() {
        command.arg("--metrics").arg(metrics.join(","));
    }
    command
        .arg("--kernel-name")
        .arg(format!("regex:{kernel_regex}"));
    if let Some(count) = launch_count {
        command.arg("--launch-count").arg(count.to_string());
    }
    command.arg(child).args(child_args);
    command.env_remove("LC_ALL").env("LC_NUMERIC", "C");
    command
}

/// Runs an `ncu` command (from [`command`]) with its stdin closed, and returns the counters of
/// every launch it profiled. After `timeout` it kills ncu and the program it profiles.
pub fn profile(command: Command, timeout: Duration) -> Result<Vec<KernelCounters>, ProfileError> {
    run(command, None, timeout)
}

/// [`profile`], writing `input` to the program's stdin (as the runner's measuring children
/// expect their request).
pub fn profile_with_input(
    command: Command,
    input: &[u8],
    timeout: Duration,
) -> Result<Vec<KernelCounters>, ProfileError> {
    run(command, Some(input), timeout)
}

/// [`profile_with_input`], also giving back everything the session printed on stdout (where
/// the profiled program's own lines are, before ncu's table).
pub fn run_session(
    command: Command,
    input: &[u8],
    timeout: Duration,
) -> Result<(Vec<KernelCounters>, String), ProfileError> {
    run_keeping_stdout(command, Some(input), timeout)
}

fn run(
    command: Command,
    input: Option<&[u8]>,
    timeout: Duration,
) -> Result<Vec<KernelCounters>, ProfileError> {
    run_keeping_stdout(command, input, timeout).map(|(kernels, _)| kernels)
}

fn run_keeping_stdout(
    command: Command,
    input: Option<&[u8]>,
    timeout: Duration,
) -> Result<(Vec<KernelCounters>, String), ProfileError> {
    let program = PathBuf::from(command.get_program());
    let filter = kernel_filter(&command);
    // Its own process group, so that a timeout ends the profiled program too, not only ncu.
    // All of stderr is kept: ncu's permission error may come before anything else.
    let how = Spawn {
        own_group: true,
        stderr_lines: usize::MAX,
    };
    let mut child = process::spawn(command, how).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            ProfileError::NcuMissing(Some(program.clone()))
        } else {
            ProfileError::Io(format!("cannot start {}: {err}", program.display()))
        }
    })?;
    if let (Some(input), Some(mut stdin)) = (input, child.take_stdin()) {
        let input = input.to_vec();
        // A program that never reads its stdin must not block us.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    // Without input, stdin is closed: the program reads the end of it at once.
    child.close_stdin();
    let stdout = child.stdout_to_end();

    // Dropping `child` on the way out kills ncu's group: the profiled program, and whatever
    // ncu left running after it exited.
    let deadline = Instant::now() + timeout;
    let status = match child.wait_timeout(timeout) {
        Ok(Some(status)) => status,
        Ok(None) => return Err(ProfileError::Timeout { limit: timeout }),
        Err(err) => return Err(ProfileError::Io(format!("cannot wait for ncu: {err}"))),
    };
    // ncu has exited; a process it left behind may still hold the pipes open: it has what is
    // left of the time limit, two seconds at least.
    let until = deadline.max(Instant::now() + Duration::from_secs(2));
    let (Ok(stdout), true) = (stdout.recv_until(until), child.stderr().wait_for_end(until)) else {
        return Err(ProfileError::Timeout { limit: timeout });
    };
    let kernels = classify(
        status.success(),
        &status.to_string(),
        &stdout,
        &child.stderr().text(),
        filter,
    )?;
    Ok((kernels, stdout))
}

/// The `--kernel-name` (or `-k`) argument of an ncu command.
fn kernel_filter(command: &Command) -> Option<String> {
    let mut args = command.get_args().map(OsStr::to_string_lossy);
    while let Some(arg) = args.next() {
        if arg == "--kernel-name" || arg == "-k" {
            return args.next().map(|a| a.into_owned());
        }
        if let Some(value) = arg.strip_prefix("--kernel-name=") {
            return Some(value.to_string());
        }
    }
    None
}

/// What an ncu run gave, from its exit status and output.
fn classify(
    success: bool,
    status: &str,
    stdout: &str,
    stderr: &str,
    filter: Option<String>,
) -> Result<Vec<KernelCounters>, ProfileError> {
    if is_permission_error(stdout) || is_permission_error(stderr) {
        return Err(ProfileError::Permission);
    }
    let failed = || ProfileError::Failed {
        status: status.to_string(),
        tail: failure_tail(stdout, stderr),
    };
    match parse_csv(stdout) {
        // Counters were collected; a program that failed after its kernels ran does not void
        // them.
        Ok(kernels) => Ok(kernels),
        Err(ProfileError::NoKernelMatched { available, .. }) => {
            // ncu says so when its filter matched nothing; an exit status that is not 0 without
            // that, or with an error, means it failed before it could have.
            let said_none =
                stdout.contains(NO_KERNELS_PROFILED) || stderr.contains(NO_KERNELS_PROFILED);
            if success || (said_none && !has_error_lines(stdout, stderr)) {
                Err(ProfileError::NoKernelMatched { filter, available })
            } else {
                Err(failed())
            }
        }
        Err(_) if !success => Err(failed()),
        Err(err) => Err(err),
    }
}

/// ncu's warning when no launch matched its filters.
const NO_KERNELS_PROFILED: &str = "No kernels were profiled";

fn is_permission_error(text: &str) -> bool {
    text.contains("ERR_NVGPUCTRPERM")
}

fn has_error_lines(stdout: &str, stderr: &str) -> bool {
    stdout
        .lines()
        .chain(stderr.lines())
        .any(|l| l.trim_start().starts_with("==ERROR=="))
}

/// The last lines worth showing of a failed run: ncu's `==ERROR==` lines if it printed any,
/// else the end of its stderr (or stdout), joined into one line.
fn failure_tail(stdout: &str, stderr: &str) -> String {
    const LINES: usize = 3;
    let errors: Vec<&str> = stdout
        .lines()
        .chain(stderr.lines())
        .map(str::trim)
        .filter(|l| l.starts_with("==ERROR=="))
        .collect();
    let lines: Vec<&str> = if errors.is_empty() {
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
        errors
    };
    if lines.is_empty() {
        return "it printed nothing".to_string();
    }
    lines[lines.len().saturating_sub(LINES)..].join(" / ")
}

/// The columns of ncu's raw page that describe a launch rather than measure it.
const ID: &str = "ID";
const KERNEL_NAME: &str = "Kernel Name";

/// One CSV table of ncu's raw page: its header and, once read, its units row.
struct Table {
    columns: Vec<String>,
    id: usize,
    kernel: usize,
    units: Option<Vec<String>>,
    rows: usize,
}

impl Table {
    fn new(columns: Vec<String>) -> Option<Table> {
        let id = columns.iter().position(|c| c == ID)?;
        let kernel = columns.iter().position(|c| c == KERNEL_NAME)?;
        Some(Table {
            columns,
            id,
            kernel,
            units: None,
            rows: 0,
        })
    }

    fn column(&self, fields: &[String], name: &str) -> Option<String> {
        let i = self.columns.iter().position(|c| c == name)?;
        fields
            .get(i)
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
    }

    fn record(&self, id: u64, fields: &[String]) -> KernelCounters {
        let mut metrics = BTreeMap::new();
        let mut text = BTreeMap::new();
        for (i, (column, field)) in self.columns.iter().zip(fields).enumerate() {
            // Every metric name has a `__` (unit__counter...); the launch's description does not.
            if !column.contains("__") {
                continue;
            }
            let unit = self
                .units
                .as_ref()
                .and_then(|u| u.get(i))
                .map(|u| u.trim().to_string())
                .unwrap_or_default();
            match parse_number(field) {
                Some(value) => {
                    metrics.insert(column.clone(), Counter { value, unit });
                }
                None => {
                    text.insert(column.clone(), field.trim().to_string());
                }
            }
        }
        KernelCounters {
            id,
            kernel: fields[self.kernel].trim().to_string(),
            process_id: self
                .column(fields, "Process ID")
                .and_then(|p| p.parse().ok()),
            device: self.column(fields, "Device"),
            compute_capability: self.column(fields, "CC"),
            block: self
                .column(fields, "Block Size")
                .and_then(|s| parse_dim3(&s)),
            grid: self
                .column(fields, "Grid Size")
                .and_then(|s| parse_dim3(&s)),
            metrics,
            text,
        }
    }
}

/// Reads ncu's `--csv --page raw` output: one [`KernelCounters`] per profiled launch, in order.
///
/// Anything before the header row (`"ID","Process ID",…`) is skipped — `==PROF==` lines and the
/// program's own output — as are `==…==` lines and non-CSV lines after it. The row after the
/// header gives the units where it has no ID. A second header (ncu prints one per profiled
/// process) starts a new table. Values keep their unit; thousands separators are dropped;
/// values that are no number ("n/a") go to [`KernelCounters::text`].
///
/// No launch at all is [`ProfileError::NoKernelMatched`] (with the kernels ncu listed as
/// available, if it did), or [`ProfileError::Permission`] where ncu said ERR_NVGPUCTRPERM.
pub fn parse_csv(text: &str) -> Result<Vec<KernelCounters>, ProfileError> {
    let mut kernels = Vec::new();
    let mut table: Option<Table> = None;
    let mut rejected: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("==") {
            continue;
        }
        let fields = split_csv_line(line);
        if let Some(fields) = &fields
            && fields.first().is_some_and(|f| f == ID)
            && let Some(new) = Table::new(fields.clone())
        {
            table = Some(new);
            continue;
        }
        let Some(table) = table.as_mut() else {
            continue;
        };
        // After the header, only quoted lines are ncu's: anything else is the program's output.
        let quoted = line.starts_with('"');
        let fields = match fields {
            Some(fields) if fields.len() == table.columns.len() => fields,
            Some(fields) => {
                if quoted {
                    rejected.get_or_insert((
                        number + 1,
                        format!(
                            "a row of {} fields under a header of {}",
                            fields.len(),
                            table.columns.len()
                        ),
                    ));
                }
                continue;
            }
            None => {
                if quoted {
                    rejected.get_or_insert((number + 1, "an unterminated quote".to_string()));
                }
                continue;
            }
        };
        let id = fields[table.id].trim();
        if id.is_empty() {
            if table.units.is_none() && table.rows == 0 {
                table.units = Some(fields);
            }
            continue;
        }
        match id.parse::<u64>() {
            Ok(id) => {
                kernels.push(table.record(id, &fields));
                table.rows += 1;
            }
            Err(_) if quoted => {
                rejected.get_or_insert((number + 1, format!("a launch ID of {id:?}")));
            }
            Err(_) => {}
        }
    }
    if !kernels.is_empty() {
        return Ok(kernels);
    }
    if is_permission_error(text) {
        return Err(ProfileError::Permission);
    }
    if let Some((line, why)) = rejected {
        return Err(ProfileError::Malformed { line, why });
    }
    Err(ProfileError::NoKernelMatched {
        filter: None,
        available: available_kernels(text),
    })
}

/// The list ncu prints after "No kernels were profiled." (ncu 2023 and later):
/// `Available Kernels:` then `1. name` lines.
fn available_kernels(text: &str) -> Vec<String> {
    let mut lines = text
        .lines()
        .skip_while(|l| l.trim() != "Available Kernels:");
    lines.next();
    lines
        .map(str::trim)
        .map_while(|line| {
            let (number, name) = line.split_once(". ")?;
            (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
                .then(|| name.trim().to_string())
        })
        .collect()
}

/// Splits one CSV line: fields separated by commas, each either bare or in double quotes (with
/// `""` for a quote inside). `None` for an unterminated quote.
fn split_csv_line(line: &str) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut in_quotes = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => in_quotes = false,
                _ => field.push(c),
            }
        } else {
            match c {
                ',' => {
                    fields.push(std::mem::take(&mut field));
                    was_quoted = false;
                }
                '"' if field.is_empty() && !was_quoted => {
                    in_quotes = true;
                    was_quoted = true;
                }
                _ => field.push(c),
            }
        }
    }
    if in_quotes {
        return None;
    }
    fields.push(field);
    Some(fields)
}

/// A number as ncu prints it: "1,234,567", "0.5", "4.0e-05". `None` for "", "n/a" and the like.
fn parse_number(field: &str) -> Option<f64> {
    let cleaned: String = field.trim().chars().filter(|&c| c != ',').collect();
    if cleaned.is_empty() {
        return None;
    }
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// "(32, 8, 1)" → [32, 8, 1].
fn parse_dim3(text: &str) -> Option<[u32; 3]> {
    let inner = text.trim().trim_start_matches('(').trim_end_matches(')');
    let mut parts = inner.split(',').map(|p| p.trim().parse::<u32>());
    let dims = [
        parts.next()?.ok()?,
        parts.next()?.ok()?,
        parts.next()?.ok()?,
    ];
    parts.next().is_none().then_some(dims)
}

/// "Nsight Compute 2025.3.0" from `ncu --version`.
pub(crate) fn ncu_version(ncu: &Path) -> Option<String> {
    let mut command = Command::new(ncu);
    command.arg("--version");
    let how = Spawn {
        own_group: true,
        stderr_lines: 0,
    };
    let mut child = process::spawn(command, how).ok()?;
    child.close_stdin();
    let text = child
        .stdout_to_end()
        .recv_timeout(Duration::from_secs(30))
        .ok()?;
    let version = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Version "))
        .next_back()
        .map(|v| v.split_whitespace().next().unwrap_or(v).to_string())?;
    Some(format!("Nsight Compute {version}"))
}

/// A kernel name as a literal in ncu's regular expressions.
pub(crate) fn regex_escape(name: &str) -> String {
    name.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRANSPOSE: &str = include_str!("../tests/fixtures/ncu/transpose_raw.txt");
    const PERMISSION: &str = include_str!("../tests/fixtures/ncu/permission.txt");
    const NO_KERNELS: &str = include_str!("../tests/fixtures/ncu/no_kernels.txt");

    fn parsed_transpose() -> Vec<KernelCounters> {
        parse_csv(TRANSPOSE).expect("the transpose fixture parses")
    }

    #[test]
    fn parses_three_transpose_launches_past_leading_output() {
        let kernels = parsed_transpose();
        let names: Vec<&str> = kernels.iter().map(|k| k.kernel.as_str()).collect();
        assert_eq!(
            names,
            ["transpose_naive", "transpose_tiled", "transpose_padded"]
        );
        assert_eq!(kernels.iter().map(|k| k.id).collect::<Vec<_>>(), [0, 1, 2]);
        let naive = &kernels[0];
        assert_eq!(naive.process_id, Some(48213));
        assert_eq!(naive.device.as_deref(), Some("0"));
        assert_eq!(naive.compute_capability.as_deref(), Some("9.0"));
        assert_eq!(naive.block, Some([32, 8, 1]));
        assert_eq!(naive.grid, Some([256, 256, 1]));
        // 12 metric columns, none of the launch's description among them.
        assert_eq!(naive.metrics.len(), 12);
        assert!(naive.text.is_empty());
        assert!(!naive.metrics.contains_key("Block Size"));
    }

    #[test]
    fn drops_thousands_separators_and_keeps_units() {
        let kernels = parsed_transpose();
        let tiled = &kernels[1];
        assert_eq!(
            tiled.metrics[SHARED_LOAD_CONFLICTS],
            Counter {
                value: 65_011_712.0,
                unit: String::new()
            }
        );
        assert_eq!(
            tiled.metrics[DRAM_READ_BYTES],
            Counter {
                value: 268_472_576.0,
                unit: "byte".into()
            }
        );
        assert_eq!(tiled.value(DURATION), Some(187_936.0));
        assert_eq!(tiled.metrics[DURATION].unit, "nsecond");
        assert_eq!(tiled.metrics[GLOBAL_LOAD_SECTORS].unit, "sector");
        assert_eq!(kernels[2].value(SHARED_STORE_CONFLICTS), Some(1_117.0));
    }

    #[test]
    fn summarizes_each_rung_of_the_transpose_ladder() {
        let profiles: Vec<KernelProfile> = parsed_transpose().iter().map(summarize).collect();
        let (naive, tiled, padded) = (&profiles[0], &profiles[1], &profiles[2]);

        // Naive: coalesced loads, one sector per lane on the store side, no shared memory.
        assert_eq!(naive.global_load_sectors_per_request, Some(4.0));
        assert_eq!(naive.global_store_sectors_per_request, Some(32.0));
        assert_eq!(naive.shared_load_instructions, Some(0.0));
        assert_eq!(naive.conflicts_per_shared_load, None);
        assert_eq!(naive.l2_write_bytes_from_l1, Some(67_108_864.0 * 32.0));

        // Tiled: 31 conflicts per shared load, ~32 wavefronts per instruction.
        assert_eq!(tiled.conflicts_per_shared_load, Some(31.0));
        let wavefronts = tiled.wavefronts_per_shared_load.expect("wavefronts");
        assert!((wavefronts - 32.0).abs() < 0.01, "{wavefronts}");
        assert_eq!(tiled.global_store_sectors_per_request, Some(4.0));

        // Padded: the conflicts are a residue.
        let residue = padded.conflicts_per_shared_load.expect("conflicts");
        assert!(residue < 0.01, "{residue}");
        assert_eq!(padded.duration_ns, Some(139_552.0));
        assert_eq!(padded.dram_read_bytes, Some(268_468_480.0));
        assert_eq!(padded.dram_bytes, Some(268_468_480.0 + 268_394_496.0));
        assert_eq!(padded.kernel, "transpose_padded");
        assert_eq!(padded.launch_id, 2);
    }

    #[test]
    fn a_missing_metric_gives_none_not_zero() {
        let mut counters = parsed_transpose().remove(1);
        counters.metrics.remove(SHARED_LOAD_INSTRUCTIONS);
        counters.metrics.remove(DRAM_WRITE_BYTES);
        counters.metrics.remove(GLOBAL_STORE_REQUESTS);
        let profile = summarize(&counters);
        assert_eq!(profile.shared_load_instructions, None);
        assert_eq!(profile.conflicts_per_shared_load, None);
        assert_eq!(profile.wavefronts_per_shared_load, None);
        assert_eq!(profile.dram_write_bytes, None);
        assert_eq!(profile.dram_bytes, None);
        assert_eq!(profile.global_store_sectors_per_request, None);
        // What does not depend on them is still there.
        assert_eq!(profile.shared_load_bank_conflicts, Some(65_011_712.0));
        assert_eq!(profile.dram_read_bytes, Some(268_472_576.0));
        assert_eq!(profile.global_load_sectors_per_request, Some(4.0));
    }

    #[test]
    fn profiles_round_trip_through_json() {
        let kernels = parsed_transpose();
        let profile = summarize(&kernels[1]);
        let json = serde_json::to_string(&profile).expect("serializes");
        let back: KernelProfile = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, profile);
        let json = serde_json::to_string(&kernels).expect("serializes");
        let back: Vec<KernelCounters> = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, kernels);
        // A stored profile from before a figure existed still reads, as None.
        let old: KernelProfile =
            serde_json::from_str(r#"{"kernel": "k", "launch_id": 0, "duration_ns": 5.0}"#)
                .expect("deserializes");
        assert_eq!(old.duration_ns, Some(5.0));
        assert_eq!(old.dram_bytes, None);
    }

    #[test]
    fn reads_the_units_row_and_scales_prefixed_units() {
        let text = concat!(
            "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\",\"sm__x.sum\"\n",
            "\"\",\"\",\"Mbyte\",\"usecond\",\"\"\n",
            "\"5\",\"copy_tile\",\"268.44\",\"139.55\",\"7\"\n",
        );
        let kernels = parse_csv(text).expect("parses");
        assert_eq!(kernels.len(), 1);
        let k = &kernels[0];
        assert_eq!(k.id, 5);
        assert_eq!(k.metrics[DRAM_READ_BYTES].unit, "Mbyte");
        assert_eq!(k.value(DRAM_READ_BYTES), Some(268.44));
        let bytes = k.base_value(DRAM_READ_BYTES).expect("bytes");
        assert!((bytes - 268_440_000.0).abs() < 1e-3, "{bytes}");
        let ns = k.base_value(DURATION).expect("ns");
        assert!((ns - 139_550.0).abs() < 1e-6, "{ns}");
        assert_eq!(k.base_value("sm__x.sum"), Some(7.0));
        // Launch columns absent from this header are simply unknown.
        assert_eq!(k.block, None);
        assert_eq!(k.process_id, None);
    }

    #[test]
    fn a_table_without_units_row_and_odd_values() {
        let text = concat!(
            "kernelbook: measuring\n",
            "\"ID\",\"Kernel Name\",\"Block Size\",\"dram__bytes_read.sum\",\"l1tex__x.sum\",\"l1tex__y.ratio\"\n",
            "\"0\",\"k(int, float *)\",\"(256, 1, 1)\",\"n/a\",\"1,000\",\"4.0e-01\"\n",
            "a line the program printed late\n",
            "==PROF== Disconnected from process 1\n",
            "\"1\",\"k(int, float *)\",\"(256, 1, 1)\",\"12\",\"0\",\"\"\n",
        );
        let kernels = parse_csv(text).expect("parses");
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[0].kernel, "k(int, float *)");
        assert_eq!(kernels[0].block, Some([256, 1, 1]));
        assert_eq!(kernels[0].value(DRAM_READ_BYTES), None);
        assert_eq!(kernels[0].text[DRAM_READ_BYTES], "n/a");
        assert_eq!(kernels[0].value("l1tex__x.sum"), Some(1000.0));
        assert_eq!(kernels[0].value("l1tex__y.ratio"), Some(0.4));
        assert_eq!(kernels[0].metrics["l1tex__x.sum"].unit, "");
        assert_eq!(kernels[1].value(DRAM_READ_BYTES), Some(12.0));
        assert_eq!(kernels[1].text["l1tex__y.ratio"], "");
    }

    #[test]
    fn a_second_header_starts_a_new_table() {
        let text = concat!(
            "\"ID\",\"Process ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n",
            "\"\",\"\",\"\",\"nsecond\"\n",
            "\"0\",\"10\",\"a\",\"1,500\"\n",
            "\"ID\",\"Process ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\"\n",
            "\"\",\"\",\"\",\"byte\",\"nsecond\"\n",
            "\"1\",\"11\",\"b\",\"64\",\"2,500\"\n",
        );
        let kernels = parse_csv(text).expect("parses");
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[0].process_id, Some(10));
        assert_eq!(kernels[1].process_id, Some(11));
        assert_eq!(kernels[1].value(DRAM_READ_BYTES), Some(64.0));
        assert_eq!(kernels[1].value(DURATION), Some(2500.0));
    }

    #[test]
    fn empty_output_is_no_kernel_matched() {
        for text in ["", "\n\n", "==PROF== Disconnected from process 7\n"] {
            assert_eq!(
                parse_csv(text),
                Err(ProfileError::NoKernelMatched {
                    filter: None,
                    available: vec![]
                })
            );
        }
        // A header with no launch under it is the same.
        let header_only = concat!(
            "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n",
            "\"\",\"\",\"nsecond\"\n"
        );
        assert!(matches!(
            parse_csv(header_only),
            Err(ProfileError::NoKernelMatched { .. })
        ));
    }

    #[test]
    fn no_kernel_matched_lists_what_the_program_launched() {
        let err = parse_csv(NO_KERNELS).expect_err("no kernel");
        assert_eq!(
            err,
            ProfileError::NoKernelMatched {
                filter: None,
                available: vec![
                    "copy_tile".into(),
                    "transpose_naive".into(),
                    "transpose_tiled".into(),
                    "transpose_padded".into()
                ]
            }
        );
        let err = classify(
            true,
            "exit status: 0",
            NO_KERNELS,
            "",
            Some("regex:^transpose_x$".into()),
        )
        .expect_err("no kernel");
        let message = err.to_string();
        assert!(message.contains("`regex:^transpose_x$`"), "{message}");
        assert!(
            message.contains("copy_tile, transpose_naive, transpose_tiled, transpose_padded"),
            "{message}"
        );
        assert!(!message.contains('\n'));
    }

    #[test]
    fn the_permission_error_is_recognized_and_says_what_to_do() {
        assert_eq!(parse_csv(PERMISSION), Err(ProfileError::Permission));
        // Wherever ncu prints it, and whatever its exit status.
        assert_eq!(
            classify(true, "exit status: 0", PERMISSION, "", None),
            Err(ProfileError::Permission)
        );
        assert_eq!(
            classify(false, "exit status: 1", "", PERMISSION, None),
            Err(ProfileError::Permission)
        );
        let message = ProfileError::Permission.to_string();
        assert!(message.contains("ERR_NVGPUCTRPERM"));
        assert!(message.contains("root"));
        assert!(message.contains("NVreg_RestrictProfilingToAdminUsers=0"));
        assert!(!message.contains('\n'));
    }

    #[test]
    fn a_failed_run_reports_ncus_error_lines() {
        let stdout = concat!(
            "==PROF== Connected to process 9 (/bin/app)\n",
            "==ERROR== Failed to find metric l1tex__bogus.sum\n",
            "==PROF== Disconnected from process 9\n",
            "==ERROR== An error occurred while trying to profile.\n",
            "==WARNING== No kernels were profiled.\n",
        );
        let err = classify(false, "exit status: 1", stdout, "", None).expect_err("fails");
        assert_eq!(
            err,
            ProfileError::Failed {
                status: "exit status: 1".into(),
                tail: "==ERROR== Failed to find metric l1tex__bogus.sum / \
                       ==ERROR== An error occurred while trying to profile."
                    .into()
            }
        );
        // Without ==ERROR== lines, the end of stderr.
        let err = classify(false, "exit status: 2", "", "a\nb\n\nc\nd\n", None).expect_err("fails");
        assert_eq!(err.to_string(), "ncu failed (exit status: 2): b / c / d");
        // Counters that were collected survive a program that failed afterwards.
        let kernels = classify(false, "exit status: 1", TRANSPOSE, "oops", None).expect("counters");
        assert_eq!(kernels.len(), 3);
    }

    #[test]
    fn a_malformed_row_is_reported_with_its_line() {
        let text = concat!(
            "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n",
            "\"0\",\"k\"\n",
        );
        assert_eq!(
            parse_csv(text),
            Err(ProfileError::Malformed {
                line: 2,
                why: "a row of 2 fields under a header of 3".into()
            })
        );
    }

    #[test]
    fn the_command_line_names_the_metrics_filter_and_child() {
        let names = metric_names(true);
        let cmd = command(
            Path::new("/opt/ncu/ncu"),
            &names,
            "^transpose_(naive|tiled|padded)$",
            Some(3),
            Path::new("/work/main/target/release/kernelbook"),
            &[OsString::from("run"), OsString::from("transpose")],
        );
        assert_eq!(cmd.get_program(), "/opt/ncu/ncu");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let after = |flag: &str| {
            let i = args.iter().position(|a| a == flag).expect(flag);
            args[i + 1].clone()
        };
        assert_eq!(after("--page"), "raw");
        assert!(args.contains(&"--csv".to_string()));
        assert_eq!(after("--print-units"), "base");
        assert_eq!(after("--target-processes"), "all");
        assert_eq!(after("--metrics"), names.join(","));
        assert!(after("--metrics").contains(SHARED_LOAD_CONFLICTS));
        assert!(after("--metrics").contains(GLOBAL_STORE_REQUESTS));
        assert_eq!(
            after("--kernel-name"),
            "regex:^transpose_(naive|tiled|padded)$"
        );
        assert_eq!(after("--launch-count"), "3");
        // The child and its arguments come last, in order.
        assert_eq!(
            &args[args.len() - 3..],
            ["/work/main/target/release/kernelbook", "run", "transpose"]
        );
        assert_eq!(
            kernel_filter(&cmd).as_deref(),
            Some("regex:^transpose_(naive|tiled|padded)$")
        );
        // No launch count, no flag.
        let cmd = command(
            Path::new("ncu"),
            &[DURATION],
            "k",
            None,
            Path::new("app"),
            &[],
        );
        assert!(!cmd.get_args().any(|a| a == "--launch-count"));
    }

    #[test]
    fn the_metric_list_covers_the_summary() {
        let required = metric_names(false);
        for name in [
            SHARED_LOAD_CONFLICTS,
            SHARED_STORE_CONFLICTS,
            GLOBAL_LOAD_SECTORS,
            GLOBAL_LOAD_REQUESTS,
            GLOBAL_STORE_SECTORS,
            GLOBAL_STORE_REQUESTS,
            DRAM_READ_BYTES,
            DRAM_WRITE_BYTES,
            DURATION,
        ] {
            assert!(required.contains(&name), "{name}");
        }
        assert!(!required.contains(&SHARED_LOAD_INSTRUCTIONS));
        assert!(metric_names(true).contains(&SHARED_LOAD_INSTRUCTIONS));
        assert_eq!(
            metric(SHARED_LOAD_CONFLICTS).map(|m| m.label),
            Some("shared-load bank conflicts")
        );
        let mut unique = metric_names(true);
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), METRICS.len());
    }

    #[test]
    fn splits_quoted_csv_fields() {
        assert_eq!(
            split_csv_line(r#""a","b, c","say ""hi""",7,"""#),
            Some(vec![
                "a".into(),
                "b, c".into(),
                "say \"hi\"".into(),
                "7".into(),
                "".into()
            ])
        );
        assert_eq!(split_csv_line(r#""open,"#), None);
        assert_eq!(parse_dim3("(32, 8, 1)"), Some([32, 8, 1]));
        assert_eq!(parse_dim3("32,8,1"), Some([32, 8, 1]));
        assert_eq!(parse_dim3("(32, 8)"), None);
        assert_eq!(parse_number("1,234,567"), Some(1_234_567.0));
        assert_eq!(parse_number("n/a"), None);
        assert_eq!(parse_number(" "), None);
    }

    #[cfg(unix)]
    fn write_executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[cfg(unix)]
    #[test]
    fn finds_ncu_by_override_then_path_then_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        for d in [&a, &b, &c] {
            std::fs::create_dir(d).expect("mkdir");
        }
        write_executable(&b.join("ncu"));
        write_executable(&c.join("ncu"));
        // A non-executable file named ncu is passed over.
        std::fs::write(a.join("ncu"), "").expect("write");
        let path = std::env::join_paths([&a, &b]).expect("join");
        let fallback = c.join("ncu");

        assert_eq!(
            find_ncu_in(None, Some(path.clone()), &fallback),
            Some(b.join("ncu"))
        );
        assert_eq!(
            find_ncu_in(None, Some(a.clone().into_os_string()), &fallback),
            Some(fallback.clone())
        );
        assert_eq!(find_ncu_in(None, None, &dir.path().join("nothing")), None);
        assert_eq!(
            find_ncu_in(
                Some(fallback.clone().into_os_string()),
                Some(path.clone()),
                &fallback
            ),
            Some(fallback.clone())
        );
        // An override that points nowhere is not replaced by another ncu.
        assert_eq!(
            find_ncu_in(
                Some(dir.path().join("missing").into_os_string()),
                Some(path.clone()),
                &fallback
            ),
            None
        );
        // An empty override counts as unset.
        assert_eq!(
            find_ncu_in(Some(OsString::new()), Some(path), &fallback),
            Some(b.join("ncu"))
        );
    }

    #[test]
    fn a_missing_ncu_is_reported_as_such() {
        let cmd = command(
            Path::new("/nonexistent/kernelbook-test/ncu"),
            &[DURATION],
            "k",
            None,
            Path::new("app"),
            &[],
        );
        let err = profile(cmd, Duration::from_secs(5)).expect_err("no ncu");
        assert_eq!(
            err,
            ProfileError::NcuMissing(Some("/nonexistent/kernelbook-test/ncu".into()))
        );
        let message = err.to_string();
        assert!(message.contains("KERNELBOOK_NCU"), "{message}");
        assert!(
            message.contains("/nonexistent/kernelbook-test/ncu"),
            "{message}"
        );
    }

    #[cfg(unix)]
    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    #[cfg(unix)]
    #[test]
    fn profile_runs_a_program_and_parses_what_it_prints() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ncu/transpose_raw.txt"
        );
        let kernels = profile(
            sh(&format!("cat '{fixture}'; echo 'the child wrote this' >&2")),
            Duration::from_secs(30),
        )
        .expect("counters");
        assert_eq!(kernels, parsed_transpose());

        let permission = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ncu/permission.txt"
        );
        assert_eq!(
            profile(sh(&format!("cat '{permission}'")), Duration::from_secs(30)),
            Err(ProfileError::Permission)
        );
        assert_eq!(
            profile(
                sh("echo '==ERROR== Failed to launch process' >&2; exit 3"),
                Duration::from_secs(30)
            ),
            Err(ProfileError::Failed {
                status: "exit status: 3".into(),
                tail: "==ERROR== Failed to launch process".into()
            })
        );
    }

    #[cfg(unix)]
    #[test]
    fn profile_passes_its_input_to_the_program() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/ncu/transpose_raw.txt"
        );
        // The program prints the fixture only if it received the request.
        let script = format!("read request; [ \"$request\" = '{{\"lab\":1}}' ] && cat '{fixture}'");
        let kernels = profile_with_input(sh(&script), b"{\"lab\":1}\n", Duration::from_secs(30))
            .expect("counters");
        assert_eq!(kernels.len(), 3);
        // Without input, stdin is closed: the program does not wait for it (and fails here).
        assert!(matches!(
            profile(sh(&script), Duration::from_secs(30)),
            Err(ProfileError::Failed { .. })
        ));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_timeout_kills_ncu_and_the_program_it_profiles() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("pid");
        // `sh` stands for ncu, the background `sleep` for the program it profiles.
        let script = format!("sleep 60 & echo $! > '{}'; wait", pid_file.display());
        let started = Instant::now();
        let err = profile(sh(&script), Duration::from_millis(500)).expect_err("times out");
        assert_eq!(
            err,
            ProfileError::Timeout {
                limit: Duration::from_millis(500)
            }
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(err.to_string().contains("500ms"), "{err}");
        let pid = std::fs::read_to_string(&pid_file).expect("pid file");
        let stat = format!("/proc/{}/stat", pid.trim());
        // Killed: gone, or a zombie waiting for a reaper.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let alive = std::fs::read_to_string(&stat)
                .map(|s| {
                    s.rsplit_once(')')
                        .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
                })
                .unwrap_or(false);
            if !alive {
                break;
            }
            assert!(Instant::now() < deadline, "the profiled program survived");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
