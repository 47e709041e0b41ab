//! A benchmark's axes and each state's values on them: the `Variant` string axis, then an int64
//! axis per parameter any variant ran with (the lab's with its own over them), flagged `pow2`
//! where a sweep of it is `pow2` and every value is a power of two, as nvbench flags an axis
//! declared with `add_int64_power_of_two_axis`.

use super::layout::{Axis, AxisValue, NamedValue};
use kernelbook_core::expr::Params;
use kernelbook_core::results::{LabResults, VariantResult};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// The parameters `variant` ran with: the lab's with its own over them; none for a results file
/// that did not record a variant's own (format 1), where a variant's values are unknown (the
/// lab's `stride = 1` is not the stride of its row `s96`), so the state has only its name.
fn state_params(results: &LabResults, variant: &VariantResult) -> Params {
    variant.all_params(&results.params).unwrap_or_default()
}

/// An int64 axis: its values in order, and whether a sweep of it is `pow2`.
#[derive(Debug, Default)]
struct IntAxis {
    values: BTreeSet<i64>,
    swept_pow2: bool,
}

impl IntAxis {
    fn pow2(&self) -> bool {
        self.swept_pow2 && self.values.iter().all(|&v| v > 0 && v.count_ones() == 1)
    }
}

/// The axes of one benchmark, over every GPU's results of its lab.
#[derive(Debug, Default)]
pub struct StateAxes {
    variants: Vec<String>,
    ints: BTreeMap<String, IntAxis>,
}

/// A state's value on one axis: as nvbench writes it in `axis_values`, and as it reads in the
/// state's name (`stride=96`, `size=2^3` on a `pow2` axis).
#[derive(Debug, Clone)]
pub struct StateValue {
    pub named: NamedValue,
    pub shown: String,
}

/// A state's name without its device: `Variant=s96 blocks=2048 stride=96`; by it the robust
/// compare matches a state of one file with a state of another.
pub fn state_key(values: &[StateValue]) -> String {
    values
        .iter()
        .map(|v| v.shown.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

impl StateAxes {
    /// The axes of a lab's runs (one per GPU): `Variant`, then an int64 axis per parameter that
    /// every variant of every run has a value for. nvbench's scripts index a state's values by
    /// its benchmark's axes, so a parameter some state lacks (a format-1 file's, which records
    /// none; one only some variants set) is no axis: the variant's name tells those apart.
    pub fn of(runs: &[(usize, &LabResults)]) -> StateAxes {
        let mut axes = StateAxes::default();
        let mut everywhere: Option<BTreeSet<String>> = None;
        for (_, results) in runs {
            for v in &results.variants {
                let names: BTreeSet<String> = state_params(results, v).into_keys().collect();
                everywhere = Some(match everywhere {
                    None => names,
                    Some(before) => before.intersection(&names).cloned().collect(),
                });
            }
        }
        let everywhere = everywhere.unwrap_or_default();
        for (_, results) in runs {
            for v in &results.variants {
                if !axes.variants.contains(&v.name) {
                    axes.variants.push(v.name.clone());
                }
                for (name, value) in state_params(results, v) {
                    if everywhere.contains(&name) {
                        axes.ints.entry(name).or_default().values.insert(value);
                    }
                }
                let swept = v.params.iter().filter_map(|p| p.sweep.as_ref());
                for axis in swept.flat_map(|sweep| &sweep.axes).filter(|a| a.pow2) {
                    if let Some(int) = axes.ints.get_mut(&axis.name) {
                        int.swept_pow2 = true;
                    }
                }
            }
        }
        axes
    }

    /// `variant`'s value on every axis it has one on, in the axes' order.
    pub fn values(&self, results: &LabResults, variant: &VariantResult) -> Vec<StateValue> {
        let params = state_params(results, variant);
        let name = StateValue {
            named: NamedValue::string("Variant", &variant.name),
            shown: format!("Variant={}", variant.name),
        };
        let ints = self.ints.iter().filter_map(|(axis, int)| {
            let value = *params.get(axis)?;
            let shown = match int.pow2() {
                true => format!("{axis}=2^{}", value.trailing_zeros()),
                false => format!("{axis}={value}"),
            };
            Some(StateValue {
                named: NamedValue::int(axis, value),
                shown,
            })
        });
        std::iter::once(name).chain(ints).collect()
    }

    /// The axes as nvbench's JSON writes them: a `pow2` axis's input is the exponent and its
    /// description `2^E = V`.
    pub fn layout(&self) -> Vec<Axis> {
        let variant_axis = Axis {
            name: "Variant".into(),
            kind: "string",
            flags: "",
            values: self
                .variants
                .iter()
                .map(|v| AxisValue {
                    input_string: v.clone(),
                    description: String::new(),
                    value: json!(v),
                })
                .collect(),
        };
        let ints = self.ints.iter().map(|(name, int)| {
            let pow2 = int.pow2();
            Axis {
                name: name.clone(),
                kind: "int64",
                flags: if pow2 { "pow2" } else { "" },
                values: int
                    .values
                    .iter()
                    .map(|&v| {
                        let exponent = v.trailing_zeros();
                        AxisValue {
                            input_string: match pow2 {
                                true => exponent.to_string(),
                                false => v.to_string(),
                            },
                            description: match pow2 {
                                true => format!("2^{exponent} = {v}"),
                                false => String::new(),
                            },
                            value: json!(v),
                        }
                    })
                    .collect(),
            }
        });
        std::iter::once(variant_axis).chain(ints).collect()
    }
}
