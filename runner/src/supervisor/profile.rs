//! Nsight Compute runs of a measured lab: which variants are profiled together, the measuring
//! child run under `ncu` with a plan that times each variant once, and the counters kept.

use crate::profile::{
    KernelCounters, ProfileError, command, find_ncu, metric_names, ncu_version, profile_with_input,
    regex_escape, summarize,
};
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

/// Profiles each kernel variant of `plan` that `results` shows measured, keeping the counters
/// of each kernel's first launch — the checked run on freshly poisoned output; the child's one
/// timed run after it goes unused. Variants whose kernels differ share one ncu run (one child
/// process, one CUDA start-up); a kernel that several variants launch is profiled once per
/// variant, each in a run of its own, so that its first launch is that variant's. Problems (no
/// ncu, no permission) are reported in the run, not as errors: the lab's timings stand on
/// their own.
pub(super) fn profile_lab(
    exe: &Path,
    (backend, ordinal): (crate::backend::BackendChoice, usize),
    plan: &crate::plan::LabPlan,
    results: &kernelbook_core::results::LabResults,
    progress: &mut dyn crate::engine::Progress,
) -> kernelbook_core::results::ProfileRun {
    use kernelbook_core::results::ProfileRun;
    let Some(ncu) = find_ncu() else {
        return ProfileRun {
            tool: "Nsight Compute (ncu)".into(),
            kernels: Vec::new(),
            problem: Some(ProfileError::NcuMissing(None).to_string()),
            provenance: None,
        };
    };
    let tool = ncu_version(&ncu).unwrap_or_else(|| "Nsight Compute (ncu)".into());
    let mut run = ProfileRun {
        tool,
        kernels: Vec::new(),
        problem: None,
        provenance: None,
    };
    // The profiled child runs each variant once, untimed beyond one sample.
    let mut profiled = plan.clone();
    profiled.timing = crate::plan::TimingPlan {
        rule: kernelbook_core::stats::StoppingRule {
            min_samples: 1,
            max_samples: 1,
            min_gpu_ms: 0.0,
            ..kernelbook_core::stats::StoppingRule::default()
        },
        warmup_runs: 0,
    };
    let metrics = metric_names(true);
    for batch in profile_batches(plan, results) {
        let functions: Vec<&str> = batch.iter().map(|(_, f)| f.as_str()).collect();
        progress.stage(&format!(
            "lab `{}`: profiling {} under ncu",
            plan.lab,
            functions.join(", ")
        ));
        let request = crate::protocol::ChildRequest {
            backend,
            ordinal,
            plan: profiled.clone(),
            options: crate::engine::RunOptions {
                seed: results.provenance.input_seed,
                only: Some(batch.iter().map(|(v, _)| v.clone()).collect()),
            },
        };
        let body = match serde_json::to_vec(&request) {
            Ok(body) => body,
            Err(err) => {
                run.problem = Some(format!("cannot build the profiling request: {err}"));
                break;
            }
        };
        let filter = functions
            .iter()
            .map(|f| regex_escape(f))
            .collect::<Vec<_>>()
            .join("|");
        let mut command = command(
            &ncu,
            &metrics,
            &format!("^({filter})$"),
            None,
            exe,
            &[OsString::from(crate::protocol::CHILD_ARG)],
        );
        crate::backend::cuda::nvrtc_search::pass_to_child(&mut command);
        // ncu runs the real ncu as a child of its own, which would outlive a killed kernelbook:
        // under the keeper, the whole group ends with kernelbook.
        let command = crate::process::under_keeper(exe, &command);
        let limit = plan.timeout() * batch.len().max(1) as u32 + Duration::from_secs(120);
        let fatal = keep_counters(&mut run, &batch, profile_with_input(command, &body, limit));
        if fatal {
            break;
        }
    }
    // The table follows the lab's order whatever order the runs went in.
    run.kernels.sort_by_key(|k| {
        plan.variants
            .iter()
            .position(|v| v.name == k.variant)
            .unwrap_or(usize::MAX)
    });
    run
}

/// The ncu runs a lab needs: (variant, function name) of every measured kernel variant, in the
/// lab's order, those whose function no other variant launches in one run, the rest one run
/// each.
fn profile_batches(
    plan: &crate::plan::LabPlan,
    results: &kernelbook_core::results::LabResults,
) -> Vec<Vec<(String, String)>> {
    use kernelbook_core::results::Outcome;
    let targets: Vec<(String, String)> = plan
        .variants
        .iter()
        .filter(|v| {
            results
                .variant(&v.name)
                .is_some_and(|r| matches!(r.outcome, Outcome::Measured { .. }))
        })
        .filter_map(|v| Some((v.name.clone(), plan.kernel_of(v)?.source.name.clone())))
        .collect();
    let shared = |function: &str| targets.iter().filter(|(_, f)| f == function).count() > 1;
    let mut batches: Vec<Vec<(String, String)>> = Vec::new();
    let (own_run, one_run): (Vec<_>, Vec<_>) =
        targets.iter().cloned().partition(|(_, f)| shared(f));
    if !one_run.is_empty() {
        batches.push(one_run);
    }
    batches.extend(own_run.into_iter().map(|target| vec![target]));
    batches
}

/// Keeps the counters of each batch variant's launch in `run`, or the problem; returns whether
/// the problem ends profiling (no ncu, no permission).
fn keep_counters(
    run: &mut kernelbook_core::results::ProfileRun,
    batch: &[(String, String)],
    launches: Result<Vec<KernelCounters>, ProfileError>,
) -> bool {
    use kernelbook_core::results::ProfiledVariant;
    match launches {
        Ok(launches) => {
            for (variant, function) in batch {
                match launches.iter().find(|l| &l.kernel == function) {
                    Some(launch) => run.kernels.push(ProfiledVariant {
                        variant: variant.clone(),
                        counters: summarize(launch),
                    }),
                    None => {
                        run.problem = Some(format!("ncu profiled no launch of `{function}`"));
                    }
                }
            }
            false
        }
        Err(err) => {
            let fatal = matches!(err, ProfileError::NcuMissing(_) | ProfileError::Permission);
            run.problem = Some(err.to_string());
            fatal
        }
    }
}
