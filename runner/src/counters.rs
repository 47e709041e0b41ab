//! Counters, the second layer: Nsight Compute's figures for a lab's kernels, kept apart from
//! its numbers and never on the way to them.
//!
//! A lab's timings are measured and shown first; its counters are then looked up by kernel in
//! the counters cache ([`CounterCache`], keyed by [`LabPlan::counter_key`]), and only the
//! variants the cache lacks are profiled, in one ncu session per lab
//! ([`Supervisor::counters`]). What is not known yet is marked pending, so the page can say the
//! counters are being collected. Where a build collects none (`--no-counters`, or no ncu on the
//! machine), the recording's counters stand in for kernels unchanged since, and say so.

use crate::plan::LabPlan;
use crate::profile::metric_names;
use crate::store::{self, CachedCounters, CounterCache};
use crate::supervisor::{Supervisor, profile};
use kernelbook_core::KernelSource;
use kernelbook_core::results::{
    DeviceInfo, LabResults, Outcome, ProfileProvenance, ProfileRun, ProfiledVariant,
};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Whether a build collects counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CountersPolicy {
    /// Collect what the cache lacks, after every number.
    #[default]
    Collect,
    /// Collect none: cached counters, else the recording's where the kernels are unchanged.
    Skip,
}

/// The counters cache and the profiler, found once.
#[derive(Debug)]
pub struct Counters {
    cache: CounterCache,
    tool: OnceLock<Option<String>>,
}

/// What is known of a lab's counters without profiling.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    /// The counters the cache holds, in the lab's order.
    pub run: ProfileRun,
    /// The kernel variants still to profile, and their counter keys.
    pub missing: Vec<String>,
    pub keys: Vec<String>,
}

/// A lab whose counters are to be collected: its plan, its results (the seed of its inputs,
/// and which variants were measured), and the variants the cache lacks.
#[derive(Debug, Clone)]
pub struct CountersJob {
    pub plan: LabPlan,
    pub seed: u64,
    pub missing: Vec<String>,
    /// The counter keys of `missing`.
    pub keys: Vec<String>,
}

impl Counters {
    pub fn new(cache: CounterCache) -> Self {
        Counters {
            cache,
            tool: OnceLock::new(),
        }
    }

    /// The profiler's name and version, or `None` where this machine has none.
    pub fn tool(&self) -> Option<&str> {
        self.tool.get_or_init(profile::tool).as_deref()
    }

    /// The cached counters of `results`' measured kernel variants, and those missing; `None`
    /// for a lab that is not profiled or where there is no profiler.
    pub fn known(&self, plan: &LabPlan, results: &LabResults) -> Option<Known> {
        if !plan.profile {
            return None;
        }
        let tool = self.tool()?;
        let device = &results.provenance.device;
        let metrics = metric_names(true);
        let mut kernels = Vec::new();
        let mut missing = Vec::new();
        let mut keys = Vec::new();
        let mut newest: Option<CachedCounters> = None;
        for variant in profiled_variants(plan, results) {
            let Some(key) = plan.counter_key(variant, &device.name, tool, &metrics) else {
                continue;
            };
            match self.cache.get(&key) {
                Ok(Some(cached)) => {
                    kernels.push(ProfiledVariant {
                        variant: variant.name.clone(),
                        counters: cached.counters.clone(),
                    });
                    if newest
                        .as_ref()
                        .is_none_or(|n| n.measured_at < cached.measured_at)
                    {
                        newest = Some(cached);
                    }
                }
                // A file that cannot be used is as good as none: the counters are taken again.
                Ok(None) | Err(_) => {
                    missing.push(variant.name.clone());
                    keys.push(key);
                }
            }
        }
        let run = ProfileRun {
            tool: tool.to_string(),
            kernels,
            problem: None,
            provenance: newest.map(|n| ProfileProvenance {
                device: n.device,
                uuid: n.uuid,
                measured_at: n.measured_at,
            }),
            pending: missing.clone(),
            from_recording: false,
        };
        Some(Known { run, missing, keys })
    }

    /// Profiles `job`'s missing variants in one session and keeps what it gave in the cache;
    /// returns the session (its problem, if any, is the lab's).
    pub fn collect(
        &self,
        supervisor: &Supervisor,
        job: &CountersJob,
        device: &DeviceInfo,
        progress: &mut dyn crate::engine::Progress,
    ) -> Result<profile::Session, crate::supervisor::RunError> {
        let session = supervisor.counters(&job.plan, job.seed, &job.missing, progress)?;
        let metrics = metric_names(true);
        let per_variant = session.seconds / job.missing.len().max(1) as f64;
        let measured_at = crate::engine::now_rfc3339();
        for profiled in &session.counters {
            let key = job.plan.variant(&profiled.variant).and_then(|v| {
                job.plan
                    .counter_key(v, &device.name, &session.tool, &metrics)
            });
            let Some(key) = key else { continue };
            let entry = CachedCounters {
                key,
                tool: session.tool.clone(),
                device: device.name.clone(),
                uuid: device.uuid.clone(),
                measured_at: measured_at.clone(),
                seconds: per_variant,
                counters: profiled.counters.clone(),
            };
            if let Err(err) = self.cache.put(&entry) {
                crate::engine::notice(&format!(
                    "kernelbook: could not keep counters in {}: {err}",
                    self.cache.path(&entry.key).display()
                ));
            }
        }
        Ok(session)
    }
}

