//! What a variant needs of the hardware: a minimum GPU architecture (`requires = "sm_90"`), and
//! tensor maps (`[[tensor_maps]]`), the descriptors through which Hopper's bulk tensor copy
//! engine reads and writes tiles of a buffer.
//!
//! A tensor map is declared once in the lab file and passed by name in `args`, like a buffer:
//!
//! ```toml
//! [[tensor_maps]]
//! name = "in_tiles"
//! buffer = "in"
//! dims = ["n", "n"]      # innermost first: columns, then rows
//! box = [32, 32]         # the tile one copy moves
//! swizzle = "128B"       # how the tile is laid out in shared memory
//! ```
//!
//! The kernel receives the driver's 128-byte descriptor by value (`const __grid_constant__`).
//! Its sizes are checked against the tensor-map rules when the lab is planned, with the device's
//! limits known; here the structure is checked, at the file's line.

use super::{LabError, LabSpec, VariantSpec};
use crate::expr::Expr;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// The most dimensions a tensor map may have (the driver's limit).
pub const MAX_TENSOR_RANK: usize = 5;

/// A `[[tensor_maps]]` entry: a view of `buffer` as a dense row-major tensor of `dims`
/// elements, moved in tiles of `box_dims`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorMapSpec {
    pub name: String,
    pub buffer: String,
    /// Sizes in elements, innermost (contiguous) first.
    pub dims: Vec<Expr>,
    /// The tile one copy moves, innermost first.
    #[serde(rename = "box")]
    pub box_dims: Vec<Expr>,
    #[serde(default)]
    pub swizzle: Swizzle,
}

/// How a tile is laid out in shared memory: as in global memory (`none`), or with its 16-byte
/// chunks permuted within each 32-, 64- or 128-byte row so that column reads avoid bank
/// conflicts (the chunk index XORed with the row's index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Swizzle {
    #[default]
    #[serde(rename = "none")]
    None,
    #[serde(rename = "32B")]
    B32,
    #[serde(rename = "64B")]
    B64,
    #[serde(rename = "128B")]
    B128,
}

impl Swizzle {
    /// The span, in bytes, of the rows the chunks are permuted within; `None` for no swizzle.
    pub fn span_bytes(self) -> Option<u64> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }
}

