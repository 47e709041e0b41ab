//! `{{#claim}}`: a sentence's claim about the rows of one lab, checked against the results it
//! stands beside. Nothing is shown where the results bear it out; a note with the figures where
//! they do not, so a reader sees that their GPU disagrees with the sentence.
//!
//! - order: `{{#claim LAB.A < LAB.B [< LAB.C …] [FIELD]}}`, each row below the next;
//! - bound: `{{#claim LAB.A OP [K *] LAB.B [FIELD]}}`, OP one of `<`, `<=`, `>`, `>=`, K a
//!   positive decimal: "at least twice" is `LAB.A >= 2 * LAB.B`;
//! - closeness: `{{#claim LAB.A within P % of LAB.B [FIELD]}}`, A differing from B by at most P
//!   per cent of B.
//!
//! FIELD is any field of `{{#value}}` (default `gbs`).

use super::{Field, ParseError, Query, escape, format_field, quantity, row};
use kernelbook_core::results::LabResults;

/// How a magnitude claim relates its two rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relation {
    /// `A OP factor × B`.
    Bound { op: Op, factor: Factor },
    /// `|A − B| ≤ percent / 100 × |B|`.
    Within { percent: Factor },
}

/// A comparison of a bound claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Less,
    AtMost,
    Greater,
    AtLeast,
}

impl Op {
    fn parse(word: &str) -> Option<Op> {
        match word {
            "<" => Some(Op::Less),
            "<=" | "≤" => Some(Op::AtMost),
            ">" => Some(Op::Greater),
            ">=" | "≥" => Some(Op::AtLeast),
            _ => None,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Less => "<",
            Op::AtMost => "≤",
            Op::Greater => ">",
            Op::AtLeast => "≥",
        }
    }

    fn holds(self, left: f64, right: f64) -> bool {
        match self {
            Op::Less => left < right,
            Op::AtMost => left <= right,
            Op::Greater => left > right,
            Op::AtLeast => left >= right,
        }
    }
}

/// A positive decimal as the author typed it ("2", "1.5"): kept as text so that a query stays
/// comparable and prints as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Factor(String);

impl Factor {
    pub const ONE: &str = "1";

    pub fn parse(word: &str) -> Option<Factor> {
        let plain = word.chars().all(|c| c.is_ascii_digit() || c == '.');
        let value: f64 = word.parse().ok().filter(|_| plain)?;
        (value.is_finite() && value > 0.0).then(|| Factor(word.to_string()))
    }

    pub fn value(&self) -> f64 {
        self.0.parse().unwrap_or(f64::NAN)
    }

    pub fn text(&self) -> &str {
        &self.0
    }
}

const USAGE: ParseError = ParseError::Usage(
    "`{{#claim}}` takes rows of one lab: `LAB.A < LAB.B [< …]`, `LAB.A OP [K *] LAB.B` \
     (OP `<`, `<=`, `>`, `>=`; K a positive number) or `LAB.A within P % of LAB.B`, then an \
     optional FIELD",
);

/// The words of a `{{#claim …}}`.
pub fn parse(words: &[&str]) -> Result<Query, ParseError> {
    let (field, words) = match words.split_last() {
        Some((last, rest)) if !last.contains('.') && !is_operator(last) => {
            (Field::parse(last)?, rest)
        }
        _ => (Field::Gbs, words),
    };
    match words {
        [a, "within", percent, "%", "of", b] => {
            let percent = Factor::parse(percent).ok_or(USAGE)?;
            compare(a, Relation::Within { percent }, b, field)
        }
        [a, op, factor, "*", b] => {
            let op = Op::parse(op).ok_or(USAGE)?;
            let factor = Factor::parse(factor).ok_or(USAGE)?;
            compare(a, Relation::Bound { op, factor }, b, field)
        }
        [a, op, b] if *op != "<" => {
            let op = Op::parse(op).ok_or(USAGE)?;
            let factor = Factor(Factor::ONE.into());
            compare(a, Relation::Bound { op, factor }, b, field)
        }
        _ => order(words, field),
    }
}

fn is_operator(word: &str) -> bool {
    Op::parse(word).is_some() || word == "*" || word == "%"
}

/// `LAB.A < LAB.B [< LAB.C ...]`: rows of one lab in increasing order.
fn order(words: &[&str], field: Field) -> Result<Query, ParseError> {
    if words.len() < 3 || words.len().is_multiple_of(2) {
        return Err(USAGE);
    }
    let mut lab = None;
    let mut rows = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if i % 2 == 1 {
            if *word != "<" {
                return Err(USAGE);
            }
            continue;
        }
        let (this, variant) = row(word)?;
        if lab.get_or_insert_with(|| this.clone()) != &this {
            return Err(USAGE);
        }
        rows.push(variant);
    }
    let lab = lab.ok_or(USAGE)?;
    Ok(Query::Claim { lab, rows, field })
}

fn compare(a: &str, relation: Relation, b: &str, field: Field) -> Result<Query, ParseError> {
    let (lab, left) = row(a)?;
    let (other, right) = row(b)?;
    if lab != other {
        return Err(ParseError::TwoLabs {
            what: "claim compares",
            lab,
            other,
        });
    }
    Ok(Query::Compare {
        lab,
        left,
        relation,
        right,
        field,
    })
}

/// Nothing where the rows are in the claimed order; otherwise a note with the figures.
pub fn check_order(
    results: &LabResults,
    rows: &[String],
    field: Field,
) -> Result<String, super::Gap> {
    let values = rows
        .iter()
        .map(|row| quantity(results, row, field))
        .collect::<Result<Vec<f64>, super::Gap>>()?;
    if values.windows(2).all(|pair| pair[0] < pair[1]) {
        return Ok(String::new());
    }
    let figures: Vec<String> = rows
        .iter()
        .zip(&values)
        .map(|(row, value)| format!("{row} {}", format_field(field, *value)))
        .collect();
    Ok(note(results, &figures.join(", ")))
}

/// Nothing where `left` stands in `relation` to `right`; otherwise a note with both figures and
/// how they do relate: "naive 6.16, tiled_32 8.78: 0.70×, not ≥ 2×".
pub fn check_compare(
    results: &LabResults,
    (left, right): (&str, &str),
    relation: &Relation,
    field: Field,
) -> Result<String, super::Gap> {
    let a = quantity(results, left, field)?;
    let b = quantity(results, right, field)?;
    let (holds, found) = match relation {
        Relation::Bound { op, factor } => (
            op.holds(a, factor.value() * b),
            format!("{:.2}×, not {} {}×", a / b, op.symbol(), factor.text()),
        ),
        Relation::Within { percent } => {
            let apart = (a - b).abs() / b.abs() * 100.0;
            (
                apart <= percent.value(),
                format!("{apart:.1} % apart, not within {} %", percent.text()),
            )
        }
    };
    if holds {
        return Ok(String::new());
    }
    let figures = format!(
        "{left} {}, {right} {}: {found}",
        format_field(field, a),
        format_field(field, b)
    );
    Ok(note(results, &escape(&figures)))
}

/// The note a claim that does not hold puts in the sentence, led by a space: a claim sits
/// right after the word it qualifies (`one{{#claim …}}`).
fn note(results: &LabResults, figures: &str) -> String {
    format!(
        " (not on the {}: {figures})",
        escape(&results.provenance.device.name)
    )
}
