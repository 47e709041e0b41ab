//! `reads` and `writes`: the buffers a variant reads and writes, from which the bytes it must
//! move follow (as nvbench's `add_global_memory_reads`), so that a lab need not work out a
//! `bytes` expression by hand.

use crate::expr::Expr;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

/// The buffers read or written: whole (`reads = ["x", "y"]`) or a number of elements of each
/// (`reads = { x = "n" }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Traffic {
    Whole(Vec<String>),
    Elements(BTreeMap<String, Expr>),
}

impl Traffic {
    /// Each buffer named, with the number of elements moved (`None`: the whole buffer).
    pub fn entries(&self) -> Vec<(&str, Option<&Expr>)> {
        match self {
            Traffic::Whole(names) => names.iter().map(|name| (name.as_str(), None)).collect(),
            Traffic::Elements(counts) => counts
                .iter()
                .map(|(name, count)| (name.as_str(), Some(count)))
                .collect(),
        }
    }

    /// The buffers named, in order.
    pub fn buffers(&self) -> Vec<&str> {
        self.entries().into_iter().map(|(name, _)| name).collect()
    }
}

impl<'de> Deserialize<'de> for Traffic {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Whole(Vec<String>),
            Elements(BTreeMap<String, Expr>),
        }
        match Raw::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "expected a list of buffer names (`[\"x\", \"y\"]`) or a table of buffer names \
                 and element counts (`{ x = \"n\" }`)",
            )
        })? {
            Raw::Whole(names) => Ok(Traffic::Whole(names)),
            Raw::Elements(counts) => Ok(Traffic::Elements(counts)),
        }
    }
}

/// Where the bytes a variant must move come from ([`super::LabSpec::bytes_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BytesMoved<'a> {
    /// A `bytes` expression.
    Expr(&'a Expr),
    /// The sum, over the buffers read and written, of the elements moved times the element
    /// size.
    Traffic {
        reads: Option<&'a Traffic>,
        writes: Option<&'a Traffic>,
    },
}

impl BytesMoved<'_> {
    /// Every buffer read or written, reads first, with its element count (`None`: whole).
    pub fn entries(&self) -> Vec<(&str, Option<&Expr>)> {
        match self {
            BytesMoved::Expr(_) => Vec::new(),
            BytesMoved::Traffic { reads, writes } => reads
                .iter()
                .chain(writes)
                .flat_map(|traffic| traffic.entries())
                .collect(),
        }
    }
}
