//! One Nsight Compute session for a lab's kernel variants: the measuring child run under `ncu`,
//! told to launch each variant once as its check did ([`Purpose::LaunchOnce`]: no reference,
//! no timing), and the counters of each variant's own kernel picked out of ncu's launches by
//! the order the child says it made them.

use crate::engine::{Progress, Purpose, RunOptions, VariantLaunches};
use crate::plan::LabPlan;
use crate::profile::{
    KernelCounters, ProfileError, command, find_ncu, metric_names, ncu_version, regex_escape,
    run_session, summarize,
};
use crate::protocol::{ChildRequest, Event, Request};
use kernelbook_core::results::ProfiledVariant;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

/// What one ncu session gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// ncu's name and version, e.g. "Nsight Compute 2025.3.1.0".
    pub tool: String,
    /// The counters of each variant profiled, in the lab's order.
    pub counters: Vec<ProfiledVariant>,
    /// Why some or all variants have no counters.
    pub problem: Option<ProfileError>,
    /// Whether the problem ends profiling for the build (no ncu, no permission).
    pub fatal: bool,
    pub seconds: f64,
}

/// The tool's name and version as the cache key and the page name it: ncu's version line, or
/// `None` where there is no ncu.
pub fn tool() -> Option<String> {
    let ncu = find_ncu()?;
    Some(ncu_version(&ncu).unwrap_or_else(|| "Nsight Compute (ncu)".into()))
}

