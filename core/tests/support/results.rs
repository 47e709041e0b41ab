//! Strategies for results files, shared by the core's fuzz tests and the preprocessor's (which
//! includes this file with `#[path]`): the book's own recordings damaged in the ways a hand edit
//! or a bad disk would (numbers replaced by extreme values, variants dropped, duplicated or
//! renamed, fields removed), and results built from scratch out of extreme values.
#![allow(dead_code)]

use kernelbook_core::expr::Params;
use kernelbook_core::results::{
    Clocks, CounterResult, DeviceInfo, FORMAT_VERSION, FailureStage, KernelProfile,
    KernelResources, LabResults, LaunchShape, Mismatch, Outcome, ProfileRun, ProfiledVariant,
    Provenance, VariantResult, Work,
};
use kernelbook_core::stats::{StopReason, Summary};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// Every GPU's `labs/recorded/<gpu>/<lab>.json` (`experiments/` is no GPU's), as (lab name,
/// text), sorted by name.
pub fn recordings() -> Vec<(String, String)> {
    let dir = repo().join("labs/recorded");
    let gpus: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("labs/recorded")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir() && !path.ends_with("experiments"))
        .collect();
    assert!(!gpus.is_empty(), "no GPU folder in labs/recorded");
    let mut files: Vec<(String, String)> = gpus
        .iter()
        .flat_map(|gpu| std::fs::read_dir(gpu).expect("a GPU's folder"))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a name")
                .to_string();
            let text = std::fs::read_to_string(&path).expect("a recording");
            (name, text)
        })
        .collect();
    files.sort();
    files
}

/// Inputs per property: `default` in an ordinary test run; `KERNELBOOK_FUZZ_CASES` (or
/// `PROPTEST_CASES`) for a longer one.
pub fn cases(default: u32) -> u32 {
    ["KERNELBOOK_FUZZ_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|var| std::env::var(var).ok().and_then(|v| v.parse().ok()))
        .unwrap_or(default)
}

/// Numbers a damaged file might hold where a sane one is expected.
pub fn extreme_json_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from(-0.5)),
        Just(Value::from(0)),
        Just(Value::from(-0.0)),
        Just(Value::from(1e-300)),
        Just(Value::from(1e-7)),
        Just(Value::from(1.7e308)),
        Just(Value::from(-1.7e308)),
        Just(Value::from(3.7e6)),
        Just(Value::from(u64::MAX)),
        Just(Value::from(i64::MIN)),
        Just(Value::from(u64::from(u32::MAX) + 1)),
        Just(Value::from(-1)),
        Just(Value::from(1)),
        Just(Value::from(0.5)),
        any::<f64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
    ]
}

/// Keys whose numbers the book shows or computes with: a damaged number there matters most.
const KEYS: &[&str] = &[
    "median_ms",
    "min_ms",
    "max_ms",
    "mean_ms",
    "rel_spread",
    "samples",
    "samples_ms",
    "bytes_moved",
    "count",
    "per",
    "values",
    "occupancy",
    "registers",
    "sm_count",
    "memory_clock_khz",
    "bus_width_bits",
    "sm_clock_khz",
    "sm_mhz",
    "l2_bytes",
    "wall_seconds",
    "dram_read_bytes",
    "conflicts_per_shared_load",
    "grid",
    "block",
    "n",
];

/// Printable text without `i` and `N`, so that no generated word reads as "inf" or "NaN" (the
/// views' property looks for those).
const TEXT8: &str = "[ -MO-hj-~]{0,8}";
const TEXT20: &str = "[ -MO-hj-~]{0,20}";

/// One way of damaging a results file.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Replace the `at`-th number anywhere.
    Number(Index, Value),
    /// Replace the `at`-th number under one of [`KEYS`].
    KeyedNumber(Index, Index, Value),
    DropVariant(Index),
    DuplicateVariant(Index),
    RenameVariant(Index, String),
    ClearVariants,
    /// Remove the `at`-th key of any object.
    DropKey(Index),
    /// Replace the `at`-th value of any kind with a string.
    Stringify(Index, String),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), extreme_json_number()).prop_map(|(i, v)| Mutation::Number(i, v)),
        (any::<Index>(), any::<Index>(), extreme_json_number())
            .prop_map(|(k, i, v)| Mutation::KeyedNumber(k, i, v)),
        any::<Index>().prop_map(Mutation::DropVariant),
        any::<Index>().prop_map(Mutation::DuplicateVariant),
        (any::<Index>(), "[a-hj-z_]{0,6}|memcpy|copy|s1|ghost")
            .prop_map(|(i, s)| Mutation::RenameVariant(i, s)),
        Just(Mutation::ClearVariants),
        any::<Index>().prop_map(Mutation::DropKey),
        (any::<Index>(), TEXT8).prop_map(|(i, s)| Mutation::Stringify(i, s)),
    ]
}

