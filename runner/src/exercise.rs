//! Grading a learner's kernel (`kernelbook check`): the learner's variant, a copy of the
//! exercise's starter variant that runs the learner's source, and the [`Verdict`], a pure
//! function of the starter's, the learner's and the solution's measured results.

use crate::plan::{LabPlan, LearnerError};
use kernelbook_core::exercise::{Baseline, ExerciseSpec};
use kernelbook_core::results::{
    FailureStage, LabResults, Mismatch, Outcome, VariantResult, figures,
};
use kernelbook_core::spec::LabSpec;
use kernelbook_core::{KernelSource, SourceLocation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The name of the learner's variant in the lab and in the results.
pub const LEARNER_VARIANT: &str = "yours";

/// Why an exercise cannot be checked as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExerciseError {
    #[error("lab `{lab}` ({}) is not an exercise: it has no [exercise] section", file.display())]
    NotAnExercise {
        lab: String,
        file: std::path::PathBuf,
    },
    #[error("the exercise's starter `{starter}` is not a kernel variant of lab `{lab}`")]
    StarterNotKernel { lab: String, starter: String },
    #[error("kernel `{0}` is not in the book")]
    KernelMissing(String),
    #[error(transparent)]
    Learner(#[from] LearnerError),
    #[error("the measurement has no result for variant `{0}`")]
    NoResult(String),
}

/// Which variant the learner's copies, and where the learner's kernel is in the kernel map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnerVariant {
    /// The starter variant the learner's variant copies.
    pub starter: String,
    /// The key of the learner's kernel in the kernel map.
    pub kernel_key: String,
}

/// The kernel-map key of the learner's version of `starter_kernel`. The `:` keeps it apart from
/// every kernel of the book, whose names are C identifiers.
pub fn learner_kernel_key(starter_kernel: &str) -> String {
    format!("{LEARNER_VARIANT}:{starter_kernel}")
}

/// Everything one check measures: the book's lab, the kernels with the learner's source, and
/// which variants to measure. The learner's variant is added to the lab's compiled plan
/// ([`CheckPlan::learner_plan`]), never to its spec.
#[derive(Debug, Clone)]
pub struct CheckPlan {
    pub spec: ExerciseSpec,
    /// The lab as the book defines it.
    pub book_lab: LabSpec,
    pub kernels: BTreeMap<String, KernelSource>,
    pub learner: LearnerVariant,
}

impl CheckPlan {
    /// Plans the check of `source` (read from `file`, which compiler messages will name) against
    /// the exercise `lab`. `kernels` must hold the lab's kernels.
    pub fn new(
        lab: &LabSpec,
        kernels: &BTreeMap<String, KernelSource>,
        source: &str,
        file: &Path,
    ) -> Result<CheckPlan, ExerciseError> {
        let spec = lab
            .exercise
            .clone()
            .ok_or_else(|| ExerciseError::NotAnExercise {
                lab: lab.name.clone(),
                file: lab.file.clone(),
            })?;
        let starter_kernel = lab
            .variant(&spec.starter)
            .and_then(|v| v.kernel_name())
            .ok_or_else(|| ExerciseError::StarterNotKernel {
                lab: lab.name.clone(),
                starter: spec.starter.clone(),
            })?;
        if !kernels.contains_key(starter_kernel) {
            return Err(ExerciseError::KernelMissing(starter_kernel.to_string()));
        }
        let kernel_key = learner_kernel_key(starter_kernel);
        let mut kernels = kernels.clone();
        kernels.insert(
            kernel_key.clone(),
            KernelSource {
                // The entry point keeps the starter's name: the launch looks it up by that name.
                name: starter_kernel.to_string(),
                source: source.to_string(),
                origin: SourceLocation {
                    file: file.to_path_buf(),
                    line: 1,
                },
                language: Default::default(),
            },
        );
        Ok(CheckPlan {
            learner: LearnerVariant {
                starter: spec.starter.clone(),
                kernel_key,
            },
            spec,
            book_lab: lab.clone(),
            kernels,
        })
    }

    /// The book's compiled `plan` extended with the learner's variant, keeping only the
    /// variants a check measures.
    pub fn learner_plan(&self, plan: &LabPlan) -> Result<LabPlan, ExerciseError> {
        let learner = self
            .kernels
            .get(&self.learner.kernel_key)
            .ok_or_else(|| ExerciseError::KernelMissing(self.learner.kernel_key.clone()))?;
        let mut plan = plan
            .with_learner_kernel(
                &self.learner.starter,
                LEARNER_VARIANT,
                &self.learner.kernel_key,
                learner.clone(),
            )?
            .select(&self.variants());
        // The verdict reads times only: a lab profiled for the book's diagrams is not run
        // under Nsight Compute when a learner's kernel is graded.
        plan.profile = false;
        Ok(plan)
    }

