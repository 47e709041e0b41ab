//! Results in the layout of nvbench's JSON output (file version 1.0.0, as NVIDIA/nvbench's
//! `json_printer.cu` writes it), so that nvbench's scripts read them: `nvbench-compare-robust`
//! and `nvbench-compare-legacy` diff two GPUs' recordings lab by lab and variant by variant,
//! `nvbench-json-summary` prints them, `nvbench-histogram` draws their samples.
//!
//! The mapping: a GPU is a `devices[]` entry; a lab is a benchmark; a variant is a state, with
//! axes `Variant` (a string axis) and every parameter it ran with (int64 axes, `pow2` where a
//! sweep is `pow2`; a results file of format 1 gives only the lab's); a state's summaries are
//! those of nvbench's cold measurement that a results file can give ([`summaries`]), and its
//! samples a sidecar file (`nv/json/bin:nv/cold/sample_times`) where the export is written to
//! files. A variant that gave no time is a skipped state with its reason. What nvbench has no
//! field for (the UUID, the driver, when) is under `meta.kernelbook`.
//!
//! [`document`] writes several GPUs into one file, a device each. [`aligned`] writes a file per
//! GPU whose benchmarks hold the same states, each as one GPU has it or as a skipped state
//! where it has none, because the robust compare refuses two files whose states differ:
//! compared, two GPUs whose labs differ in variants give a row for every variant, the ones
//! both have compared and the rest listed as skipped.

mod axes;
pub mod layout;
pub mod summaries;

