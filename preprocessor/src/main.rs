//! `mdbook-kernelbook`: the preprocessor as a separate program, for a stock `mdbook build` or
//! `mdbook serve` (book.toml's `[preprocessor.kernelbook]`). `kernelbook build` does not need it.

use anyhow::Context;
use kernelbook_runner::plan::Measurement;
use kernelbook_runner::{Mode, Runner, RunnerConfig};
use mdbook_kernelbook::KernelbookPreprocessor;
use mdbook_kernelbook::preprocessor::{labs_dir, supports_renderer};
use mdbook_preprocessor::Preprocessor;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // SAFETY: first thing in main, before any thread exists.
    unsafe { kernelbook_runner::backend::cuda::disable_compute_cache() };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(kernelbook_runner::protocol::CHILD_ARG) {
        return kernelbook_runner::supervisor::child_main();
    }
    // Ctrl-C reaches the terminal's foreground group only: the Python process and ncu, in groups
    // of their own, are ended by this process on its way out.
    if let Err(err) = kernelbook_runner::process::end_children_on_signal() {
        eprintln!(
            "mdbook-kernelbook: cannot watch for Ctrl-C, which may leave child processes running: {err}"
        );
    }
    if let [command, renderer] = args.as_slice()
        && command == "supports"
    {
        return if supports_renderer(renderer) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mdbook-kernelbook: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let (ctx, book) = mdbook_preprocessor::parse_input(std::io::stdin())
        .context("reading the book from mdBook")?;
    let labs = labs_dir(&ctx.root, &ctx.config)?;
    let recorded_only = std::env::var_os("KERNELBOOK_RECORDED").is_some();
    let runner = Runner::new(RunnerConfig {
        cache_dir: ctx.root.join(".kernelbook/cache"),
        recorded_dir: labs.join("recorded"),
        mode: if recorded_only {
            Mode::RecordedOnly
        } else {
            Mode::Auto
        },
        measurement: Measurement::default(),
        isolation: std::env::current_exe().ok(),
        backend: std::env::var("KERNELBOOK_DEVICE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
    });
    let preprocessor =
        KernelbookPreprocessor::new(runner, Box::new(kernelbook_runner::engine::StageLog));
    let book = preprocessor.run(&ctx, book)?;
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &book)?;
    stdout.flush()?;
    Ok(())
}
