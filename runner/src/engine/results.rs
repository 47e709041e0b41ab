//! Results assembly: a variant's row before it runs, the provenance of a run, and the lab's
//! results once every row is in.

use crate::backend::{Compiler, Device};
use crate::plan::{LabPlan, OpPlan, ReferencePlan, VariantPlan};
use kernelbook_core::results::{
    FORMAT_VERSION, FailureStage, LabResults, Outcome, Provenance, VariantResult,
};
use std::time::Instant;

/// A variant's row before it runs: its names, the fingerprints of the kernels it launches and
/// the bytes it must move, with `outcome` to be replaced.
pub fn result_template(plan: &LabPlan, variant: &VariantPlan, outcome: Outcome) -> VariantResult {
    let main = plan.kernel_of(variant);
    let other_kernels = match &variant.op {
        OpPlan::Kernel(op) => op
            .launches()
            .filter_map(|launch| plan.build(launch))
            .filter(|build| Some(build.key.as_str()) != main.map(|m| m.key.as_str()))
            .map(|build| (build.key.clone(), build.source.source_hash()))
            .collect(),
        OpPlan::Python(op) => op
            .script()
            .into_iter()
            .map(|script| (script.name.clone(), script.source_hash()))
            .collect(),
        _ => Default::default(),
    };
    // The NumPy reference it was checked against is as much a part of the row as its kernels:
    // an edited reference makes a recording stale too.
    let mut other_kernels: std::collections::BTreeMap<String, String> = other_kernels;
    if let Some(ReferencePlan::Python { block, .. }) =
        plan.checks.get(variant.check).map(|c| &c.reference)
    {
        other_kernels.insert(block.name.clone(), block.source_hash());
    }
    VariantResult {
        name: variant.name.clone(),
        kernel: main.map(|build| build.key.clone()),
        source_hash: main.map(|build| build.source.source_hash()),
        compile_flags: Vec::new(),
        bytes_moved: variant.bytes_moved,
        launch: None,
        resources: None,
        outcome,
        implementation: None,
        work: variant.work.clone(),
        counter: None,
        checked: plan.checks.get(variant.check).map(|check| check.describe()),
        other_kernels,
        params: Some(variant.params.clone()),
        sampling_seconds: None,
        timeline: None,
        l2: None,
    }
}

/// A row for a variant that could not run: `stage` and `message` say why.
pub fn failed_result(
    plan: &LabPlan,
    variant: &VariantPlan,
    stage: FailureStage,
    message: String,
) -> VariantResult {
    result_template(plan, variant, Outcome::Failed { stage, message })
}

/// A lab's results once every variant is in, stamped with when the lab ended and how long it
/// took since `started`.
pub fn lab_results(
    plan: &LabPlan,
    mut provenance: Provenance,
    started: Instant,
    variants: Vec<VariantResult>,
) -> LabResults {
    provenance.measured_at = now_rfc3339();
    provenance.wall_seconds = started.elapsed().as_secs_f64();
    LabResults {
        format_version: FORMAT_VERSION,
        lab: plan.lab.clone(),
        params: plan.params.clone(),
        provenance,
        ceiling: plan.ceiling.clone(),
        variants,
        profile: None,
    }
}

/// Now, in RFC 3339 to the second, UTC: how results files write a time.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Where and how this measurement is made (the date and duration are filled in at the end).
pub fn provenance(
    device: &dyn Device,
    compiler: &dyn Compiler,
    plan: &LabPlan,
    seed: u64,
) -> Provenance {
    let info = device.info().clone();
    let rule = &plan.timing.rule;
    Provenance {
        driver_version: device.driver_version(),
        compiler_version: compiler.version(),
        runner_version: env!("CARGO_PKG_VERSION").to_string(),
        measured_at: now_rfc3339(),
        wall_seconds: 0.0,
        input_seed: seed,
        timing_method: format!(
            "device events around each launch; {}; \
             {} warm-up runs; at least {} samples and {} ms of kernel time, until the mean is \
             known to {:.1} % or for at most {} s",
            flush_method(plan, info.l2_bytes),
            plan.timing.warmup_runs,
            rule.min_samples,
            rule.min_gpu_ms,
            rule.target_rel_error * 100.0,
            rule.max_wall_s
        ),
        device: info,
        clocks: None,
    }
}

/// How the L2 is treated between samples, in words.
fn flush_method(plan: &LabPlan, l2_bytes: u64) -> String {
    let l2_mib = l2_bytes as f64 / (1 << 20) as f64;
    let all = plan.variants.iter().all(|v| v.flush_l2);
    let none = plan.variants.iter().all(|v| !v.flush_l2);
    if all {
        format!("L2 ({l2_mib:.0} MiB) flushed before every sample")
    } else if none {
        format!(
            "L2 ({l2_mib:.0} MiB) not flushed: the warm-up runs leave the caches as a re-run finds them"
        )
    } else {
        format!(
            "L2 ({l2_mib:.0} MiB) flushed before every sample where the variant says so, else left warm"
        )
    }
}
