//! CPU references: what a lab's buffers start as ([`initial_contents`]), what a check's output
//! must be (one [`Reference`] per file, found by name in the [`registry`]), and the first place
//! a device's output differs ([`first_mismatch`]).
//!
//! A reference sees only host bytes and evaluated integers ([`ReferenceCall`]), never a lab:
//! the plan resolves the check's buffers and size expressions once, and the engine calls the
//! reference through the trait, so a new reference is one file and one line in [`registry`].
//!
//! ```
//! use kernelbook_runner::references::{self, HostBuffer, ReferenceCall};
//! use kernelbook_core::spec::ElemType;
//! use std::collections::BTreeMap;
//!
//! let matrix: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let args = BTreeMap::from([("rows".to_string(), 2), ("cols".to_string(), 3)]);
//! let transpose = references::find("transpose").expect("a built-in reference");
//! let call = ReferenceCall {
//!     inputs: vec![HostBuffer { name: "in", elem: ElemType::F32, bytes: &matrix }],
//!     args: &args,
//!     output_elem: ElemType::F32,
//!     output_len: 6,
//! };
//! let expected = transpose.expected(&call).expect("a well-formed call");
//! let actual: Vec<u8> = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! assert!(references::first_mismatch(&expected, &actual, ElemType::F32, &transpose.comparison(&args)).is_none());
//! ```

use kernelbook_core::expr::Expr;
use kernelbook_core::spec::{BuiltinCheck, CompareRule, ElemType, SAMPLED_ELEMENTS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod compare;
pub mod copy;
pub mod fma_chains;
mod inputs;
mod parallel;
pub mod python;
pub mod register_pressure;
pub mod scale;
pub mod strided_gather;
#[cfg(test)]
mod testing;
pub mod tile_symmetrize;
pub mod transpose;
pub mod wrapping_sum;

pub use compare::{element_agrees, first_mismatch};
pub use inputs::initial_contents;

/// The byte every element of a poisoned buffer is filled with: all bits set is NaN for floats
/// and -1 for integers, so an element the kernel never wrote cannot match the reference.
pub const POISON_BYTE: u8 = 0xFF;

/// A host copy of one of the check's input buffers, exactly the bytes the GPU received.
#[derive(Debug, Clone, Copy)]
pub struct HostBuffer<'a> {
    pub name: &'a str,
    pub elem: ElemType,
    pub bytes: &'a [u8],
}

/// One check's call to its reference, as the lab plan resolved it.
#[derive(Debug, Clone)]
pub struct ReferenceCall<'a> {
    /// The check's inputs, in the order the check names them (e.g. transpose: [input];
    /// strided_gather: [input]).
    pub inputs: Vec<HostBuffer<'a>>,
    /// The check's evaluated size expressions by name (the names [`BuiltinCheck::exprs`] gives).
    pub args: &'a BTreeMap<String, i64>,
    /// The output buffer's element type.
    pub output_elem: ElemType,
    /// The output buffer's length in elements.
    pub output_len: usize,
}

/// How an output is compared with the expected bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// How float elements compare (integers always bit for bit).
    pub rule: CompareRule,
    /// Compare every this-many-th element (1 = all), for outputs too costly to compute whole.
    pub sample_stride: usize,
}

impl Comparison {
    /// Every element, bit for bit: what most references ask for.
    pub const EXACT: Comparison = Comparison {
        rule: CompareRule::Exact,
        sample_stride: 1,
    };

    /// Every `sample_stride`-th element, within `(relative, absolute)`.
    pub const fn close(rtol: f64, atol: f64, sample_stride: usize) -> Comparison {
        Comparison {
            rule: CompareRule::Close { rtol, atol },
            sample_stride,
        }
    }
}

