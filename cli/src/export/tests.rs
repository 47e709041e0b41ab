//! The exports, read back the way their readers read them: the nvbench JSON by a port of what
//! NVIDIA/nvbench's `python/scripts/nvbench_compare.py` (file version 1.0.0) looks up, the CSV
//! by a CSV reader.

use super::*;
use kernelbook_core::results::{FailureStage, Outcome};
use serde_json::Value;
use std::path::Path;

/// The book's own recording of a lab (the H200's).
/// The committed H200 recording of `lab` as results format 1 wrote it: without each variant's
/// own parameters and sampling time (the tests of what an older file exports start from it;
/// [`with_lab_params`] gives it format 2's again).
fn recording(lab: &str) -> LabResults {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../labs/recorded/nvidia-h200-882b8b4e")
        .join(format!("{lab}.json"));
    let text = std::fs::read_to_string(&path).expect("a recording");
    let mut results = LabResults::from_json(&text).expect("valid");
    for v in &mut results.variants {
        v.params = None;
        v.sampling_seconds = None;
    }
    results.format_version = 1;
    results
}

/// The nvbench document of `gpus` as a JSON value (its samples' files not written).
fn doc(gpus: &[GpuResults], argv: &[String]) -> Value {
    serde_json::to_value(&nvbench::document(gpus, argv, None).document).expect("a document")
}

/// The H200's transpose and bandwidth labs; `slower` makes every sample twice as long.
fn gpu(folder: &str, slower: bool) -> GpuResults {
    let mut results = vec![recording("transpose"), recording("bandwidth")];
    if slower {
        for lab in &mut results {
            for v in &mut lab.variants {
                if let Outcome::Measured { summary, .. } = &mut v.outcome {
                    summary.mean_ms *= 2.0;
                }
            }
        }
    }
    GpuResults {
        folder: folder.into(),
        results,
    }
}

/// One row of nvbench_compare's table: benchmark, state, reference and compared mean GPU
/// time (seconds), both noises.
#[derive(Debug, Clone, PartialEq)]
struct CompareRow {
    bench: String,
    state: String,
    ref_time: f64,
    cmp_time: f64,
    ref_noise: f64,
    cmp_noise: f64,
}

fn field<'a>(node: &'a Value, key: &str) -> Result<&'a Value, String> {
    node.get(key).ok_or_else(|| format!("no `{key}` in {node}"))
}

fn list<'a>(node: &'a Value, key: &str) -> Result<&'a Vec<Value>, String> {
    field(node, key)?
        .as_array()
        .ok_or_else(|| format!("`{key}` is not a list"))
}

/// What nvbench_compare.py does with two files, as far as it reads them: the file version,
/// benchmarks matched by name, devices by id, states by name, each axis value formatted
/// against its axis (an int64's value parsed as an integer), and the cold mean time and noise
/// summaries found by tag, their `value` datum a float64 written as a string.
fn nvbench_compare(reference: &Value, compare: &Value) -> Result<Vec<CompareRow>, String> {
    for root in [reference, compare] {
        let version = field(
            field(field(field(root, "meta")?, "version")?, "json")?,
            "string",
        )?;
        if version != "1.0.0" {
            return Err(format!("file version {version}"));
        }
    }
    let devices = list(compare, "devices")?;
    let mut rows = Vec::new();
    for cmp_bench in list(compare, "benchmarks")? {
        let name = field(cmp_bench, "name")?;
        let Some(ref_bench) = list(reference, "benchmarks")?
            .iter()
            .find(|b| b.get("name") == Some(name))
        else {
            continue;
        };
        let axes = list(cmp_bench, "axes")?;
        for id in list(cmp_bench, "devices")? {
            if !devices.iter().any(|d| d.get("id") == Some(id)) {
                return Err(format!("benchmark {name}: no device {id}"));
            }
        }
        for cmp_state in list(cmp_bench, "states")? {
            let state_name = field(cmp_state, "name")?;
            let Some(ref_state) = list(ref_bench, "states")?
                .iter()
                .find(|s| s.get("name") == Some(state_name))
            else {
                continue;
            };
            check_axis_values(cmp_state, axes)?;
            let (cmp_summaries, ref_summaries) =
                (list(cmp_state, "summaries")?, list(ref_state, "summaries")?);
            if cmp_summaries.is_empty() || ref_summaries.is_empty() {
                continue;
            }
            let value = |summaries: &[Value], tag: &str| summary_value(summaries, tag);
            rows.push(CompareRow {
                bench: name.as_str().unwrap_or_default().into(),
                state: state_name.as_str().unwrap_or_default().into(),
                ref_time: value(ref_summaries, "nv/cold/time/gpu/mean")?,
                cmp_time: value(cmp_summaries, "nv/cold/time/gpu/mean")?,
                ref_noise: value(ref_summaries, "nv/cold/time/gpu/stdev/relative")?,
                cmp_noise: value(cmp_summaries, "nv/cold/time/gpu/stdev/relative")?,
            });
        }
    }
    Ok(rows)
}

