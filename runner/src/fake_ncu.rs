//! A stand-in for Nsight Compute, for tests on machines without a GPU (builds with the
//! `testing` feature only, like the fake device): `kernelbook __fake-ncu ARGS…` takes ncu's
//! command line as [`crate::profile::command`] writes it, runs the program it names (a
//! measuring child on the fake device), passes its output through, and prints ncu's raw CSV
//! page for the launches the child's own launch log lists whose function the `--kernel-name`
//! filter matches: one row per launch, in launch order, figures made from the function's name
//! so that they are the same every time. `--version` answers as ncu does.
//!
//! `KERNELBOOK_FAKE_NCU_LOG` names a file where each session appends one line (the functions it
//! profiled, in order); `KERNELBOOK_FAKE_NCU_DELAY_MS` makes each session take that long, as a
//! real one takes seconds.

use crate::engine::VariantLaunches;
use crate::protocol::Event;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

/// The first argument that makes a test build of kernelbook act as ncu.
pub const FAKE_NCU_ARG: &str = "__fake-ncu";
/// The session log's variable.
pub const LOG_ENV: &str = "KERNELBOOK_FAKE_NCU_LOG";
/// The session delay's variable.
pub const DELAY_ENV: &str = "KERNELBOOK_FAKE_NCU_DELAY_MS";

/// ncu's options that take a value, as [`crate::profile::command`] passes them.
const WITH_VALUE: &[&str] = &[
    "--page",
    "--print-units",
    "--print-kernel-base",
    "--kernel-name-base",
    "--clock-control",
    "--target-processes",
    "--metrics",
    "--kernel-name",
    "--launch-count",
];

/// `kernelbook __fake-ncu ARGS…`.
pub fn main(args: &[OsString]) -> ExitCode {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if args.iter().any(|a| a == "--version") {
        println!("NVIDIA (R) Nsight Compute Command Line Profiler (kernelbook's stand-in)");
        println!("Version 2099.1.0 (build 0) (test)");
        return ExitCode::SUCCESS;
    }
    let Some(parsed) = parse(&args) else {
        eprintln!("==ERROR== the stand-in ncu found no program to profile in {args:?}");
        return ExitCode::FAILURE;
    };
    if let Some(ms) = std::env::var(DELAY_ENV).ok().and_then(|v| v.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let output = match Command::new(&parsed.program)
        .args(&parsed.program_args)
        .stdin(Stdio::inherit())
        .stderr(Stdio::inherit())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let mut text = String::new();
            if let Some(mut out) = child.stdout.take() {
                out.read_to_string(&mut text)?;
            }
            child.wait().map(|status| (status, text))
        }) {
        Ok(output) => output,
        Err(err) => {
            eprintln!("==ERROR== cannot run {}: {err}", parsed.program);
            return ExitCode::FAILURE;
        }
    };
    let (status, stdout) = output;
    print!("{stdout}");
    let launches: Vec<String> = launch_log(&stdout)
        .into_iter()
        .flat_map(|entry| entry.functions)
        .filter(|f| parsed.functions.contains(f))
        .collect();
    if let Some(path) = std::env::var_os(LOG_ENV)
        && let Ok(mut log) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        let _ = writeln!(log, "{}", launches.join(" "));
    }
    if launches.is_empty() {
        println!("==WARNING== No kernels were profiled.");
    } else {
        print!("{}", table(&parsed.metrics, &launches));
    }
    if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What the command line asks.
#[derive(Debug, PartialEq)]
struct Parsed {
    metrics: Vec<String>,
    /// The function names the `--kernel-name regex:^(a|b)$` filter matches.
    functions: Vec<String>,
    program: String,
    program_args: Vec<String>,
}

fn parse(args: &[String]) -> Option<Parsed> {
    let mut metrics = Vec::new();
    let mut functions = Vec::new();
    let mut at = 0;
    while at < args.len() {
        let arg = &args[at];
        if WITH_VALUE.contains(&arg.as_str()) {
            let value = args.get(at + 1)?;
            match arg.as_str() {
                "--metrics" => metrics = value.split(',').map(str::to_string).collect(),
                "--kernel-name" => functions = filter_names(value),
                _ => {}
            }
            at += 2;
        } else if arg.starts_with("--") {
            at += 1;
        } else {
            return Some(Parsed {
                metrics,
                functions,
                program: arg.clone(),
                program_args: args[at + 1..].to_vec(),
            });
        }
    }
    None
}

/// The names of an anchored alternation, `regex:^(a|b\_c)$` → `a`, `b_c`.
fn filter_names(filter: &str) -> Vec<String> {
    let inner = filter
        .trim_start_matches("regex:")
        .trim_start_matches("^(")
        .trim_end_matches(")$");
    inner
        .split('|')
        .map(|name| name.replace('\\', ""))
        .collect()
}

fn launch_log(stdout: &str) -> Vec<VariantLaunches> {
    crate::protocol::events_in(stdout)
        .find_map(|event| match event {
            Event::Done { launches, .. } => Some(launches),
            _ => None,
        })
        .unwrap_or_default()
}

/// ncu's raw page: the header, the units, a row per launch.
fn table(metrics: &[String], launches: &[String]) -> String {
    let quote = |fields: &[String]| {
        fields
            .iter()
            .map(|f| format!("\"{f}\""))
            .collect::<Vec<_>>()
            .join(",")
            + "\n"
    };
    let mut header: Vec<String> = ["ID", "Process ID", "Kernel Name", "Block Size", "Grid Size"]
        .map(str::to_string)
        .to_vec();
    header.extend(metrics.iter().cloned());
    let mut units = vec![String::new(); 5];
    units.extend(metrics.iter().map(|m| unit(m).to_string()));
    let mut out = quote(&header) + &quote(&units);
    for (id, function) in launches.iter().enumerate() {
        let mut row = vec![
            id.to_string(),
            "1".into(),
            function.clone(),
            "(256, 1, 1)".into(),
            "(1024, 1, 1)".into(),
        ];
        row.extend(metrics.iter().map(|m| value(function, m).to_string()));
        out += &quote(&row);
    }
    out
}

fn unit(metric: &str) -> &'static str {
    if metric.starts_with("dram__bytes") {
        "byte"
    } else if metric.starts_with("gpu__time") {
        "nsecond"
    } else {
        ""
    }
}

/// A figure that depends on the function and the metric only.
fn value(function: &str, metric: &str) -> u64 {
    let seed = function
        .bytes()
        .chain(metric.bytes())
        .fold(1469598103934665603u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(1099511628211)
        });
    1000 + seed % 100_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_the_runner_writes_is_read() {
        let command = crate::profile::command(
            std::path::Path::new("ncu"),
            &["dram__bytes_read.sum", "gpu__time_duration.sum"],
            "^(copy_float4|copy\\_scalar)$",
            None,
            std::path::Path::new("/bin/kernelbook"),
            &[OsString::from("__measure-lab")],
        );
        let args: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let parsed = parse(&args).expect("parsed");
        assert_eq!(parsed.functions, ["copy_float4", "copy_scalar"]);
        assert_eq!(parsed.program, "/bin/kernelbook");
        assert_eq!(parsed.program_args, ["__measure-lab"]);
        let csv = table(&parsed.metrics, &["copy_float4".into()]);
        let rows = crate::profile::parse_csv(&csv).expect("ncu's layout");
        assert_eq!(rows[0].kernel, "copy_float4");
        assert!(rows[0].base_value("dram__bytes_read.sum").is_some());
    }
}
