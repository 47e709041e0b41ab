//! `--devices`: which GPUs of this machine `run`, `record` and `build` measure on. Each selected
//! GPU gets a runner of its own (its own measuring process, its own cache entries, its own
//! recording folder), and the runners measure side by side, one thread each; a GPU that fails
//! or is busy fails its own column only.

use crate::project::Project;
use kernelbook_core::results::DeviceInfo;
use kernelbook_core::results::LabResults;
use kernelbook_runner::backend::{self, select::DeviceSelection};
use kernelbook_runner::engine::{Progress, notice};
use kernelbook_runner::store::gpu_folder_name;
use kernelbook_runner::{LabOutcome, LabRequest, Mode, Runner};
use mdbook_kernelbook::gpus::live_column;
use mdbook_kernelbook::gpus::view::GpuColumn;
use mdbook_kernelbook::preprocessor::ResultSource;

/// The `--devices` option of the commands that measure.
#[derive(Debug, Clone, clap::Args)]
pub struct DeviceArgs {
    /// Measure on these GPUs of this machine, each in its own process, side by side: `all`,
    /// indices (`0,2`) or UUIDs (`GPU-d8d1645c`), comma-separated. Without it, the first GPU.
    #[arg(long, value_name = "all|0,1|GPU-…")]
    pub devices: Option<DeviceSelection>,
}

/// A selected GPU and the runner that measures on it.
pub struct GpuRunner {
    pub ordinal: usize,
    pub info: DeviceInfo,
    pub runner: Runner,
}

impl GpuRunner {
    /// The same GPU with its runner changed by `change`.
    pub fn map_runner(self, change: impl FnOnce(Runner) -> Runner) -> GpuRunner {
        GpuRunner {
            runner: change(self.runner),
            ..self
        }
    }

    /// How progress and tables name it: "GPU 1 (NVIDIA H200)".
    pub fn label(&self) -> String {
        gpu_label(self.ordinal, &self.info.name)
    }

    /// The folder its recordings go to (`nvidia-h200-882b8b4e`).
    pub fn folder(&self) -> String {
        gpu_folder_name(&self.info)
    }
}

/// "GPU 1 (NVIDIA H200)".
pub fn gpu_label(ordinal: usize, name: &str) -> String {
    format!("GPU {ordinal} ({name})")
}

/// A runner for each GPU `selection` picks, or why there are none (no GPU, or none of that
/// name). Each measures on the vendor the machine was found to have, so that `auto` cannot
/// mean CUDA for one GPU and HIP for the next.
/// What to do where a command that measures finds no GPU.
pub const NO_GPU_HERE: &str = "This command measures on a GPU. Without one, `kernelbook build` \
shows the recorded results, `kernelbook compile NAME` compiles a kernel (NVRTC needs no GPU) and \
`kernelbook info` says what was found; on a GPU machine, install the NVIDIA driver (libcuda.so.1) \
or ROCm's HIP runtime (libamdhip64.so)";

pub fn runners(
    project: &Project,
    selection: &DeviceSelection,
    mode: Mode,
) -> anyhow::Result<Vec<GpuRunner>> {
    let (vendor, gpus) =
        backend::gpus(project.backend).map_err(|why| anyhow::anyhow!("{why}. {NO_GPU_HERE}"))?;
    let ordinals = selection.resolve(&gpus)?;
    Ok(ordinals
        .into_iter()
        .map(|ordinal| GpuRunner {
            ordinal,
            info: gpus[ordinal].clone(),
            runner: project.runner_on(vendor, mode).with_gpu(ordinal),
        })
        .collect())
}

/// Runs `work` for every GPU at once, one thread each, each reporting its progress as lines
/// under the GPU's label (one GPU alone has the terminal's spinner); the answers in the order
/// of `gpus`.
pub fn on_each<T: Send>(
    gpus: &[GpuRunner],
    work: impl Fn(&GpuRunner, &mut dyn Progress) -> T + Sync,
) -> Vec<T> {
    if let [gpu] = gpus {
        let mut spinner = crate::progress::Spinner::new();
        let answer = work(gpu, &mut spinner);
        spinner.finish();
        return vec![answer];
    }
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = gpus
            .iter()
            .map(|gpu| {
                scope.spawn(move || {
                    let mut log = GpuLog { label: gpu.label() };
                    work(gpu, &mut log)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| match handle.join() {
                Ok(answer) => answer,
                // A panic in one GPU's thread is a bug: shown as one, not swallowed.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// Progress as lines on stderr, each led by its GPU: several GPUs measuring at once cannot
/// share a spinner.
struct GpuLog {
    label: String,
}

impl Progress for GpuLog {
    fn stage(&mut self, message: &str) {
        notice(&format!("kernelbook: {}: {message}", self.label));
    }
    fn variant(&mut self, index: usize, total: usize, name: &str) {
        notice(&format!(
            "kernelbook: {}:   [{}/{total}] {name}",
            self.label,
            index + 1
        ));
    }
}

/// The results of a build on several GPUs (`kernelbook build --devices`): every GPU measures
/// every lab, side by side; the chapters show the first GPU's, and the `{{#gpus-compared}}`
/// chapter shows the others' beside it.
pub struct SideBySide {
    gpus: Vec<GpuRunner>,
    /// The other GPUs' columns, from the last [`outcomes`](ResultSource::outcomes).
    others: std::sync::Mutex<Vec<GpuColumn>>,
}

impl SideBySide {
    pub fn new(gpus: Vec<GpuRunner>) -> Self {
        SideBySide {
            gpus,
            others: std::sync::Mutex::new(Vec::new()),
        }
    }
}

impl ResultSource for SideBySide {
    fn outcomes(
        &self,
        requests: &[LabRequest<'_>],
        progress: &mut dyn Progress,
    ) -> Vec<LabOutcome> {
        // One GPU alone reports as the build does; several report a line each under their name.
        let mut each = match &self.gpus[..] {
            [gpu] => vec![gpu.runner.results(requests, progress)],
            gpus => on_each(gpus, |gpu, progress| gpu.runner.results(requests, progress)),
        }
        .into_iter();
        let shown = each.next().unwrap_or_default();
        let others = self
            .gpus
            .iter()
            .skip(1)
            .zip(each)
            .filter_map(|(gpu, outcomes)| {
                let labs = requests.iter().map(|r| r.lab.name.as_str()).zip(&outcomes);
                let mut column = live_column(labs)?;
                column.folder = gpu.folder();
                Some(column)
            })
            .collect();
        if let Ok(mut kept) = self.others.lock() {
            *kept = others;
        }
        shown
    }

    fn recorded(&self, lab: &kernelbook_core::spec::LabSpec) -> Option<LabResults> {
        self.gpus
            .first()
            .and_then(|gpu| ResultSource::recorded(&gpu.runner, lab))
    }

    fn other_gpus(&self) -> Vec<GpuColumn> {
        self.others.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Each GPU's pending counters, the GPUs side by side as their numbers were.
    fn collect_counters(&self, progress: &mut dyn Progress) -> usize {
        let collected = match &self.gpus[..] {
            [gpu] => vec![gpu.runner.collect_counters(None, progress).len()],
            gpus => on_each(gpus, |gpu, progress| {
                gpu.runner.collect_counters(None, progress).len()
            }),
        };
        collected.into_iter().sum()
    }
}