/// `format_axis_value`: every axis value names an axis of the benchmark, and an int64 one
/// holds an integer.
fn check_axis_values(state: &Value, axes: &[Value]) -> Result<(), String> {
    for axis_value in list(state, "axis_values")? {
        let name = field(axis_value, "name")?;
        let axis = axes
            .iter()
            .find(|a| a.get("name") == Some(name))
            .ok_or_else(|| format!("axis value {name} names no axis"))?;
        field(axis, "flags")?;
        if field(axis, "type")? == "int64" {
            let text = field(axis_value, "value")?;
            let as_text = text.as_str().map(String::from).unwrap_or(text.to_string());
            as_text
                .parse::<i64>()
                .map_err(|_| format!("int64 axis value {text}"))?;
        }
    }
    Ok(())
}

/// `lookup_summary` then `extract_value`: the summary with `tag`, its `value` datum, which
/// must be a float64.
fn summary_value(summaries: &[Value], tag: &str) -> Result<f64, String> {
    let summary = summaries
        .iter()
        .find(|s| s.get("tag").and_then(Value::as_str) == Some(tag))
        .ok_or_else(|| format!("no summary {tag}"))?;
    let datum = list(summary, "data")?
        .iter()
        .find(|d| d.get("name").and_then(Value::as_str) == Some("value"))
        .ok_or_else(|| format!("{tag}: no value"))?;
    if field(datum, "type")? != "float64" {
        return Err(format!("{tag}: not a float64"));
    }
    field(datum, "value")?
        .as_str()
        .ok_or_else(|| format!("{tag}: the value is not a string"))?
        .parse()
        .map_err(|err| format!("{tag}: {err}"))
}

#[test]
fn nvbench_compare_diffs_two_gpus_variant_by_variant() {
    let argv = vec!["kernelbook".to_string(), "export".into()];
    let reference = doc(&[gpu("nvidia-h200-882b8b4e", false)], &argv);
    let compare = doc(&[gpu("nvidia-h200-b780f725", true)], &argv);
    let rows = nvbench_compare(&reference, &compare).expect("nvbench_compare reads both");
    let transpose = recording("transpose");
    let measured = |lab: &LabResults| {
        lab.variants
            .iter()
            .filter(|v| matches!(v.outcome, Outcome::Measured { .. }))
            .count()
    };
    assert_eq!(
        rows.len(),
        measured(&transpose) + measured(&recording("bandwidth"))
    );
    let naive = rows
        .iter()
        .find(|r| r.bench == "transpose" && r.state == "Device=0 Variant=naive")
        .expect("the naive transpose");
    let Some(Outcome::Measured { summary, .. }) = transpose.variant("naive").map(|v| &v.outcome)
    else {
        panic!("naive was measured");
    };
    assert_eq!(naive.ref_time, summary.mean_ms / 1000.0);
    assert_eq!(naive.cmp_time, 2.0 * naive.ref_time);
    assert_eq!(naive.ref_noise, summary.rel_spread);
    assert_eq!(
        naive.state, "Device=0 Variant=naive",
        "a format 1 file does not say a variant's parameters: no axis value is guessed"
    );
    assert_eq!(
        reference["devices"], compare["devices"],
        "two boards of one kind: nvbench_compare compares them without --ignore-devices"
    );
}

