//! The results file's JSON Schema (`core/schema/results.schema.json`, documented in the book's
//! reference part) holds for every recording committed with the book, of format 1 or 2, and for
//! what this kernelbook writes; and it refuses what the reader refuses.

#[path = "support/results.rs"]
mod support;

use boon::{Compiler, SchemaIndex, Schemas};
use kernelbook_core::expr::Params;
use kernelbook_core::results::{FORMAT_VERSION, LabResults, SweepOrigin, SweptAxis, VariantParams};
use serde_json::Value;

const SCHEMA: &str = "core/schema/results.schema.json";
/// The schema's `$id`.
const ID: &str = "https://example.invalid/kernelbook/results.schema.json";

fn compiled() -> (Schemas, SchemaIndex) {
    let path = support::repo().join(SCHEMA);
    let text = std::fs::read_to_string(&path).expect("the schema");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    let mut schemas = Schemas::new();
    let mut compiler = Compiler::new();
    compiler.add_resource(ID, schema).expect("the schema loads");
    let index = compiler
        .compile(ID, &mut schemas)
        .unwrap_or_else(|err| panic!("{SCHEMA}: {err:#}"));
    (schemas, index)
}

fn check(schemas: &Schemas, index: SchemaIndex, what: &str, value: &Value) -> Result<(), String> {
    schemas
        .validate(value, index)
        .map_err(|err| format!("{what}: {err:#}"))
}

#[test]
fn every_committed_recording_holds_to_the_schema() {
    let (schemas, index) = compiled();
    let dir = support::repo().join("labs/recorded");
    let mut files = Vec::new();
    let mut folders = vec![dir];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 40, "{} recordings", files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a recording");
        let value: Value = serde_json::from_str(&text).expect("JSON");
        check(&schemas, index, &path.display().to_string(), &value)
            .unwrap_or_else(|e| panic!("{e}"));
        let version = value["format_version"].as_u64();
        assert!(matches!(version, Some(1 | 2)), "{}", path.display());
    }
}

/// A recording as this kernelbook writes one: format 2, each variant's own parameters.
fn written_now() -> Value {
    let (_, text) = support::recordings()
        .into_iter()
        .find(|(name, _)| name == "bank_strides")
        .expect("the bank_strides recording");
    let mut results = LabResults::from_json(&text).expect("valid");
    results.format_version = FORMAT_VERSION;
    for v in &mut results.variants {
        let stride: i64 = v.name.trim_start_matches('s').parse().expect("s<stride>");
        v.params = Some(VariantParams {
            own: Params::from([("stride".into(), stride)]),
            sweep: Some(SweepOrigin {
                entry: "s{stride}".into(),
                axes: vec![SweptAxis {
                    name: "stride".into(),
                    pow2: false,
                }],
            }),
        });
    }
    serde_json::from_str(&results.to_json()).expect("JSON")
}

#[test]
fn what_this_kernelbook_writes_holds_to_the_schema_and_format_2_needs_params() {
    let (schemas, index) = compiled();
    let now = written_now();
    assert_eq!(now["format_version"], 2);
    check(&schemas, index, "format 2", &now).unwrap_or_else(|e| panic!("{e}"));
    // A format 2 file without a variant's parameters, a format 1 file with them, a format of
    // the future and a field nobody writes are refused.
    let mut without = now.clone();
    without["variants"][0]
        .as_object_mut()
        .expect("a variant")
        .remove("params");
    assert!(check(&schemas, index, "no params", &without).is_err());
    let mut old_with = now.clone();
    old_with["format_version"] = 1.into();
    assert!(check(&schemas, index, "format 1 with params", &old_with).is_err());
    let mut future = now.clone();
    future["format_version"] = 3.into();
    assert!(check(&schemas, index, "format 3", &future).is_err());
    let mut extra = now;
    extra["variants"][0]["params"]["sweep"]["axes"][0]["log"] = true.into();
    assert!(check(&schemas, index, "an unknown field", &extra).is_err());
}

#[test]
fn a_pipelined_rows_timeline_holds_to_the_schema() {
    use kernelbook_core::results::timeline::{Part, Span, Timeline};
    let (schemas, index) = compiled();
    let mut results: LabResults =
        serde_json::from_value(written_now()).expect("results from their JSON");
    let span = |stream, chunk, part, start_ms, end_ms| Span {
        stream,
        chunk,
        part,
        start_ms,
        end_ms,
    };
    results.variants[0].timeline = Some(Timeline {
        streams: 2,
        chunks: 2,
        spans: vec![
            span(0, 0, Part::HostToDevice, 0.0, 1.0),
            span(0, 0, Part::Kernel, 1.0, 2.0),
            span(0, 0, Part::DeviceToHost, 2.0, 3.0),
            span(1, 1, Part::HostToDevice, 1.0, 2.0),
            span(1, 1, Part::Kernel, 2.0, 3.0),
            span(1, 1, Part::DeviceToHost, 3.0, 4.0),
        ],
        total_ms: 4.0,
    });
    let value: Value = serde_json::from_str(&results.to_json()).expect("JSON");
    assert_eq!(
        value["variants"][0]["timeline"]["spans"][1]["part"],
        "kernel"
    );
    check(&schemas, index, "a timeline", &value).unwrap_or_else(|e| panic!("{e}"));
    let mut bad = value;
    bad["variants"][0]["timeline"]["spans"][0]["part"] = "copy".into();
    assert!(check(&schemas, index, "an unknown part", &bad).is_err());
}

#[test]
fn a_rows_l2_controls_and_the_l2_hit_rate_hold_to_the_schema() {
    use kernelbook_core::results::{L2Result, L2Settings, L2Window};
    let (schemas, index) = compiled();
    let (_, text) = support::recordings()
        .into_iter()
        .find(|(name, _)| name == "bank_strides")
        .expect("the bank_strides recording");
    let mut results = LabResults::from_json(&text).expect("valid");
    let settings = |fetch: u64, persisting: u64, ratio: f64| L2Settings {
        fetch_granularity_bytes: Some(fetch),
        persisting_bytes: Some(persisting),
        window: Some(L2Window {
            buffer: "hot".into(),
            bytes: 1 << 20,
            hit_ratio: ratio,
        }),
    };
    results.variants[0].l2 = Some(L2Result {
        before: L2Settings {
            fetch_granularity_bytes: Some(64),
            persisting_bytes: Some(0),
            window: None,
        },
        requested: settings(32, 1 << 25, 0.5),
        reported: settings(32, 1 << 24, 0.5),
        max_persisting_bytes: Some(1 << 24),
        max_window_bytes: Some(1 << 27),
    });
    if let Some(profile) = results.profile.as_mut()
        && let Some(kernel) = profile.kernels.first_mut()
    {
        kernel.counters.l2_hit_rate_pct = Some(87.5);
    }
    let value: Value = serde_json::from_str(&results.to_json()).expect("JSON");
    check(&schemas, index, "with l2", &value).unwrap_or_else(|e| panic!("{e}"));
    let back = LabResults::from_json(&results.to_json()).expect("reads back");
    assert_eq!(back.variants[0].l2, results.variants[0].l2);
    let mut bad = value;
    bad["variants"][0]["l2"]["reported"]["window"]["hit_ratio"] = 1.5.into();
    assert!(check(&schemas, index, "a hit ratio above 1", &bad).is_err());
}
