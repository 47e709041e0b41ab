//! L2 controls a lab or one of its variants asks the driver for while it runs (`[l2]` in the
//! lab, `l2 = { ... }` in a variant): the L2's fill size hint, a set-aside for persisting lines
//! and an access-policy window that marks one buffer's lines persisting. A variant's fields
//! replace the lab's one by one. Limits are hints the driver may round or clamp; the results
//! keep what it reported back.

use super::{LabError, LabSpec, VariantSpec};
use crate::expr::Expr;
use serde::Deserialize;
use toml::Spanned;

/// The largest fetch granularity the driver takes (`CU_LIMIT_MAX_L2_FETCH_GRANULARITY`).
pub const MAX_FETCH_GRANULARITY: i64 = 128;

/// `[l2]`, or a variant's `l2`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2Spec {
    /// The most bytes the L2 fetches from DRAM on a miss (0 to 128; the driver's default on
    /// recent GPUs is 64): `cudaLimitMaxL2FetchGranularity`.
    #[serde(default)]
    pub fetch_granularity: Option<Spanned<i64>>,
    /// Bytes of L2 set aside for persisting lines (`cudaLimitPersistingL2CacheSize`), an
    /// expression over the lab's parameters and the device's (`"l2_bytes / 2"`).
    #[serde(default)]
    pub persisting_bytes: Option<Expr>,
    /// Lines of one buffer marked persisting while the variant runs.
    #[serde(default)]
    pub window: Option<WindowSpec>,
}

/// An access-policy window (`accessPolicyWindow` of the stream): the first `bytes` of `buffer`,
/// of which a share `hit_ratio` is given the persisting property and the rest streams.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    pub buffer: Spanned<String>,
    /// Bytes from the buffer's start; the whole buffer where absent.
    #[serde(default)]
    pub bytes: Option<Expr>,
    /// The share of the window's accesses that persist, 0 to 1.
    pub hit_ratio: Spanned<f64>,
}

impl L2Spec {
    /// Whether it asks for anything.
    pub fn is_empty(&self) -> bool {
        self.fetch_granularity.is_none() && self.persisting_bytes.is_none() && self.window.is_none()
    }

    /// `self` with `over`'s fields where it has them.
    fn overlaid(&self, over: &L2Spec) -> L2Spec {
        L2Spec {
            fetch_granularity: over
                .fetch_granularity
                .clone()
                .or_else(|| self.fetch_granularity.clone()),
            persisting_bytes: over
                .persisting_bytes
                .clone()
                .or_else(|| self.persisting_bytes.clone()),
            window: over.window.clone().or_else(|| self.window.clone()),
        }
    }
}

impl LabSpec {
    /// The L2 controls `variant` runs under: the lab's `[l2]`, with the variant's own fields in
    /// their place; `None` where neither asks for any.
    pub fn l2_for(&self, variant: &VariantSpec) -> Option<L2Spec> {
        let lab = self.l2.clone().unwrap_or_default();
        let merged = match &variant.l2 {
            Some(own) => lab.overlaid(own),
            None => lab,
        };
        (!merged.is_empty()).then_some(merged)
    }

    /// Every variant's L2 controls are in range, name a buffer of the lab and evaluate.
    pub(super) fn validate_l2(&self) -> Result<(), LabError> {
        for variant in &self.variants {
            if let Some(l2) = self.l2_for(variant) {
                self.validate_l2_of(variant, &l2)?;
            }
        }
        Ok(())
    }

