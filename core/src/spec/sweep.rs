//! Sweeps: one `[[variants]]` entry that stands for several rows, one per value of a parameter
//! (`sweep = { kb = [16, 32, 64] }` or `sweep = { kb = { pow2 = [16, 1024] } }`), or per
//! combination of values of several (their cartesian product, the first key varying slowest).
//!
//! A sweep is expanded when the lab file is parsed, into ordinary [`VariantSpec`]s: each binds
//! its values as parameters of its own, and has `{EXPR}` in its name, label, access and
//! `defines` values replaced by the expression's value over its parameters (`"ws_{kb}k"`,
//! `"{kb * 8} lines"`). What downstream knows of the sweep is [`VariantSpec::sweep_origin`]: the
//! entry's name as written and its swept parameters, which the results keep (so that a sweep's
//! rows are a series along its axis in an export); nothing measures differently for it.

use super::{LabError, LabSpec, VariantSpec};
use crate::expr::{Expr, Params};
use crate::spec::device::DeviceParams;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use toml::Spanned;

/// The most rows one swept entry may expand into: far more than a table can show, far fewer
/// than would exhaust memory (three keys of 63 powers of two would make 250 047).
pub const MAX_SWEEP_VARIANTS: usize = 1024;

/// The swept `[[variants]]` entry a variant comes from (kept in its results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepOrigin {
    /// The entry's name as the lab file writes it (`ws_{size}m`): the variants of one entry
    /// are one series along the sweep's axes.
    pub entry: String,
    /// The swept parameters, in the order the file writes them.
    pub axes: Vec<SweptAxis>,
}

/// One swept parameter of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweptAxis {
    pub name: String,
    /// Swept as `{ pow2 = [FROM, TO] }`: every value a power of two.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pow2: bool,
}

/// The swept parameters of one entry, in the order the file writes them.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sweep(Vec<SweptParam>);

/// One swept parameter: its name and its values as written, each with where it stands.
#[derive(Debug, Clone, PartialEq)]
struct SweptParam {
    name: Spanned<String>,
    values: Spanned<SweepValues>,
}

/// A parameter's values as the lab file writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SweepValues {
    /// `[16, 32, 64]`.
    List(Vec<i64>),
    /// `{ pow2 = [16, 1024] }`: the powers of two from the first to the second, both included.
    Pow2(Vec<i64>),
}

impl<'de> Deserialize<'de> for Sweep {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = BTreeMap::<Spanned<String>, Spanned<SweepValues>>::deserialize(deserializer)?;
        let mut params: Vec<SweptParam> = table
            .into_iter()
            .map(|(name, values)| SweptParam { name, values })
            .collect();
        // A TOML table need not keep its keys' order; their places in the file do.
        params.sort_by_key(|param| param.name.span().start);
        Ok(Sweep(params))
    }
}

impl<'de> Deserialize<'de> for SweepValues {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Pow2 {
            pow2: Vec<i64>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            List(Vec<i64>),
            Pow2(Pow2),
        }
        match Raw::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "a swept parameter takes a list of integers (`[16, 32, 64]`) or a range of \
                 powers of two (`{ pow2 = [16, 1024] }`)",
            )
        })? {
            Raw::List(values) => Ok(SweepValues::List(values)),
            Raw::Pow2(range) => Ok(SweepValues::Pow2(range.pow2)),
        }
    }
}

/// `plot_x` as the lab file writes it: a number, or an expression over the variant's own and
/// swept parameters (`plot_x = "kb * 1024"`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum PlotX {
    Number(f64),
    Expr(String),
}

impl<'de> Deserialize<'de> for PlotX {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Expr(String),
        }
        match Raw::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "plot_x takes a number or an expression string such as \"kb * 1024\"",
            )
        })? {
            Raw::Number(x) => Ok(PlotX::Number(x)),
            Raw::Expr(text) => Ok(PlotX::Expr(text)),
        }
    }
}

/// Whether `x` is a power of two (1, 2, 4, ...).
fn is_pow2(x: i64) -> bool {
    x > 0 && x.count_ones() == 1
}