#[test]
fn a_variant_without_a_time_is_a_skipped_state_with_its_reason() {
    let mut one = gpu("nvidia-h200-882b8b4e", false);
    one.results[0].variants[1].outcome = Outcome::Failed {
        stage: FailureStage::Launch,
        message: "an illegal address".into(),
    };
    let doc = doc(&[one], &[]);
    let state = &doc["benchmarks"][1]["states"][1];
    assert_eq!(doc["benchmarks"][1]["name"], "transpose");
    assert_eq!(state["is_skipped"], true);
    assert_eq!(
        state["skip_reason"],
        "failed at the launch: an illegal address"
    );
    assert_eq!(state["summaries"], serde_json::json!([]));
    let device = &doc["devices"][0];
    assert_eq!(device["name"], "NVIDIA H200");
    assert_eq!(device["sm_version"], 900);
    assert_eq!(device["global_memory_bus_width"], 6016);
    assert_eq!(
        doc["meta"]["kernelbook"][0]["folder"],
        "nvidia-h200-882b8b4e"
    );
}

#[test]
fn bandwidth_summaries_are_bytes_per_second_and_a_fraction_of_peak() {
    let doc = doc(&[gpu("h200", false)], &[]);
    let bandwidth = recording("bandwidth");
    let memcpy = bandwidth.variant("memcpy").expect("memcpy");
    let Outcome::Measured { summary, .. } = &memcpy.outcome else {
        panic!("measured");
    };
    let state = doc["benchmarks"][0]["states"]
        .as_array()
        .and_then(|states| {
            states.iter().find(|s| {
                s["name"]
                    .as_str()
                    .is_some_and(|n| n == "Device=0 Variant=memcpy")
            })
        })
        .expect("memcpy's state");
    let summaries = state["summaries"].as_array().expect("summaries");
    let bytes_per_second =
        summary_value(summaries, "nv/cold/bw/global/bytes_per_second").expect("bandwidth");
    assert_eq!(
        bytes_per_second,
        memcpy.bytes_moved as f64 / (summary.mean_ms / 1000.0)
    );
    let utilization = summary_value(summaries, "nv/cold/bw/global/utilization").expect("util");
    let peak = bandwidth.provenance.device.theoretical_gbs() * 1e9;
    assert!((utilization - bytes_per_second / peak).abs() < 1e-12);
}

