//! Which profiler counters a diagram sits beside: those of the lab's results as the book shows
//! them (live, cached or recorded), else the recorded ones where this machine's run has none (no
//! Nsight Compute here), else a sentence saying why there are none.

use super::compare::CounterSource;
use kernelbook_core::access::WARP_LANES;
use kernelbook_core::results::{KernelProfile, LabResults};
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;

/// The counters for `variant` of `lab`, or why there are none. `recorded` is the lab's
/// recording, consulted when the results shown have no counters for it.
pub fn counter_source<'a>(
    lab: &LabSpec,
    variant: &str,
    outcome: Option<&'a LabOutcome>,
    recorded: Option<&'a LabResults>,
) -> Result<CounterSource<'a>, String> {
    let label = lab.variant(variant).map_or(variant, |v| v.label());
    let row = format!("lab `{}`, {label}", lab.name);
    let from = |results: &'a LabResults, origin: String, caveats: Vec<String>| {
        // The model is of a 32-lane warp: a 64-lane wavefront's counters are of another
        // instruction.
        if results.provenance.device.warp_size as usize != WARP_LANES {
            return None;
        }
        counters_in(results, variant).map(|(counters, tool)| CounterSource {
            counters,
            tool,
            origin,
            lab: lab.name.clone(),
            row: row.clone(),
            caveats,
        })
    };
    let shown = match outcome {
        Some(LabOutcome::Measured { results, .. }) => {
            from(results, "measured on this machine".into(), Vec::new())
        }
        Some(LabOutcome::Recorded {
            results,
            stale_kernels,
            ..
        }) => {
            // The kernel the recording ran for the row (what its results say), not the lab's.
            let kernel = results.variant(variant).and_then(|v| v.kernel.clone());
            let caveats = kernel
                .filter(|k| stale_kernels.contains(k))
                .map(|k| {
                    vec![format!(
                        "These counters were recorded before edits to `{k}`: the prediction is of the code shown, the counters of the code recorded."
                    )]
                })
                .unwrap_or_default();
            from(results, recorded_origin(results), caveats)
        }
        Some(LabOutcome::Missing { .. }) | None => None,
    };
    if let Some(source) = shown {
        return Ok(source);
    }
    let shown_results = match outcome {
        Some(LabOutcome::Measured { results, .. } | LabOutcome::Recorded { results, .. }) => {
            Some(results)
        }
        _ => None,
    };
    // Live results without counters (no Nsight Compute here): the recorded ones, said so. (A
    // recorded outcome already is the recording.)
    let live = !matches!(outcome, Some(LabOutcome::Recorded { .. }));
    let why = shown_results.map_or_else(
        || format!("lab `{}` has no results here", lab.name),
        |results| why_missing(lab, variant, results, live),
    );
    if let Some(recorded) = recorded.filter(|_| live) {
        let caveat =
            format!("This machine's run gave no counters ({why}); these are the recorded ones.");
        if let Some(source) = from(recorded, recorded_origin(recorded), vec![caveat]) {
            return Ok(source);
        }
    }
    Err(why)
}

/// The counters of `variant` in `results`, with the profiler's name.
fn counters_in<'a>(results: &'a LabResults, variant: &str) -> Option<(&'a KernelProfile, String)> {
    let run = results.profile.as_ref()?;
    let kernel = run.kernels.iter().find(|k| k.variant == variant)?;
    Some((&kernel.counters, run.tool.clone()))
}

/// "recorded on NVIDIA H200, 2026-12-01T09:18:40Z", or where the profile was taken when that
/// was apart from the timings.
fn recorded_origin(results: &LabResults) -> String {
    match results.profile.as_ref().and_then(|p| p.provenance.as_ref()) {
        Some(taken) => format!("recorded on {}, {}", taken.device, taken.measured_at),
        None => format!(
            "recorded on {}, {}",
            results.provenance.device.name, results.provenance.measured_at
        ),
    }
}

/// Why `results` (measured here when `live`, else recorded) hold no counters for `variant`.
fn why_missing(lab: &LabSpec, variant: &str, results: &LabResults, live: bool) -> String {
    let device = &results.provenance.device;
    if device.warp_size as usize != WARP_LANES {
        return format!(
            "lab `{}` was measured on an {} whose warps are {} lanes, and the model is of a {WARP_LANES}-lane warp",
            lab.name, device.name, device.warp_size
        );
    }
    match &results.profile {
        None if live => format!("lab `{}` was measured without Nsight Compute", lab.name),
        None => format!(
            "lab `{}` was recorded without Nsight Compute counters; on a GPU with Nsight Compute, `kernelbook profile {}` adds them to its recording",
            lab.name, lab.name
        ),
        Some(run) => match &run.problem {
            Some(problem) => format!("Nsight Compute gave no counters for `{variant}`: {problem}"),
            None => format!("Nsight Compute gave no counters for `{variant}`"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A recording's counters beside a kernel edited since carry a caveat, found from the
    /// kernel the recording's row ran, whatever the lab file now says.
    #[test]
    fn counters_of_an_edited_kernel_say_so() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let lab = LabSpec::load(&root.join("labs/profile_transpose.toml")).expect("the lab");
        let text = std::fs::read_to_string(
            root.join("labs/recorded/nvidia-h200-882b8b4e/profile_transpose.json"),
        )
        .expect("the recording");
        let results = LabResults::from_json(&text).expect("a results file");
        let recorded = |stale: &[&str]| LabOutcome::Recorded {
            results: results.clone(),
            why: "test".into(),
            stale_kernels: stale.iter().map(|k| k.to_string()).collect(),
            compile_errors: Vec::new(),
        };
        let edited = recorded(&["transpose_naive"]);
        let source = counter_source(&lab, "naive", Some(&edited), None).expect("counters");
        assert_eq!(
            source.caveats,
            [
                "These counters were recorded before edits to `transpose_naive`: the prediction is of the code shown, the counters of the code recorded."
            ]
        );
        let source = counter_source(&lab, "tiled", Some(&edited), None).expect("counters");
        assert!(source.caveats.is_empty(), "{:?}", source.caveats);
    }
}