/// A minimum NVIDIA architecture (`sm_90`: compute capability 9.0 or later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    /// `sm_90` → 9.0, `sm_100` → 10.0, `sm_86` → 8.6; `None` for anything else.
    pub fn parse_arch(arch: &str) -> Option<ComputeCapability> {
        let digits = arch.strip_prefix("sm_")?;
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(ComputeCapability {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// The GPU generation that introduced this architecture, where it has a common name.
    pub fn generation(self) -> Option<&'static str> {
        Some(match (self.major, self.minor) {
            (7, 0) => "Volta",
            (7, 5) => "Turing",
            (8, 0) | (8, 6) | (8, 7) => "Ampere",
            (8, 9) => "Ada",
            (9, 0) => "Hopper",
            (10, _) | (12, _) => "Blackwell",
            _ => return None,
        })
    }

    /// What the page says of a variant this GPU cannot run: "needs a Hopper-class GPU (compute
    /// capability 9.0)".
    pub fn needs_sentence(self) -> String {
        match self.generation() {
            Some(name) => format!("needs a {name}-class GPU (compute capability {self})"),
            None => format!("needs an NVIDIA GPU of compute capability {self} or later"),
        }
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl VariantSpec {
    /// The architecture the variant's `requires` names, if any (checked when the lab loads).
    pub fn required_capability(&self) -> Option<ComputeCapability> {
        self.requires
            .as_ref()
            .and_then(|arch| ComputeCapability::parse_arch(arch.get_ref()))
    }
}

impl LabSpec {
    /// The tensor map named `name`, if the lab declares one.
    pub fn tensor_map(&self, name: &str) -> Option<&TensorMapSpec> {
        self.tensor_maps.iter().find(|map| map.name == name)
    }

    /// Tensor maps have unique names that are not buffer names, view a buffer of the lab, have
    /// 1 to 5 dimensions with a box of as many, and their sizes evaluate.
    pub(super) fn validate_tensor_maps(&self) -> Result<(), LabError> {
        let mut seen = BTreeSet::new();
        for map in &self.tensor_maps {
            let at = format!("\"{}\"", map.name);
            if !seen.insert(map.name.as_str()) || self.buffer(&map.name).is_some() {
                return Err(self.error_at(
                    &at,
                    format!(
                        "tensor map `{}` is defined twice or has a buffer's name",
                        map.name
                    ),
                ));
            }
            if self.buffer(&map.buffer).is_none() {
                return Err(self.error_at(
                    &at,
                    format!(
                        "tensor map `{}` views `{}`, which is not a buffer of lab `{}`",
                        map.name, map.buffer, self.name
                    ),
                ));
            }
            let rank = map.dims.len();
            if rank == 0 || rank > MAX_TENSOR_RANK || map.box_dims.len() != rank {
                return Err(self.error_at(
                    &at,
                    format!(
                        "tensor map `{}` needs 1 to {MAX_TENSOR_RANK} `dims` and a `box` of as many \
                         (it has {rank} and {})",
                        map.name,
                        map.box_dims.len()
                    ),
                ));
            }
            let env = self.env(None);
            for expr in map.dims.iter().chain(&map.box_dims) {
                self.check_expr(expr, &format!("tensor map `{}`", map.name), &env)?;
            }
        }
        Ok(())
    }

    /// Each `requires` names an NVIDIA architecture (`sm_90`).
    pub(super) fn validate_requirements(&self) -> Result<(), LabError> {
        for variant in &self.variants {
            let Some(arch) = &variant.requires else {
                continue;
            };
            if ComputeCapability::parse_arch(arch.get_ref()).is_none() {
                return Err(self.error_at_offset(
                    arch.span().start,
                    format!(
                        "variant `{}`: `requires = \"{}\"` is not an architecture; write the \
                         oldest one the variant runs on, as `sm_90`",
                        variant.name,
                        arch.get_ref()
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const COPY: &str = include_str!("../../../labs/fixtures/copy.toml");

    fn parse(text: &str) -> Result<LabSpec, LabError> {
        LabSpec::parse(text, Path::new("labs/copy.toml"))
    }

    fn with_map(map: &str) -> String {
        COPY.replacen("[check]", &format!("{map}\n[check]"), 1)
    }

    #[test]
    fn a_tensor_map_is_an_argument_like_a_buffer() {
        let text = with_map(
            "[[tensor_maps]]\nname = \"tiles\"\nbuffer = \"src\"\ndims = [\"n\"]\nbox = [256]",
        )
        .replace(
            "args = [\"dst\", \"src\", \"n\"]",
            "args = [\"dst\", \"tiles\", \"n\"]",
        )
        .replace(
            "label = \"scalar copy\"",
            "label = \"scalar copy\"\nrequires = \"sm_90\"",
        );
        let lab = parse(&text).expect("a lab");
        let scalar = &lab.variants[1];
        assert_eq!(
            lab.parse_args(&scalar.args).expect("args")[1],
            super::super::ArgSpec::TensorMap("tiles".into())
        );
        assert_eq!(
            scalar.required_capability(),
            Some(ComputeCapability { major: 9, minor: 0 })
        );
        assert_eq!(lab.tensor_maps[0].swizzle, Swizzle::None);
    }

    #[test]
    fn a_bad_tensor_map_or_requirement_is_an_error_at_its_line() {
        let unknown_buffer = with_map(
            "[[tensor_maps]]\nname = \"tiles\"\nbuffer = \"nowhere\"\ndims = [\"n\"]\nbox = [256]",
        );
        let err = parse(&unknown_buffer).expect_err("no such buffer");
        assert!(
            err.message.contains("`nowhere`, which is not a buffer"),
            "{err}"
        );
        assert_eq!(err.line, 21, "{err}");
        let ragged = with_map(
            "[[tensor_maps]]\nname = \"tiles\"\nbuffer = \"src\"\ndims = [\"n\", 4]\nbox = [256]",
        );
        let err = parse(&ragged).expect_err("two dims, one box");
        assert!(err.message.contains("it has 2 and 1"), "{err}");
        let shadow = with_map(
            "[[tensor_maps]]\nname = \"src\"\nbuffer = \"src\"\ndims = [\"n\"]\nbox = [256]",
        );
        assert!(parse(&shadow).is_err());
        let bad_arch = COPY.replace(
            "label = \"scalar copy\"",
            "label = \"scalar copy\"\nrequires = \"hopper\"",
        );
        let err = parse(&bad_arch).expect_err("not an architecture");
        assert!(err.message.contains("write the oldest one"), "{err}");
        assert_eq!(err.line, 37, "{err}");
    }

    #[test]
    fn architectures_parse_into_compute_capabilities() {
        let cc = |major, minor| Some(ComputeCapability { major, minor });
        assert_eq!(ComputeCapability::parse_arch("sm_90"), cc(9, 0));
        assert_eq!(ComputeCapability::parse_arch("sm_86"), cc(8, 6));
        assert_eq!(ComputeCapability::parse_arch("sm_100"), cc(10, 0));
        assert_eq!(ComputeCapability::parse_arch("sm_9"), None);
        assert_eq!(ComputeCapability::parse_arch("gfx90a"), None);
        assert_eq!(ComputeCapability::parse_arch("sm_9x"), None);
        assert!(cc(9, 0) > cc(8, 9));
        assert!(cc(10, 0) > cc(9, 0));
    }

    #[test]
    fn the_page_names_the_generation_a_variant_needs() {
        let hopper = ComputeCapability { major: 9, minor: 0 };
        assert_eq!(
            hopper.needs_sentence(),
            "needs a Hopper-class GPU (compute capability 9.0)"
        );
        let unknown = ComputeCapability {
            major: 11,
            minor: 3,
        };
        assert_eq!(
            unknown.needs_sentence(),
            "needs an NVIDIA GPU of compute capability 11.3 or later"
        );
    }
}
