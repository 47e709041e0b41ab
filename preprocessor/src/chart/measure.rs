//! What a chart draws of each row: the figure the table shows (GB/s, a work rate, the kernel's
//! own count, or the time), the range its stored samples span, and what kind of row it is.

use kernelbook_core::bandwidth::effective_gbs;
use kernelbook_core::results::figures::{self, Headline};
use kernelbook_core::results::{LabResults, Outcome, VariantResult};
use kernelbook_core::spec::LabSpec;

/// A row's median figure and the least and greatest its samples give.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// A spread whose three figures are finite; `None` otherwise.
    fn finite(median: f64, a: f64, b: f64) -> Option<Spread> {
        let spread = Spread {
            median,
            min: a.min(b),
            max: a.max(b),
        };
        [spread.median, spread.min, spread.max]
            .iter()
            .all(|v| v.is_finite())
            .then_some(spread)
    }
}

/// The shortest and longest of a measured row's stored samples (the summary's, where the
/// samples were not kept), with its median, in milliseconds.
pub fn time_spread(v: &VariantResult) -> Option<Spread> {
    let Outcome::Measured {
        summary,
        samples_ms,
        ..
    } = &v.outcome
    else {
        return None;
    };
    let kept = samples_ms
        .iter()
        .copied()
        .filter(|s| s.is_finite() && *s > 0.0);
    let (min, max) = kept.fold((f64::INFINITY, 0.0f64), |(lo, hi), s| {
        (lo.min(s), hi.max(s))
    });
    let (min, max) = if max > 0.0 {
        (min, max)
    } else {
        (summary.min_ms, summary.max_ms)
    };
    Spread::finite(summary.median_ms, min, max)
}

/// Which of a row's figures a chart's value axis shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// The kernel's own count (`[counter]`), e.g. cycles per load.
    Counter { unit: String },
    /// Work per second, divided by `divisor` for the unit `label` ("TFLOP/s").
    Rate { divisor: f64, label: String },
    /// Effective bandwidth.
    Gbs,
    /// The median time itself, in microseconds (a lab that moves no bytes and counts nothing).
    Time,
}

impl Metric {
    /// The lab's [`Headline`] figure, a rate at the table's scale.
    pub fn of(results: &LabResults) -> Metric {
        match Headline::of(results) {
            Headline::Counter(unit) => Metric::Counter { unit: unit.unit },
            Headline::Rate { .. } => match crate::format::rate_scale(results) {
                Some((divisor, label)) => Metric::Rate { divisor, label },
                None => Metric::Time,
            },
            Headline::Gbs => Metric::Gbs,
            Headline::Time => Metric::Time,
        }
    }

    /// What the axis is called.
    pub fn label(&self) -> String {
        match self {
            Metric::Counter { unit } => unit.clone(),
            Metric::Rate { label, .. } => label.clone(),
            Metric::Gbs => "GB/s".into(),
            Metric::Time => "µs".into(),
        }
    }

    /// How the figure moves when every time doubles, for a reader of the SVG: "rate" and "gbs"
    /// halve, "time" doubles, "counter" stays.
    pub fn field(&self) -> &'static str {
        match self {
            Metric::Counter { .. } => "counter",
            Metric::Rate { .. } => "rate",
            Metric::Gbs => "gbs",
            Metric::Time => "time",
        }
    }

    /// The row's figure, with the range of its samples; `None` where it has none.
    pub fn spread(&self, v: &VariantResult) -> Option<Spread> {
        let time = time_spread(v)?;
        match self {
            Metric::Counter { .. } => {
                let counter = v.counter.as_ref()?;
                let values = counter.values.iter().copied().filter(|c| c.is_finite());
                let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
                    (lo.min(c), hi.max(c))
                });
                Spread::finite(counter.median()?, lo, hi)
            }
            Metric::Rate { divisor, .. } => {
                let count = v.work.as_ref()?.count as f64;
                let rate = |ms: f64| figures::per_second(count, ms) / divisor;
                Spread::finite(rate(time.median), rate(time.max), rate(time.min))
            }
            Metric::Gbs => {
                let gbs = |ms: f64| effective_gbs(v.bytes_moved, ms);
                Spread::finite(gbs(time.median), gbs(time.max), gbs(time.min))
            }
            Metric::Time => Spread::finite(time.median * 1e3, time.min * 1e3, time.max * 1e3),
        }
    }
}

/// How many times as fast as `baseline` a row ran: the baseline's median time over the row's,
/// its range from the row's shortest and longest samples.
pub fn speedup(baseline: &VariantResult, v: &VariantResult) -> Option<Spread> {
    let base = time_spread(baseline)?.median;
    let time = time_spread(v)?;
    Spread::finite(
        figures::speedup(base, time.median)?,
        figures::speedup(base, time.max)?,
        figures::speedup(base, time.min)?,
    )
}

