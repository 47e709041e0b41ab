//! `kernelbook compile KERNEL`: compiles one kernel of the book with NVRTC, without running it,
//! and prints the compiler's log and resource report (registers, spills, shared memory). Needs
//! NVRTC, not a GPU.

use crate::output::{self, say};
use crate::project::{Context, Project};
use anyhow::{anyhow, bail};
use kernelbook_runner::backend::cuda::{self, Nvrtc};
use kernelbook_runner::backend::{CompileError, CompileRequest, Compiler, ptxas};
use kernelbook_runner::diagnostics::map_compile_log;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kernel's name (see `kernelbook list`).
    kernel: String,
    /// Target architecture; defaults to this machine's GPU, or sm_90 without one.
    #[arg(long)]
    arch: Option<String>,
    /// Extra NVRTC flags, e.g. `--flag=-DTILE=16` (repeatable).
    #[arg(long = "flag", allow_hyphen_values = true)]
    flags: Vec<String>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let kernel = project.index.kernels.get(&args.kernel).ok_or_else(|| {
        anyhow!(
            "the book has no kernel `{}` (see `kernelbook list`)",
            args.kernel
        )
    })?;
    if kernel.language != kernelbook_core::Language::Cuda {
        anyhow::bail!(
            "`{}` ({}) is a Python block: it runs in python3 with Triton when its lab runs, there is nothing to compile",
            kernel.name,
            kernel.origin
        );
    }
    let nvrtc = Nvrtc::load().map_err(|e| anyhow!("{e}"))?;
    let arch = match args.arch {
        Some(arch) => arch,
        None => cuda::probe()
            .map(|p| p.info.arch)
            .unwrap_or_else(|_| "sm_90".into()),
    };
    let out = &mut output::stdout();
    say!(
        out,
        "{} ({}) compiling `{}` from {} for {arch}",
        nvrtc.version(),
        nvrtc
            .library_path()
            .unwrap_or_else(|| "library path unknown".into()),
        kernel.name,
        kernel.origin
    )?;
    let request = CompileRequest {
        name: &kernel.name,
        source: &kernel.source,
        arch: &arch,
        flags: &args.flags,
    };
    match nvrtc.compile(&request) {
        Ok(compiled) => {
            say!(out, "options: {}", compiled.options.join(" "))?;
            // Warnings at the chapter's lines, as `build` gives them.
            let log = map_compile_log(&compiled.log, kernel);
            say!(out, "{}", log.trim_end())?;
            match ptxas::parse_report(&compiled.log, &kernel.name) {
                Some(r) => say!(
                    out,
                    "{}: {} registers, {} B stack frame, {} B spill stores, {} B spill loads, {} B static shared memory; {} B of CUBIN",
                    kernel.name,
                    r.registers,
                    r.stack_frame_bytes,
                    r.spill_store_bytes,
                    r.spill_load_bytes,
                    r.shared_bytes,
                    compiled.image.len()
                )?,
                None => say!(
                    out,
                    "{}: the log holds no ptxas resource report; {} B of CUBIN",
                    kernel.name,
                    compiled.image.len()
                )?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(CompileError::Rejected { log, options }) => {
            say!(out, "options: {}", options.join(" "))?;
            bail!(
                "`{}` ({}) does not compile:\n{}",
                kernel.name,
                kernel.origin,
                map_compile_log(&log, kernel)
            )
        }
        Err(CompileError::Compiler(message)) => bail!("{message}"),
    }
}