#[test]
fn the_csv_has_a_row_per_gpu_lab_and_variant() {
    let gpus = [gpu("nvidia-h200-882b8b4e", false), gpu("other", true)];
    let text = csv_text(&gpus).expect("csv");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(String::from)
        .collect();
    assert_eq!(header[..CSV_HEADER.len()], *CSV_HEADER);
    assert_eq!(header, csv_header(&gpus));
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a row")).collect();
    let variants = recording("transpose").variants.len() + recording("bandwidth").variants.len();
    assert_eq!(rows.len(), 2 * variants);
    let column = |name: &str| header.iter().position(|h| *h == name).expect("column");
    let memcpy = rows
        .iter()
        .find(|r| &r[column("lab")] == "bandwidth" && &r[column("variant")] == "memcpy")
        .expect("memcpy");
    assert_eq!(&memcpy[column("gpu")], "nvidia-h200-882b8b4e");
    assert_eq!(&memcpy[column("pct_of_ceiling")], "100");
    let gbs: f64 = memcpy[column("gbs_median")].parse().expect("a number");
    let bandwidth = recording("bandwidth");
    let recorded = bandwidth.variant("memcpy").expect("memcpy");
    assert_eq!(gbs, recorded.effective_gbs().expect("GB/s"));
    // The mean's bandwidth is the JSON's `GlobalMem BW`, to the byte per second.
    let gbs_mean: f64 = memcpy[column("gbs_mean")].parse().expect("a number");
    let doc = doc(&gpus[..1], &[]);
    let state = doc["benchmarks"][0]["states"]
        .as_array()
        .and_then(|states| {
            states
                .iter()
                .find(|s| s["name"] == "Device=0 Variant=memcpy")
        })
        .expect("memcpy's state");
    let json_bw = summary_value(
        state["summaries"].as_array().expect("summaries"),
        "nv/cold/bw/global/bytes_per_second",
    )
    .expect("GlobalMem BW");
    assert!(
        (gbs_mean * 1e9 / json_bw - 1.0).abs() < 1e-12,
        "{gbs_mean} against {json_bw}"
    );
    // A format 1 recording holds no variant's own parameters: its cells are empty, not the
    // lab's values.
    assert_eq!(recorded.params, None);
    assert_eq!(&memcpy[column("params")], "");
    assert_eq!(&memcpy[column("param_n")], "");
    assert_eq!(
        memcpy[column("lab_params")],
        format!("n={}", bandwidth.params["n"])
    );
}

/// A recording with each variant's own parameters and sweep as the runner of results format 2
/// writes them, taken from the lab file (the measured figures untouched).
fn with_lab_params(mut results: LabResults) -> LabResults {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../labs")
        .join(format!("{}.toml", results.lab));
    let lab = kernelbook_core::spec::LabSpec::load(&path).expect("the lab file");
    for v in &mut results.variants {
        let spec = lab.variant(&v.name).expect("a variant of the lab");
        v.params = Some(kernelbook_core::results::VariantParams {
            own: spec.params.clone(),
            sweep: spec.sweep_origin.clone(),
        });
    }
    results.format_version = kernelbook_core::results::FORMAT_VERSION;
    results
}

fn one_gpu(results: Vec<LabResults>) -> GpuResults {
    GpuResults {
        folder: "nvidia-h200-882b8b4e".into(),
        results,
    }
}