use super::GpuResults;
use axes::{StateAxes, state_key};
use kernelbook_core::results::{DeviceInfo, LabResults, Outcome, VariantResult};
use layout::{
    Benchmark, Device, Document, JsonVersion, Meta, NvbenchVersion, Settings, State, Versions,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use summaries::SampleFile;

/// The nvbench JSON file version this layout follows.
pub const FILE_VERSION: (u32, u32, u32) = (1, 0, 0);

/// A file of the export: its document and its samples' sidecar files.
#[derive(Debug)]
pub struct Export {
    pub document: Document,
    pub sample_files: Vec<SampleFile>,
}

impl Export {
    /// The document as nvbench writes it: keys in its order, two-space indent, a final newline.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.document).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Collects a file's sidecar files: `Some(NAME)` names them `NAME-bin/K.bin`, as nvbench names
/// those of `NAME`; `None` writes none (the export goes to stdout).
struct Sidecars {
    file_name: Option<String>,
    files: Vec<SampleFile>,
}

impl Sidecars {
    fn add(&mut self, variant: &VariantResult) -> Option<SampleFile> {
        let name = self.file_name.as_ref()?;
        let Outcome::Measured { samples_ms, .. } = &variant.outcome else {
            return None;
        };
        let file = SampleFile::of(format!("{name}-bin/{}.bin", self.files.len()), samples_ms);
        self.files.push(file.clone());
        Some(file)
    }
}

fn meta(gpus: &[GpuResults], argv: &[String]) -> Meta {
    let (major, minor, patch) = FILE_VERSION;
    Meta {
        argv: argv.to_vec(),
        version: Versions {
            json: JsonVersion {
                major,
                minor,
                patch,
                string: format!("{major}.{minor}.{patch}"),
            },
            nvbench: NvbenchVersion {
                major: 0,
                minor: 0,
                patch: 0,
                string: format!("kernelbook {}", env!("CARGO_PKG_VERSION")),
                git_branch: String::new(),
                git_sha: String::new(),
                git_version: String::new(),
                git_is_dirty: false,
            },
        },
        kernelbook: gpus
            .iter()
            .enumerate()
            .map(|(id, gpu)| provenance(id, gpu))
            .collect(),
    }
}

/// The whole document for `gpus` (device ids in their order), `argv` the command that wrote
/// it; `file_name` the name it is written under, for its samples' sidecar files (none where
/// `None`).
pub fn document(gpus: &[GpuResults], argv: &[String], file_name: Option<&str>) -> Export {
    let mut sidecars = Sidecars {
        file_name: file_name.map(String::from),
        files: Vec::new(),
    };
    let mut labs: BTreeMap<&str, Vec<(usize, &LabResults)>> = BTreeMap::new();
    for (id, gpu) in gpus.iter().enumerate() {
        for results in &gpu.results {
            labs.entry(&results.lab).or_default().push((id, results));
        }
    }
    let benchmarks = labs
        .into_iter()
        .enumerate()
        .map(|(index, (lab, runs))| {
            let axes = StateAxes::of(&runs);
            let states = runs
                .iter()
                .flat_map(|(id, results)| results.variants.iter().map(move |v| (*id, *results, v)))
                .map(|(id, results, v)| state(id, results, v, &axes, &mut sidecars))
                .collect();
            benchmark(
                index,
                lab,
                runs.iter().map(|(id, _)| *id).collect(),
                &axes,
                states,
            )
        })
        .collect();
    Export {
        document: Document {
            meta: meta(gpus, argv),
            devices: gpus
                .iter()
                .enumerate()
                .map(|(id, gpu)| device(id, gpu.device()))
                .collect(),
            benchmarks,
        },
        sample_files: sidecars.files,
    }
}

/// A file per GPU, named `file_names[i]` (for the sidecar files), each the GPU as device 0,
/// with every lab any of them recorded and every state any of them has: see the module
/// documentation. `only_some` receives, per lab, the states some GPU lacks.
pub fn aligned(
    gpus: &[GpuResults],
    argv: &[String],
    file_names: &[String],
    only_some: &mut dyn FnMut(&str, &str, &[&str]),
) -> Vec<Export> {
    let mut labs: BTreeMap<&str, Vec<(usize, &LabResults)>> = BTreeMap::new();
    for (id, gpu) in gpus.iter().enumerate() {
        for results in &gpu.results {
            labs.entry(&results.lab).or_default().push((id, results));
        }
    }
    // Every state of a lab, in the order first seen, with the GPUs that have it.
    let slots: BTreeMap<&str, Vec<Slot<'_>>> = labs
        .iter()
        .map(|(lab, runs)| (*lab, slots_of(runs)))
        .collect();
    for (lab, slots) in &slots {
        for slot in slots.iter().filter(|s| s.on.len() < gpus.len()) {
            let on: Vec<&str> = slot
                .on
                .iter()
                .map(|(id, _)| gpus[*id].folder.as_str())
                .collect();
            only_some(lab, &slot.variant.name, &on);
        }
    }
    let mut exports: Vec<Export> = gpus
        .iter()
        .enumerate()
        .map(|(id, gpu)| {
            let file_name = file_names.get(id).cloned();
            aligned_file(id, gpu, argv, file_name, &labs, &slots)
        })
        .collect();
    // A device field some GPU's recordings lack (an older runner's) is null in every file, so
    // that two boards of one kind have equal device sections, as nvbench's compare wants.
    let lacks = |field: fn(&Device) -> bool| {
        exports
            .iter()
            .any(|e| e.document.devices.iter().any(|d| !field(d)))
    };
    let no_registers = lacks(|d| d.registers_per_sm.is_some());
    let no_shared = lacks(|d| d.shared_memory_per_sm.is_some());
    for device in exports.iter_mut().flat_map(|e| &mut e.document.devices) {
        if no_registers {
            device.registers_per_sm = None;
        }
        if no_shared {
            device.shared_memory_per_sm = None;
        }
    }
    exports
}

/// One state of a lab across GPUs: a variant (as first seen) and the GPUs that have it.
struct Slot<'a> {
    key: String,
    results: &'a LabResults,
    variant: &'a VariantResult,
    on: Vec<(usize, &'a VariantResult)>,
}

fn slots_of<'a>(runs: &[(usize, &'a LabResults)]) -> Vec<Slot<'a>> {
    let axes = StateAxes::of(runs);
    let mut slots: Vec<Slot<'a>> = Vec::new();
    for (id, results) in runs {
        for v in &results.variants {
            let key = state_key(&axes.values(results, v));
            match slots.iter_mut().find(|s| s.key == key) {
                Some(slot) => slot.on.push((*id, v)),
                None => slots.push(Slot {
                    key,
                    results,
                    variant: v,
                    on: vec![(*id, v)],
                }),
            }
        }
    }
    slots
}