/// What a row is, for how its bar is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A kernel of the book, or a copy the runner makes.
    Own,
    /// Someone else's implementation of the same job (cuBLAS, PyTorch).
    Peer,
    /// The row the others are measured against: the lab's ceiling, a speed-up's baseline.
    Reference,
}

/// How a row is drawn: as the chart's reference where it is one, a peer by the one peer rule
/// ([`figures::Role::of_builtin`]), else as the book's own.
pub fn role(lab: &LabSpec, name: &str, reference: Option<&str>) -> Role {
    if reference == Some(name) {
        return Role::Reference;
    }
    match figures::Role::of_builtin(lab.variant(name).and_then(|v| v.builtin)) {
        figures::Role::Peer => Role::Peer,
        figures::Role::Own | figures::Role::Ceiling | figures::Role::Reference => Role::Own,
    }
}

/// What the ceiling row is called on a chart: "ceiling: copy_tile", or its label where that says
/// so already ("driver memcpy (ceiling)").
pub fn ceiling_words(label: &str) -> String {
    if label.contains("ceiling") {
        label.to_string()
    } else {
        format!("ceiling: {label}")
    }
}

/// Why a row has no figure to draw, in a few words (the table has the whole message).
pub fn gap_reason(v: Option<&VariantResult>, metric: &str) -> String {
    let Some(v) = v else {
        return "not recorded".into();
    };
    match &v.outcome {
        Outcome::Measured { .. } => format!("no {metric} measured"),
        Outcome::WrongResult { .. } => "FAIL: wrong result, no time shown".into(),
        Outcome::Failed { stage, .. } => format!("ERROR: {} failed", stage.describe()),
        Outcome::Unavailable { reason } => format!("not measured here: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::testing::sampled;
    use kernelbook_core::results::{CounterResult, Work};

    #[test]
    fn bandwidth_whiskers_come_from_the_longest_and_shortest_samples() {
        // 4 GB in 1 ms is 4000 GB/s; the slowest sample (2 ms) gives 2000, the fastest 5000.
        let v = sampled("copy", 4_000_000_000, &[1.0, 0.8, 2.0, 1.0, 1.0]);
        let spread = Metric::Gbs.spread(&v).expect("measured");
        assert_eq!(
            (spread.median, spread.min, spread.max),
            (4000.0, 2000.0, 5000.0)
        );
    }

    #[test]
    fn rates_and_times_follow_the_same_samples() {
        let mut v = sampled("fma", 8, &[2.0, 4.0, 3.0]);
        v.work = Some(Work {
            count: 6_000_000_000,
            unit: "FLOP".into(),
        });
        let rate = Metric::Rate {
            divisor: crate::format::TERA,
            label: "TFLOP/s".into(),
        };
        let spread = rate.spread(&v).expect("work");
        assert_eq!((spread.median, spread.min, spread.max), (2.0, 1.5, 3.0));
        let time = Metric::Time.spread(&v).expect("time");
        assert_eq!((time.median, time.min, time.max), (3000.0, 2000.0, 4000.0));
    }

    #[test]
    fn counter_whiskers_span_the_counters_values() {
        let mut v = sampled("chase", 0, &[1.0, 1.0, 1.0]);
        v.counter = Some(CounterResult {
            unit: "cycles per load".into(),
            per: 1,
            values: vec![40.0, 38.0, 300.0],
        });
        let metric = Metric::Counter {
            unit: "cycles per load".into(),
        };
        let spread = metric.spread(&v).expect("counter");
        assert_eq!((spread.median, spread.min, spread.max), (40.0, 38.0, 300.0));
        v.counter = None;
        assert_eq!(
            metric.spread(&v),
            None,
            "a row without the counter is a gap"
        );
    }

    #[test]
    fn speedup_is_the_baselines_median_over_each_samples_time() {
        let baseline = sampled("starter", 1, &[8.0, 9.0, 10.0]);
        let fast = sampled("solution", 1, &[2.0, 2.25, 4.0]);
        let s = speedup(&baseline, &fast).expect("both measured");
        assert_eq!((s.median, s.min, s.max), (4.0, 2.25, 4.5));
        assert_eq!(speedup(&baseline, &baseline).map(|s| s.median), Some(1.0));
    }

    #[test]
    fn a_row_without_a_result_says_why_in_a_few_words() {
        let mut v = sampled("torch", 1, &[1.0]);
        v.outcome = Outcome::Unavailable {
            reason: "no torch".into(),
        };
        assert_eq!(gap_reason(Some(&v), "GB/s"), "not measured here: no torch");
        assert_eq!(gap_reason(None, "GB/s"), "not recorded");
        assert_eq!(time_spread(&v), None);
    }
}