/// A call its reference cannot answer. Each names the reference, and the argument where one is
/// at fault, so the lab author knows which line of the check to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("reference `{reference}` needs the argument `{arg}`, which the check does not give")]
    MissingArg {
        reference: &'static str,
        arg: &'static str,
    },
    #[error("reference `{reference}` reads {needed} input buffer(s); the check gives {given}")]
    MissingInput {
        reference: &'static str,
        needed: usize,
        given: usize,
    },
    #[error("reference `{reference}`: `{arg}` is {value}; it must be between {min} and {max}")]
    OutOfRange {
        reference: &'static str,
        arg: &'static str,
        value: i64,
        min: i64,
        max: u64,
    },
    #[error("reference `{reference}`: {what} overflows")]
    Overflow {
        reference: &'static str,
        what: String,
    },
    #[error(
        "reference `{reference}` expects {expected} bytes of output, and the output buffer holds \
         only {available} ({len} × {elem:?})"
    )]
    ShapeMismatch {
        reference: &'static str,
        expected: usize,
        available: usize,
        len: usize,
        elem: ElemType,
    },
}

/// A CPU reference: the expected output of one kind of check.
pub trait Reference: Send + Sync {
    /// The name lab files use: `reference = "transpose"`.
    fn name(&self) -> &'static str;
    /// The argument names it needs (checked when the plan is compiled).
    fn arg_names(&self) -> &'static [&'static str];
    /// How many inputs it reads (0 for the pointer chase).
    fn input_count(&self) -> usize;
    /// How outputs are compared (tolerance, sampling), from the evaluated args.
    fn comparison(&self, args: &BTreeMap<String, i64>) -> Comparison;
    /// The expected bytes of the output's first bytes that are compared (the length of the
    /// returned Vec says how many bytes are compared).
    fn expected(&self, call: &ReferenceCall<'_>) -> Result<Vec<u8>, ReferenceError>;
}

/// Every built-in reference, one per [`BuiltinCheck`] variant.
static REGISTRY: [&dyn Reference; 8] = [
    &copy::Copy,
    &transpose::Transpose,
    &strided_gather::StridedGather,
    &scale::Scale,
    &register_pressure::RegisterPressure,
    &tile_symmetrize::TileSymmetrize,
    &wrapping_sum::WrappingSum,
    &fma_chains::FmaChains,
];

/// Every built-in reference.
pub fn registry() -> &'static [&'static dyn Reference] {
    &REGISTRY
}

/// The built-in reference lab files call `name`.
pub fn find(name: &str) -> Option<&'static dyn Reference> {
    registry().iter().copied().find(|r| r.name() == name)
}

/// Today's [`BuiltinCheck`] as a call's parts: the reference's name, the input buffers in order,
/// the output buffer, and the named size expressions (to evaluate into
/// [`ReferenceCall::args`]).
pub fn call_parts(
    check: &BuiltinCheck,
) -> (&'static str, Vec<&str>, &str, Vec<(&'static str, &Expr)>) {
    (
        check.reference_name(),
        check.inputs(),
        check.output(),
        check.exprs(),
    )
}

/// The stride of a sampled check over `count` elements: about [`SAMPLED_ELEMENTS`] of them, the
/// stride odd so the sample falls on every lane of a warp and every residue of a power-of-two
/// block; 1 (everything) for a small or negative count. The same as
/// [`BuiltinCheck::sample_stride`].
pub fn sampled_stride(count: i64) -> usize {
    let stride = usize::try_from(count).unwrap_or(0) / SAMPLED_ELEMENTS;
    if stride <= 1 { 1 } else { stride | 1 }
}

impl<'a> ReferenceCall<'a> {
    /// Argument `arg` of `reference`, as evaluated.
    pub fn arg(&self, reference: &'static str, arg: &'static str) -> Result<i64, ReferenceError> {
        self.args
            .get(arg)
            .copied()
            .ok_or(ReferenceError::MissingArg { reference, arg })
    }

