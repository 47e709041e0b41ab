//! What a diagram directive asks for, read from its attributes: the access pattern, the named
//! values (one of them may be a list, one diagram per value), and the profiled lab row whose
//! counters are set beside the prediction.

use super::directive::{Attribute, Value};
use super::error::DirectiveError;
use kernelbook_core::access::{LANE_VARIABLE, Pattern, Unit, WARP_LANES};
use kernelbook_core::expr::{Expr, Params};

/// Which model a directive draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagramKind {
    /// `{{#warp-access ...}}`: sectors and lines of a global load or store.
    WarpAccess,
    /// `{{#banks ...}}`: shared memory's banks.
    Banks,
}

impl DiagramKind {
    /// The directive's name, as written after `{{#`.
    pub fn directive(self) -> &'static str {
        match self {
            DiagramKind::WarpAccess => "warp-access",
            DiagramKind::Banks => "banks",
        }
    }

    /// The kinds, for the scanner.
    pub const ALL: [DiagramKind; 2] = [DiagramKind::WarpAccess, DiagramKind::Banks];
}

/// Whether the instruction loads or stores: which of the profiler's counters it is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryOp {
    Load,
    Store,
}

impl MemoryOp {
    pub fn verb(self) -> &'static str {
        match self {
            MemoryOp::Load => "reads",
            MemoryOp::Store => "writes",
        }
    }

    /// What happens to the sectors' bytes: a load's are fetched, a store's written (the bytes
    /// no lane stores are masked off, not sent).
    pub fn moved(self) -> &'static str {
        match self {
            MemoryOp::Load => "fetched",
            MemoryOp::Store => "written",
        }
    }

    pub fn noun(self) -> &'static str {
        match self {
            MemoryOp::Load => "load",
            MemoryOp::Store => "store",
        }
    }
}

/// The profiled lab row a diagram is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfiledRow {
    pub lab: String,
    /// One variant, or one per value of the list.
    pub variants: Vec<String>,
}

/// One diagram directive, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagramSpec {
    pub kind: DiagramKind,
    pub pattern: Pattern,
    pub op: MemoryOp,
    /// What the author calls the pattern; a sentence from the pattern otherwise.
    pub title: Option<String>,
    /// Named values every panel shares.
    pub values: Params,
    /// The one list, one panel per value.
    pub sweep: Option<Sweep>,
    pub profiled: Option<ProfiledRow>,
    /// The author's reason, shown where the counters disagree with the model.
    pub why: Option<String>,
}

/// The named value given as a list: `stride=[1, 2, 4]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    pub name: String,
    pub values: Vec<i64>,
}

/// One diagram of a directive: the values it is drawn with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelSpec {
    pub values: Params,
    /// "stride = 2" for a panel of a list.
    pub label: Option<String>,
    /// The lab variant whose counters it sits beside.
    pub variant: Option<String>,
}

const KEYS: &[&str] = &[
    "index", "addr", "elem", "lanes", "op", "title", "lab", "variant", "why",
];

impl DiagramSpec {
    /// Reads the attributes of a `kind` directive. Only what the attributes say is checked here;
    /// whether the pattern evaluates, and whether the lab exists, are checked with the book.
    pub fn from_attributes(
        kind: DiagramKind,
        attributes: &[Attribute],
    ) -> Result<Self, DirectiveError> {
        let text = |name: &str| -> Result<Option<String>, DirectiveError> {
            match attributes.iter().find(|a| a.name == name).map(|a| &a.value) {
                None => Ok(None),
                Some(Value::Text(text)) => Ok(Some(text.clone())),
                Some(Value::List(_)) if name == "variant" => Ok(None),
                Some(Value::List(_)) => Err(DirectiveError::NotAList(name.to_string())),
            }
        };
        let pattern = pattern(kind, &text("index")?, &text("addr")?)?;
        let elem = integer_attribute("elem", text("elem")?, 4)?;
        let lanes = integer_attribute("lanes", text("lanes")?, WARP_LANES as i64)?;
        let pattern = Pattern {
            elem_bytes: u64::try_from(elem).map_err(|_| DirectiveError::NotPositive("elem"))?,
            ..pattern
        }
        .with_lanes(usize::try_from(lanes).map_err(|_| DirectiveError::NotPositive("lanes"))?);
        let op = match text("op")?.as_deref() {
            None | Some("load") => MemoryOp::Load,
            Some("store") => MemoryOp::Store,
            Some(other) => return Err(DirectiveError::NotAnOp(other.to_string())),
        };
        let (values, sweep) = named_values(attributes)?;
        let profiled = profiled_row(attributes, text("lab")?, sweep.as_ref())?;
        Ok(DiagramSpec {
            kind,
            pattern,
            op,
            title: text("title")?,
            values,
            sweep,
            profiled,
            why: text("why")?,
        })
    }