/// GPU `id`'s file of [`aligned`].
fn aligned_file(
    id: usize,
    gpu: &GpuResults,
    argv: &[String],
    file_name: Option<String>,
    labs: &BTreeMap<&str, Vec<(usize, &LabResults)>>,
    slots: &BTreeMap<&str, Vec<Slot<'_>>>,
) -> Export {
    let mut sidecars = Sidecars {
        file_name,
        files: Vec::new(),
    };
    let benchmarks = labs
        .iter()
        .enumerate()
        .map(|(index, (lab, runs))| {
            let axes = StateAxes::of(runs);
            let own = runs
                .iter()
                .find(|(gpu_id, _)| *gpu_id == id)
                .map(|(_, r)| *r);
            let states = slots[lab]
                .iter()
                .map(
                    |slot| match slot.on.iter().find(|(gpu_id, _)| *gpu_id == id) {
                        Some((_, v)) => {
                            state(0, own.unwrap_or(slot.results), v, &axes, &mut sidecars)
                        }
                        None => {
                            let why = match own {
                                Some(_) => format!("not recorded on {}", gpu.folder),
                                None => format!("lab not recorded on {}", gpu.folder),
                            };
                            skipped(0, slot.results, slot.variant, &axes, why)
                        }
                    },
                )
                .collect();
            benchmark(index, lab, vec![0], &axes, states)
        })
        .collect();
    let one = std::slice::from_ref(gpu);
    Export {
        document: Document {
            meta: meta(one, argv),
            devices: vec![device(0, gpu.device())],
            benchmarks,
        },
        sample_files: sidecars.files,
    }
}

/// What the results file does not hold in numbers is `null`; kernelbook never skips a state
/// for being short (`skip_time` −1, as nvbench writes "off").
const SETTINGS: Settings = Settings {
    min_samples: None,
    cold_warmup_runs: None,
    cold_max_warmup_walltime: None,
    batch_target_time: None,
    skip_time: -1.0,
    timeout: None,
};

fn benchmark(
    index: usize,
    lab: &str,
    devices: Vec<usize>,
    axes: &StateAxes,
    states: Vec<State>,
) -> Benchmark {
    Benchmark {
        name: lab.to_string(),
        index,
        settings: SETTINGS,
        devices,
        axes: axes.layout(),
        states,
    }
}

/// One variant on one GPU: "Device=0 Variant=naive n=8192", as nvbench names a state.
fn state(
    device: usize,
    results: &LabResults,
    variant: &VariantResult,
    axes: &StateAxes,
    sidecars: &mut Sidecars,
) -> State {
    let values = axes.values(results, variant);
    let samples = sidecars.add(variant);
    State {
        name: format!("Device={device} {}", state_key(&values)),
        settings: SETTINGS,
        device,
        type_config_index: 0,
        axis_values: values.iter().map(|v| v.named.clone()).collect(),
        summaries: summaries::of(results, variant, samples.as_ref()),
        is_skipped: skip_reason(&variant.outcome).is_some(),
        skip_reason: skip_reason(&variant.outcome),
    }
}

