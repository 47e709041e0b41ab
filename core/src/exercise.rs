//! A lab that is also an exercise: `kernelbook check NAME [FILE]` runs the learner's version of
//! the starter kernel beside the starter and the reference solution, and gives a verdict.
//!
//! ```toml
//! [exercise]
//! starter = "starter"      # the variant whose kernel the learner starts from (and edits)
//! solution = "solution"    # the variant with the book's reference solution
//! min_speedup = 2.0        # the learner's kernel must run at least this many times faster
//! min_blocks_per_sm = 2    # optional: at least this many resident blocks per SM
//! hint = "Which addresses do neighbouring lanes touch?"  # optional: shown when it is too slow
//! baseline = "solution"    # optional: the starter has a bug to find (it may give a wrong
//!                          # result); the learner's kernel is timed against the solution
//! sanitize = true          # optional: a correct kernel is also run under compute-sanitizer,
//!                          # and a finding fails it (a race can give the right result by luck)
//! sanitize_params = { n = 65536 }  # optional: the sizes the sanitizer's runs use (the lab's
//!                          # own when absent): the tools slow a kernel down a hundredfold
//! ```

use crate::expr::Params;
use serde::Deserialize;

/// What `kernelbook check` asks of the learner's kernel.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExerciseSpec {
    /// The variant that runs the starter kernel; the learner's kernel is launched the same way,
    /// under the starter's function name.
    pub starter: String,
    /// The variant that runs the reference solution.
    pub solution: String,
    /// How many times faster than the starter a passing kernel must be (median time ratio).
    /// 1.0 means "correct, and not slower".
    #[serde(default = "default_min_speedup")]
    pub min_speedup: f64,
    /// Resident blocks per SM a passing kernel must allow (from the occupancy API).
    #[serde(default)]
    pub min_blocks_per_sm: Option<u32>,
    /// What to say to a learner whose kernel is correct but not fast enough (or allows too few
    /// blocks per SM); a generic hint when absent.
    #[serde(default)]
    pub hint: Option<String>,
    /// What the learner's speed is measured against: the starter (an exercise in speed), or
    /// the reference solution (an exercise in correctness, whose starter has a bug to find).
    #[serde(default)]
    pub baseline: Baseline,
    /// Whether a kernel that passed is also run under compute-sanitizer, a finding failing it:
    /// for bugs that give the right result on some runs (a shared-memory race).
    #[serde(default)]
    pub sanitize: bool,
    /// The size parameters the sanitizer's runs use instead of the lab's: racecheck watches
    /// every shared-memory access and slows a kernel down a hundredfold or more, so a kernel
    /// that takes 70 µs at the lab's size takes minutes under it. Empty: the lab's own sizes.
    #[serde(default)]
    pub sanitize_params: Params,
}

/// The variant a learner's kernel is timed against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// The starter: it must run correctly; `min_speedup` is a speed-up over it.
    #[default]
    Starter,
    /// The reference solution: the starter may be wrong on purpose; `min_speedup` is the share
    /// of the solution's speed a correct kernel must reach (0.9: at most about 11 % slower).
    Solution,
}

impl Baseline {
    /// "the starter", "the reference solution": the words verdicts use.
    pub fn words(self) -> &'static str {
        match self {
            Baseline::Starter => "the starter",
            Baseline::Solution => "the reference solution",
        }
    }
}

fn default_min_speedup() -> f64 {
    1.0
}