    /// The variants to measure: the starter, the learner's, the solution.
    pub fn variants(&self) -> Vec<String> {
        let mut names = vec![
            self.spec.starter.clone(),
            LEARNER_VARIANT.to_string(),
            self.spec.solution.clone(),
        ];
        names.dedup();
        names
    }

    /// The verdict on `results`, a measurement of [`CheckPlan::variants`].
    pub fn verdict(&self, results: &LabResults) -> Result<Verdict, ExerciseError> {
        let find = |name: &str| {
            results
                .variant(name)
                .ok_or_else(|| ExerciseError::NoResult(name.to_string()))
        };
        Ok(verdict(
            &self.spec,
            find(&self.spec.starter)?,
            find(LEARNER_VARIANT)?,
            find(&self.spec.solution)?,
        ))
    }
}

/// What `kernelbook check` concludes about the learner's kernel.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Correct, at least `needed` times the baseline's speed, and resident enough.
    Pass {
        /// What the speed is measured against.
        against: Baseline,
        speedup: f64,
        needed: f64,
        /// The reference solution's speed relative to the starter, when it was measured.
        solution_speedup: Option<f64>,
        /// Resident blocks per SM (have, needed), when the exercise asks for a number.
        blocks_per_sm: Option<(u32, u32)>,
    },
    /// The compiler rejected it; `message` is its log, at the learner's file and lines.
    DoesNotCompile { message: String },
    /// It ran, and its output differs from the CPU reference.
    WrongResult { mismatch: Mismatch },
    /// It compiled but could not be loaded, launched or timed, crashed, or hung.
    Failed {
        stage: FailureStage,
        message: String,
    },
    /// Correct, but not fast enough.
    NotFaster {
        against: Baseline,
        speedup: f64,
        needed: f64,
        solution_speedup: Option<f64>,
        /// The learner's or the starter's times varied a lot: another run may differ.
        noisy: bool,
        hint: String,
    },
    /// Correct and fast enough, but fewer blocks fit on an SM than the exercise asks for.
    TooFewBlocks {
        have: u32,
        needed: u32,
        registers: u32,
        shared_bytes: u32,
        hint: String,
    },
    /// Correct on this run, and fast enough, but compute-sanitizer (`tool`) found an error in
    /// it (an exercise that asks for the check): another run may be wrong.
    Hazard { tool: String },
    /// The starter itself did not run correctly: nothing to compare with. A problem with the
    /// exercise or this machine, not with the learner's kernel.
    StarterBroken {
        /// The variant that did not run: the starter, or the solution where it is the baseline.
        baseline: Baseline,
        problem: String,
    },
}

/// Said when a correct kernel is too slow and the exercise gives no hint of its own.
const GENERIC_SPEED_HINT: &str = "look at which addresses neighbouring lanes of a warp touch in \
    the same instruction, and how many bytes of each 32-byte sector they use.";

/// Said when too few blocks fit and the exercise gives no hint of its own.
const GENERIC_RESIDENCY_HINT: &str = "fewer registers per thread or less shared memory per block \
    lets more blocks share an SM.";

impl Verdict {
    pub fn is_pass(&self) -> bool {
        matches!(self, Verdict::Pass { .. })
    }

    /// Whether the learner's kernel was graded at all (the starter ran correctly).
    pub fn is_graded(&self) -> bool {
        !matches!(self, Verdict::StarterBroken { .. })
    }
}

