//! How a variant's output is checked: against a built-in CPU reference, a NumPy reference
//! written in the chapter (` ```python reference=NAME `), or another variant of the same lab run
//! on the same inputs, each compared as the check says (`compare`).
//!
//! ```toml
//! [check]                                  # a NumPy reference of the chapter
//! python = "axpy"
//! inputs = ["x", "y"]
//! output = "y"
//! args = { a = 0.5 }
//! compare = { rtol = 1e-6, atol = 1e-7 }
//!
//! [check]                                  # the output of a trusted naive kernel
//! against = "sum_naive"
//! output = "total"
//! compare = { ulps = 64 }
//! ```

use crate::expr::{Expr, ExprError};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// About how many elements a sampled check compares ([`BuiltinCheck::sample_stride`]).
pub const SAMPLED_ELEMENTS: usize = 16384;

/// A check: what the expected output is, and how an output is compared with it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSpec {
    pub kind: CheckKind,
    /// How outputs compare; `None`: the reference's own rule (bit for bit for a NumPy reference
    /// or another variant).
    pub compare: Option<CompareSpec>,
}

/// Where a check's expected output comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckKind {
    Builtin(BuiltinCheck),
    Python(PythonCheck),
    Against(AgainstCheck),
}

/// A NumPy reference: the function of a ` ```python reference=NAME ` block of the book, called
/// with the input buffers (by name) and the lab's parameters.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonCheck {
    /// The block's (and its function's) name.
    pub python: String,
    /// The buffers passed, by name; every filled (random or zero) buffer when not given.
    #[serde(default)]
    pub inputs: Option<Vec<String>>,
    pub output: String,
    /// Values passed besides the lab's parameters (a number, or an expression of the
    /// parameters), e.g. a kernel's float scale factor.
    #[serde(default)]
    pub args: BTreeMap<String, ArgValue>,
}

/// A value a NumPy reference receives.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ArgValue {
    Number(f64),
    Expr(Expr),
}

/// The output of another variant of the lab (a trusted naive kernel), run on the same inputs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgainstCheck {
    pub against: String,
    pub output: String,
}

/// How an output compares with its expected value.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareSpec {
    pub rule: CompareRule,
    /// Compare every this-many-th element only (a sampled check); every element when `None`.
    pub every: Option<Expr>,
}

/// The rule one element is compared by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareRule {
    /// Bit for bit.
    Exact,
    /// `|expected − actual| ≤ atol + rtol · |expected|` (floats only).
    Close { rtol: f64, atol: f64 },
    /// At most this many representable values apart (floats only; NaN never agrees).
    Ulps(u64),
}

impl<'de> Deserialize<'de> for CheckSpec {
    /// A check is told apart by its key: `python`, `against`, or a built-in `reference`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut table = toml::Table::deserialize(deserializer)?;
        let compare = table
            .remove("compare")
            .map(CompareSpec::deserialize)
            .transpose()
            .map_err(|err| D::Error::custom(format!("compare: {}", err.message())))?;
        let value = toml::Value::Table(table.clone());
        let kind = if table.contains_key("python") {
            PythonCheck::deserialize(value).map(CheckKind::Python)
        } else if table.contains_key("against") {
            AgainstCheck::deserialize(value).map(CheckKind::Against)
        } else if table.contains_key("reference") {
            BuiltinCheck::deserialize(value).map(CheckKind::Builtin)
        } else {
            return Err(D::Error::custom(
                "a check needs `python = \"NAME\"` (a ```python reference=NAME block), \
                 `against = \"VARIANT\"` or a built-in `reference = \"...\"`",
            ));
        };
        let kind = kind.map_err(|err| D::Error::custom(err.message().trim().to_string()))?;
        Ok(CheckSpec { kind, compare })
    }
}

