//! Peers measured outside the [`Device`](crate::backend::Device) trait, in a `python3` child:
//! PyTorch's own transpose, and a Python block of the book (a Triton kernel). Timed there with
//! CUDA events under the same stopping rule and L2 flush as the course's kernels, and checked
//! against a CPU transpose.

use kernelbook_core::KernelSource;
use kernelbook_core::results::Mismatch;
use kernelbook_core::stats::StoppingRule;
use serde::Deserialize;
use std::process::Command;

/// What a peer run gave.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerRun {
    Measured {
        samples_ms: Vec<f64>,
        /// e.g. "torch 2.11.0".
        implementation: String,
    },
    /// Its output differed from the CPU reference.
    Wrong {
        implementation: String,
        mismatch: Option<Mismatch>,
    },
    /// Not installed here (no python3, no torch, no GPU for torch), and why.
    Unavailable(String),
    Failed(String),
}

const TORCH_TRANSPOSE: &str = r#"
import json, sys, time
try:
    import torch
except Exception as error:
    print(json.dumps({"unavailable": "python3 has no torch (" + type(error).__name__ + ")"}))
    sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"unavailable": "torch " + torch.__version__ + " sees no CUDA GPU"}))
    sys.exit(0)
rows, cols = int(sys.argv[1]), int(sys.argv[2])
rule = json.loads(sys.argv[3])
flush_bytes, warmup = int(sys.argv[4]), int(sys.argv[5])
block_path = sys.argv[6] if len(sys.argv) > 6 else ""
version = "torch " + torch.__version__
if block_path:
    # A Python block of the book: it must define transpose(x) returning the transposed tensor.
    namespace = {"__name__": "kernelbook_block"}
    try:
        exec(compile(open(block_path).read(), block_path, "exec"), namespace)
    except ModuleNotFoundError as error:
        print(json.dumps({"unavailable": "python3 has no " + str(error.name) + " (the block imports it)"}))
        sys.exit(0)
    if not callable(namespace.get("transpose")):
        print(json.dumps({"error": "the block defines no function transpose(x)"}))
        sys.exit(0)
    op = namespace["transpose"]
    if "triton" in sys.modules:
        version = "triton " + sys.modules["triton"].__version__ + ", " + version
else:
    op = lambda x: x.t().contiguous()
x = torch.rand(rows, cols, device="cuda") * 2 - 1
try:
    y = op(x)
    torch.cuda.synchronize()
except Exception:
    import traceback
    print(json.dumps({"error": traceback.format_exc(limit=-3)}))
    sys.exit(0)
expected = x.cpu().t().contiguous()
actual = y.cpu()
ok = tuple(actual.shape) == tuple(expected.shape) and torch.equal(actual, expected)
mismatch = None
if not ok and actual.shape == expected.shape:
    wrong = (actual != expected).flatten().nonzero()
    i = int(wrong[0]) if len(wrong) else 0
    mismatch = {"index": i, "expected": repr(float(expected.flatten()[i])), "actual": repr(float(actual.flatten()[i])), "count": int(len(wrong))}
flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")
if not ok:
    print(json.dumps({"ok": False, "mismatch": mismatch, "version": version}))
    sys.exit(0)
for _ in range(warmup):
    y = op(x)
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
samples, began = [], time.time()
def enough():
    n = len(samples)
    if n >= rule["max_samples"] or time.time() - began >= rule["max_wall_s"]:
        return True
    if n < rule["min_samples"] or sum(samples) < rule["min_gpu_ms"]:
        return False
    mean = sum(samples) / n
    spread = (sum((s - mean) ** 2 for s in samples) / (n - 1)) ** 0.5 / mean
    return spread / n ** 0.5 <= rule["target_rel_error"]
while not enough():
    flush.fill_(len(samples) % 251)
    start.record()
    y = op(x)
    end.record()
    end.synchronize()
    samples.append(start.elapsed_time(end))
print(json.dumps({"ok": bool(ok), "mismatch": mismatch, "samples_ms": samples, "version": version}))
"#;

#[derive(Deserialize)]
struct TorchReport {
    #[serde(default)]
    unavailable: Option<String>,
    #[serde(default)]
    ok: bool,
    #[serde(default)]
    mismatch: Option<Mismatch>,
    #[serde(default)]
    samples_ms: Vec<f64>,
    #[serde(default)]
    version: String,
    /// The block raised: the last frames of its traceback.
    #[serde(default)]
    error: Option<String>,
}

/// Times PyTorch's `x.t().contiguous()` on a `rows × cols` fp32 matrix.
pub fn torch_transpose(
    rows: usize,
    cols: usize,
    rule: &StoppingRule,
    flush_bytes: u64,
    warmup_runs: usize,
) -> PeerRun {
    run_transpose_script(rows, cols, rule, flush_bytes, warmup_runs, None)
}

/// Times the `transpose(x)` a Python block of the book defines (a Triton kernel and its
/// launcher), in the same harness as the PyTorch peer: the same input, check, flush and rule.
/// A traceback from the block names the chapter's file and line.
pub fn python_block_transpose(
    block: &KernelSource,
    rows: usize,
    cols: usize,
    rule: &StoppingRule,
    flush_bytes: u64,
    warmup_runs: usize,
) -> PeerRun {
    let file = match tempfile::Builder::new()
        .prefix(&format!("{}-", block.name))
        .suffix(".py")
        .tempfile()
    {
        Ok(file) => file,
        Err(err) => return PeerRun::Failed(format!("cannot write the block to a file: {err}")),
    };
    if let Err(err) = std::fs::write(file.path(), &block.source) {
        return PeerRun::Failed(format!("cannot write the block to a file: {err}"));
    }
    match run_transpose_script(
        rows,
        cols,
        rule,
        flush_bytes,
        warmup_runs,
        Some(file.path()),
    ) {
        PeerRun::Failed(message) => PeerRun::Failed(map_traceback(
            &message,
            &file.path().to_string_lossy(),
            block,
        )),
        other => other,
    }
}