#[test]
fn each_variants_swept_value_is_an_nvbench_axis_value_and_a_csv_column() {
    let strides = with_lab_params(recording("bank_strides"));
    let gpus = [one_gpu(vec![strides.clone()])];
    let doc = doc(&gpus, &[]);
    let bench = &doc["benchmarks"][0];
    let stride_axis = bench["axes"]
        .as_array()
        .and_then(|axes| axes.iter().find(|a| a["name"] == "stride"))
        .expect("a stride axis");
    let values: Vec<i64> = stride_axis["values"]
        .as_array()
        .expect("values")
        .iter()
        .filter_map(|v| v["value"].as_i64())
        .collect();
    assert_eq!(
        values,
        [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 33, 48, 64, 96],
        "every swept stride, not the lab's default"
    );
    assert_eq!(stride_axis["flags"], "", "a list sweep, not pow2");
    let s96 = bench["states"]
        .as_array()
        .and_then(|states| {
            states.iter().find(|s| {
                s["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("Variant=s96 "))
            })
        })
        .expect("s96");
    assert!(
        s96["name"]
            .as_str()
            .is_some_and(|n| n.ends_with(" stride=96")),
        "{}",
        s96["name"]
    );
    let text = csv_text(&gpus).expect("csv");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect("column");
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a row")).collect();
    let strides: Vec<&str> = rows.iter().map(|r| &r[column("param_stride")]).collect();
    assert_eq!(strides[..3], ["1", "2", "4"]);
    assert_eq!(&rows[11][column("variant")], "s96");
    assert_eq!(&rows[11][column("param_stride")], "96");
    assert_eq!(&rows[11][column("sweep")], "s{stride}");
    assert_eq!(
        &rows[11][column("params")],
        "blocks=2048 reps=1024 stride=96"
    );
}

#[test]
fn a_pow2_sweep_is_a_pow2_axis_named_as_nvbench_names_it() {
    let hierarchy = with_lab_params(recording("hierarchy"));
    let doc = doc(&[one_gpu(vec![hierarchy])], &[]);
    let bench = &doc["benchmarks"][0];
    let size = bench["axes"]
        .as_array()
        .and_then(|axes| axes.iter().find(|a| a["name"] == "size"))
        .expect("a size axis");
    assert_eq!(size["flags"], "pow2");
    assert_eq!(size["values"][0]["input_string"], "0");
    assert_eq!(size["values"][0]["description"], "2^0 = 1");
    let ws_8k = &bench["states"][0];
    assert!(
        ws_8k["name"]
            .as_str()
            .is_some_and(|n| n.contains(" size=2^3 ")),
        "{}",
        ws_8k["name"]
    );
}

#[test]
fn a_sweep_is_a_wide_csv_along_its_axis() {
    let gpus = [one_gpu(vec![with_lab_params(recording("hierarchy"))])];
    let request = |axis: Option<&str>| sweep::SweepRequest {
        lab: "hierarchy".into(),
        axis: axis.map(String::from),
        metric: None,
    };
    let text = sweep::wide_csv(&gpus, &request(Some("size * unit"))).expect("a wide CSV");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    assert_eq!(header[0], "size * unit");
    assert_eq!(header[1], "ws_{size}k (counter_median)", "{header:?}");
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a row")).collect();
    let xs: Vec<i64> = rows.iter().map(|r| r[0].parse().expect("x")).collect();
    assert!(
        xs.windows(2).all(|w| w[0] < w[1]),
        "rows in axis order: {xs:?}"
    );
    assert_eq!(xs[0], 8 * 1024);
    let hierarchy = recording("hierarchy");
    let ws_8k = hierarchy
        .variant("ws_8k")
        .and_then(|v| v.counter.as_ref()?.median());
    assert_eq!(rows[0][1].parse::<f64>().ok(), ws_8k);
    assert_eq!(&rows[0][2], "", "the MiB series has no 8 KiB point");
    let kib_and_mib = sweep::wide_csv(&gpus, &request(None)).expect("`size` is the one swept name");
    assert!(kib_and_mib.starts_with("size,"), "{kib_and_mib}");
    let old = [one_gpu(vec![recording("hierarchy")])];
    let err = sweep::wide_csv(&old, &request(None)).expect_err("a format 1 recording");
    assert!(err.to_string().contains("results format 1"), "{err}");
    let err = sweep::wide_csv(
        &gpus,
        &sweep::SweepRequest {
            lab: "nope".into(),
            axis: None,
            metric: None,
        },
    )
    .expect_err("no such lab");
    assert!(err.to_string().contains("`nope`"), "{err}");
}

/// The keys of the first object at `path` in `text`, in the order written.
fn keys_in_order(value: &str) -> Vec<String> {
    // serde_json without `preserve_order` sorts a Value's keys: read the text instead.
    let mut keys = Vec::new();
    let mut depth = 0;
    let mut chars = value.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            '"' if depth == 1 => {
                let rest = &value[at + 1..];
                let end = rest.find('"').expect("a closing quote");
                if rest[end + 1..].trim_start().starts_with(':') {
                    keys.push(rest[..end].to_string());
                }
                for _ in 0..=end {
                    chars.next();
                }
            }
            '"' => {
                let rest = &value[at + 1..];
                let end = rest.find('"').expect("a closing quote");
                for _ in 0..=end {
                    chars.next();
                }
            }
            _ => {}
        }
    }
    keys
}