/// The numbers in `v`, in document order; only those under `key` when it is given.
fn numbers<'a>(v: &'a mut Value, key: Option<&str>, under: Option<&str>) -> Vec<&'a mut Value> {
    match v {
        Value::Number(_) if key.is_none() || key == under => vec![v],
        Value::Array(items) => items
            .iter_mut()
            .flat_map(|item| numbers(item, key, under))
            .collect(),
        Value::Object(map) => map
            .iter_mut()
            .flat_map(|(k, item)| numbers(item, key, Some(k.as_str())))
            .collect(),
        _ => Vec::new(),
    }
}

/// The scalars (numbers, strings, booleans, nulls) in `v`, in document order.
fn leaves(v: &mut Value) -> Vec<&mut Value> {
    match v {
        Value::Array(items) => items.iter_mut().flat_map(leaves).collect(),
        Value::Object(map) => map.values_mut().flat_map(leaves).collect(),
        _ => vec![v],
    }
}

fn key_count(v: &Value) -> usize {
    match v {
        Value::Array(items) => items.iter().map(key_count).sum(),
        Value::Object(map) => map.len() + map.values().map(key_count).sum::<usize>(),
        _ => 0,
    }
}

/// Removes the `i`-th key in document order (an object's own keys before its children's);
/// true once one is removed.
fn drop_nth_key(v: &mut Value, i: &mut usize) -> bool {
    match v {
        Value::Object(map) => {
            if *i < map.len() {
                if let Some(key) = map.keys().nth(*i).cloned() {
                    map.remove(&key);
                }
                return true;
            }
            *i -= map.len();
            map.values_mut().any(|item| drop_nth_key(item, i))
        }
        Value::Array(items) => items.iter_mut().any(|item| drop_nth_key(item, i)),
        _ => false,
    }
}

/// Applies `m` to `v` (a whole results file).
pub fn apply(v: &mut Value, m: &Mutation) {
    match m {
        Mutation::Number(at, new) => {
            let mut found = numbers(v, None, None);
            if !found.is_empty() {
                let i = at.index(found.len());
                *found[i] = new.clone();
            }
        }
        Mutation::KeyedNumber(key, at, new) => {
            let key = KEYS[key.index(KEYS.len())];
            let mut found = numbers(v, Some(key), None);
            if !found.is_empty() {
                let i = at.index(found.len());
                *found[i] = new.clone();
            }
        }
        Mutation::DropVariant(at) => with_variants(v, |vs| {
            let i = at.index(vs.len());
            vs.remove(i);
        }),
        Mutation::DuplicateVariant(at) => with_variants(v, |vs| {
            let i = at.index(vs.len());
            vs.push(vs[i].clone());
        }),
        Mutation::RenameVariant(at, name) => with_variants(v, |vs| {
            let i = at.index(vs.len());
            vs[i]["name"] = Value::from(name.as_str());
        }),
        Mutation::ClearVariants => {
            if let Some(vs) = v.get_mut("variants").and_then(Value::as_array_mut) {
                vs.clear();
            }
        }
        Mutation::DropKey(at) => {
            let total = key_count(v);
            if total > 0 {
                drop_nth_key(v, &mut at.index(total));
            }
        }
        Mutation::Stringify(at, text) => {
            let mut found = leaves(v);
            if !found.is_empty() {
                let i = at.index(found.len());
                *found[i] = Value::from(text.as_str());
            }
        }
    }
}

fn with_variants(v: &mut Value, f: impl FnOnce(&mut Vec<Value>)) {
    if let Some(vs) = v.get_mut("variants").and_then(Value::as_array_mut)
        && !vs.is_empty()
    {
        f(vs);
    }
}

/// A recording of the book, damaged by `mutations`: (lab name, JSON text).
pub fn damaged_recording(
    recordings: &[(String, Value)],
    pick: &Index,
    mutations: &[Mutation],
) -> (String, String) {
    let (lab, original) = &recordings[pick.index(recordings.len())];
    let mut value = original.clone();
    for m in mutations {
        apply(&mut value, m);
    }
    (lab.clone(), value.to_string())
}