/// Whether `name` can be written in an expression.
fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` with every `{EXPR}` replaced by the value of `EXPR` over `params`.
pub(super) fn substitute(text: &str, params: &Params) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err("a `}` closes no `{`".to_string());
        }
        out.push_str(&rest[..open]);
        let inner = &rest[open + 1..];
        let close = inner
            .find('}')
            .ok_or_else(|| "a `{` is not closed by a `}`".to_string())?;
        let value = Expr::new(inner[..close].trim())
            .eval(params)
            .map_err(|err| err.to_string())?;
        out.push_str(&value.to_string());
        rest = &inner[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Every combination of one value per axis, the first axis varying slowest.
fn product(axes: &[(String, Vec<i64>)]) -> Vec<Params> {
    let mut combinations = vec![Params::new()];
    for (name, values) in axes {
        combinations = combinations
            .iter()
            .flat_map(|prefix| {
                values.iter().map(move |&value| {
                    let mut combination = prefix.clone();
                    combination.insert(name.clone(), value);
                    combination
                })
            })
            .collect();
    }
    combinations
}

impl LabSpec {
    /// Replaces every swept `[[variants]]` entry by the variants it stands for, in order, and
    /// resolves every variant's `plot_x`.
    pub(super) fn expand_sweeps(&mut self) -> Result<(), LabError> {
        let written = std::mem::take(&mut self.variants);
        let mut variants = Vec::with_capacity(written.len());
        for variant in written {
            variants.extend(self.expand(variant)?);
        }
        self.variants = variants;
        Ok(())
    }

    /// The variants one entry stands for: itself, or one per combination of its swept values.
    fn expand(&self, mut variant: VariantSpec) -> Result<Vec<VariantSpec>, LabError> {
        let Some(sweep) = variant.sweep.take() else {
            variant.plot_x = self.plot_x(&variant, None)?;
            return Ok(vec![variant]);
        };
        let axes = self.axes(&variant, &sweep)?;
        let count = axes
            .iter()
            .try_fold(1usize, |count, (_, values)| count.checked_mul(values.len()))
            .filter(|&count| count <= MAX_SWEEP_VARIANTS);
        if count.is_none() {
            return Err(self.error_at_offset(
                sweep.span().start,
                format!(
                    "variant `{}`: the sweep stands for more than {MAX_SWEEP_VARIANTS} variants",
                    variant.name
                ),
            ));
        }
        for (name, _) in &axes {
            if !variant.name.contains(&format!("{{{name}}}")) {
                return Err(self.variant_error(
                    &variant,
                    format!(
                        "variant `{}` sweeps `{name}`: its name must contain `{{{name}}}`, so that \
                         each variant of the sweep has a name of its own",
                        variant.name
                    ),
                ));
            }
        }
        let single = match axes.as_slice() {
            [(name, _)] => Some(name.as_str()),
            _ => None,
        };
        let at = sweep.span().start;
        let origin = SweepOrigin {
            entry: variant.name.clone(),
            axes: sweep
                .get_ref()
                .0
                .iter()
                .map(|param| SweptAxis {
                    name: param.name.get_ref().clone(),
                    pow2: matches!(param.values.get_ref(), SweepValues::Pow2(_)),
                })
                .collect(),
        };
        variant.sweep_origin = Some(origin);
        product(&axes)
            .into_iter()
            .map(|values| self.instance(&variant, at, values, single))
            .collect()
    }

    /// The swept parameters with their values, checked: identifiers, not device properties,
    /// not also in the entry's `params`, at least one value, powers of two in order for `pow2`.
    fn axes(
        &self,
        variant: &VariantSpec,
        sweep: &Spanned<Sweep>,
    ) -> Result<Vec<(String, Vec<i64>)>, LabError> {
        if sweep.get_ref().0.is_empty() {
            return Err(self.error_at_offset(
                sweep.span().start,
                format!("variant `{}`: the sweep names no parameter", variant.name),
            ));
        }
        sweep
            .get_ref()
            .0
            .iter()
            .map(|param| {
                let name = param.name.get_ref();
                let here = |message: String| {
                    self.error_at_offset(
                        param.name.span().start,
                        format!("variant `{}`: swept `{name}`: {message}", variant.name),
                    )
                };
                if !is_identifier(name) {
                    return Err(here(
                        "a swept parameter's name is letters, digits and `_`".into(),
                    ));
                }
                if DeviceParams::is_name(name) {
                    return Err(here("that is a device property, not a parameter".into()));
                }
                if variant.params.contains_key(name) {
                    return Err(here(
                        "it is also in the variant's `params`; give it once".into(),
                    ));
                }
                let values = self.values(&param.values).map_err(|message| {
                    self.error_at_offset(
                        param.values.span().start,
                        format!("variant `{}`: swept `{name}`: {message}", variant.name),
                    )
                })?;
                Ok((name.clone(), values))
            })
            .collect()
    }

    /// The values a swept parameter takes, or what is wrong with them.
    fn values(&self, values: &Spanned<SweepValues>) -> Result<Vec<i64>, String> {
        match values.get_ref() {
            SweepValues::List(list) if list.is_empty() => {
                Err("the list of values is empty".to_string())
            }
            SweepValues::List(list) => Ok(list.clone()),
            SweepValues::Pow2(range) => {
                let &[from, to] = range.as_slice() else {
                    return Err(format!(
                        "pow2 takes two powers of two, [FROM, TO]; it has {} values",
                        range.len()
                    ));
                };
                if !is_pow2(from) || !is_pow2(to) {
                    return Err(format!(
                        "pow2 = [{from}, {to}]: both ends must be powers of two"
                    ));
                }
                if from > to {
                    return Err(format!(
                        "pow2 = [{from}, {to}] is empty: the first end is the smaller"
                    ));
                }
                Ok(std::iter::successors(Some(from), |&x| {
                    x.checked_mul(2).filter(|&next| next <= to)
                })
                .collect())
            }
        }
    }

    /// One variant of a sweep: `values` bound as its own parameters and substituted into its
    /// texts; with one swept parameter and no `plot_x`, the row is plotted at its value.
    fn instance(
        &self,
        entry: &VariantSpec,
        sweep_at: usize,
        values: Params,
        single: Option<&str>,
    ) -> Result<VariantSpec, LabError> {
        let mut variant = entry.clone();
        variant.params.extend(values);
        let params = variant.params.clone();
        let substituted = |text: &str| {
            substitute(text, &params).map_err(|message| {
                self.error_at(
                    &format!("\"{text}\""),
                    format!("variant `{}`: in `{text}`: {message}", entry.name),
                )
            })
        };
        variant.name = substituted(&entry.name)?;
        variant.label = entry.label.as_deref().map(substituted).transpose()?;
        variant.access = substituted(&entry.access)?;
        for value in variant.defines.values_mut() {
            *value = substituted(value)?;
        }
        variant.written = Some((entry.name.clone(), sweep_at));
        let default_x = single.and_then(|name| params.get(name)).map(|&x| x as f64);
        variant.plot_x = self.plot_x(&variant, default_x)?;
        Ok(variant)
    }

    /// `variant`'s place on the plot: its `plot_x` (a number, or an expression over its own
    /// parameters), else `default`.
    fn plot_x(&self, variant: &VariantSpec, default: Option<f64>) -> Result<Option<f64>, LabError> {
        match &variant.plot_x_written {
            None => Ok(default),
            Some(PlotX::Number(x)) => Ok(Some(*x)),
            Some(PlotX::Expr(text)) => match Expr::new(text.as_str()).eval(&variant.params) {
                Ok(x) => Ok(Some(x as f64)),
                Err(err) => Err(self.error_at(
                    &format!("\"{text}\""),
                    format!(
                        "variant `{}`: plot_x (over the variant's own and swept parameters): {err}",
                        variant.name
                    ),
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A lab whose one entry sweeps `kb`; `ENTRY` is replaced by the entry's own lines.
    const LAB: &str = r#"name = "sweep"
title = "Sweep"
bytes = "kb * 1024"

[params]
n = 1024

[[buffers]]
name = "src"
len = "n"
fill = "random"

[[buffers]]
name = "dst"
len = "n"
fill = "poison"

[check]
reference = "copy"
input = "src"
output = "dst"

[[variants]]
name = "ws_{kb}k"
kernel = "copy"
block = [256]
args = ["dst", "src", "kb * 256"]
ENTRY
"#;

    fn parse(entry: &str) -> Result<LabSpec, LabError> {
        LabSpec::parse(&LAB.replace("ENTRY", entry), Path::new("labs/sweep.toml"))
    }

    fn names(lab: &LabSpec) -> Vec<&str> {
        lab.variants.iter().map(|v| v.name.as_str()).collect()
    }

    #[test]
    fn a_list_expands_into_one_variant_per_value_in_order() {
        let lab = parse(
            "label = \"{kb} KiB\"\naccess = \"{kb * 8} lines\"\ndefines = { KB = \"{kb}\" }\n\
             grid = [\"kb\"]\nsweep = { kb = [64, 16, 32] }",
        )
        .expect("valid");
        assert_eq!(names(&lab), ["ws_64k", "ws_16k", "ws_32k"]);
        let v = &lab.variants[1];
        assert_eq!(v.params, Params::from([("kb".to_string(), 16)]));
        assert_eq!(v.label(), "16 KiB");
        assert_eq!(v.access, "128 lines");
        assert_eq!(v.defines["KB"], "16");
        assert_eq!(
            v.plot_x,
            Some(16.0),
            "one swept parameter: plotted at its value"
        );
        assert!(v.sweep.is_none());
        assert_eq!(v.anchor(), "\"ws_{kb}k\"");
        let origin = v.sweep_origin.as_ref().expect("a variant of a sweep");
        assert_eq!(origin.entry, "ws_{kb}k");
        assert_eq!(
            origin.axes,
            [SweptAxis {
                name: "kb".into(),
                pow2: false
            }]
        );
    }

    #[test]
    fn pow2_takes_every_power_of_two_between_its_ends() {
        let lab = parse("grid = [1]\nsweep = { kb = { pow2 = [16, 1024] } }").expect("valid");
        assert_eq!(
            names(&lab),
            [
                "ws_16k", "ws_32k", "ws_64k", "ws_128k", "ws_256k", "ws_512k", "ws_1024k"
            ]
        );
        let origin = lab.variants[0].sweep_origin.as_ref().expect("swept");
        assert!(origin.axes[0].pow2, "a pow2 sweep is marked so");
        let lab = parse("grid = [1]\nsweep = { kb = { pow2 = [8, 8] } }").expect("one value");
        assert_eq!(names(&lab), ["ws_8k"]);
    }

    #[test]
    fn several_keys_make_their_product_in_the_order_the_file_writes_them() {
        // `z` before `a`: the file's order, not the alphabet's, decides which varies slowest.
        let text = LAB
            .replace("bytes = \"kb * 1024\"", "bytes = \"z * a\"")
            .replace("ws_{kb}k", "t{z}_{a}")
            .replace("\"kb * 256\"", "\"z\"")
            .replace(
                "ENTRY",
                "grid = [\"z * a\"]\nsweep = { z = [1, 2], a = [3, 4] }\nplot_x = \"z * 10 + a\"",
            );
        let lab = LabSpec::parse(&text, Path::new("labs/sweep.toml")).expect("valid");
        assert_eq!(names(&lab), ["t1_3", "t1_4", "t2_3", "t2_4"]);
        let xs: Vec<_> = lab.variants.iter().map(|v| v.plot_x).collect();
        assert_eq!(xs, [Some(13.0), Some(14.0), Some(23.0), Some(24.0)]);
        let err = LabSpec::parse(
            &text.replace("t{z}_{a}", "t{z}"),
            Path::new("labs/sweep.toml"),
        )
        .expect_err("a name without {a}");
        assert!(
            err.message.contains("must contain `{a}`"),
            "{}",
            err.message
        );
        assert_eq!(err.line, 24, "{err}");
    }

    #[test]
    fn a_swept_value_overrides_a_lab_parameter_of_its_name() {
        let lab = parse("grid = [\"n / 256\"]\nsweep = { n = [512, 2048] }")
            .expect_err("the name must contain {n}");
        assert_eq!(lab.line, 24, "{lab}");
        let text = LAB.replace("ws_{kb}k", "n{n}").replace("kb", "n");
        let lab = LabSpec::parse(
            &text.replace("ENTRY", "grid = [\"n / 256\"]\nsweep = { n = [512, 2048] }"),
            Path::new("labs/sweep.toml"),
        )
        .expect("valid");
        assert_eq!(lab.params["n"], 1024, "the lab keeps its own");
        let ns: Vec<_> = lab
            .variants
            .iter()
            .map(|v| lab.params_for(v)["n"])
            .collect();
        assert_eq!(ns, [512, 2048]);
    }

    #[test]
    fn sweep_errors_name_the_line_of_what_is_wrong() {
        let cases = [
            (
                "grid = [1]\nsweep = { kb = [] }",
                29,
                "the list of values is empty",
            ),
            (
                "grid = [1]\nsweep = { kb = { pow2 = [16, 48] } }",
                29,
                "powers of two",
            ),
            (
                "grid = [1]\nsweep = { kb = { pow2 = [0, 16] } }",
                29,
                "powers of two",
            ),
            (
                "grid = [1]\nsweep = { kb = { pow2 = [64, 16] } }",
                29,
                "is empty",
            ),
            (
                "grid = [1]\nsweep = { kb = { pow2 = [16] } }",
                29,
                "two powers of two",
            ),
            (
                "grid = [1]\nsweep = { kb = \"16\" }",
                29,
                "a list of integers",
            ),
            ("grid = [1]\nsweep = {}", 29, "names no parameter"),
            (
                "grid = [1]\nsweep = { kb = [1], sm_count = [1] }",
                29,
                "device property",
            ),
            (
                "grid = [1]\nparams = { kb = 2 }\nsweep = { kb = [1] }",
                30,
                "also in the variant's `params`",
            ),
            ("grid = [1]\nsweep = { kb = [16, 16] }", 24, "defined twice"),
            (
                "grid = [1]\nlabel = \"{kbb}\"\nsweep = { kb = [16] }",
                29,
                "unknown parameter `kbb`",
            ),
            (
                "grid = [1]\nlabel = \"{kb\"\nsweep = { kb = [16] }",
                29,
                "not closed",
            ),
            (
                "grid = [1]\nplot_x = \"kb * n\"\nsweep = { kb = [16] }",
                29,
                "unknown parameter `n`",
            ),
            ("grid = [0]\nsweep = { kb = [16] }", 24, "between 1 and"),
            (
                // 41 × 41 powers of two.
                "grid = [1]\nsweep = { a = { pow2 = [1, 1099511627776] }, b = { pow2 = [1, 1099511627776] } }",
                29,
                "more than 1024 variants",
            ),
        ];
        for (entry, line, message) in cases {
            let err = parse(entry).expect_err(entry);
            assert!(err.message.contains(message), "{entry}: {}", err.message);
            assert_eq!(err.line, line, "{entry}: {err}");
        }
    }

    #[test]
    fn an_error_in_a_swept_variant_is_at_its_own_entry_when_two_write_the_same_name() {
        let err = parse(
            "grid = [1]\nsweep = { kb = [16] }\n\n[[variants]]\nname = \"ws_{kb}k\"\n\
             kernel = \"copy\"\ngrid = [0]\nblock = [1]\nsweep = { kb = [32] }",
        )
        .expect_err("a grid of 0");
        assert!(err.message.contains("variant `ws_32k`"), "{err}");
        assert_eq!(err.line, 32, "the second entry: {err}");
    }

    #[test]
    fn expanded_names_that_clash_with_another_variant_are_errors() {
        let err = parse(
            "grid = [1]\nsweep = { kb = [16, 32] }\n\n[[variants]]\nname = \"ws_32k\"\n\
             kernel = \"copy\"\ngrid = [1]\nblock = [1]\nbytes = 4",
        )
        .expect_err("ws_32k twice");
        assert!(err.message.contains("`ws_32k` is defined twice"), "{err}");
        assert_eq!(err.line, 32, "at the second: {err}");
    }

    #[test]
    fn substitution_replaces_each_expression_by_its_value() {
        let params = Params::from([("kb".to_string(), 16), ("unit".to_string(), 1024)]);
        assert_eq!(substitute("ws_{kb}k", &params), Ok("ws_16k".into()));
        assert_eq!(
            substitute("{kb * unit / 128} lines of {kb}", &params),
            Ok("128 lines of 16".into())
        );
        assert_eq!(substitute("no braces", &params), Ok("no braces".into()));
        assert!(substitute("{kb", &params).is_err());
        assert!(substitute("kb}", &params).is_err());
        let err = substitute("{tile}", &params).expect_err("unknown");
        assert!(err.contains("unknown parameter `tile`"), "{err}");
    }

    #[test]
    fn the_product_varies_the_first_key_slowest() {
        let axes = [
            ("a".to_string(), vec![1, 2]),
            ("b".to_string(), vec![3, 4, 5]),
        ];
        let pairs: Vec<(i64, i64)> = product(&axes).iter().map(|p| (p["a"], p["b"])).collect();
        assert_eq!(pairs, [(1, 3), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5)]);
    }
}