/// Grades the learner's kernel (`yours`) against the starter and the solution: it must compile,
/// run and verify; then run at least `min_speedup` times the starter's speed (median times);
/// then, when the exercise asks, allow `min_blocks_per_sm` resident blocks.
pub fn verdict(
    spec: &ExerciseSpec,
    starter: &VariantResult,
    yours: &VariantResult,
    solution: &VariantResult,
) -> Verdict {
    let (your_ms, your_noisy) = match &yours.outcome {
        Outcome::Measured { summary, noisy, .. } => (summary.median_ms, *noisy),
        Outcome::Failed {
            stage: FailureStage::Compile,
            message,
        } => {
            return Verdict::DoesNotCompile {
                message: message.clone(),
            };
        }
        Outcome::Failed { stage, message } => {
            return Verdict::Failed {
                stage: *stage,
                message: message.clone(),
            };
        }
        Outcome::WrongResult { mismatch } => {
            return Verdict::WrongResult {
                mismatch: mismatch.clone(),
            };
        }
        // Only peers are ever unavailable; a kernel variant never is.
        Outcome::Unavailable { reason } => {
            return Verdict::Failed {
                stage: FailureStage::Launch,
                message: reason.clone(),
            };
        }
    };
    let against = spec.baseline;
    let base = match against {
        Baseline::Starter => starter,
        Baseline::Solution => solution,
    };
    let (base_ms, base_noisy) = match &base.outcome {
        Outcome::Measured { summary, noisy, .. } => (summary.median_ms, *noisy),
        other => {
            return Verdict::StarterBroken {
                baseline: against,
                problem: describe_problem(other),
            };
        }
    };
    // A measured time is positive; were it not, the learner's kernel would be infinitely fast.
    let speedup = figures::speedup(base_ms, your_ms).unwrap_or(f64::INFINITY);
    // How far the solution goes beyond the starter; nothing to say where it is the baseline.
    let solution_speedup = match (&solution.outcome, against) {
        (Outcome::Measured { summary, .. }, Baseline::Starter) => {
            figures::speedup(base_ms, summary.median_ms)
        }
        _ => None,
    };
    let hint = |generic: &str| spec.hint.clone().unwrap_or_else(|| generic.to_string());
    if speedup < spec.min_speedup {
        return Verdict::NotFaster {
            against,
            speedup,
            needed: spec.min_speedup,
            solution_speedup,
            noisy: your_noisy || base_noisy,
            hint: hint(GENERIC_SPEED_HINT),
        };
    }
    let mut blocks_per_sm = None;
    // A measured kernel variant always has its resources; without them there is nothing to hold
    // against the learner.
    if let (Some(needed), Some(resources)) = (spec.min_blocks_per_sm, &yours.resources) {
        if resources.blocks_per_sm < needed {
            return Verdict::TooFewBlocks {
                have: resources.blocks_per_sm,
                needed,
                registers: resources.registers,
                shared_bytes: resources.shared_bytes
                    + yours.launch.map_or(0, |launch| launch.shared_bytes),
                hint: hint(GENERIC_RESIDENCY_HINT),
            };
        }
        blocks_per_sm = Some((resources.blocks_per_sm, needed));
    }
    Verdict::Pass {
        against,
        speedup,
        needed: spec.min_speedup,
        solution_speedup,
        blocks_per_sm,
    }
}

/// A variant's failure in a few words, for the starter's row and [`Verdict::StarterBroken`].
fn describe_problem(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Measured { .. } => "it ran correctly".to_string(),
        Outcome::WrongResult { mismatch } => format!(
            "it gives a wrong result (element {}: expected {}, got {})",
            mismatch.index, mismatch.expected, mismatch.actual
        ),
        Outcome::Failed {
            stage: FailureStage::Compile,
            message,
        } => format!("it does not compile:\n{message}"),
        Outcome::Failed { stage, message } => {
            format!("it failed at {}: {message}", stage.describe())
        }
        Outcome::Unavailable { reason } => format!("it could not run: {reason}"),
    }
}

/// "2×", "1.5×": a required speedup as the exercise wrote it.
struct Times(f64);

impl fmt::Display for Times {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}×", self.0)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Pass {
                against,
                speedup,
                needed,
                solution_speedup,
                blocks_per_sm,
            } => write_pass(
                f,
                (*against, *speedup, *needed),
                *solution_speedup,
                *blocks_per_sm,
            ),
            Verdict::DoesNotCompile { message } => write!(
                f,
                "FAIL: your kernel does not compile. The compiler says:\n{}",
                message.trim_end()
            ),
            Verdict::WrongResult { mismatch } => write_wrong_result(f, mismatch),
            Verdict::Failed { stage, message } => write!(
                f,
                "FAIL: your kernel compiled, but failed at {}: {}.{}",
                stage.describe(),
                message.trim_end().trim_end_matches('.'),
                failure_advice(*stage)
            ),
            Verdict::NotFaster {
                against,
                speedup,
                needed,
                solution_speedup,
                noisy,
                hint,
            } => {
                write!(
                    f,
                    "FAIL: correct, but {speedup:.2}× {}'s speed; this exercise needs {}.",
                    against.words(),
                    Times(*needed)
                )?;
                write_solution_speedup(f, *solution_speedup)?;
                if *noisy {
                    f.write_str(" (The times were noisy: run the check again to be sure.)")?;
                }
                write!(f, " Hint: {hint}")
            }
            Verdict::TooFewBlocks {
                have,
                needed,
                registers,
                shared_bytes,
                hint,
            } => write!(
                f,
                "FAIL: correct and fast enough, but only {have} of your kernel's blocks fit on an SM \
                 at once; this exercise needs {needed}. Your kernel uses {registers} registers per \
                 thread and {shared_bytes} B of shared memory per block. Hint: {hint}"
            ),
            Verdict::Hazard { tool } => write!(
                f,
                "FAIL: your kernel's result was right this time, and fast enough, but \
                 compute-sanitizer's {tool} found an error in it (below): another run, or \
                 another GPU, may give a wrong result."
            ),
            Verdict::StarterBroken { baseline, problem } => write!(
                f,
                "CANNOT GRADE: {} kernel did not run correctly here, so there is nothing to \
                 compare yours with: {}",
                match baseline {
                    Baseline::Starter => "the exercise's starter",
                    Baseline::Solution => "the exercise's reference solution",
                },
                problem.trim_end()
            ),
        }
    }
}

