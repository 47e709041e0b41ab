//! An access pattern as a chapter writes it: a lab file's integer expression over the lane
//! variable `t` (and named values such as `stride`), giving each lane's element index or byte
//! address.

use super::{AccessError, WARP_LANES, WarpAccess};
use crate::expr::{Expr, ExprError, Params};

/// The variable an expression names the lane by: 0 to 31.
pub const LANE_VARIABLE: &str = "t";

/// What the expression computes for a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// An element index: the byte address is the index times the element size.
    Element,
    /// A byte address.
    Byte,
}

/// One warp instruction's addressing, written as an expression of the lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub expr: Expr,
    pub unit: Unit,
    /// The bytes each lane's access covers (4 for a `float`).
    pub elem_bytes: u64,
    /// How many lanes issue the instruction; anything but a warp is an error when evaluated.
    pub lanes: usize,
}

/// Why a pattern gives no warp access.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("`{LANE_VARIABLE}` is the lane (0 to 31); it cannot be given a value")]
    LaneBound,
    #[error("lane {lane}: {error}")]
    Expr { lane: usize, error: ExprError },
    #[error("lane {lane}: `{expr}` is {value}, and an address cannot be negative")]
    Negative {
        lane: usize,
        expr: String,
        value: i64,
    },
    #[error("lane {lane}: the byte address of element {index} overflows")]
    Overflow { lane: usize, index: i64 },
    #[error("{0}")]
    Access(#[from] AccessError),
}

impl Pattern {
    /// A pattern issued by a whole warp.
    pub fn new(expr: Expr, unit: Unit, elem_bytes: u64) -> Self {
        Pattern {
            expr,
            unit,
            elem_bytes,
            lanes: WARP_LANES,
        }
    }

    /// The same pattern issued by `lanes` lanes (which [`access`](Self::access) refuses unless
    /// it is a warp).
    pub fn with_lanes(mut self, lanes: usize) -> Self {
        self.lanes = lanes;
        self
    }

    /// Each lane's byte address, with `values` bound and `t` the lane.
    pub fn addresses(&self, values: &Params) -> Result<Vec<u64>, PatternError> {
        if values.contains_key(LANE_VARIABLE) {
            return Err(PatternError::LaneBound);
        }
        let mut params = values.clone();
        (0..self.lanes)
            .map(|lane| {
                params.insert(LANE_VARIABLE.to_string(), lane as i64);
                let value = self
                    .expr
                    .eval(&params)
                    .map_err(|error| PatternError::Expr { lane, error })?;
                let value = u64::try_from(value).map_err(|_| PatternError::Negative {
                    lane,
                    expr: self.expr.to_string(),
                    value,
                })?;
                match self.unit {
                    Unit::Byte => Ok(value),
                    Unit::Element => {
                        value
                            .checked_mul(self.elem_bytes)
                            .ok_or(PatternError::Overflow {
                                lane,
                                index: value as i64,
                            })
                    }
                }
            })
            .collect()
    }

    /// The warp access the pattern describes with `values` bound.
    pub fn access(&self, values: &Params) -> Result<WarpAccess, PatternError> {
        if self.lanes != WARP_LANES {
            return Err(AccessError::LaneCount(self.lanes).into());
        }
        Ok(WarpAccess::new(self.addresses(values)?, self.elem_bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str, unit: Unit) -> Pattern {
        Pattern::new(Expr::new(text), unit, 4)
    }

    #[test]
    fn indices_become_byte_addresses() {
        let addresses = pattern("t * 3 + c", Unit::Element)
            .addresses(&Params::from([("c".into(), 1)]))
            .expect("evaluates");
        assert_eq!(&addresses[..3], &[4, 16, 28]);
        let bytes = pattern("8 * t", Unit::Byte)
            .addresses(&Params::new())
            .expect("evaluates");
        assert_eq!(bytes[31], 248);
    }

    #[test]
    fn what_cannot_be_evaluated_names_the_lane() {
        let unknown = pattern("t * stride", Unit::Element).access(&Params::new());
        assert!(
            matches!(&unknown, Err(PatternError::Expr { lane: 0, error: ExprError::UnknownParameter { name, .. } }) if name == "stride"),
            "{unknown:?}"
        );
        let negative = pattern("4 - t", Unit::Element).access(&Params::new());
        assert_eq!(
            negative.expect_err("negative").to_string(),
            "lane 5: `4 - t` is -1, and an address cannot be negative"
        );
        let division = pattern("32 / (3 - t)", Unit::Element).access(&Params::new());
        assert!(matches!(division, Err(PatternError::Expr { lane: 3, .. })));
        let huge = pattern("t * 4611686018427387904", Unit::Element).access(&Params::new());
        assert!(matches!(huge, Err(PatternError::Overflow { lane: 1, .. })));
    }

    #[test]
    fn the_lane_is_not_a_value_and_a_warp_is_32_lanes() {
        let bound = pattern("t", Unit::Element).access(&Params::from([("t".into(), 1)]));
        assert_eq!(bound, Err(PatternError::LaneBound));
        let wavefront = pattern("t", Unit::Element)
            .with_lanes(64)
            .access(&Params::new());
        assert_eq!(
            wavefront,
            Err(PatternError::Access(AccessError::LaneCount(64)))
        );
    }
}