impl<'de> Deserialize<'de> for CompareSpec {
    /// `"exact"`, or a table: `{ rtol, atol }`, `{ ulps }`, either with `every`, or `{ every }`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            rtol: Option<f64>,
            atol: Option<f64>,
            ulps: Option<u64>,
            every: Option<Expr>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Word(String),
            Table(Table),
        }
        let form = Form::deserialize(deserializer).map_err(|_| {
            D::Error::custom(
                "expected \"exact\" or a table of rtol and atol, or ulps, and every \
                 (e.g. { rtol = 1e-6, atol = 1e-7 })",
            )
        })?;
        let table = match form {
            Form::Word(word) if word == "exact" => {
                return Ok(CompareSpec {
                    rule: CompareRule::Exact,
                    every: None,
                });
            }
            Form::Word(word) => {
                return Err(D::Error::custom(format!(
                    "unknown comparison `{word}` (use \"exact\" or a table such as {{ rtol = 1e-6, atol = 1e-7 }})"
                )));
            }
            Form::Table(table) => table,
        };
        let rule = match (table.rtol, table.atol, table.ulps) {
            (None, None, None) => CompareRule::Exact,
            (rtol, atol, None) => CompareRule::Close {
                rtol: rtol.unwrap_or(0.0),
                atol: atol.unwrap_or(0.0),
            },
            (None, None, Some(ulps)) => CompareRule::Ulps(ulps),
            _ => {
                return Err(D::Error::custom(
                    "a comparison takes rtol and atol, or ulps, not both",
                ));
            }
        };
        Ok(CompareSpec {
            rule,
            every: table.every,
        })
    }
}

impl CompareRule {
    /// Whether the rule accepts anything but equal bits (and so needs a float output).
    pub fn is_tolerant(self) -> bool {
        !matches!(self, CompareRule::Exact)
    }

    /// What is wrong with its numbers, if anything: a negative, infinite or NaN tolerance.
    pub fn problem(self) -> Option<String> {
        match self {
            CompareRule::Close { rtol, atol }
                if !(rtol.is_finite() && atol.is_finite() && rtol >= 0.0 && atol >= 0.0) =>
            {
                Some(format!(
                    "a tolerance must be finite and not negative (rtol = {rtol}, atol = {atol})"
                ))
            }
            _ => None,
        }
    }
}

impl CheckSpec {
    /// A built-in check compared by its own rule.
    pub fn builtin(check: BuiltinCheck) -> CheckSpec {
        CheckSpec {
            kind: CheckKind::Builtin(check),
            compare: None,
        }
    }

    /// The buffer compared.
    pub fn output(&self) -> &str {
        match &self.kind {
            CheckKind::Builtin(check) => check.output(),
            CheckKind::Python(check) => &check.output,
            CheckKind::Against(check) => &check.output,
        }
    }

    /// The built-in reference, if this is one.
    pub fn as_builtin(&self) -> Option<&BuiltinCheck> {
        match &self.kind {
            CheckKind::Builtin(check) => Some(check),
            _ => None,
        }
    }

    /// The ` ```python reference=NAME ` block it runs, if any.
    pub fn python_block(&self) -> Option<&str> {
        match &self.kind {
            CheckKind::Python(check) => Some(&check.python),
            _ => None,
        }
    }

    /// The variant whose output it compares with, if any.
    pub fn against(&self) -> Option<&str> {
        match &self.kind {
            CheckKind::Against(check) => Some(&check.against),
            _ => None,
        }
    }
}

