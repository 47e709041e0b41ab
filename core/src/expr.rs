//! Integer expressions for sizes in lab files: `n * n`, `n / 32`, `(n + 31) / 32`, `4`.
//!
//! Lab files need a handful of arithmetic forms over their parameters and nothing more, so this is
//! a small recursive-descent evaluator (the general-purpose crates for this are either
//! unmaintained or AGPL). Arithmetic is checked: overflow and division by zero are errors.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// Parameter values an expression may name.
pub type Params = BTreeMap<String, i64>;

/// How deeply parentheses and unary minus may nest: far beyond any size a lab needs, far below
/// what would overflow the stack of the recursive-descent parser.
pub const MAX_DEPTH: usize = 256;

/// How much of an expression an error message quotes.
const QUOTED_CHARS: usize = 120;

/// An expression as written in a lab file (a TOML integer or string).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Expr(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    #[error("`{expr}`: {message}")]
    Syntax { expr: String, message: String },
    #[error("`{expr}`: unknown parameter `{name}`")]
    UnknownParameter { expr: String, name: String },
    #[error("`{expr}`: arithmetic overflow or division by zero")]
    Arithmetic { expr: String },
}

impl Expr {
    pub fn new(text: impl Into<String>) -> Self {
        Expr(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Evaluates the expression with `params` bound.
    pub fn eval(&self, params: &Params) -> Result<i64, ExprError> {
        let mut parser = Parser {
            expr: &self.0,
            bytes: self.0.as_bytes(),
            pos: 0,
            depth: 0,
            params,
        };
        let value = parser.sum()?;
        parser.skip_space();
        if parser.pos != parser.bytes.len() {
            return Err(parser.syntax("unexpected text after the expression"));
        }
        Ok(value)
    }

    /// The parameter names the expression refers to, in order of appearance.
    pub fn identifiers(&self) -> Vec<&str> {
        let mut names = Vec::new();
        let mut rest = self.0.as_str();
        while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
            let tail = &rest[start..];
            let len = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            names.push(&tail[..len]);
            rest = &tail[len..];
        }
        names
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Expr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Text(String),
        }
        match Raw::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "expected an integer or an expression string such as \"n / 32\"",
            )
        })? {
            Raw::Int(value) => Ok(Expr(value.to_string())),
            Raw::Text(text) => Ok(Expr(text)),
        }
    }
}

struct Parser<'a> {
    expr: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// How many parentheses and unary minuses enclose the current position.
    depth: usize,
    params: &'a Params,
}

/// `expr` as an error message quotes it: at most [`QUOTED_CHARS`] characters.
fn quoted(expr: &str) -> String {
    match expr.char_indices().nth(QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &expr[..end]),
        None => expr.to_string(),
    }
}