    fn validate_l2_of(&self, variant: &VariantSpec, l2: &L2Spec) -> Result<(), LabError> {
        let who = format!("variant `{}`", variant.name);
        if let Some(bytes) = &l2.fetch_granularity
            && !(0..=MAX_FETCH_GRANULARITY).contains(bytes.get_ref())
        {
            return Err(self.error_at_offset(
                bytes.span().start,
                format!(
                    "{who}: `fetch_granularity = {}` is out of range: the driver takes 0 to \
                     {MAX_FETCH_GRANULARITY} bytes",
                    bytes.get_ref()
                ),
            ));
        }
        let env = self.env(Some(variant));
        if let Some(bytes) = &l2.persisting_bytes {
            self.check_expr(bytes, &format!("{who}: l2.persisting_bytes"), &env)?;
        }
        let Some(window) = &l2.window else {
            return Ok(());
        };
        let at = window.buffer.span().start;
        if self.buffer(window.buffer.get_ref()).is_none() {
            return Err(self.error_at_offset(
                at,
                format!(
                    "{who}: the L2 window's buffer `{}` is not a buffer of lab `{}`",
                    window.buffer.get_ref(),
                    self.name
                ),
            ));
        }
        let ratio = *window.hit_ratio.get_ref();
        if !(0.0..=1.0).contains(&ratio) {
            return Err(self.error_at_offset(
                window.hit_ratio.span().start,
                format!("{who}: the L2 window's `hit_ratio = {ratio}` is not between 0 and 1"),
            ));
        }
        if l2.persisting_bytes.is_none() {
            return Err(self.error_at_offset(
                at,
                format!(
                    "{who}: an L2 window's persisting lines need a set-aside: give \
                     `persisting_bytes` beside the window"
                ),
            ));
        }
        if let Some(bytes) = &window.bytes {
            self.check_expr(bytes, &format!("{who}: l2.window.bytes"), &env)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::{LabError, LabSpec};
    use std::path::Path;

    /// A lab of two buffers and three variants; `{lab}` is put after the lab's keys, `{v}` into
    /// the last variant.
    fn lab(lab: &str, variant: &str) -> String {
        format!(
            r#"name = "l2"
title = "L2"
bytes = "n * 8"
{lab}
[params]
n = 1024
[[buffers]]
name = "hot"
len = "n"
fill = "random"
[[buffers]]
name = "out"
len = "n"
fill = "poison"
[check]
reference = "copy"
input = "hot"
output = "out"
[[variants]]
name = "plain"
kernel = "k"
grid = [4]
block = [256]
args = ["out", "hot"]
[[variants]]
name = "own"
kernel = "k"
grid = [4]
block = [256]
args = ["out", "hot"]
{variant}
"#
        )
    }

    fn parse(text: &str) -> Result<LabSpec, LabError> {
        LabSpec::parse(text, Path::new("labs/l2.toml"))
    }

    #[test]
    fn a_variants_l2_fields_replace_the_labs_one_by_one() {
        let text = lab(
            "[l2]\nfetch_granularity = 32\npersisting_bytes = \"n * 2\"",
            "l2 = { persisting_bytes = \"n * 4\", window = { buffer = \"hot\", hit_ratio = 0.5 } }",
        );
        let lab = parse(&text).expect("valid");
        let plain = lab
            .l2_for(lab.variant("plain").expect("plain"))
            .expect("lab's");
        assert_eq!(plain.fetch_granularity.map(|b| *b.get_ref()), Some(32));
        assert_eq!(
            plain.persisting_bytes.map(|e| e.to_string()).as_deref(),
            Some("n * 2")
        );
        assert!(plain.window.is_none());
        let own = lab
            .l2_for(lab.variant("own").expect("own"))
            .expect("merged");
        assert_eq!(
            own.fetch_granularity.map(|b| *b.get_ref()),
            Some(32),
            "the lab's kept"
        );
        assert_eq!(
            own.persisting_bytes.map(|e| e.to_string()).as_deref(),
            Some("n * 4")
        );
        let window = own.window.expect("window");
        assert_eq!(window.buffer.get_ref(), "hot");
        assert_eq!(*window.hit_ratio.get_ref(), 0.5);
    }

    #[test]
    fn a_lab_without_l2_controls_gives_its_variants_none() {
        let lab = parse(&lab("", "")).expect("valid");
        assert!(lab.variants.iter().all(|v| lab.l2_for(v).is_none()));
    }

    #[test]
    fn bad_l2_controls_are_errors_at_their_line() {
        let cases = [
            ("l2 = { fetch_granularity = 256 }", "0 to 128 bytes"),
            ("l2 = { fetch_granularity = -1 }", "out of range"),
            (
                "l2 = { persisting_bytes = \"n\", window = { buffer = \"cold\", hit_ratio = 1.0 } }",
                "`cold` is not a buffer",
            ),
            (
                "l2 = { persisting_bytes = \"n\", window = { buffer = \"hot\", hit_ratio = 1.5 } }",
                "not between 0 and 1",
            ),
            (
                "l2 = { window = { buffer = \"hot\", hit_ratio = 1.0 } }",
                "give `persisting_bytes`",
            ),
            (
                "l2 = { persisting_bytes = \"m * 2\" }",
                "l2.persisting_bytes",
            ),
            ("l2 = { fetch = 32 }", "unknown field `fetch`"),
        ];
        for (variant, message) in cases {
            let text = lab("", variant);
            let err = parse(&text).expect_err(variant);
            assert!(err.message.contains(message), "{variant}: {err}");
            assert_eq!(err.file, Path::new("labs/l2.toml"));
            let line = text.lines().position(|l| l == variant).expect("written") + 1;
            assert_eq!(err.line, line, "{variant}: {err}");
        }
    }
}
