//! Every GPU of a host (`--devices`), on a fake host of GPUs (`KERNELBOOK_FAKE_DEVICES`, whose
//! GPU k takes 1 + k times as long as GPU 0): `record` writes a folder per GPU, a busy GPU fails
//! its own column only, `run` sets the GPUs side by side, `build` puts every GPU in the "GPUs
//! compared" chapter, and `export` writes them for nvbench-compare-robust and spreadsheets.

mod support;

use kernelbook_core::results::LabResults;
use std::path::Path;
use support::{gpus_book, kernelbook, text};

fn recording(root: &Path, gpu: &str, lab: &str) -> LabResults {
    let path = root
        .join("labs/recorded")
        .join(gpu)
        .join(format!("{lab}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    LabResults::from_json(&text).expect("a valid recording")
}

fn gbs(results: &LabResults, variant: &str) -> f64 {
    results
        .variant(variant)
        .and_then(|v| v.effective_gbs())
        .expect("measured")
}

#[test]
fn record_on_every_gpu_writes_a_folder_per_gpu() {
    let book = gpus_book();
    let output = kernelbook(book.path(), &["record", "--devices", "all"], 2, "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("2 GPUs measured side by side in"),
        "{stdout}"
    );
    for lab in ["copy", "big_copy"] {
        let first = recording(book.path(), "fake-gpu-fake", lab);
        let second = recording(book.path(), "fake-gpu-fake-1", lab);
        assert_eq!(first.provenance.device.uuid, "GPU-fake");
        assert_eq!(second.provenance.device.uuid, "GPU-fake-1");
        let ratio = gbs(&first, "scalar") / gbs(&second, "scalar");
        assert!((ratio - 2.0).abs() < 0.01, "GPU 1 is half as fast: {ratio}");
    }
}

#[test]
fn a_busy_gpu_fails_its_own_column_and_the_others_still_record() {
    let book = gpus_book();
    let output = kernelbook(book.path(), &["record", "--devices", "all"], 3, "1");
    assert!(!output.status.success(), "GPU 1 recorded nothing");
    let stdout = text(&output.stdout);
    let copy_row = stdout
        .lines()
        .find(|l| l.starts_with("│ copy "))
        .unwrap_or_else(|| panic!("a status row for copy: {stdout}"));
    assert!(copy_row.contains("recorded"), "{copy_row}");
    assert!(copy_row.contains("busy"), "{copy_row}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("copy on GPU 1 (Fake GPU)"),
        "the error names what was not recorded: {stderr}"
    );
    recording(book.path(), "fake-gpu-fake", "copy");
    recording(book.path(), "fake-gpu-fake-2", "copy");
    assert!(!book.path().join("labs/recorded/fake-gpu-fake-1").exists());
    // With --keep-going, a GPU that recorded nothing still fails the command.
    let output = kernelbook(
        book.path(),
        &["record", "--devices", "1", "--keep-going"],
        3,
        "1",
    );
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("nothing recorded on GPU 1 (Fake GPU)"));
}

#[test]
fn run_sets_the_gpus_side_by_side() {
    let book = gpus_book();
    let output = kernelbook(
        book.path(),
        &["run", "copy", "--devices", "GPU-fake-1,0"],
        2,
        "",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let first_table = stdout.find("== GPU 1 (Fake GPU)").expect("GPU 1's table");
    let second_table = stdout.find("== GPU 0 (Fake GPU)").expect("GPU 0's table");
    assert!(first_table < second_table, "in the order asked for");
    let header = stdout
        .lines()
        .find(|l| l.contains("GPU 1 (Fake GPU) GB/s"))
        .unwrap_or_else(|| panic!("the side-by-side table: {stdout}"));
    assert!(header.find("GPU 1").expect("GPU 1") < header.find("GPU 0").expect("GPU 0"));
    let err = kernelbook(book.path(), &["run", "copy", "--devices", "5"], 2, "");
    assert!(!err.status.success());
    assert!(
        text(&err.stderr).contains("GPU 5 was asked for, but this machine has 2: 0: Fake GPU (GPU-fake), 1: Fake GPU (GPU-fake-1)"),
        "{}",
        text(&err.stderr)
    );
}

#[test]
fn run_prints_json_csv_or_markdown_on_stdout() {
    let book = gpus_book();
    // `--json -` is the results file on stdout, not a file named `-`.
    let output = kernelbook(book.path(), &["run", "copy", "--json", "-"], 1, "");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let results = LabResults::from_json(&text(&output.stdout)).expect("a results file on stdout");
    assert_eq!(results.lab, "copy");
    assert_eq!(
        results.format_version,
        kernelbook_core::results::FORMAT_VERSION
    );
    assert!(
        results.variants.iter().all(|v| v.params.is_some()),
        "each variant's parameters"
    );
    assert!(!book.path().join("-").exists());
    let csv = text(&kernelbook(book.path(), &["run", "copy", "--format", "csv"], 1, "").stdout);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().expect("a header").clone();
    assert_eq!(&header[0], "gpu");
    assert!(header.iter().any(|h| h == "param_n"), "{header:?}");
    assert_eq!(reader.records().count(), results.variants.len());
    let md = text(&kernelbook(book.path(), &["run", "copy", "--format", "md"], 1, "").stdout);
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(
        table[0].starts_with("| variant | access pattern | GB/s "),
        "{md}"
    );
    assert!(table[1].starts_with("| --- |"), "{md}");
    assert_eq!(table.len(), 2 + results.variants.len(), "{md}");
    assert!(!md.contains('│'), "no box drawing in Markdown: {md}");
    let both = kernelbook(
        book.path(),
        &["run", "copy", "--json", "-", "--format", "md"],
        1,
        "",
    );
    assert!(!both.status.success());
    assert!(text(&both.stderr).contains("--json - writes the results to stdout"));
    // Two GPUs: a JSON list, a results file each.
    let output = kernelbook(
        book.path(),
        &["run", "copy", "--devices", "all", "--format", "json"],
        2,
        "",
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let list: Vec<serde_json::Value> =
        serde_json::from_str(&text(&output.stdout)).expect("a JSON list");
    assert_eq!(list.len(), 2);
}

#[test]
fn the_comparison_chapter_shows_every_recorded_and_every_measured_gpu() {
    let book = gpus_book();
    let recorded = kernelbook(book.path(), &["record", "--devices", "all"], 2, "");
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    let built = kernelbook(book.path(), &["build", "--recorded"], 2, "");
    assert!(built.status.success(), "{}", text(&built.stderr));
    let page = book.path().join("target/book/gpus-compared.html");
    let html = std::fs::read_to_string(&page).expect("the comparison chapter");
    for folder in ["fake-gpu-fake", "fake-gpu-fake-1"] {
        assert!(html.contains(&format!("<code>{folder}</code>")), "{folder}");
    }
    assert!(html.contains("id=\"gpus-copy\"") && html.contains("id=\"gpus-big_copy\""));
    assert!(
        html.contains("data-series=\"fake-gpu-fake-1\""),
        "a chart series per GPU"
    );
    assert!(!html.contains("measured in this build"));
    assert!(
        text(&built.stderr).contains("the recordings hold several GPUs"),
        "no recorded-gpu in book.toml: the build says which GPU the chapters show"
    );

    let live = kernelbook(book.path(), &["build", "--devices", "all"], 2, "");
    assert!(live.status.success(), "{}", text(&live.stderr));
    let html = std::fs::read_to_string(&page).expect("the comparison chapter");
    assert_eq!(
        html.matches("<td>measured in this build</td>").count(),
        2,
        "both GPUs measured in the build have a column"
    );
}

#[test]
fn export_writes_every_gpu_as_csv_and_one_as_nvbench_json() {
    let book = gpus_book();
    let recorded = kernelbook(book.path(), &["record", "--devices", "all"], 2, "");
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    let csv = kernelbook(book.path(), &["export", "--format", "csv"], 2, "");
    assert!(csv.status.success(), "{}", text(&csv.stderr));
    let csv = text(&csv.stdout);
    assert_eq!(
        csv.lines().count(),
        1 + 2 * 2 * 3,
        "a row per GPU, lab and variant"
    );
    assert_eq!(
        csv.lines()
            .filter(|l| l.starts_with("fake-gpu-fake-1,"))
            .count(),
        6
    );
    let out = book.path().join("one.json");
    let json = kernelbook(
        book.path(),
        &[
            "export",
            "--format",
            "nvbench-json",
            "--gpu",
            "fake-gpu-fake-1",
            "-o",
        ],
        2,
        "",
    );
    assert!(!json.status.success(), "-o needs a file");
    let json = std::process::Command::new(env!("CARGO_BIN_EXE_kernelbook"))
        .arg("--root")
        .arg(book.path())
        .args([
            "export",
            "--format",
            "nvbench-json",
            "--gpu",
            "fake-gpu-fake-1",
            "-o",
        ])
        .arg(&out)
        .output()
        .expect("runs");
    assert!(json.status.success(), "{}", text(&json.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("written")).expect("JSON");
    assert_eq!(doc["devices"][0]["name"], "Fake GPU");
    assert_eq!(doc["benchmarks"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["meta"]["kernelbook"][0]["folder"], "fake-gpu-fake-1");
}