/// A CPU reference written in Rust (`reference = "transpose"`), for the checks that are fast and
/// general or too costly for Python. Most are compared bit for bit; those whose floats a GPU may
/// round differently (`tanhf`, a compiler's choice of fused operations) within a tolerance
/// ([`BuiltinCheck::tolerance`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reference", rename_all = "snake_case", deny_unknown_fields)]
pub enum BuiltinCheck {
    /// `output` must equal `input`, bit for bit.
    Copy { input: String, output: String },
    /// `output` (cols × rows) must be the transpose of `input` (rows × cols), bit for bit.
    Transpose {
        input: String,
        output: String,
        rows: Expr,
        cols: Expr,
    },
    /// `output[i]` must be `input[i * stride]` for `i < count`, bit for bit.
    StridedGather {
        input: String,
        output: String,
        count: Expr,
        stride: Expr,
    },
    /// `output[i] = factor * input[i]` (f32): one IEEE multiply, so bit for bit.
    Scale {
        input: String,
        output: String,
        factor: Expr,
    },
    /// The register-pressure kernel (f32): 64 accumulators per element, `iters` rounds of
    /// `acc[k] = fma(acc[k], 0.999, 0.001 * acc[(k + 7) mod 64])` in order, then their sum.
    RegisterPressure {
        input: String,
        output: String,
        count: Expr,
        iters: Expr,
    },
    /// Each `tile` × `tile` block of an n × n f32 matrix plus its own transpose:
    /// `output[r][c] = input[r][c] + input[r0 + (c - c0)][c0 + (r - r0)]` for the block at
    /// (r0, c0); one add, so bit for bit.
    TileSymmetrize {
        input: String,
        output: String,
        n: Expr,
        tile: Expr,
    },
    /// `output[0]` = `times` × (Σ input[0..count]), u32 wrapping.
    WrappingSum {
        input: String,
        output: String,
        count: Expr,
        times: Expr,
    },
    /// `chains` independent FMA chains per element: `v_k = input[i] + k`, then `rounds` times
    /// `v_k = fma(v_k, 0.9999, 0.0001)`, and `output[i] = Σ_k v_k` in order (bit for bit: a fused
    /// multiply-add rounds once everywhere).
    FmaChains {
        input: String,
        output: String,
        count: Expr,
        chains: Expr,
        rounds: Expr,
    },
}

impl BuiltinCheck {
    /// The buffers the reference reads (host copies of random-filled buffers).
    pub fn inputs(&self) -> Vec<&str> {
        match self {
            BuiltinCheck::Copy { input, .. }
            | BuiltinCheck::Transpose { input, .. }
            | BuiltinCheck::StridedGather { input, .. }
            | BuiltinCheck::Scale { input, .. }
            | BuiltinCheck::RegisterPressure { input, .. }
            | BuiltinCheck::WrappingSum { input, .. }
            | BuiltinCheck::TileSymmetrize { input, .. }
            | BuiltinCheck::FmaChains { input, .. } => vec![input],
        }
    }

    pub fn output(&self) -> &str {
        match self {
            BuiltinCheck::Copy { output, .. }
            | BuiltinCheck::Transpose { output, .. }
            | BuiltinCheck::StridedGather { output, .. }
            | BuiltinCheck::Scale { output, .. }
            | BuiltinCheck::RegisterPressure { output, .. }
            | BuiltinCheck::WrappingSum { output, .. }
            | BuiltinCheck::TileSymmetrize { output, .. }
            | BuiltinCheck::FmaChains { output, .. } => output,
        }
    }

    /// The size expressions of the reference, with their names.
    pub fn exprs(&self) -> Vec<(&'static str, &Expr)> {
        match self {
            BuiltinCheck::Copy { .. } => Vec::new(),
            BuiltinCheck::Transpose { rows, cols, .. } => vec![("rows", rows), ("cols", cols)],
            BuiltinCheck::StridedGather { count, stride, .. } => {
                vec![("count", count), ("stride", stride)]
            }
            BuiltinCheck::Scale { factor, .. } => vec![("factor", factor)],
            BuiltinCheck::RegisterPressure { count, iters, .. } => {
                vec![("count", count), ("iters", iters)]
            }
            BuiltinCheck::WrappingSum { count, times, .. } => {
                vec![("count", count), ("times", times)]
            }
            BuiltinCheck::TileSymmetrize { n, tile, .. } => vec![("n", n), ("tile", tile)],
            BuiltinCheck::FmaChains {
                count,
                chains,
                rounds,
                ..
            } => vec![("count", count), ("chains", chains), ("rounds", rounds)],
        }
    }