#[test]
fn keys_are_in_nvbench_order_and_devices_have_its_fields() {
    let export = nvbench::document(&[gpu("h200", false)], &[], None);
    let text = export.text();
    assert_eq!(keys_in_order(&text), ["meta", "devices", "benchmarks"]);
    let device = serde_json::to_string(&export.document.devices[0]).expect("json");
    assert_eq!(
        keys_in_order(&device),
        [
            "id",
            "name",
            "sm_version",
            "ptx_version",
            "sm_default_clock_rate",
            "number_of_sms",
            "max_blocks_per_sm",
            "max_threads_per_sm",
            "max_threads_per_block",
            "registers_per_sm",
            "registers_per_block",
            "global_memory_size",
            "global_memory_bus_peak_clock_rate",
            "global_memory_bus_width",
            "global_memory_bus_bandwidth",
            "l2_cache_size",
            "shared_memory_per_sm",
            "shared_memory_per_block",
            "ecc_state",
        ]
    );
    let bench = serde_json::to_string(&export.document.benchmarks[0]).expect("json");
    assert_eq!(
        keys_in_order(&bench),
        [
            "name",
            "index",
            "min_samples",
            "cold_warmup_runs",
            "cold_max_warmup_walltime",
            "batch_target_time",
            "skip_time",
            "timeout",
            "devices",
            "axes",
            "states",
        ]
    );
    let state = serde_json::to_string(&export.document.benchmarks[0].states[0]).expect("json");
    assert_eq!(
        keys_in_order(&state),
        [
            "name",
            "min_samples",
            "cold_warmup_runs",
            "cold_max_warmup_walltime",
            "batch_target_time",
            "skip_time",
            "timeout",
            "device",
            "type_config_index",
            "axis_values",
            "summaries",
            "is_skipped",
        ]
    );
    let d = &export.document.devices[0];
    assert_eq!(d.registers_per_sm, Some(65_536));
    assert_eq!(d.ecc_state, None, "not recorded: null, not guessed");
}

/// The value of summary `tag`'s datum `name`, as text.
fn datum(summaries: &[Value], tag: &str, name: &str) -> Option<String> {
    let summary = summaries.iter().find(|s| s["tag"] == tag)?;
    let data = summary["data"].as_array()?;
    let d = data.iter().find(|d| d["name"] == name)?;
    d["value"].as_str().map(String::from)
}