    /// Argument `arg` as a size: 0 or more, and addressable on this machine.
    pub fn size(
        &self,
        reference: &'static str,
        arg: &'static str,
    ) -> Result<usize, ReferenceError> {
        let value = self.arg(reference, arg)?;
        usize::try_from(value).map_err(|_| ReferenceError::OutOfRange {
            reference,
            arg,
            value,
            min: 0,
            max: usize::MAX as u64,
        })
    }

    /// Argument `arg` as a u32 (a kernel's unsigned 32-bit argument): 0 to 2^32 − 1.
    pub fn u32_arg(
        &self,
        reference: &'static str,
        arg: &'static str,
    ) -> Result<u32, ReferenceError> {
        let value = self.arg(reference, arg)?;
        u32::try_from(value).map_err(|_| ReferenceError::OutOfRange {
            reference,
            arg,
            value,
            min: 0,
            max: u64::from(u32::MAX),
        })
    }

    /// The bytes of input `index` (0 = the first the check names).
    pub fn input(&self, reference: &'static str, index: usize) -> Result<&'a [u8], ReferenceError> {
        self.inputs
            .get(index)
            .map(|input| input.bytes)
            .ok_or(ReferenceError::MissingInput {
                reference,
                needed: index + 1,
                given: self.inputs.len(),
            })
    }

    /// The element type of input `index`.
    pub fn input_elem(
        &self,
        reference: &'static str,
        index: usize,
    ) -> Result<ElemType, ReferenceError> {
        self.inputs
            .get(index)
            .map(|input| input.elem)
            .ok_or(ReferenceError::MissingInput {
                reference,
                needed: index + 1,
                given: self.inputs.len(),
            })
    }

    /// Checks, before anything is allocated, that `expected` bytes of output fit in the output
    /// buffer: a check whose sizes disagree with its buffers is the lab's mistake, and should
    /// say so rather than fail later as a device read past a buffer's end.
    pub fn fits_output(
        &self,
        reference: &'static str,
        expected: usize,
    ) -> Result<(), ReferenceError> {
        let available = self.output_len.saturating_mul(self.output_elem.size());
        if expected > available {
            return Err(ReferenceError::ShapeMismatch {
                reference,
                expected,
                available,
                len: self.output_len,
                elem: self.output_elem,
            });
        }
        Ok(())
    }
}

/// The product of `factors`, or an [`ReferenceError::Overflow`] naming `what` it sizes.
pub fn product(
    reference: &'static str,
    what: &str,
    factors: &[usize],
) -> Result<usize, ReferenceError> {
    factors
        .iter()
        .try_fold(1usize, |acc, &f| acc.checked_mul(f))
        .ok_or_else(|| ReferenceError::Overflow {
            reference,
            what: format!(
                "{what} ({})",
                factors
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(" × ")
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::expr::Params;
    use kernelbook_core::spec::LabFile;

    /// One check of every kind `BuiltinCheck` has, from its serde form (what a lab file writes),
    /// with sizes big enough that the sampled ones sample.
    fn one_of_each() -> Vec<BuiltinCheck> {
        let io = r#""input": "in", "output": "out""#;
        [
            format!(r#"{{"reference": "copy", {io}}}"#),
            format!(r#"{{"reference": "transpose", {io}, "rows": "4", "cols": "8"}}"#),
            format!(r#"{{"reference": "strided_gather", {io}, "count": "4", "stride": "2"}}"#),
            format!(r#"{{"reference": "scale", {io}, "factor": "3"}}"#),
            format!(r#"{{"reference": "register_pressure", {io}, "count": "4194304", "iters": "2"}}"#),
            format!(r#"{{"reference": "tile_symmetrize", {io}, "n": "8", "tile": "4"}}"#),
            format!(r#"{{"reference": "wrapping_sum", {io}, "count": "4", "times": "2"}}"#),
            format!(r#"{{"reference": "fma_chains", {io}, "count": "1000000", "chains": "8", "rounds": "2"}}"#),
        ]
        .iter()
        .map(|json| serde_json::from_str(json).expect("a check"))
        .collect()
    }

    fn evaluated(check: &BuiltinCheck) -> BTreeMap<String, i64> {
        check
            .exprs()
            .into_iter()
            .map(|(name, expr)| {
                (
                    name.to_string(),
                    expr.eval(&Params::new()).expect("constant"),
                )
            })
            .collect()
    }

    #[test]
    fn the_registry_has_one_reference_per_check_kind_with_its_arguments_and_inputs() {
        let checks = one_of_each();
        assert_eq!(checks.len(), registry().len());
        for check in &checks {
            let tag = serde_json::to_value(check).expect("serialises")["reference"].clone();
            assert_eq!(tag, check.reference_name(), "{check:?}");
            let (name, inputs, output, exprs) = call_parts(check);
            assert_eq!(output, "out");
            let reference = find(name).unwrap_or_else(|| panic!("no reference `{name}`"));
            assert_eq!(reference.name(), name);
            let names: Vec<&str> = exprs.iter().map(|(name, _)| *name).collect();
            assert_eq!(reference.arg_names(), names, "{name}");
            assert_eq!(reference.input_count(), inputs.len(), "{name}");
        }
        let mut names: Vec<&str> = registry().iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), registry().len(), "names are unique");
        assert!(find("no_such_reference").is_none());
    }

    #[test]
    fn comparisons_match_the_checks_tolerance_and_sample_stride() {
        for check in one_of_each() {
            let reference = find(check.reference_name()).expect("registered");
            let args = evaluated(&check);
            assert_eq!(
                reference.comparison(&args),
                Comparison {
                    rule: testing::naive::rule(check.tolerance()),
                    sample_stride: check.sample_stride(&Params::new()).expect("stride"),
                },
                "{}",
                check.reference_name()
            );
        }
        // Sampled: register_pressure 4194304 / 16384 = 256, made odd; fma_chains 1000000 / 16384.
        let sampled = |name: &str, count: i64| {
            find(name)
                .expect("registered")
                .comparison(&BTreeMap::from([("count".to_string(), count)]))
                .sample_stride
        };
        assert_eq!(sampled("register_pressure", 4_194_304), 257);
        assert_eq!(sampled("fma_chains", 1_000_000), 61);
        assert_eq!(sampled("fma_chains", 1000), 1);
    }

    #[test]
    fn sampled_strides_are_odd_keep_small_problems_whole_and_agree_with_the_check() {
        assert_eq!(sampled_stride(1000), 1);
        assert_eq!(sampled_stride(-5), 1);
        let stride = sampled_stride(4_194_304);
        assert_eq!(stride % 2, 1);
        assert!((4_194_304 / stride).abs_diff(16384) < 100);
        for count in [
            0i64,
            1,
            16383,
            16384,
            32767,
            32768,
            49152,
            1 << 22,
            1 << 30,
            -1,
        ] {
            let check = BuiltinCheck::FmaChains {
                input: "in".into(),
                output: "out".into(),
                count: Expr::new(count.to_string()),
                chains: Expr::new("8"),
                rounds: Expr::new("2"),
            };
            assert_eq!(
                check.sample_stride(&Params::new()),
                Ok(sampled_stride(count)),
                "count = {count}"
            );
        }
    }

    #[test]
    fn every_check_of_every_lab_has_a_reference_with_its_arguments() {
        let labs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../labs");
        let mut checked = 0;
        for entry in std::fs::read_dir(&labs).expect("labs/") {
            let path = entry.expect("an entry").path();
            if path.extension().is_none_or(|ext| ext != "toml") {
                continue;
            }
            let LabFile::Ready(lab) = LabFile::load(&path).expect("a valid lab") else {
                continue;
            };
            let checks = std::iter::once(&lab.check)
                .chain(lab.variants.iter().filter_map(|v| v.check.as_ref()));
            for check in checks.filter_map(|check| check.as_builtin()) {
                let reference = find(check.reference_name()).expect("registered");
                let names: Vec<&str> = check.exprs().iter().map(|(name, _)| *name).collect();
                assert_eq!(reference.arg_names(), names, "{}", path.display());
                checked += 1;
            }
        }
        assert!(
            checked > 10,
            "{checked} checks found under {}",
            labs.display()
        );
    }

    #[test]
    fn errors_name_the_reference_and_the_argument() {
        let args = BTreeMap::from([("rows".to_string(), -3)]);
        let call = ReferenceCall {
            inputs: Vec::new(),
            args: &args,
            output_elem: ElemType::F32,
            output_len: 0,
        };
        let err = call.size("transpose", "rows").expect_err("negative");
        assert_eq!(
            err.to_string(),
            format!(
                "reference `transpose`: `rows` is -3; it must be between 0 and {}",
                usize::MAX
            )
        );
        let err = product("transpose", "rows × cols", &[usize::MAX, 2]).expect_err("overflow");
        assert_eq!(
            err.to_string(),
            format!(
                "reference `transpose`: rows × cols ({} × 2) overflows",
                usize::MAX
            )
        );
        let err = call.fits_output("copy", 8).expect_err("no room");
        assert_eq!(
            err.to_string(),
            "reference `copy` expects 8 bytes of output, and the output buffer holds only 0 (0 × F32)"
        );
    }

    /// Wall-clock timings of the big references and comparisons; not a correctness test.
    /// `cargo test -p kernelbook-runner --release -- --ignored --nocapture time_`
    #[test]
    #[ignore = "a timing run of GiB-sized references; run it by hand in release"]
    fn time_large_references_and_compares() {
        use kernelbook_core::spec::Fill;
        use std::time::Instant;
        let random = |len: usize, seed: u64| {
            initial_contents(
                Fill::Random,
                ElemType::F32,
                len,
                &mut fastrand::Rng::with_seed(seed),
            )
        };
        let time = |name: &str, inputs: &[&[u8]], args: &[(&str, i64)]| -> Vec<u8> {
            let inputs: Vec<(&[u8], ElemType)> =
                inputs.iter().map(|i| (*i, ElemType::F32)).collect();
            let started = Instant::now();
            let out = testing::call(name, &inputs, args).expect("reference");
            eprintln!(
                "{name:<24} {args:?} {:>8.3} s",
                started.elapsed().as_secs_f64()
            );
            out
        };
        let big = random(13440 * 13440, 1);
        time("tile_symmetrize", &[&big], &[("n", 13440), ("tile", 64)]);
        drop(big);
        let input = random(8192 * 8192, 2);
        let scaled = time("scale", &[&input], &[("factor", 3)]);
        time("copy", &[&input], &[]);
        time(
            "register_pressure",
            &[&input],
            &[("count", 4_194_304), ("iters", 64)],
        );
        time(
            "fma_chains",
            &[&input],
            &[("count", 4_194_304), ("chains", 8), ("rounds", 2048)],
        );
        let compare = |label: &str, actual: &[u8], tolerance: Option<(f64, f64)>| {
            let started = Instant::now();
            let comparison = Comparison {
                rule: testing::naive::rule(tolerance),
                sample_stride: 1,
            };
            let m = first_mismatch(&scaled, actual, ElemType::F32, &comparison);
            eprintln!(
                "{label:<40} {:>8.3} s  ({:?} mismatches)",
                started.elapsed().as_secs_f64(),
                m.map(|m| m.count)
            );
        };
        let same = scaled.clone();
        compare("compare 64M, equal, bit for bit", &same, None);
        compare("compare 64M, equal, tolerance", &same, Some((1e-5, 1e-6)));
        let poison = vec![POISON_BYTE; scaled.len()];
        compare("compare 64M, all poison, bit for bit", &poison, None);
    }
}