/// Floats where a time, a rate or a ratio is expected: extreme ones, and plausible ones often
/// enough that many generated files pass validation.
pub fn any_time() -> impl Strategy<Value = f64> {
    prop_oneof![
        100 => 1e-3f64..10.0,
        20 => 1e-6f64..3.6e6,
        1 => Just(1e-6),
        1 => Just(3.6e6),
        1 => Just(-0.5),
        1 => Just(0.0),
        1 => Just(-0.0),
        1 => Just(1e-300),
        1 => Just(1.7e308),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => any::<f64>(),
    ]
}

pub fn any_count() -> impl Strategy<Value = u64> {
    prop_oneof![
        40 => 0u64..10_000_000_000,
        1 => Just(0),
        1 => Just(1),
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

fn any_small() -> impl Strategy<Value = u32> {
    prop_oneof![20 => 0u32..4096, 1 => Just(0), 1 => Just(u32::MAX), 1 => any::<u32>()]
}

fn device() -> impl Strategy<Value = DeviceInfo> {
    (
        prop_oneof![30 => Just(132u32), 1 => any_small()],
        prop_oneof![30 => Just(3_201_000u64), 1 => any_count()],
        prop_oneof![30 => Just(6016u64), 1 => any_count()],
        prop_oneof![30 => Just(1_980_000u64), 1 => any_count()],
        prop_oneof![30 => Just(2048u32), 1 => any_small()],
        prop_oneof![30 => Just(62_914_560u64), 1 => any_count()],
    )
        .prop_map(
            |(sm_count, memory_clock_khz, bus, sm_clock_khz, threads, l2)| DeviceInfo {
                backend: kernelbook_core::results::DeviceApi::Cuda,
                name: "NVIDIA H200".into(),
                uuid: "GPU-0".into(),
                arch: "sm_90".into(),
                compute_capability: (9, 0),
                sm_count,
                l2_bytes: l2,
                memory_bytes: 150_000_000_000,
                memory_clock_khz,
                bus_width_bits: bus,
                sm_clock_khz,
                max_threads_per_sm: threads,
                max_shared_bytes_per_block: 232_448,
                warp_size: 32,
                registers_per_sm: Some(65_536),
                shared_bytes_per_sm: Some(233_472),
            },
        )
}

fn provenance() -> impl Strategy<Value = Provenance> {
    (
        device(),
        any_time(),
        proptest::option::of((any_small(), any_small())),
    )
        .prop_map(|(device, wall_seconds, clocks)| Provenance {
            device,
            driver_version: "13.0".into(),
            compiler_version: "NVRTC 13.0".into(),
            runner_version: "0".into(),
            measured_at: "2026-11-29T00:00:00Z".into(),
            wall_seconds,
            input_seed: 1,
            timing_method: "events".into(),
            clocks: clocks.map(|(sm_mhz, memory_mhz)| Clocks { sm_mhz, memory_mhz }),
        })
}

/// A measured outcome: usually the summary of its samples, sometimes one that disagrees.
fn measured() -> impl Strategy<Value = Outcome> {
    (
        proptest::collection::vec(any_time(), 0..5),
        any::<bool>(),
        any_time(),
        any::<bool>(),
    )
        .prop_map(|(samples_ms, honest, lie, noisy)| {
            let mut summary = Summary::of(&samples_ms).unwrap_or(Summary {
                samples: samples_ms.len(),
                median_ms: lie,
                min_ms: lie,
                max_ms: lie,
                mean_ms: lie,
                rel_spread: 0.0,
            });
            if !honest {
                summary.median_ms = lie;
            }
            Outcome::Measured {
                summary,
                stop_reason: StopReason::Converged,
                noisy,
                samples_ms,
            }
        })
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        6 => measured(),
        1 => (any_count(), any_count()).prop_map(|(index, count)| Outcome::WrongResult {
            mismatch: Mismatch {
                index,
                expected: "1".into(),
                actual: "2".into(),
                count,
            },
        }),
        1 => TEXT20.prop_map(|message| Outcome::Failed {
            stage: FailureStage::Compile,
            message,
        }),
        1 => TEXT20.prop_map(|message| Outcome::Failed {
            stage: FailureStage::Launch,
            message,
        }),
        1 => TEXT20.prop_map(|reason| Outcome::Unavailable { reason }),
    ]
}

fn extras() -> impl Strategy<Value = (Option<Work>, Option<CounterResult>, Option<KernelResources>)>
{
    (
        proptest::option::weighted(0.3, (any_count(), "FLOP|shared load|[a-hj-z]{0,4}")),
        proptest::option::weighted(
            0.3,
            (
                "cycles per load|cycles|[a-hj-z ]{0,6}",
                any_count(),
                proptest::collection::vec(any_time(), 0..4),
            ),
        ),
        proptest::option::weighted(0.3, (any_small(), any_time())),
    )
        .prop_map(|(work, counter, resources)| {
            (
                work.map(|(count, unit)| Work { count, unit }),
                counter.map(|(unit, per, values)| CounterResult { unit, per, values }),
                resources.map(|(registers, occupancy)| KernelResources {
                    registers,
                    local_bytes: 0,
                    spill_store_bytes: Some(0),
                    spill_load_bytes: Some(0),
                    shared_bytes: registers,
                    blocks_per_sm: 1,
                    occupancy,
                }),
            )
        })
}

fn variant(names: Vec<String>) -> impl Strategy<Value = VariantResult> {
    (
        proptest::sample::select(names),
        proptest::option::of(Just("k".to_string())),
        any_count(),
        outcome(),
        extras(),
        any::<bool>(),
    )
        .prop_map(
            |(name, kernel, bytes_moved, outcome, (work, counter, resources), launched)| {
                VariantResult {
                    name,
                    kernel,
                    source_hash: None,
                    compile_flags: vec![],
                    bytes_moved,
                    launch: launched.then_some(LaunchShape {
                        grid: [1024, 1, 1],
                        block: [256, 1, 1],
                        shared_bytes: 0,
                    }),
                    resources,
                    outcome,
                    implementation: None,
                    work,
                    counter,
                    checked: None,
                    other_kernels: Default::default(),
                    params: None,
                    sampling_seconds: None,
                    timeline: None,
                    l2: None,
                }
            },
        )
}

fn profile(names: Vec<String>) -> impl Strategy<Value = ProfileRun> {
    let figure = || proptest::option::of(any_time());
    proptest::collection::vec(
        (
            proptest::sample::select(names),
            figure(),
            figure(),
            figure(),
            figure(),
        ),
        0..3,
    )
    .prop_map(|kernels| ProfileRun {
        tool: "ncu".into(),
        kernels: kernels
            .into_iter()
            .map(|(variant, a, b, c, d)| ProfiledVariant {
                variant,
                counters: KernelProfile {
                    kernel: "k".into(),
                    launch_id: 0,
                    duration_ns: a,
                    shared_load_bank_conflicts: b,
                    shared_store_bank_conflicts: b,
                    shared_load_instructions: c,
                    conflicts_per_shared_load: c,
                    wavefronts_per_shared_load: d,
                    shared_store_instructions: c,
                    conflicts_per_shared_store: b,
                    wavefronts_per_shared_store: d,
                    global_load_sectors_per_request: d,
                    global_store_sectors_per_request: a,
                    dram_read_bytes: b,
                    dram_write_bytes: c,
                    dram_bytes: d,
                    l2_write_bytes_from_l1: a,
                    ..Default::default()
                },
            })
            .collect(),
        problem: None,
        provenance: None,
        pending: Vec::new(),
        from_recording: false,
    })
}

/// Results of lab `lab` built from scratch, with variants named from `names` (the lab's own,
/// usually, plus a ghost or two).
pub fn lab_results(lab: String, names: Vec<String>) -> impl Strategy<Value = LabResults> {
    (
        provenance(),
        proptest::collection::vec(variant(names.clone()), 1..5),
        proptest::option::of(any::<Index>()),
        proptest::option::weighted(0.2, profile(names)),
        0u32..20,
    )
        .prop_map(move |(provenance, mut variants, ceiling, profile, dice)| {
            // Mostly unique names, so that many files get past the duplicate check.
            let mut seen = std::collections::BTreeSet::new();
            variants.retain(|v| (seen.insert(v.name.clone()) || dice == 0) && dice != 2);
            // Usually a ceiling among the variants, sometimes a dangling one.
            let ceiling = ceiling.and_then(|at| match variants.len() {
                _ if dice == 1 => Some("gone".to_string()),
                0 => None,
                n => Some(variants[at.index(n)].name.clone()),
            });
            LabResults {
                format_version: FORMAT_VERSION,
                lab: lab.clone(),
                params: Params::new(),
                provenance,
                ceiling,
                variants,
                profile,
            }
        })
}