/// [`Verdict::Pass`]: the speedup reached, and the residency where the exercise asks for one.
fn write_pass(
    f: &mut fmt::Formatter<'_>,
    (against, speedup, needed): (Baseline, f64, f64),
    solution_speedup: Option<f64>,
    blocks_per_sm: Option<(u32, u32)>,
) -> fmt::Result {
    write!(
        f,
        "PASS: correct, and {speedup:.2}× {}'s speed (at least {} needed)",
        against.words(),
        Times(needed)
    )?;
    if let Some((have, needed)) = blocks_per_sm {
        write!(f, ", with {have} blocks per SM (at least {needed} needed)")?;
    }
    f.write_str(".")?;
    write_solution_speedup(f, solution_speedup)
}

/// What the reference solution reached, so the learner knows how much more there is to gain.
fn write_solution_speedup(
    f: &mut fmt::Formatter<'_>,
    solution_speedup: Option<f64>,
) -> fmt::Result {
    match solution_speedup {
        Some(s) => write!(
            f,
            " The reference solution runs at {s:.2}× the starter's speed."
        ),
        None => Ok(()),
    }
}

/// [`Verdict::WrongResult`]: the first mismatch, how many there are, and where to look.
fn write_wrong_result(f: &mut fmt::Formatter<'_>, mismatch: &Mismatch) -> fmt::Result {
    write!(
        f,
        "FAIL: your kernel runs, but its result is wrong: the first mismatch is at index \
         {}, which should be {} and is {}",
        mismatch.index, mismatch.expected, mismatch.actual
    )?;
    if mismatch.count > 1 {
        write!(f, " ({} elements differ in all)", mismatch.count)?;
    }
    f.write_str(".")?;
    if mismatch.actual == "NaN" {
        // Outputs are filled with all-ones bits (NaN) before every check.
        f.write_str(
            " A NaN there usually means no thread wrote that element: the output is \
             filled with NaN before your kernel runs. Check that every index gets a \
             thread and your bounds test lets it through.",
        )
    } else {
        f.write_str(
            " Check the index arithmetic: which element does each thread read, and \
             where does it write it?",
        )
    }
}