    /// The diagrams the directive draws: one, or one per value of its list.
    pub fn panels(&self) -> Vec<PanelSpec> {
        let variant = |i: usize| {
            self.profiled
                .as_ref()
                .and_then(|row| row.variants.get(i).or(row.variants.first()).cloned())
        };
        match &self.sweep {
            None => vec![PanelSpec {
                values: self.values.clone(),
                label: None,
                variant: variant(0),
            }],
            Some(Sweep { name, values: list }) => list
                .iter()
                .enumerate()
                .map(|(i, value)| {
                    let mut values = self.values.clone();
                    values.insert(name.clone(), *value);
                    PanelSpec {
                        values,
                        label: Some(format!("{name} = {value}")),
                        variant: variant(i),
                    }
                })
                .collect(),
        }
    }
}

/// The pattern from `index="..."` or `addr="..."` (exactly one).
fn pattern(
    kind: DiagramKind,
    index: &Option<String>,
    addr: &Option<String>,
) -> Result<Pattern, DirectiveError> {
    let (expr, unit) = match (index, addr) {
        (Some(index), None) => (index, Unit::Element),
        (None, Some(addr)) => (addr, Unit::Byte),
        (Some(_), Some(_)) => return Err(DirectiveError::IndexAndAddr),
        (None, None) => return Err(DirectiveError::NoPattern(kind.directive())),
    };
    Ok(Pattern::new(Expr::new(expr.as_str()), unit, 4))
}

fn integer_attribute(
    name: &str,
    text: Option<String>,
    default: i64,
) -> Result<i64, DirectiveError> {
    match text {
        None => Ok(default),
        Some(text) => parse_integer(name, &text),
    }
}

fn parse_integer(name: &str, text: &str) -> Result<i64, DirectiveError> {
    text.replace('_', "")
        .parse()
        .map_err(|_| DirectiveError::NotAnInteger {
            name: name.to_string(),
            text: text.to_string(),
        })
}

/// The named values (every attribute that is not a key) and the one that is a list, if any.
fn named_values(attributes: &[Attribute]) -> Result<(Params, Option<Sweep>), DirectiveError> {
    let mut values = Params::new();
    let mut sweep: Option<Sweep> = None;
    for attribute in attributes
        .iter()
        .filter(|a| !KEYS.contains(&a.name.as_str()))
    {
        let name = attribute.name.as_str();
        if name == LANE_VARIABLE {
            return Err(DirectiveError::LaneGiven(LANE_VARIABLE));
        }
        let numbers = match &attribute.value {
            Value::Text(text) => vec![parse_integer(name, text).map_err(|_| unknown(name, text))?],
            Value::List(items) => items
                .iter()
                .map(|item| parse_integer(name, item))
                .collect::<Result<Vec<_>, _>>()?,
        };
        if name == "stride" && numbers.iter().any(|s| *s < 1) {
            return Err(DirectiveError::StrideBelowOne);
        }
        match &attribute.value {
            Value::Text(_) => {
                values.insert(name.to_string(), numbers[0]);
            }
            Value::List(_) => {
                if let Some(Sweep { name: first, .. }) = &sweep {
                    return Err(DirectiveError::TwoLists {
                        first: first.clone(),
                        second: name.to_string(),
                    });
                }
                sweep = Some(Sweep {
                    name: name.to_string(),
                    values: numbers,
                });
            }
        }
    }
    Ok((values, sweep))
}

