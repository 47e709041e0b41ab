//! `kernelbook info`: which GPU, driver and compiler live results would come from.

use crate::output::{self, say};
use crate::project::{Context, Project};
use kernelbook_runner::Mode;
use std::process::ExitCode;

pub fn run(ctx: &Context) -> anyhow::Result<ExitCode> {
    let project = Project::load(ctx)?;
    let out = &mut output::stdout();
    match project.runner(Mode::Auto).toolchain() {
        Ok(t) => {
            let d = &t.device;
            say!(
                out,
                "device:   {} ({}, {} SMs, {:.0} MiB L2, {:.1} GiB)",
                d.name,
                d.arch,
                d.sm_count,
                d.l2_bytes as f64 / 1048576.0,
                d.memory_bytes as f64 / 1073741824.0
            )?;
            say!(out, "uuid:     {}", d.uuid)?;
            say!(
                out,
                "memory:   {} MHz × {}-bit bus = {:.0} GB/s theoretical",
                d.memory_clock_khz / 1000,
                d.bus_width_bits,
                d.theoretical_gbs()
            )?;
            say!(out, "driver:   {}", t.driver_version)?;
            let library = kernelbook_runner::backend::cuda::Nvrtc::load()
                .ok()
                .and_then(|nvrtc| nvrtc.library_path())
                .unwrap_or_else(|| "library path unknown".into());
            say!(out, "compiler: {} ({library})", t.compiler_version)?;
            // What `--devices` chooses from, where there is more than the first.
            if let Ok((_, gpus)) = kernelbook_runner::backend::gpus(project.backend)
                && gpus.len() > 1
            {
                for (ordinal, gpu) in gpus.iter().enumerate() {
                    say!(out, "GPU {ordinal}:    {} ({})", gpu.name, gpu.uuid)?;
                }
            }
        }
        Err(why) => {
            say!(
                out,
                "no live results on this machine: {why}; `kernelbook build` shows the recorded ones"
            )?;
            // NVRTC, which needs no GPU (hiprtc is the HIP runtime's, missing with it).
            if project.backend != kernelbook_runner::backend::BackendChoice::Hip {
                say!(out, "compiler: {}", compiler_without_a_gpu())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// NVRTC needs no GPU: where it was found and its version (so `kernelbook compile` works
/// here), or where to get it.
fn compiler_without_a_gpu() -> String {
    use kernelbook_runner::backend::Compiler as _;
    match kernelbook_runner::backend::cuda::Nvrtc::load() {
        Ok(nvrtc) => format!(
            "{} ({}): `kernelbook compile NAME` compiles a kernel here, without a GPU",
            nvrtc.version(),
            nvrtc
                .library_path()
                .unwrap_or_else(|| "library path unknown".into())
        ),
        Err(why) => format!(
            "NVRTC not found ({why}): `pip install nvidia-cuda-nvrtc==13.0.88` (in the project's \
             .venv-nvrtc, or any virtualenv) or KERNELBOOK_NVRTC=/path/to/libnvrtc.so.13 makes \
             `kernelbook compile` work without a GPU"
        ),
    }
}