impl Parser<'_> {
    fn syntax(&self, message: &str) -> ExprError {
        ExprError::Syntax {
            expr: quoted(self.expr),
            message: format!("{message} at column {}", self.pos + 1),
        }
    }

    fn arithmetic(&self) -> ExprError {
        ExprError::Arithmetic {
            expr: quoted(self.expr),
        }
    }

    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.pos)
            .is_some_and(u8::is_ascii_whitespace)
        {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes.get(self.pos).copied()
    }

    fn sum(&mut self) -> Result<i64, ExprError> {
        let mut value = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let rhs = self.product()?;
            value = if op == b'+' {
                value.checked_add(rhs)
            } else {
                value.checked_sub(rhs)
            }
            .ok_or_else(|| self.arithmetic())?;
        }
        Ok(value)
    }

    fn product(&mut self) -> Result<i64, ExprError> {
        let mut value = self.unary()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.pos += 1;
            let rhs = self.unary()?;
            value = match op {
                b'*' => value.checked_mul(rhs),
                b'/' => value.checked_div(rhs),
                _ => value.checked_rem(rhs),
            }
            .ok_or_else(|| self.arithmetic())?;
        }
        Ok(value)
    }

    /// Enters one more level of nesting, or fails past [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), ExprError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.syntax(&format!(
                "parentheses and minus signs nested more than {MAX_DEPTH} deep"
            )));
        }
        self.depth += 1;
        Ok(())
    }

    fn unary(&mut self) -> Result<i64, ExprError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
            self.enter()?;
            let value = self.unary()?;
            self.depth -= 1;
            return value.checked_neg().ok_or_else(|| self.arithmetic());
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<i64, ExprError> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                self.enter()?;
                let value = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err(self.syntax("expected `)`"));
                }
                self.pos += 1;
                self.depth -= 1;
                Ok(value)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while self
                    .bytes
                    .get(self.pos)
                    .is_some_and(|c| c.is_ascii_digit() || *c == b'_')
                {
                    self.pos += 1;
                }
                let digits: String = self.expr[start..self.pos]
                    .chars()
                    .filter(|&c| c != '_')
                    .collect();
                digits.parse().map_err(|_| self.arithmetic())
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.pos;
                while self
                    .bytes
                    .get(self.pos)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    self.pos += 1;
                }
                let name = &self.expr[start..self.pos];
                self.params
                    .get(name)
                    .copied()
                    .ok_or_else(|| ExprError::UnknownParameter {
                        expr: quoted(self.expr),
                        name: name.to_string(),
                    })
            }
            Some(_) => Err(self.syntax("expected a number, a parameter or `(`")),
            None => Err(self.syntax("unexpected end of expression")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params::from([("n".to_string(), 8192), ("tile".to_string(), 32)])
    }

    fn eval(text: &str) -> Result<i64, ExprError> {
        Expr::new(text).eval(&params())
    }

    #[test]
    fn evaluates_precedence_parentheses_and_unary_minus() {
        assert_eq!(eval("n * n * 4"), Ok(268_435_456));
        assert_eq!(eval("2 + 3 * 4"), Ok(14));
        assert_eq!(eval("(n + tile - 1) / tile"), Ok(256));
        assert_eq!(eval("-(3 - 5) % 3"), Ok(2));
        assert_eq!(eval("1_000 "), Ok(1000));
    }

    #[test]
    fn reports_unknown_parameters_by_name() {
        assert_eq!(
            eval("m / 32"),
            Err(ExprError::UnknownParameter {
                expr: "m / 32".into(),
                name: "m".into()
            })
        );
    }

    #[test]
    fn rejects_trailing_text_and_dangling_operators() {
        assert!(matches!(eval("n n"), Err(ExprError::Syntax { .. })));
        assert!(matches!(eval("n *"), Err(ExprError::Syntax { .. })));
        assert!(matches!(eval("(n"), Err(ExprError::Syntax { .. })));
        assert!(matches!(eval(""), Err(ExprError::Syntax { .. })));
    }

    #[test]
    fn overflow_and_division_by_zero_are_errors_not_panics() {
        assert!(matches!(eval("n / 0"), Err(ExprError::Arithmetic { .. })));
        assert!(matches!(
            eval("9223372036854775807 + 1"),
            Err(ExprError::Arithmetic { .. })
        ));
        assert!(matches!(
            eval("99999999999999999999"),
            Err(ExprError::Arithmetic { .. })
        ));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = |depth: usize, open: &str, close: &str| {
            format!("{}n{}", open.repeat(depth), close.repeat(depth))
        };
        assert_eq!(eval(&deep(MAX_DEPTH, "(", ")")), Ok(8192));
        assert_eq!(eval(&deep(MAX_DEPTH, "-", "")), Ok(8192));
        assert_eq!(eval(&deep(MAX_DEPTH / 2, "-(", ")")), Ok(8192));
        for text in [
            deep(MAX_DEPTH + 1, "(", ")"),
            deep(50_000, "(", ")"),
            deep(50_000, "-", ""),
            deep(50_000, "(-", ")"),
        ] {
            match eval(&text) {
                Err(ExprError::Syntax { expr, message }) => {
                    assert!(message.contains("nested more than 256 deep"), "{message}");
                    assert!(
                        expr.chars().count() <= QUOTED_CHARS + 1,
                        "the message quotes a part"
                    );
                }
                other => panic!("expected a depth error, got {other:?}"),
            }
        }
    }

    #[test]
    fn lists_identifiers() {
        assert_eq!(
            Expr::new("(n + tile_2) / 32").identifiers(),
            vec!["n", "tile_2"]
        );
    }
}
