//! `kernelbook`: parse the command line, run one command, turn its result into an exit code.

mod cmd;
mod progress;
mod project;
mod table;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The GPU Memory Hierarchy & Coalescing: a book whose kernels run on your GPU.
#[derive(Debug, Parser)]
#[command(name = "kernelbook", version, about)]
struct Cli {
    /// The book's root folder (where book.toml is).
    #[arg(long, global = true, default_value = ".")]
    root: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Render the whole book to HTML, measuring the labs on this machine's GPU if it has one.
    Build(cmd::build::Args),
    /// Measure one lab now and print its table.
    Run(cmd::run::Args),
    /// Measure labs and write their results to labs/recorded/ (with provenance and raw samples).
    Record(cmd::record::Args),
    /// Compile one kernel with NVRTC and print its log and resource report (no GPU needed).
    Compile(cmd::compile::Args),
    /// Write the book's kernels to kernels/NAME.cu (or check that they are up to date).
    Tangle(cmd::tangle::Args),
    /// List the labs and the kernels of the book.
    List,
    /// Say which GPU, driver and compiler live results would come from.
    Info,
}

fn main() -> ExitCode {
    // SAFETY: first thing in main, before any thread exists.
    unsafe { kernelbook_runner::backend::cuda::disable_compute_cache() };
    if std::env::args().nth(1).as_deref() == Some(kernelbook_runner::isolate::CHILD_ARG) {
        return kernelbook_runner::isolate::child_main();
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => cmd::build::run(&cli.root, args),
        Command::Run(args) => cmd::run::run(&cli.root, args),
        Command::Record(args) => cmd::record::run(&cli.root, args),
        Command::Compile(args) => cmd::compile::run(&cli.root, args),
        Command::Tangle(args) => cmd::tangle::run(&cli.root, args),
        Command::List => cmd::list::run(&cli.root),
        Command::Info => cmd::info::run(&cli.root),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("kernelbook: {err:#}");
            ExitCode::FAILURE
        }
    }
}
