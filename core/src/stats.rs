//! Sample summaries and the rule that decides when enough samples were taken.

use serde::{Deserialize, Serialize};

/// A summary of kernel times in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub samples: usize,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// Relative standard deviation of the samples (stdev / mean): the "spread" column.
    pub rel_spread: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none or one is not a finite positive time.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|s| !s.is_finite() || *s <= 0.0) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let variance = if n > 1 {
            sorted.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Summary {
            samples: n,
            median_ms: median,
            min_ms: sorted[0],
            max_ms: sorted[n - 1],
            mean_ms: mean,
            rel_spread: variance.sqrt() / mean,
        })
    }

    /// Relative standard error of the mean: how well the samples pin the centre down.
    pub fn rel_standard_error(&self) -> f64 {
        self.rel_spread / (self.samples as f64).sqrt()
    }

    /// Whether the spread is large enough that the table should flag the figure.
    pub fn is_noisy(&self, rule: &StoppingRule) -> bool {
        self.rel_spread > rule.noisy_spread
    }
}

/// When to stop sampling, in the spirit of nvbench: a minimum number of samples and of GPU time,
/// then stop as soon as the mean is known to `target_rel_error`; give up at the limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StoppingRule {
    pub min_samples: usize,
    pub max_samples: usize,
    /// Kernel time (sum of samples) to collect at least, in milliseconds.
    pub min_gpu_ms: f64,
    /// Stop once the relative standard error of the mean is at or below this.
    pub target_rel_error: f64,
    /// Wall-clock limit per variant, in seconds, whatever the noise.
    pub max_wall_s: f64,
    /// A relative spread above this marks a result as noisy.
    pub noisy_spread: f64,
}

impl Default for StoppingRule {
    fn default() -> Self {
        StoppingRule {
            min_samples: 10,
            max_samples: 2000,
            min_gpu_ms: 20.0,
            target_rel_error: 0.005,
            max_wall_s: 10.0,
            noisy_spread: 0.05,
        }
    }
}

/// Why sampling stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Converged,
    MaxSamples,
    TimeLimit,
}

impl StoppingRule {
    /// `None` while more samples are wanted, else why to stop.
    pub fn verdict(&self, samples: &[f64], wall_s: f64) -> Option<StopReason> {
        if samples.len() >= self.max_samples {
            return Some(StopReason::MaxSamples);
        }
        if wall_s >= self.max_wall_s {
            return Some(StopReason::TimeLimit);
        }
        if samples.len() < self.min_samples || samples.iter().sum::<f64>() < self.min_gpu_ms {
            return None;
        }
        let summary = Summary::of(samples)?;
        (summary.rel_standard_error() <= self.target_rel_error).then_some(StopReason::Converged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_odd_and_even_counts() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).expect("summary");
        assert_eq!(
            (s.median_ms, s.min_ms, s.max_ms, s.mean_ms),
            (2.0, 1.0, 3.0, 2.0)
        );
        assert!((s.rel_spread - 0.5).abs() < 1e-12);
        let s = Summary::of(&[4.0, 1.0, 2.0, 3.0]).expect("summary");
        assert_eq!(s.median_ms, 2.5);
    }

    #[test]
    fn no_summary_of_nothing_or_of_bad_samples() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[1.0, 0.0]), None);
    }

    #[test]
    fn stops_only_after_the_minimums_and_once_converged() {
        let rule = StoppingRule {
            min_samples: 10,
            min_gpu_ms: 5.0,
            ..StoppingRule::default()
        };
        let steady = vec![1.0; 9];
        assert_eq!(rule.verdict(&steady, 0.1), None, "too few samples");
        let steady = vec![1.0; 10];
        assert_eq!(rule.verdict(&steady, 0.1), Some(StopReason::Converged));
        let tiny = vec![0.01; 50];
        assert_eq!(rule.verdict(&tiny, 0.1), None, "too little GPU time");
        let noisy: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 1.0 } else { 2.0 })
            .collect();
        assert_eq!(rule.verdict(&noisy, 0.1), None, "not converged");
        assert_eq!(rule.verdict(&noisy, 60.0), Some(StopReason::TimeLimit));
        let many = vec![1.0; rule.max_samples];
        assert_eq!(rule.verdict(&many, 0.0), Some(StopReason::MaxSamples));
    }

    #[test]
    fn noisy_flag_follows_the_threshold() {
        let rule = StoppingRule::default();
        assert!(!Summary::of(&[1.0, 1.01, 0.99]).expect("s").is_noisy(&rule));
        assert!(Summary::of(&[1.0, 1.5, 0.7]).expect("s").is_noisy(&rule));
    }
}