#[test]
fn every_summary_the_recording_can_give_and_its_samples_file() {
    let mut bandwidth = recording("bandwidth");
    bandwidth.variants[0].sampling_seconds = Some(0.25);
    let gpus = [one_gpu(vec![bandwidth.clone()])];
    let export = nvbench::document(&gpus, &[], Some("h200.json"));
    let value = serde_json::to_value(&export.document).expect("json");
    let state = &value["benchmarks"][0]["states"][0];
    let summaries = state["summaries"].as_array().expect("summaries");
    let memcpy = &bandwidth.variants[0];
    let Outcome::Measured {
        summary,
        samples_ms,
        ..
    } = &memcpy.outcome
    else {
        panic!("measured");
    };
    let tags: Vec<&str> = summaries.iter().filter_map(|s| s["tag"].as_str()).collect();
    assert_eq!(
        tags,
        [
            "nv/cold/sample_size",
            "nv/cold/walltime",
            "nv/cold/time/gpu/min",
            "nv/cold/time/gpu/max",
            "nv/cold/time/gpu/mean",
            "nv/cold/time/gpu/stdev/absolute",
            "nv/cold/time/gpu/stdev/relative",
            "nv/cold/time/gpu/q1",
            "nv/cold/time/gpu/median",
            "nv/cold/time/gpu/q3",
            "nv/cold/time/gpu/iqr/absolute",
            "nv/cold/time/gpu/iqr/relative",
            "nv/cold/bw/global/bytes_per_second",
            "nv/cold/bw/global/utilization",
            "nv/cold/sm_clock_rate/mean",
            "nv/cold/sm_clock_rate/scaling/percent",
            "nv/json/bin:nv/cold/sample_times",
        ],
        "nvbench's order"
    );
    let number = |tag: &str| -> f64 {
        datum(summaries, tag, "value")
            .and_then(|v| v.parse().ok())
            .expect(tag)
    };
    assert_eq!(number("nv/cold/walltime"), 0.25);
    let stdev = number("nv/cold/time/gpu/stdev/absolute");
    assert!((stdev - summary.rel_spread * summary.mean_ms / 1000.0).abs() < 1e-15);
    // nvbench's rank rule: the sample at round(p (n - 1)) of the sorted samples.
    let mut sorted = samples_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |p: f64| sorted[(p * (sorted.len() - 1) as f64).round() as usize] / 1000.0;
    assert_eq!(number("nv/cold/time/gpu/q1"), at(0.25));
    assert_eq!(number("nv/cold/time/gpu/q3"), at(0.75));
    assert_eq!(number("nv/cold/time/gpu/iqr/absolute"), at(0.75) - at(0.25));
    assert_eq!(
        number("nv/cold/time/gpu/median"),
        summary.median_ms / 1000.0
    );
    let clocks = bandwidth
        .provenance
        .clocks
        .expect("the recording read its clocks");
    assert_eq!(
        number("nv/cold/sm_clock_rate/mean"),
        f64::from(clocks.sm_mhz) * 1e6
    );
    // The samples' file: little-endian float32 seconds, named relative to the JSON file.
    let name = datum(summaries, "nv/json/bin:nv/cold/sample_times", "filename").expect("a file");
    assert_eq!(name, "h200.json-bin/0.bin");
    let file = &export.sample_files[0];
    assert_eq!(file.path, name);
    let read: Vec<f32> = file
        .bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    assert_eq!(read.len(), samples_ms.len());
    assert_eq!(read[3], (samples_ms[3] / 1000.0) as f32);
    assert_eq!(
        datum(summaries, "nv/json/bin:nv/cold/sample_times", "size"),
        Some(samples_ms.len().to_string())
    );
    // A format 1 variant has no walltime: absent, not zero.
    let second = value["benchmarks"][0]["states"][1]["summaries"]
        .as_array()
        .expect("list");
    assert!(second.iter().all(|s| s["tag"] != "nv/cold/walltime"));
    // Written to stdout: no samples' files, no summary naming one.
    assert!(nvbench::document(&gpus, &[], None).sample_files.is_empty());
}

#[test]
fn aligned_files_hold_the_same_states_and_skip_what_a_gpu_lacks() {
    let full = gpu("nvidia-h200-882b8b4e", false);
    let mut fewer = gpu("nvidia-h200-d8d1645c", true);
    let dropped = fewer.results[1].variants.remove(2).name;
    fewer.results.remove(0); // no transpose at all
    let mut listed = Vec::new();
    let names = ["a.json".to_string(), "b.json".to_string()];
    let exports = nvbench::aligned(&[full, fewer], &[], &names, &mut |lab, variant, on| {
        listed.push(format!("{lab}/{variant} on {}", on.join(",")));
    });
    assert_eq!(exports.len(), 2);
    let states = |export: &nvbench::Export| -> Vec<(String, Vec<String>)> {
        export
            .document
            .benchmarks
            .iter()
            .map(|b| {
                (
                    b.name.clone(),
                    b.states.iter().map(|s| s.name.clone()).collect(),
                )
            })
            .collect()
    };
    assert_eq!(
        states(&exports[0]),
        states(&exports[1]),
        "the same states in both files"
    );
    let bandwidth = &exports[1].document.benchmarks[0];
    assert_eq!(bandwidth.name, "bandwidth");
    let missing = bandwidth
        .states
        .iter()
        .find(|s| s.name == format!("Device=0 Variant={dropped}"))
        .expect("the dropped variant's state");
    assert!(missing.is_skipped);
    assert_eq!(
        missing.skip_reason.as_deref(),
        Some("not recorded on nvidia-h200-d8d1645c")
    );
    let transpose = &exports[1].document.benchmarks[1];
    assert!(transpose.states.iter().all(|s| s.is_skipped));
    assert!(
        listed.contains(&format!("bandwidth/{dropped} on nvidia-h200-882b8b4e")),
        "{listed:?}"
    );
    assert!(
        exports
            .iter()
            .all(|e| e.document.devices.len() == 1 && e.document.devices[0].id == 0)
    );
    assert_eq!(exports[1].sample_files[0].path, "b.json-bin/0.bin");
}

