//! Rows measured by the Python process (PyTorch's transpose, or a Python block of the book that
//! defines `transpose(x)`). The engine never runs these: the supervisor does, once the GPU is
//! free of the measuring child, through the build's one [`PythonPeers`].

use crate::backend::BackendChoice;
use crate::peers::{PeerRun, PythonPeers, TransposeRequest};
use crate::plan::{LabPlan, PythonOp};
use kernelbook_core::results::{DeviceInfo, FailureStage, Mismatch, Outcome};
use kernelbook_core::stats::{StopReason, Summary};

/// The outcome of a Python row, and the implementation that ran (e.g. "torch 2.11.0").
pub fn measure(
    plan: &LabPlan,
    op: &PythonOp,
    device: &DeviceInfo,
    peers: &PythonPeers,
) -> (Outcome, Option<String>) {
    if !BackendChoice::of(device).runs_python_rows() {
        let reason = "the Python peers (PyTorch, Triton) run on CUDA devices only here".into();
        return (Outcome::Unavailable { reason }, None);
    }
    let rule = &plan.timing.rule;
    let request = TransposeRequest {
        rows: op.rows,
        cols: op.cols,
        rule,
        flush_bytes: (device.l2_bytes * 2).max(64 << 20),
        warmup_runs: plan.timing.warmup_runs,
        block: op.script.as_ref(),
    };
    match peers.transpose(&request, plan.timeout()) {
        PeerRun::Measured {
            samples_ms,
            implementation,
        } => {
            let outcome = match Summary::of(&samples_ms) {
                Some(summary) => Outcome::Measured {
                    noisy: summary.is_noisy(rule),
                    stop_reason: rule
                        .verdict(&samples_ms, 0.0)
                        .unwrap_or(StopReason::TimeLimit),
                    summary,
                    samples_ms,
                },
                None => Outcome::Failed {
                    stage: FailureStage::Timing,
                    message: "the Python peer reported invalid samples".into(),
                },
            };
            (outcome, Some(implementation))
        }
        PeerRun::Wrong {
            implementation,
            mismatch,
        } => {
            let mismatch = mismatch.unwrap_or(Mismatch {
                index: 0,
                expected: "a transposed matrix".into(),
                actual: "another shape".into(),
                count: 0,
            });
            (Outcome::WrongResult { mismatch }, Some(implementation))
        }
        PeerRun::Unavailable(reason) => (Outcome::Unavailable { reason }, None),
        PeerRun::Failed(message) => (
            Outcome::Failed {
                stage: FailureStage::Launch,
                message,
            },
            None,
        ),
    }
}