/// Profiles `variants` (kernel variants of `plan`) in one ncu session: see the module
/// documentation.
pub(super) fn profile_variants(
    exe: &Path,
    (backend, ordinal): (crate::backend::BackendChoice, usize),
    plan: &LabPlan,
    seed: u64,
    variants: &[String],
    progress: &mut dyn Progress,
) -> Session {
    let started = Instant::now();
    let failed = |tool: String, problem: ProfileError| {
        let fatal = matches!(
            problem,
            ProfileError::NcuMissing(_) | ProfileError::Permission
        );
        Session {
            tool,
            counters: Vec::new(),
            problem: Some(problem),
            fatal,
            seconds: started.elapsed().as_secs_f64(),
        }
    };
    let Some(ncu) = find_ncu() else {
        return failed(
            "Nsight Compute (ncu)".into(),
            ProfileError::NcuMissing(None),
        );
    };
    let tool = ncu_version(&ncu).unwrap_or_else(|| "Nsight Compute (ncu)".into());
    let own = own_functions(plan, variants);
    let functions: BTreeSet<&str> = own.values().map(String::as_str).collect();
    if functions.is_empty() {
        return Session {
            tool,
            counters: Vec::new(),
            problem: None,
            fatal: false,
            seconds: 0.0,
        };
    }
    progress.stage(&format!(
        "lab `{}`: counters of {} under Nsight Compute",
        plan.lab,
        variants.join(", ")
    ));
    let request = Request::Measure(Box::new(ChildRequest {
        backend,
        ordinal,
        plan: plan.clone(),
        options: RunOptions {
            seed,
            only: Some(variants.to_vec()),
            purpose: Purpose::LaunchOnce,
        },
    }));
    let body = match serde_json::to_vec(&request) {
        Ok(body) => body,
        Err(err) => return failed(tool, ProfileError::Io(format!("the request: {err}"))),
    };
    let filter = functions
        .iter()
        .map(|f| regex_escape(f))
        .collect::<Vec<_>>()
        .join("|");
    let mut command = command(
        &ncu,
        &metric_names(true),
        &format!("^({filter})$"),
        None,
        exe,
        &[OsString::from(crate::protocol::CHILD_ARG)],
    );
    crate::backend::pass_environment_to_child(&mut command);
    // ncu runs the real ncu as a child of its own, which would outlive a killed kernelbook:
    // under the keeper, the whole group ends with kernelbook.
    let command = crate::process::under_keeper(exe, &command);
    let limit = plan.timeout() + Duration::from_secs(120);
    let (launches, stdout) = match run_session(command, &body, limit) {
        Ok(session) => session,
        Err(problem) => return failed(tool, problem),
    };
    let log = launch_log(&stdout);
    let (counters, problem) = assign(plan, &own, &log, &launches);
    Session {
        tool,
        counters,
        problem,
        fatal: false,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Each of `variants` that runs a kernel of its own, with that kernel's function name.
fn own_functions(plan: &LabPlan, variants: &[String]) -> BTreeMap<String, String> {
    variants
        .iter()
        .filter_map(|name| {
            let variant = plan.variant(name)?;
            Some((name.clone(), plan.kernel_of(variant)?.source.name.clone()))
        })
        .collect()
}

/// What the profiled child said it launched (its [`Event::Done`], on stdout under ncu).
fn launch_log(stdout: &str) -> Vec<VariantLaunches> {
    crate::protocol::events_in(stdout)
        .find_map(|event| match event {
            Event::Done { launches, .. } => Some(launches),
            _ => None,
        })
        .unwrap_or_default()
}

/// Pairs each variant with the counters of its own kernel's first launch in its run. ncu
/// numbers the launches it profiled (those of the functions in `own`) in the order the program
/// made them; `log` says which variant made which, in the same order.
fn assign(
    plan: &LabPlan,
    own: &BTreeMap<String, String>,
    log: &[VariantLaunches],
    launches: &[KernelCounters],
) -> (Vec<ProfiledVariant>, Option<ProfileError>) {
    let profiled: BTreeSet<&str> = own.values().map(String::as_str).collect();
    let mut launches: Vec<&KernelCounters> = launches.iter().collect();
    launches.sort_by_key(|l| l.id);
    let mut next = launches.into_iter();
    let mut counters = Vec::new();
    let mut problem = None;
    for entry in log {
        let mut taken = false;
        for function in entry
            .functions
            .iter()
            .filter(|f| profiled.contains(f.as_str()))
        {
            let Some(launch) = next.next() else {
                problem = Some(mismatch(
                    "ncu profiled fewer launches than the program made",
                ));
                break;
            };
            if launch.kernel != *function {
                problem = Some(mismatch(&format!(
                    "launch {} of ncu is `{}`, where the program launched `{function}`",
                    launch.id, launch.kernel
                )));
                return (counters, problem);
            }
            if !taken && own.get(&entry.variant) == Some(function) {
                counters.push(ProfiledVariant {
                    variant: entry.variant.clone(),
                    counters: summarize(launch),
                });
                taken = true;
            }
        }
    }
    let missing: Vec<&str> = own
        .keys()
        .filter(|name| !counters.iter().any(|c| &c.variant == *name))
        .map(String::as_str)
        .collect();
    if problem.is_none() && !missing.is_empty() {
        problem = Some(mismatch(&format!(
            "no launch of {} was profiled",
            missing.join(", ")
        )));
    }
    counters.sort_by_key(|c| {
        plan.variants
            .iter()
            .position(|v| v.name == c.variant)
            .unwrap_or(usize::MAX)
    });
    (counters, problem)
}

fn mismatch(why: &str) -> ProfileError {
    ProfileError::Io(format!(
        "the counters could not be matched to the variants: {why}"
    ))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::profile::Counter;

    fn launch(id: u64, kernel: &str, dram: f64) -> KernelCounters {
        let mut metrics = BTreeMap::new();
        metrics.insert(
            crate::profile::DRAM_READ_BYTES.to_string(),
            Counter {
                value: dram,
                unit: "byte".into(),
            },
        );
        KernelCounters {
            id,
            kernel: kernel.into(),
            process_id: None,
            device: None,
            compute_capability: None,
            block: None,
            grid: None,
            metrics,
            text: BTreeMap::new(),
        }
    }

    fn entry(variant: &str, functions: &[&str]) -> VariantLaunches {
        VariantLaunches {
            variant: variant.into(),
            functions: functions.iter().map(|f| f.to_string()).collect(),
        }
    }

    fn plan() -> LabPlan {
        crate::supervisor::tests::plan()
    }

    /// Two variants launching the same function (a sweep's rows) each get their own launch's
    /// counters, told apart by the order the child launched them in; another variant's kernel
    /// run as a setup step is skipped over.
    #[test]
    fn launches_of_one_function_are_told_apart_by_their_order() {
        let own: BTreeMap<String, String> = [("good", "copy"), ("wrong", "copy"), ("broken", "b")]
            .into_iter()
            .map(|(v, f)| (v.to_string(), f.to_string()))
            .collect();
        let log = [
            entry("good", &["copy"]),
            entry("wrong", &["b", "copy"]),
            entry("broken", &["b"]),
        ];
        let launches = [
            launch(0, "copy", 1.0),
            launch(1, "b", 2.0),
            launch(2, "copy", 3.0),
            launch(3, "b", 4.0),
        ];
        let (counters, problem) = assign(&plan(), &own, &log, &launches);
        assert_eq!(problem, None);
        let read: Vec<(&str, Option<f64>)> = counters
            .iter()
            .map(|c| (c.variant.as_str(), c.counters.dram_read_bytes))
            .collect();
        assert_eq!(
            read,
            [
                ("good", Some(1.0)),
                ("wrong", Some(3.0)),
                ("broken", Some(4.0))
            ]
        );
    }

    /// Launches that do not follow the child's log are not guessed at.
    #[test]
    fn a_log_that_does_not_match_nc_us_launches_is_a_problem() {
        let own: BTreeMap<String, String> = [("good", "copy")]
            .into_iter()
            .map(|(v, f)| (v.to_string(), f.to_string()))
            .collect();
        let log = [entry("good", &["copy"])];
        let (counters, problem) = assign(&plan(), &own, &log, &[launch(0, "other", 1.0)]);
        assert!(counters.is_empty());
        assert!(problem.is_some_and(|p| p.to_string().contains("`other`")));
        let (_, problem) = assign(&plan(), &own, &log, &[]);
        assert!(problem.is_some_and(|p| p.to_string().contains("fewer launches")));
    }

    #[test]
    fn the_launch_log_is_read_from_the_childs_events_among_ncus_lines() {
        let done = Event::Done {
            clocks: None,
            reusable: true,
            launches: vec![entry("good", &["copy"])],
            diagnoses: Vec::new(),
            buffers: Vec::new(),
        };
        let stdout = format!(
            "==PROF== Connected to process 1\n{}\n\"ID\",\"Kernel Name\"\n",
            serde_json::to_string(&done).expect("json")
        );
        assert_eq!(launch_log(&stdout), [entry("good", &["copy"])]);
    }
}
