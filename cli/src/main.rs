//! `kernelbook`: parse the command line, run one command, turn its result into an exit code.

mod cmd;
mod export;
mod gpus;
mod math_cache;
mod output;
mod paths;
mod progress;
mod project;
mod serve;
mod slurm;
mod staging;
mod table;
mod unchanged;

use clap::{Parser, Subcommand};
use kernelbook_runner::backend::{BackendChoice, DEVICE_ENV};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// The GPU Memory Hierarchy & Coalescing: a book whose kernels run on your GPU.
#[derive(Debug, Parser)]
#[command(name = "kernelbook", version, about)]
struct Cli {
    /// The book's root folder (where book.toml is).
    #[arg(long, global = true, default_value = ".")]
    root: PathBuf,
    /// Which GPU to measure on: `auto` (an NVIDIA GPU through CUDA if there is one, else an AMD
    /// GPU through HIP), `cuda` or `hip`. Also KERNELBOOK_DEVICE.
    #[arg(long, global = true)]
    device: Option<BackendChoice>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Render the whole book to HTML, measuring the labs on this machine's GPU if it has one.
    Build(cmd::build::Args),
    /// Measure one lab now and print its table.
    Run(cmd::run::Args),
    /// Measure labs and write their results to labs/recorded/GPU/ (with provenance and raw
    /// samples).
    Record(cmd::record::Args),
    /// Serve the book on 127.0.0.1, rebuild it on every save, and grade exercises from the
    /// page on this machine's GPU.
    Serve(serve::Args),
    /// Add Nsight Compute's counters to labs' recordings, keeping their timings (labs with
    /// `profile = true`; on a GPU with Nsight Compute).
    Profile(cmd::profile::Args),
    /// List the book's warp-access and bank diagrams, each prediction beside the recorded
    /// counters it claims.
    Diagrams(cmd::diagrams::Args),
    /// Grade your version of an exercise's kernel: compile, verify, time against the starter.
    /// Exit status 0 on PASS, 1 on FAIL, 2 when nothing could be graded.
    Check(cmd::check::Args),
    /// Compile one kernel with NVRTC and print its log and resource report (no GPU needed).
    Compile(cmd::compile::Args),
    /// Write the book's kernels to kernels/NAME.cu (or check that they are up to date).
    Tangle(cmd::tangle::Args),
    /// List the labs and the kernels of the book.
    List,
    /// Say which GPU, driver and compiler live results would come from.
    Info,
    /// Write the recordings in nvbench's JSON layout (for nvbench-compare-robust and -legacy),
    /// as CSV, or a sweep as a wide CSV.
    Export(cmd::export::Args),
    /// Record every lab on a Slurm cluster's GPUs (a job array) and build the book with the
    /// "GPUs compared" chapter from them (a job after it).
    Slurm(cmd::slurm::Args),
    /// Gather recordings folders (a folder per GPU each) into one.
    Merge(cmd::merge::Args),
}

fn main() -> ExitCode {
    // SAFETY: first thing in main, before any thread exists.
    unsafe { kernelbook_runner::backend::set_up_process() };
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|arg| arg == kernelbook_runner::process::KEEPER_ARG)
    {
        return kernelbook_runner::process::keeper_main(&args[2..]);
    }
    if let Some(exit) = kernelbook_runner::fake_ncu_main(&args) {
        return exit;
    }
    if std::env::args().nth(1).as_deref() == Some(kernelbook_runner::protocol::CHILD_ARG) {
        return kernelbook_runner::supervisor::child_main();
    }
    // Ctrl-C reaches the terminal's foreground group only: the Python process and ncu, in groups
    // of their own, are ended by this process on its way out.
    if let Err(err) = kernelbook_runner::process::end_children_on_signal() {
        output::notice(&format!(
            "kernelbook: cannot watch for Ctrl-C, which may leave child processes running: {err}"
        ));
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage(&err),
    };
    let device = match cli.device {
        Some(device) => device,
        None => match BackendChoice::from_env() {
            Ok(device) => device.unwrap_or_default(),
            Err(err) => {
                output::notice(&format!("kernelbook: {DEVICE_ENV}: {err}"));
                return ExitCode::FAILURE;
            }
        },
    };
    kernelbook_runner::backend::set_project_root(&cli.root);
    let ctx = project::Context {
        root: cli.root,
        backend: device,
    };
    let result = match cli.command {
        Command::Build(args) => cmd::build::run(&ctx, args),
        Command::Run(args) => cmd::run::run(&ctx, args),
        Command::Record(args) => cmd::record::run(&ctx, args),
        Command::Profile(args) => cmd::profile::run(&ctx, args),
        Command::Diagrams(args) => cmd::diagrams::run(&ctx, args),
        Command::Check(args) => cmd::check::run(&ctx, args),
        Command::Serve(args) => serve::run(&ctx, args),
        Command::Compile(args) => cmd::compile::run(&ctx, args),
        Command::Tangle(args) => cmd::tangle::run(&ctx, args),
        Command::List => cmd::list::run(&ctx),
        Command::Info => cmd::info::run(&ctx),
        Command::Export(args) => cmd::export::run(&ctx, args),
        Command::Slurm(args) => cmd::slurm::run(&ctx, args),
        Command::Merge(args) => cmd::merge::run(&ctx, args),
    };
    // What is still buffered for stdout is written now, while an error can be seen.
    let flushed = output::stdout().flush();
    match result {
        // A closed stdout (`kernelbook list | head -1`) ends the command quietly, as ripgrep
        // does: whoever closed it has what they wanted.
        Err(err) if output::is_closed_stdout(&err) => ExitCode::SUCCESS,
        Err(err) => {
            output::notice(&format!("kernelbook: {err:#}"));
            ExitCode::FAILURE
        }
        Ok(code) => match flushed {
            Err(err) if !output::is_closed_stdout_io(&err) => {
                output::notice(&format!("kernelbook: {err}"));
                ExitCode::FAILURE
            }
            _ => code,
        },
    }
}

/// What clap says for `--help`, `--version` or a command line it cannot parse, and its exit
/// status: a help text that cannot be written (`kernelbook --help > /dev/full`) is a failure,
/// not the success clap's own `exit` would report.
fn usage(err: &clap::Error) -> ExitCode {
    let printed = err.print().and_then(|()| std::io::stdout().flush());
    match printed {
        Ok(()) => ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2)),
        Err(write) if write.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(write) => {
            output::notice(&format!("kernelbook: cannot write the help: {write}"));
            ExitCode::FAILURE
        }
    }
}