/// Rewrites `File "TMP", line N` in a traceback to the chapter's file and line.
fn map_traceback(text: &str, temp_path: &str, block: &KernelSource) -> String {
    let needle = format!("File \"{temp_path}\", line ");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        out.push_str(&rest[..at]);
        let after = &rest[at + needle.len()..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse::<usize>() {
            Ok(line) => out.push_str(&format!(
                "{}:{}",
                block.origin.file.display(),
                block.origin.line + line - 1
            )),
            Err(_) => out.push_str(&needle),
        }
        rest = &after[digits.len()..];
    }
    out.push_str(rest);
    out
}

fn run_transpose_script(
    rows: usize,
    cols: usize,
    rule: &StoppingRule,
    flush_bytes: u64,
    warmup_runs: usize,
    block: Option<&std::path::Path>,
) -> PeerRun {
    let rule_json = serde_json::to_string(rule).unwrap_or_default();
    let mut command = Command::new("python3");
    command.args(["-c", TORCH_TRANSPOSE]).args([
        rows.to_string(),
        cols.to_string(),
        rule_json,
        flush_bytes.to_string(),
        warmup_runs.to_string(),
    ]);
    if let Some(path) = block {
        command.arg(path);
    }
    let output = command.output();
    let output = match output {
        Ok(output) => output,
        Err(err) => return PeerRun::Unavailable(format!("no python3 ({err})")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    parse_torch_report(
        stdout.lines().last().unwrap_or(""),
        &String::from_utf8_lossy(&output.stderr),
    )
}

fn parse_torch_report(line: &str, stderr: &str) -> PeerRun {
    match serde_json::from_str::<TorchReport>(line) {
        Ok(TorchReport {
            unavailable: Some(why),
            ..
        }) => PeerRun::Unavailable(why),
        Ok(TorchReport {
            error: Some(traceback),
            ..
        }) => PeerRun::Failed(format!(
            "the block raised an exception:\n{}",
            traceback.trim_end()
        )),
        Ok(report) if !report.ok => PeerRun::Wrong {
            implementation: report.version,
            mismatch: report.mismatch,
        },
        Ok(report) if report.samples_ms.is_empty() => {
            PeerRun::Failed("torch reported no samples".into())
        }
        Ok(report) => PeerRun::Measured {
            samples_ms: report.samples_ms,
            implementation: report.version,
        },
        Err(_) => {
            let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            PeerRun::Failed(format!(
                "the torch script failed: {}",
                tail[tail.len().saturating_sub(2)..].join(" / ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_kind_of_report() {
        assert_eq!(
            parse_torch_report(
                r#"{"unavailable": "python3 has no torch (ModuleNotFoundError)"}"#,
                ""
            ),
            PeerRun::Unavailable("python3 has no torch (ModuleNotFoundError)".into())
        );
        assert_eq!(
            parse_torch_report(
                r#"{"ok": true, "samples_ms": [0.5, 0.6], "version": "torch 2.11.0"}"#,
                ""
            ),
            PeerRun::Measured {
                samples_ms: vec![0.5, 0.6],
                implementation: "torch 2.11.0".into()
            }
        );
        assert_eq!(
            parse_torch_report(
                r#"{"ok": false, "mismatch": {"index": 3, "expected": "0.5", "actual": "0.25", "count": 1}, "version": "torch 2.11.0"}"#,
                ""
            ),
            PeerRun::Wrong {
                implementation: "torch 2.11.0".into(),
                mismatch: Some(Mismatch {
                    index: 3,
                    expected: "0.5".into(),
                    actual: "0.25".into(),
                    count: 1
                })
            }
        );
        assert_eq!(
            parse_torch_report("", "Traceback\nRuntimeError: CUDA out of memory\n"),
            PeerRun::Failed(
                "the torch script failed: Traceback / RuntimeError: CUDA out of memory".into()
            )
        );
    }

    #[test]
    fn the_script_reports_rather_than_fails_without_torch() {
        // This machine's python3 may or may not have torch; either way the answer is a report.
        match torch_transpose(64, 32, &StoppingRule::default(), 1 << 20, 1) {
            PeerRun::Failed(why) => panic!("the script itself failed: {why}"),
            other => eprintln!("{other:?}"),
        }
    }

    #[test]
    fn a_traceback_from_a_block_points_at_the_chapter() {
        let block = KernelSource {
            name: "triton_transpose".into(),
            source: "import torch\n".into(),
            origin: kernelbook_core::SourceLocation {
                file: "exercises/stretch-triton.md".into(),
                line: 28,
            },
            language: kernelbook_core::Language::Python,
        };
        let text = "Traceback (most recent call last):\n  File \"/tmp/t-1.py\", line 5, in transpose\nValueError: bad";
        assert_eq!(
            map_traceback(text, "/tmp/t-1.py", &block),
            "Traceback (most recent call last):\n  exercises/stretch-triton.md:32, in transpose\nValueError: bad"
        );
        assert_eq!(
            parse_torch_report(r#"{"error": "ValueError: bad\n"}"#, ""),
            PeerRun::Failed("the block raised an exception:\nValueError: bad".into())
        );
    }
}