    /// Which output elements the check compares: every one (1), or, for references whose CPU
    /// cost equals the kernel's whole arithmetic (a compute-bound kernel), about
    /// [`SAMPLED_ELEMENTS`] evenly spread ones. The stride is odd, so the sample falls on every
    /// lane position of a warp and every residue of a power-of-two block.
    pub fn sample_stride(&self, params: &crate::expr::Params) -> Result<usize, ExprError> {
        let count = match self {
            BuiltinCheck::RegisterPressure { count, .. }
            | BuiltinCheck::FmaChains { count, .. } => count.eval(params)?,
            _ => return Ok(1),
        };
        let stride = usize::try_from(count).unwrap_or(0) / SAMPLED_ELEMENTS;
        Ok(if stride <= 1 { 1 } else { stride | 1 })
    }

    /// `(relative, absolute)` tolerance for references whose floats a GPU may round
    /// differently; `None` means bit for bit.
    pub fn tolerance(&self) -> Option<(f64, f64)> {
        match self {
            BuiltinCheck::RegisterPressure { .. } => Some((1e-5, 1e-6)),
            _ => None,
        }
    }

    /// The name lab files give the reference (`reference = "transpose"`, the serde tag), by
    /// which the runner finds its CPU reference.
    pub fn reference_name(&self) -> &'static str {
        match self {
            BuiltinCheck::Copy { .. } => "copy",
            BuiltinCheck::Transpose { .. } => "transpose",
            BuiltinCheck::StridedGather { .. } => "strided_gather",
            BuiltinCheck::Scale { .. } => "scale",
            BuiltinCheck::RegisterPressure { .. } => "register_pressure",
            BuiltinCheck::TileSymmetrize { .. } => "tile_symmetrize",
            BuiltinCheck::WrappingSum { .. } => "wrapping_sum",
            BuiltinCheck::FmaChains { .. } => "fma_chains",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::LabSpec;
    use std::path::Path;

    /// A reduction with a NumPy-checked row and two rows checked against a naive one.
    const LAB: &str = r#"
name = "sums"
title = "Sums"
bytes = "n * 4"
[params]
n = 1024
[[buffers]]
name = "x"
len = "n"
fill = "random"
[[buffers]]
name = "total"
len = "1"
fill = "poison"
[[buffers]]
name = "count"
elem = "u32"
len = "1"
fill = "poison"
[check]
against = "naive"
output = "total"
compare = { rtol = 1e-5, atol = 1e-6 }
[[variants]]
name = "naive"
kernel = "sum_naive"
grid = [1]
block = [1]
args = ["total", "x", "n"]
[[variants]]
name = "tree"
kernel = "sum_tree"
grid = [1]
block = [256]
args = ["total", "x", "n"]
[[variants]]
name = "numpy_checked"
kernel = "sum_tree"
grid = [1]
block = [256]
args = ["total", "x", "n"]
check = { python = "sum_ref", output = "total", args = { scale = 0.5, half = "n / 2" }, compare = { ulps = 4, every = "1" } }
"#;

    fn parse(text: &str) -> Result<LabSpec, crate::spec::LabError> {
        LabSpec::parse(text, Path::new("labs/sums.toml"))
    }

    #[test]
    fn the_three_kinds_and_their_comparisons_parse() {
        let lab = parse(LAB).expect("a valid lab");
        assert_eq!(lab.check.against(), Some("naive"));
        assert_eq!(
            lab.check.compare.as_ref().map(|c| c.rule),
            Some(CompareRule::Close {
                rtol: 1e-5,
                atol: 1e-6
            })
        );
        let own = lab.variants[2].check.as_ref().expect("its own check");
        let CheckKind::Python(python) = &own.kind else {
            panic!("{own:?}");
        };
        assert_eq!(python.python, "sum_ref");
        assert_eq!(python.inputs, None, "every filled buffer by default");
        assert_eq!(python.args["scale"], ArgValue::Number(0.5));
        assert_eq!(python.args["half"], ArgValue::Expr(Expr::new("n / 2")));
        let compare = own.compare.as_ref().expect("compare");
        assert_eq!(compare.rule, CompareRule::Ulps(4));
        assert_eq!(compare.every, Some(Expr::new("1")));
        for (form, rule) in [
            ("\"exact\"", CompareRule::Exact),
            ("{ every = 7 }", CompareRule::Exact),
            (
                "{ atol = 0.5 }",
                CompareRule::Close {
                    rtol: 0.0,
                    atol: 0.5,
                },
            ),
        ] {
            let text = LAB.replace("{ rtol = 1e-5, atol = 1e-6 }", form);
            let lab = parse(&text).unwrap_or_else(|e| panic!("{form}: {e}"));
            assert_eq!(lab.check.compare.map(|c| c.rule), Some(rule), "{form}");
        }
        // The trusted variant's own check is the lab's, against itself: allowed.
        assert_eq!(lab.check_for(&lab.variants[0]).against(), Some("naive"));
    }

    #[test]
    fn bad_checks_are_refused_at_their_line() {
        let cases = [
            (
                LAB.replace("against = \"naive\"", "against = \"slowest\""),
                "against variant `slowest`, which the lab does not have",
                21,
            ),
            (
                LAB.replace(
                    "name = \"tree\"\nkernel = \"sum_tree\"\ngrid = [1]\nblock = [256]\nargs = [\"total\", \"x\", \"n\"]",
                    "name = \"tree\"\nkernel = \"sum_tree\"\ngrid = [1]\nblock = [256]\nargs = [\"total\", \"x\", \"n\"]\ncheck = { against = \"tree\", output = \"total\" }",
                ),
                "variant `tree` is checked against itself",
                31,
            ),
            (
                LAB.replace(
                    "name = \"naive\"\nkernel = \"sum_naive\"\ngrid = [1]\nblock = [1]\nargs = [\"total\", \"x\", \"n\"]",
                    "name = \"naive\"\nkernel = \"sum_naive\"\ngrid = [1]\nblock = [1]\nargs = [\"total\", \"x\", \"n\"]\ncheck = { against = \"tree\", output = \"total\" }",
                ),
                "checks go round in a circle: naive → tree → naive",
                25,
            ),
            (
                LAB.replace("rtol = 1e-5", "rtol = -1e-5"),
                "a tolerance must be finite and not negative",
                23,
            ),
            (
                LAB.replace("output = \"total\"\ncompare", "output = \"count\"\ncompare"),
                "a tolerance compares floats; output `count` holds integers",
                23,
            ),
            (
                LAB.replace("{ rtol = 1e-5, atol = 1e-6 }", "{ rtol = 1e-5, ulps = 2 }"),
                "rtol and atol, or ulps, not both",
                20,
            ),
            (
                LAB.replace("{ rtol = 1e-5, atol = 1e-6 }", "\"close\""),
                "unknown comparison `close`",
                20,
            ),
            (
                LAB.replace("every = \"1\"", "every = \"0\""),
                "compare.every `0` must be at least 1",
                42,
            ),
            (
                LAB.replace("python = \"sum_ref\"", "python = \"sum-ref\""),
                "must name a ```python reference=NAME block by a Python identifier",
                42,
            ),
            (
                LAB.replace("scale = 0.5", "x = 0.5"),
                "check argument `x` must be an identifier unlike any buffer's name",
                42,
            ),
            (
                LAB.replace("against = \"naive\"\n", ""),
                "a check needs `python = \"NAME\"`",
                20,
            ),
        ];
        for (text, message, line) in cases {
            let err = parse(&text).expect_err(message);
            assert!(err.message.contains(message), "{message}: {}", err.message);
            assert_eq!(err.line, line, "{message}: {err}");
        }
    }
}