/// The message for an attribute that is neither a key nor an integer value.
fn unknown(name: &str, text: &str) -> DirectiveError {
    DirectiveError::Unknown {
        name: name.to_string(),
        text: text.to_string(),
        keys: KEYS.join(", "),
    }
}

/// `lab=NAME variant=NAME` (or `variant=[...]`, one per value of the list), both or neither.
fn profiled_row(
    attributes: &[Attribute],
    lab: Option<String>,
    sweep: Option<&Sweep>,
) -> Result<Option<ProfiledRow>, DirectiveError> {
    let variants = match attributes
        .iter()
        .find(|a| a.name == "variant")
        .map(|a| &a.value)
    {
        None => None,
        Some(Value::Text(one)) => Some(vec![one.clone()]),
        Some(Value::List(list)) => {
            let values = sweep.map_or(0, |sweep| sweep.values.len());
            if list.len() != values {
                return Err(DirectiveError::VariantCount {
                    listed: list.len(),
                    values,
                });
            }
            Some(list.clone())
        }
    };
    match (lab, variants) {
        (None, None) => Ok(None),
        (Some(lab), Some(variants)) => Ok(Some(ProfiledRow { lab, variants })),
        (Some(lab), None) => Err(DirectiveError::LabWithoutVariant(lab)),
        (None, Some(_)) => Err(DirectiveError::VariantWithoutLab),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagram::directive::attributes;

    fn spec(kind: DiagramKind, text: &str) -> Result<DiagramSpec, String> {
        let attributes = attributes(text).map_err(|e| e.to_string())?;
        DiagramSpec::from_attributes(kind, &attributes).map_err(|e| e.to_string())
    }

    #[test]
    fn a_list_gives_one_panel_per_value_with_its_variant() {
        let spec = spec(
            DiagramKind::WarpAccess,
            r#"index="t * stride" stride=[1, 2] base=0 lab=strided variant=[s1, s2] op=store"#,
        )
        .expect("valid");
        assert_eq!(spec.op, MemoryOp::Store);
        assert_eq!(spec.pattern.unit, Unit::Element);
        assert_eq!(spec.pattern.elem_bytes, 4);
        let panels = spec.panels();
        assert_eq!(panels.len(), 2);
        assert_eq!(panels[1].label.as_deref(), Some("stride = 2"));
        assert_eq!(panels[1].values.get("stride"), Some(&2));
        assert_eq!(panels[1].values.get("base"), Some(&0));
        assert_eq!(panels[1].variant.as_deref(), Some("s2"));
    }

    #[test]
    fn one_variant_serves_a_single_diagram() {
        let spec = spec(
            DiagramKind::Banks,
            r#"addr="4 * (32 * t + c)" c=3 lab=profile_transpose variant=tiled"#,
        )
        .expect("valid");
        assert_eq!(spec.pattern.unit, Unit::Byte);
        let panels = spec.panels();
        assert_eq!(panels.len(), 1);
        assert_eq!(panels[0].variant.as_deref(), Some("tiled"));
        assert_eq!(panels[0].label, None);
    }

    #[test]
    fn bad_attributes_are_explained() {
        let cases = [
            ("elem=4", "needs the access pattern"),
            (r#"index="t" addr="t""#, "not both"),
            (r#"index="t * stride" stride=[0, 1]"#, "at least 1"),
            (r#"index="t * stride" stride=0"#, "at least 1"),
            (r#"index="t" t=3"#, "is the lane"),
            (r#"index="t" a=[1] b=[2]"#, "only one value may be a list"),
            (r#"index="t" colour=red"#, "is not one of"),
            (r#"index="t" op=read"#, "`load` or `store`"),
            (r#"index="t" lab=x"#, "needs `variant=NAME`"),
            (r#"index="t" variant=x"#, "needs `lab=NAME`"),
            (
                r#"index="t * s" s=[1, 2] lab=x variant=[a]"#,
                "one per value",
            ),
            (r#"index="t" elem=four"#, "must be an integer"),
            (r#"index=["t"]"#, "one value, not a list"),
        ];
        for (input, expected) in cases {
            let err = spec(DiagramKind::WarpAccess, input).expect_err(input);
            assert!(err.contains(expected), "{input}: {err}");
        }
    }
}
