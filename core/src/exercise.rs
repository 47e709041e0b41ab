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
//! ```

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
}

fn default_min_speedup() -> f64 {
    1.0
}
