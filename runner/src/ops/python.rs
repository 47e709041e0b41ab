//! Rows measured by the Python worker (PyTorch's transpose and sum, or a Python block of the
//! book that defines `transpose(x)`). The engine never runs these: the supervisor does, once the GPU is
//! free of the measuring child, through the build's one [`PythonPeers`].

use crate::backend::BackendChoice;
use crate::peers::{PeerJob, PeerRequest, PeerRun, PythonPeers};
use crate::plan::{LabPlan, PythonOp};
use kernelbook_core::results::{DeviceInfo, FailureStage, Mismatch, Outcome};
use kernelbook_core::stats::Summary;

/// The outcome of a Python row, and the implementation that ran (e.g. "torch 2.11.0").
pub fn measure(
    plan: &LabPlan,
    op: &PythonOp,
    device: &DeviceInfo,
    peers: &PythonPeers,
) -> (Outcome, Option<String>) {
    if !BackendChoice::of(device).is_some_and(BackendChoice::runs_python_rows) {
        let reason = "the Python peers (PyTorch, Triton) run on CUDA devices only here".into();
        return (Outcome::Unavailable { reason }, None);
    }
    let rule = &plan.timing.rule;
    let job = PeerJob {
        name: &op.job,
        params: &op.params,
        block: op.script(),
    };
    let request = PeerRequest {
        job,
        rule,
        flush_bytes: (device.l2_bytes * 2).max(64 << 20),
        warmup_runs: plan.timing.warmup_runs,
    };
    match peers.measure(&request, plan.timeout()) {
        PeerRun::Measured {
            samples_ms,
            implementation,
            stop_reason,
        } => {
            let outcome = match Summary::of(&samples_ms) {
                Some(summary) => Outcome::Measured {
                    noisy: summary.is_noisy(rule),
                    stop_reason,
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