/// The variants of `plan` whose counters the book shows: those running a kernel of the book
/// that `results` has measured (a row that failed or was wrong has no counters worth showing).
pub fn profiled_variants<'p>(
    plan: &'p LabPlan,
    results: &LabResults,
) -> impl Iterator<Item = &'p crate::plan::VariantPlan> {
    plan.variants.iter().filter(move |v| {
        plan.kernel_of(v).is_some()
            && results
                .variant(&v.name)
                .is_some_and(|r| matches!(r.outcome, Outcome::Measured { .. }))
    })
}

/// The recording's counters of the variants whose kernels are unchanged since it was made,
/// standing in where this build collects none; `None` where the recording has none to give.
pub fn recorded_stand_in(
    recorded: &LabResults,
    kernels: &BTreeMap<String, KernelSource>,
    missing: &[String],
) -> Option<ProfileRun> {
    let run = recorded.profile.as_ref()?;
    let stale = store::stale_kernels(recorded, kernels);
    let unchanged = |variant: &str| {
        recorded.variant(variant).is_some_and(|v| {
            v.kernel.as_ref().is_some_and(|k| !stale.contains(k))
                && v.other_kernels.keys().all(|k| !stale.contains(k))
        })
    };
    let kernels: Vec<ProfiledVariant> = run
        .kernels
        .iter()
        .filter(|k| missing.contains(&k.variant) && unchanged(&k.variant))
        .cloned()
        .collect();
    if kernels.is_empty() {
        return None;
    }
    let provenance = run.provenance.clone().or_else(|| {
        let p = &recorded.provenance;
        Some(ProfileProvenance {
            device: p.device.name.clone(),
            uuid: p.device.uuid.clone(),
            measured_at: p.measured_at.clone(),
        })
    });
    Some(ProfileRun {
        tool: run.tool.clone(),
        kernels,
        problem: None,
        provenance,
        pending: Vec::new(),
        from_recording: true,
    })
}

/// What a build that collects no counters shows: the cached ones where there are any (this
/// machine's counters and the recording's side by side would read as one run), else the
/// recording's stand-in; what neither has stays pending.
pub fn merge_stand_in(known: ProfileRun, stand_in: Option<ProfileRun>) -> ProfileRun {
    match stand_in {
        Some(stand_in) if known.kernels.is_empty() => {
            let pending = known
                .pending
                .into_iter()
                .filter(|v| !stand_in.kernels.iter().any(|k| &k.variant == v))
                .collect();
            ProfileRun {
                pending,
                ..stand_in
            }
        }
        _ => known,
    }
}

/// About how long the counters left will take: a session's fixed cost (ncu's start, the
/// child's CUDA context, the inputs) plus a cost per variant profiled, learnt from the
/// sessions so far (a guess until the first ends).
#[derive(Debug, Clone, Default)]
pub struct Estimate {
    sessions: usize,
    variants: usize,
    seconds: f64,
}

impl Estimate {
    /// A session's fixed cost, and a variant's, before any session has ended (seen on an
    /// H200: ncu's start-up and the child's context take a few seconds).
    const FIXED_GUESS: f64 = 3.0;
    const PER_VARIANT_GUESS: f64 = 0.5;

    pub fn observe(&mut self, seconds: f64, variants: usize) {
        self.sessions += 1;
        self.variants += variants;
        self.seconds += seconds;
    }

    /// Seconds for `sessions` more sessions profiling `variants` variants in all.
    pub fn seconds(&self, sessions: usize, variants: usize) -> f64 {
        let (fixed, per_variant) = if self.sessions == 0 {
            (Self::FIXED_GUESS, Self::PER_VARIANT_GUESS)
        } else {
            // No session is cheaper than its fixed part: at most 60 % of the mean one is fixed.
            let mean = self.seconds / self.sessions as f64;
            let fixed = Self::FIXED_GUESS.min(0.6 * mean);
            let rest = self.seconds - fixed * self.sessions as f64;
            (fixed, rest / self.variants.max(1) as f64)
        };
        fixed * sessions as f64 + per_variant * variants as f64
    }
}