/// A state this GPU lacks, skipped with `why`, named and valued as `variant` of `results`.
fn skipped(
    device: usize,
    results: &LabResults,
    variant: &VariantResult,
    axes: &StateAxes,
    why: String,
) -> State {
    let values = axes.values(results, variant);
    State {
        name: format!("Device={device} {}", state_key(&values)),
        settings: SETTINGS,
        device,
        type_config_index: 0,
        axis_values: values.iter().map(|v| v.named.clone()).collect(),
        summaries: Vec::new(),
        is_skipped: true,
        skip_reason: Some(why),
    }
}

/// What nvbench knows of a device, from what the driver reported to kernelbook. Board-specific
/// fields (the UUID) are left out, so that two boards of one kind compare as nvbench compares
/// two runs on one machine; what kernelbook does not record is `null`. Blocks of 1024 threads
/// are what CUDA and HIP allow on every GPU the book runs on (the plan's `Target` assumes it).
fn device(id: usize, device: Option<&DeviceInfo>) -> Device {
    let Some(d) = device else {
        return Device {
            id,
            name: "unknown".into(),
            sm_version: None,
            ptx_version: None,
            sm_default_clock_rate: None,
            number_of_sms: None,
            max_blocks_per_sm: None,
            max_threads_per_sm: None,
            max_threads_per_block: None,
            registers_per_sm: None,
            registers_per_block: None,
            global_memory_size: None,
            global_memory_bus_peak_clock_rate: None,
            global_memory_bus_width: None,
            global_memory_bus_bandwidth: None,
            l2_cache_size: None,
            shared_memory_per_sm: None,
            shared_memory_per_block: None,
            ecc_state: None,
        };
    };
    let (major, minor) = d.compute_capability;
    let sm_version = major * 100 + minor * 10;
    Device {
        id,
        name: d.name.clone(),
        sm_version: Some(sm_version),
        ptx_version: Some(sm_version),
        sm_default_clock_rate: Some(d.sm_clock_khz * 1000),
        number_of_sms: Some(d.sm_count),
        max_blocks_per_sm: None,
        max_threads_per_sm: Some(d.max_threads_per_sm),
        max_threads_per_block: Some(1024),
        registers_per_sm: d.registers_per_sm,
        registers_per_block: None,
        global_memory_size: Some(d.memory_bytes),
        global_memory_bus_peak_clock_rate: Some(d.memory_clock_khz * 1000),
        global_memory_bus_width: Some(d.bus_width_bits),
        global_memory_bus_bandwidth: Some((d.theoretical_gbs() * 1e9).round() as u64),
        l2_cache_size: Some(d.l2_bytes),
        shared_memory_per_sm: d.shared_bytes_per_sm,
        shared_memory_per_block: Some(d.max_shared_bytes_per_block),
        ecc_state: None,
    }
}

/// Where device `id`'s numbers come from: its folder, boards, drivers and dates.
fn provenance(id: usize, gpu: &GpuResults) -> Value {
    let labs: BTreeMap<&str, Value> = gpu
        .results
        .iter()
        .map(|r| {
            let p = &r.provenance;
            (
                r.lab.as_str(),
                json!({
                    "uuid": p.device.uuid,
                    "driver": p.driver_version,
                    "compiler": p.compiler_version,
                    "measured_at": p.measured_at,
                    "timing_method": p.timing_method,
                    "input_seed": p.input_seed,
                    "wall_seconds": p.wall_seconds,
                    "format_version": r.format_version,
                }),
            )
        })
        .collect();
    json!({ "device": id, "folder": gpu.folder, "labs": labs })
}

/// Why a variant has no time, if it has none.
fn skip_reason(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Measured { .. } => None,
        Outcome::WrongResult { mismatch } => Some(format!(
            "wrong result: element {} is {}, expected {}",
            mismatch.index, mismatch.actual, mismatch.expected
        )),
        Outcome::Failed { stage, message } => {
            Some(format!("failed at {}: {message}", stage.describe()))
        }
        Outcome::Unavailable { reason } => Some(format!("not measured: {reason}")),
    }
}