#[test]
fn two_kinds_of_gpu_differ_in_their_device_sections_only() {
    let h200 = gpu("nvidia-h200-882b8b4e", false);
    let mut other = gpu("nvidia-a100-fixture", false);
    for lab in &mut other.results {
        let device = &mut lab.provenance.device;
        device.name = "NVIDIA A100-SXM4-80GB".into();
        device.compute_capability = (8, 0);
        device.sm_count = 108;
    }
    let names = ["a.json".to_string(), "b.json".to_string()];
    let exports = nvbench::aligned(&[h200, other], &[], &names, &mut |_, _, _| {});
    let (a, b) = (&exports[0].document, &exports[1].document);
    assert_eq!(a.devices[0].sm_version, Some(900));
    assert_eq!(b.devices[0].sm_version, Some(800));
    assert_eq!(b.devices[0].number_of_sms, Some(108));
    assert_ne!(
        a.devices, b.devices,
        "the compare's --ignore-devices is for this"
    );
    let names = |d: &nvbench::layout::Document| -> Vec<String> {
        d.benchmarks
            .iter()
            .flat_map(|b| b.states.iter().map(|s| s.name.clone()))
            .collect()
    };
    assert_eq!(names(a), names(b));
    assert!(
        b.benchmarks
            .iter()
            .flat_map(|b| &b.states)
            .any(|s| !s.is_skipped)
    );
}

/// A format-2 folder beside a format-1 one (which records no variant's parameters): every
/// state of a benchmark has a value on each of its axes, in both files, as nvbench's compare
/// scripts index them (they stopped with "list assignment index out of range" otherwise), and
/// a parameter only some states have is no axis.
#[test]
fn every_state_has_a_value_on_every_axis_of_its_benchmark() {
    let newer = one_gpu(vec![with_lab_params(recording("bank_strides"))]);
    let older = GpuResults {
        folder: "nvidia-h200-d8d1645c".into(),
        results: vec![recording("bank_strides")],
    };
    let names = ["a.json".to_string(), "b.json".to_string()];
    let exports = nvbench::aligned(&[newer.clone(), older], &[], &names, &mut |_, _, _| {});
    for export in &exports {
        let strides = &export.document.benchmarks[0];
        assert_eq!(strides.name, "bank_strides");
        let axes: Vec<&str> = strides.axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(axes, ["Variant"], "the older file gives no stride");
        assert!(
            strides
                .states
                .iter()
                .all(|s| s.axis_values.len() == axes.len())
        );
    }
    // Alone, the format-2 folder keeps its swept axis.
    let exports = nvbench::aligned(&[newer], &[], &names[..1], &mut |_, _, _| {});
    let strides = &exports[0].document.benchmarks[0];
    let axes: Vec<&str> = strides.axes.iter().map(|a| a.name.as_str()).collect();
    assert!(axes.contains(&"stride"), "{axes:?}");
    assert!(
        strides
            .states
            .iter()
            .all(|s| s.axis_values.len() == axes.len())
    );
}