/// What usually causes a compiled kernel to fail at `stage`, as a sentence after the message.
fn failure_advice(stage: FailureStage) -> &'static str {
    match stage {
        FailureStage::Load => {
            " Keep the starter's function name and its `extern \"C\" __global__` declaration."
        }
        FailureStage::Launch => {
            " Keep the starter's parameters: your kernel is launched exactly like the \
             starter. A fault here usually means an access out of bounds."
        }
        FailureStage::Crash => {
            " That usually means an access out of bounds: check every index against \
             the buffer's length."
        }
        FailureStage::Timeout => " Look for a loop that never ends.",
        FailureStage::Compile | FailureStage::Timing | FailureStage::Reference => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Device;
    use crate::backend::fake::{FakeCompiler, FakeDevice};
    use crate::engine::{Quiet, RunOptions, run};
    use crate::plan::OpPlan;
    use kernelbook_core::results::{KernelResources, LaunchShape};
    use kernelbook_core::stats::Summary;

    fn spec() -> ExerciseSpec {
        ExerciseSpec {
            starter: "starter".into(),
            solution: "solution".into(),
            min_speedup: 2.0,
            min_blocks_per_sm: None,
            hint: None,
            baseline: Baseline::Starter,
            sanitize: false,
            sanitize_params: Default::default(),
        }
    }

    /// A kernel variant's result; built from JSON so that fields the results file gains later
    /// (with serde defaults) need no change here.
    fn result(name: &str, outcome: Outcome) -> VariantResult {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "kernel": "copy_chunked",
            "source_hash": null,
            "compile_flags": [],
            "bytes_moved": 8_000_000,
            "launch": LaunchShape { grid: [64, 1, 1], block: [256, 1, 1], shared_bytes: 1024 },
            "resources": KernelResources {
                registers: 40,
                local_bytes: 0,
                spill_store_bytes: Some(0),
                spill_load_bytes: Some(0),
                shared_bytes: 4096,
                blocks_per_sm: 4,
                occupancy: 0.5,
            },
            "outcome": outcome,
        }))
        .expect("a valid variant result")
    }

    fn measured(name: &str, median_ms: f64) -> VariantResult {
        let samples = [median_ms * 0.99, median_ms, median_ms * 1.01];
        result(
            name,
            Outcome::Measured {
                summary: Summary::of(&samples).expect("summary"),
                stop_reason: kernelbook_core::stats::StopReason::Converged,
                noisy: false,
                samples_ms: samples.to_vec(),
            },
        )
    }

    fn failed(name: &str, stage: FailureStage, message: &str) -> VariantResult {
        result(
            name,
            Outcome::Failed {
                stage,
                message: message.into(),
            },
        )
    }

    fn mismatch(actual: &str, count: u64) -> Mismatch {
        Mismatch {
            index: 16_777_215,
            expected: "0.25".into(),
            actual: actual.into(),
            count,
        }
    }

    #[test]
    fn a_fast_enough_correct_kernel_passes() {
        let verdict = verdict(
            &spec(),
            &measured("starter", 8.0),
            &measured("yours", 2.0),
            &measured("solution", 1.0),
        );
        assert_eq!(
            verdict,
            Verdict::Pass {
                against: Baseline::Starter,
                speedup: 4.0,
                needed: 2.0,
                solution_speedup: Some(8.0),
                blocks_per_sm: None
            }
        );
        assert!(verdict.is_pass() && verdict.is_graded());
        assert_eq!(
            verdict.to_string(),
            "PASS: correct, and 4.00× the starter's speed (at least 2× needed). The reference \
             solution runs at 8.00× the starter's speed."
        );
    }

    #[test]
    fn exactly_the_required_speedup_passes() {
        let verdict = verdict(
            &spec(),
            &measured("starter", 4.0),
            &measured("yours", 2.0),
            &failed("solution", FailureStage::Launch, "boom"),
        );
        assert!(verdict.is_pass(), "{verdict}");
        // A broken solution only drops the comparison.
        assert!(!verdict.to_string().contains("reference"), "{verdict}");
    }

    #[test]
    fn a_compile_error_is_shown_with_the_compilers_message() {
        let message = "exercises/coalesce.cu:7: error: identifier \"x\" is undefined\n";
        let verdict = verdict(
            &spec(),
            &measured("starter", 8.0),
            &failed("yours", FailureStage::Compile, message),
            &measured("solution", 1.0),
        );
        assert_eq!(
            verdict,
            Verdict::DoesNotCompile {
                message: message.into()
            }
        );
        assert!(!verdict.is_pass() && verdict.is_graded());
        assert_eq!(
            verdict.to_string(),
            "FAIL: your kernel does not compile. The compiler says:\n\
             exercises/coalesce.cu:7: error: identifier \"x\" is undefined"
        );
    }

    #[test]
    fn a_wrong_result_names_the_first_mismatching_index() {
        let wrong = result(
            "yours",
            Outcome::WrongResult {
                mismatch: mismatch("-0.5", 3),
            },
        );
        let verdict = verdict(
            &spec(),
            &measured("starter", 8.0),
            &wrong,
            &measured("solution", 1.0),
        );
        assert_eq!(
            verdict,
            Verdict::WrongResult {
                mismatch: mismatch("-0.5", 3)
            }
        );
        let text = verdict.to_string();
        assert!(
            text.starts_with(
                "FAIL: your kernel runs, but its result is wrong: the first mismatch is at index \
                 16777215, which should be 0.25 and is -0.5 (3 elements differ in all)."
            ),
            "{text}"
        );
        assert!(text.contains("index arithmetic"), "{text}");
    }

    #[test]
    fn an_unwritten_element_is_explained() {
        let wrong = result(
            "yours",
            Outcome::WrongResult {
                mismatch: mismatch("NaN", 1),
            },
        );
        let text = verdict(
            &spec(),
            &measured("starter", 8.0),
            &wrong,
            &measured("solution", 1.0),
        )
        .to_string();
        assert!(text.contains("which should be 0.25 and is NaN."), "{text}");
        assert!(!text.contains("in all"), "one element: no count");
        assert!(text.contains("no thread wrote that element"), "{text}");
    }

    #[test]
    fn a_kernel_that_fails_to_run_gets_advice_for_its_stage() {
        for (stage, message, advice) in [
            (
                FailureStage::Load,
                "no kernel `copy_chunked` in the image",
                "Keep the starter's function name",
            ),
            (
                FailureStage::Launch,
                "kernel `copy_chunked` takes 2 parameters, the lab passes 3",
                "Keep the starter's parameters",
            ),
            (
                FailureStage::Crash,
                "the measuring process died",
                "out of bounds",
            ),
            (
                FailureStage::Timeout,
                "stopped after 120 s",
                "a loop that never ends",
            ),
        ] {
            let verdict = verdict(
                &spec(),
                &measured("starter", 8.0),
                &failed("yours", stage, message),
                &measured("solution", 1.0),
            );
            assert_eq!(
                verdict,
                Verdict::Failed {
                    stage,
                    message: message.into()
                }
            );
            let text = verdict.to_string();
            assert!(
                text.starts_with(&format!(
                    "FAIL: your kernel compiled, but failed at {}: {message}.",
                    stage.describe()
                )),
                "{text}"
            );
            assert!(text.contains(advice), "{text}");
        }
    }

    #[test]
    fn a_correct_kernel_that_is_too_slow_gets_a_hint() {
        let verdict = verdict(
            &spec(),
            &measured("starter", 8.0),
            &measured("yours", 7.84),
            &measured("solution", 1.0),
        );
        let Verdict::NotFaster {
            speedup,
            needed,
            solution_speedup,
            noisy,
            ..
        } = &verdict
        else {
            panic!("expected NotFaster, got {verdict:?}");
        };
        assert!((speedup - 8.0 / 7.84).abs() < 1e-12);
        assert_eq!(
            (*needed, *solution_speedup, *noisy),
            (2.0, Some(8.0), false)
        );
        assert_eq!(
            verdict.to_string(),
            format!(
                "FAIL: correct, but 1.02× the starter's speed; this exercise needs 2×. The \
                 reference solution runs at 8.00× the starter's speed. Hint: {GENERIC_SPEED_HINT}"
            )
        );
    }

    #[test]
    fn the_exercises_own_hint_and_noise_are_reported() {
        let mut noisy = measured("yours", 7.0);
        if let Outcome::Measured { noisy, .. } = &mut noisy.outcome {
            *noisy = true;
        }
        let spec = ExerciseSpec {
            hint: Some("make threadIdx.x the term multiplied by 1.".into()),
            ..spec()
        };
        let text = verdict(
            &spec,
            &measured("starter", 8.0),
            &noisy,
            &failed("solution", FailureStage::Compile, "no"),
        )
        .to_string();
        assert!(
            text.ends_with(
                "this exercise needs 2×. (The times were noisy: run the check again to be sure.) \
                 Hint: make threadIdx.x the term multiplied by 1."
            ),
            "{text}"
        );
    }

    #[test]
    fn too_few_resident_blocks_fail_after_the_speed_check() {
        let spec = ExerciseSpec {
            min_blocks_per_sm: Some(8),
            ..spec()
        };
        let verdict_for = |yours: &VariantResult| {
            verdict(
                &spec,
                &measured("starter", 8.0),
                yours,
                &measured("solution", 1.0),
            )
        };
        let verdict = verdict_for(&measured("yours", 2.0));
        assert_eq!(
            verdict,
            Verdict::TooFewBlocks {
                have: 4,
                needed: 8,
                registers: 40,
                shared_bytes: 4096 + 1024,
                hint: GENERIC_RESIDENCY_HINT.into()
            }
        );
        assert_eq!(
            verdict.to_string(),
            format!(
                "FAIL: correct and fast enough, but only 4 of your kernel's blocks fit on an SM at \
                 once; this exercise needs 8. Your kernel uses 40 registers per thread and 5120 B \
                 of shared memory per block. Hint: {GENERIC_RESIDENCY_HINT}"
            )
        );
        // Too slow is said first: speed is what the exercise is about.
        assert!(matches!(
            verdict_for(&measured("yours", 8.0)),
            Verdict::NotFaster { .. }
        ));
        // Enough blocks: the pass says how many.
        let mut resident = measured("yours", 2.0);
        if let Some(resources) = &mut resident.resources {
            resources.blocks_per_sm = 8;
        }
        let verdict = verdict_for(&resident);
        assert!(verdict.is_pass());
        assert!(
            verdict
                .to_string()
                .contains("4.00× the starter's speed (at least 2× needed), with 8 blocks per SM (at least 8 needed)."),
            "{verdict}"
        );
    }

    /// A drill whose starter is wrong on purpose: the learner's fix is timed against the
    /// reference solution, and the starter's wrong result stops nothing.
    #[test]
    fn a_fix_is_timed_against_the_solution_when_the_starter_is_wrong_on_purpose() {
        let spec = ExerciseSpec {
            min_speedup: 0.9,
            baseline: Baseline::Solution,
            ..spec()
        };
        let starter = VariantResult {
            outcome: Outcome::WrongResult {
                mismatch: mismatch("NaN", 3),
            },
            ..measured("starter", 1.0)
        };
        let pass = verdict(
            &spec,
            &starter,
            &measured("yours", 1.05),
            &measured("solution", 1.0),
        );
        assert!(pass.is_pass(), "{pass}");
        assert!(
            pass.to_string().starts_with(
                "PASS: correct, and 0.95× the reference solution's speed (at least 0.9× needed)."
            ),
            "{pass}"
        );
        let slow = verdict(
            &spec,
            &starter,
            &measured("yours", 2.0),
            &measured("solution", 1.0),
        );
        assert!(
            slow.to_string().starts_with(
                "FAIL: correct, but 0.50× the reference solution's speed; this exercise needs 0.9×."
            ),
            "{slow}"
        );
        let wrong = verdict(&spec, &starter, &starter, &measured("solution", 1.0));
        assert!(matches!(wrong, Verdict::WrongResult { .. }), "{wrong}");
        let broken = verdict(
            &spec,
            &starter,
            &measured("yours", 1.0),
            &failed("solution", FailureStage::Launch, "an illegal memory access"),
        );
        assert!(!broken.is_graded());
        assert!(
            broken
                .to_string()
                .contains("the exercise's reference solution kernel did not run correctly"),
            "{broken}"
        );
    }

    #[test]
    fn a_broken_starter_cannot_grade_anything() {
        let verdict = verdict(
            &spec(),
            &failed("starter", FailureStage::Launch, "an illegal memory access"),
            &measured("yours", 1.0),
            &measured("solution", 1.0),
        );
        assert_eq!(
            verdict,
            Verdict::StarterBroken {
                baseline: Baseline::Starter,
                problem: "it failed at the launch: an illegal memory access".into()
            }
        );
        assert!(!verdict.is_graded() && !verdict.is_pass());
        assert_eq!(
            verdict.to_string(),
            "CANNOT GRADE: the exercise's starter kernel did not run correctly here, so there is \
             nothing to compare yours with: it failed at the launch: an illegal memory access"
        );
        // The learner's own failure still comes first: it is worth fixing either way.
        assert!(matches!(
            super::verdict(
                &spec(),
                &failed("starter", FailureStage::Launch, "x"),
                &failed("yours", FailureStage::Compile, "y"),
                &measured("solution", 1.0),
            ),
            Verdict::DoesNotCompile { .. }
        ));
    }

    /// The shared exercise lab, with a small `n` (one block): the fake device copies on the host.
    fn lab() -> LabSpec {
        let text = include_str!("../../labs/fixtures/coalesce.toml");
        assert!(text.contains("n = 16777216\n"), "{text}");
        let text = text.replace("n = 16777216\n", "n = 8192\n");
        LabSpec::parse(&text, Path::new("labs/coalesce.toml")).expect("a valid lab")
    }

    fn book_kernels() -> BTreeMap<String, KernelSource> {
        ["copy_chunked", "copy_coalesced"]
            .into_iter()
            .map(|name| {
                (
                    name.to_string(),
                    KernelSource {
                        name: name.into(),
                        source: format!("extern \"C\" __global__ void {name}() {{}}\n"),
                        origin: SourceLocation {
                            file: "book/src/coalesce.md".into(),
                            line: 10,
                        },
                        language: Default::default(),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn the_learner_variant_is_the_starters_launch_running_another_kernel() {
        let source =
            "extern \"C\" __global__ void copy_chunked(float *d, const float *s, int n) {}\n";
        let check =
            CheckPlan::new(&lab(), &book_kernels(), source, Path::new("x.cu")).expect("a check");
        let device = FakeDevice::new();
        let book_plan = crate::plan::compile(
            &check.book_lab,
            &check.kernels,
            &crate::plan::Target::of(device.info()),
            &Default::default(),
        )
        .expect("a lab plan");
        let plan = check.learner_plan(&book_plan).expect("the learner's plan");
        let names: Vec<&str> = plan.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["starter", LEARNER_VARIANT, "solution"]);
        let (starter, learner) = (&plan.variants[0], &plan.variants[1]);
        let (OpPlan::Kernel(starter_op), OpPlan::Kernel(learner_op)) = (&starter.op, &learner.op)
        else {
            panic!("kernel variants: {plan:?}");
        };
        let build = &plan.builds[learner_op.main.build];
        assert_eq!(build.key, "yours:copy_chunked");
        assert_eq!(build.source.source, source);
        assert_eq!(build.flags, plan.builds[starter_op.main.build].flags);
        assert_eq!(
            (
                learner_op.main.grid,
                learner_op.main.block,
                &learner_op.main.args
            ),
            (
                starter_op.main.grid,
                starter_op.main.block,
                &starter_op.main.args
            )
        );
        assert_eq!(learner.check, starter.check);

        let kernel = build.source.clone();
        let err = book_plan
            .with_learner_kernel("nope", LEARNER_VARIANT, "k", kernel.clone())
            .expect_err("no such starter");
        assert_eq!(err.to_string(), "lab `coalesce` has no variant `nope`");
        let err = plan
            .with_learner_kernel("starter", LEARNER_VARIANT, "k", kernel)
            .expect_err("taken");
        assert!(
            err.to_string().contains("already has a variant `yours`"),
            "{err}"
        );
    }

    #[test]
    fn a_plan_needs_an_exercise_and_adds_the_learners_kernel() {
        let source =
            "extern \"C\" __global__ void copy_chunked(float *d, const float *s, int n) {}\n";
        let plan = CheckPlan::new(
            &lab(),
            &book_kernels(),
            source,
            Path::new("exercises/coalesce.cu"),
        )
        .expect("a plan");
        assert_eq!(plan.variants(), ["starter", "yours", "solution"]);
        assert_eq!(
            plan.learner,
            LearnerVariant {
                starter: "starter".into(),
                kernel_key: "yours:copy_chunked".into()
            }
        );
        let learner = &plan.kernels["yours:copy_chunked"];
        assert_eq!(learner.name, "copy_chunked");
        assert_eq!(learner.source, source);
        assert_eq!(learner.origin.to_string(), "exercises/coalesce.cu:1");

        let mut plain = lab();
        plain.exercise = None;
        let err = CheckPlan::new(&plain, &book_kernels(), source, Path::new("x.cu"))
            .expect_err("not an exercise");
        assert_eq!(
            err.to_string(),
            "lab `coalesce` (labs/coalesce.toml) is not an exercise: it has no [exercise] section"
        );
    }

    /// A lab profiled for the book's diagrams grades a learner's kernel on its times alone.
    #[test]
    fn grading_never_runs_the_profiler() {
        let mut profiled = lab();
        profiled.profile = true;
        let source =
            "extern \"C\" __global__ void copy_chunked(float *d, const float *s, int n) {}\n";
        let plan =
            CheckPlan::new(&profiled, &book_kernels(), source, Path::new("x.cu")).expect("a plan");
        let device = FakeDevice::new();
        let book_plan = crate::plan::compile(
            &plan.book_lab,
            &plan.kernels,
            &crate::plan::Target::of(device.info()),
            &Default::default(),
        )
        .expect("a lab plan");
        assert!(book_plan.profile, "the book's plan profiles");
        let learner_plan = plan.learner_plan(&book_plan).expect("the learner's plan");
        assert!(!learner_plan.profile);
    }

    #[test]
    fn the_learners_compile_errors_point_into_the_learners_file() {
        let source = "extern \"C\" __global__ void copy_chunked(float *d, const float *s, int n) {\n\
                      \x20   int i = threadIdx.x;\n\
                      #error forgot something\n\
                      }\n";
        let plan = CheckPlan::new(
            &lab(),
            &book_kernels(),
            source,
            Path::new("exercises/coalesce.cu"),
        )
        .expect("a plan");
        let mut device = FakeDevice::new();
        let book_plan = crate::plan::compile(
            &plan.book_lab,
            &plan.kernels,
            &crate::plan::Target::of(device.info()),
            &Default::default(),
        )
        .expect("a lab plan");
        let learner_plan = plan.learner_plan(&book_plan).expect("the learner's plan");
        let options = RunOptions {
            seed: 1,
            ..RunOptions::default()
        };
        let results = run(
            &learner_plan,
            &mut device,
            &crate::engine::Ahead::new(std::sync::Arc::new(FakeCompiler)),
            &options,
            &mut crate::engine::tests::NoPython,
            &mut Quiet,
        )
        .expect("measured")
        .results;
        let names: Vec<&str> = results.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["starter", "yours", "solution"]);
        let verdict = plan.verdict(&results).expect("a verdict");
        assert_eq!(
            verdict,
            Verdict::DoesNotCompile {
                message: "exercises/coalesce.cu:3: error: #error forgot something".into()
            }
        );
    }
}
