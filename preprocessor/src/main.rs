//! `mdbook-kernelbook`: the preprocessor as a separate program, for a stock `mdbook build` or
//! `mdbook serve` (book.toml's `[preprocessor.kernelbook]`). `kernelbook build` does not need it.
//!
//! mdBook runs it two ways: `mdbook-kernelbook supports RENDERER` (exit status 0 if it does),
//! and with no arguments, the book as JSON on stdin and the book back on stdout. `--help`,
//! `-h` and `--version` are answered without reading stdin; anything else is an error.

use anyhow::Context;
use kernelbook_core::terminal;
use kernelbook_runner::backend::{BackendChoice, DEVICE_ENV};
use kernelbook_runner::plan::Measurement;
use kernelbook_runner::{Mode, Runner, RunnerConfig};
use mdbook_kernelbook::KernelbookPreprocessor;
use mdbook_kernelbook::preprocessor::supports_renderer;
use mdbook_preprocessor::Preprocessor;
use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "\
mdbook-kernelbook: the kernelbook preprocessor for a stock `mdbook build` or `mdbook serve`
(`kernelbook build` does not need it).

Usage:
  mdbook-kernelbook                    read the book from mdBook on stdin, write it to stdout
  mdbook-kernelbook supports RENDERER  exit status 0: html gets HTML, any other renderer markdown
  mdbook-kernelbook --help | --version

Environment: KERNELBOOK_DEVICE (auto, cuda or hip) chooses the GPU; KERNELBOOK_RECORDED shows
the recorded results only.";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    Help,
    Version,
    Supports(String),
    Preprocess,
    Bad(String),
}

fn request(args: &[String]) -> Request {
    match args {
        [] => Request::Preprocess,
        [flag] if flag == "--help" || flag == "-h" || flag == "help" => Request::Help,
        [flag] if flag == "--version" || flag == "-V" => Request::Version,
        [command, renderer] if command == "supports" => Request::Supports(renderer.clone()),
        [command] if command == "supports" => {
            Request::Bad("`supports` needs the renderer's name".into())
        }
        [first, ..] if first == "supports" => {
            Request::Bad("`supports` takes one renderer's name".into())
        }
        [first, ..] => Request::Bad(format!("unknown argument `{first}`")),
    }
}

/// A line on stderr, control characters escaped; nothing if stderr is closed.
fn notice(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", terminal::safe(text));
}

fn main() -> ExitCode {
    // SAFETY: first thing in main, before any thread exists.
    unsafe { kernelbook_runner::backend::set_up_process() };
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if args.first().map(String::as_str) == Some(kernelbook_runner::process::KEEPER_ARG) {
        let rest: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        return kernelbook_runner::process::keeper_main(&rest);
    }
    if args.first().map(String::as_str) == Some(kernelbook_runner::protocol::CHILD_ARG) {
        return kernelbook_runner::supervisor::child_main();
    }
    match request(&args) {
        Request::Help => {
            let _ = writeln!(std::io::stdout().lock(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Request::Version => {
            let _ = writeln!(
                std::io::stdout().lock(),
                "mdbook-kernelbook {}",
                env!("CARGO_PKG_VERSION")
            );
            return ExitCode::SUCCESS;
        }
        Request::Supports(renderer) => {
            return if supports_renderer(&renderer) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
        Request::Bad(why) => {
            notice(&format!(
                "mdbook-kernelbook: {why} (see `mdbook-kernelbook --help`)"
            ));
            return ExitCode::from(2);
        }
        Request::Preprocess => {}
    }
    let backend = match BackendChoice::from_env() {
        Ok(backend) => backend.unwrap_or_default(),
        Err(err) => {
            notice(&format!("mdbook-kernelbook: {DEVICE_ENV}: {err}"));
            return ExitCode::FAILURE;
        }
    };
    // Ctrl-C reaches the terminal's foreground group only: the Python process and ncu, in groups
    // of their own, are ended by this process on its way out.
    if let Err(err) = kernelbook_runner::process::end_children_on_signal() {
        notice(&format!(
            "mdbook-kernelbook: cannot watch for Ctrl-C, which may leave child processes running: {err}"
        ));
    }
    match run(backend) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            notice(&format!("mdbook-kernelbook: {err:#}"));
            ExitCode::FAILURE
        }
    }
}

fn run(backend: BackendChoice) -> anyhow::Result<()> {
    let (ctx, book) = mdbook_preprocessor::parse_input(std::io::stdin())
        .context("reading the book from mdBook")?;
    if let Some(warning) = mdbook_kernelbook::preprocessor::version_warning(&ctx.mdbook_version) {
        notice(&format!("mdbook-kernelbook: {warning}"));
    }
    let (recorded_dir, notice_about_it) =
        mdbook_kernelbook::recorded::shown_dir(&ctx.root, &ctx.config)?;
    if let Some(text) = notice_about_it {
        notice(&format!("mdbook-kernelbook: {text}"));
    }
    let recorded_only = std::env::var_os("KERNELBOOK_RECORDED").is_some();
    let runner = Runner::new(RunnerConfig {
        cache_dir: ctx.root.join(".kernelbook/cache"),
        recorded_dir,
        mode: if recorded_only {
            Mode::RecordedOnly
        } else {
            Mode::Auto
        },
        measurement: Measurement::default(),
        isolation: std::env::current_exe().ok(),
        backend,
    });
    let preprocessor =
        KernelbookPreprocessor::new(runner, Box::new(kernelbook_runner::engine::StageLog));
    let book = preprocessor.run(&ctx, book)?;
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &book)?;
    stdout.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn the_command_line_is_read_without_stdin() {
        assert_eq!(request(&args(&[])), Request::Preprocess);
        assert_eq!(request(&args(&["--help"])), Request::Help);
        assert_eq!(request(&args(&["-h"])), Request::Help);
        assert_eq!(request(&args(&["--version"])), Request::Version);
        assert_eq!(
            request(&args(&["supports", "html"])),
            Request::Supports("html".into())
        );
        for bad in [
            &["supports"][..],
            &["supports", "html", "extra"],
            &["--frobnicate"],
            &["build", "x"],
        ] {
            assert!(matches!(request(&args(bad)), Request::Bad(_)), "{bad:?}");
        }
    }
}
