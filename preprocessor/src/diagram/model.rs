//! A directive's panels evaluated with the model of `kernelbook_core::access`, and the numbers
//! each one predicts.

use super::spec::{DiagramKind, DiagramSpec, PanelSpec};
use kernelbook_core::access::{BankFootprint, GlobalFootprint, WarpAccess};

/// What the model says about one panel's instruction.
#[derive(Debug, Clone, PartialEq)]
pub enum Footprint {
    Global(GlobalFootprint),
    Banks(BankFootprint),
}

/// One panel, evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub spec: PanelSpec,
    pub access: WarpAccess,
    pub footprint: Footprint,
}

impl Panel {
    /// The figure the profiler reports per request, as the model predicts it: sectors per
    /// request for global memory, bank conflicts per request for shared memory.
    pub fn predicted_per_request(&self) -> usize {
        match &self.footprint {
            Footprint::Global(global) => global.sectors_per_request(),
            Footprint::Banks(banks) => banks.conflicts(),
        }
    }
}

/// Every panel of `spec`, or the first one that the model cannot evaluate, said in words (the
/// caller adds the directive's file and line).
pub fn evaluate(spec: &DiagramSpec) -> Result<Vec<Panel>, String> {
    spec.panels()
        .into_iter()
        .map(|panel| {
            let access = spec.pattern.access(&panel.values).map_err(|err| {
                let with = panel
                    .label
                    .as_ref()
                    .map_or_else(String::new, |label| format!(" with {label}"));
                format!("the pattern `{}`{with}: {err}", spec.pattern.expr)
            })?;
            let footprint = match spec.kind {
                DiagramKind::WarpAccess => Footprint::Global(access.global()),
                DiagramKind::Banks => {
                    Footprint::Banks(access.banks().map_err(|err| err.to_string())?)
                }
            };
            Ok(Panel {
                spec: panel,
                access,
                footprint,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagram::directive::attributes;

    fn panels(kind: DiagramKind, text: &str) -> Result<Vec<Panel>, String> {
        let attributes = attributes(text).map_err(|e| e.to_string())?;
        evaluate(&DiagramSpec::from_attributes(kind, &attributes).map_err(|e| e.to_string())?)
    }

    #[test]
    fn every_value_of_the_list_is_a_panel() {
        let panels = panels(
            DiagramKind::WarpAccess,
            r#"index="t * stride" stride=[1, 2, 4, 8, 32]"#,
        )
        .expect("evaluates");
        let sectors: Vec<usize> = panels.iter().map(Panel::predicted_per_request).collect();
        assert_eq!(sectors, vec![4, 8, 16, 32, 32]);
    }

    #[test]
    fn what_the_model_cannot_evaluate_is_said_with_the_value() {
        let err = panels(
            DiagramKind::WarpAccess,
            r#"index="t * stride" stride=[1, 2] elem=3"#,
        )
        .expect_err("odd size");
        assert!(
            err.contains("with stride = 1") && err.contains("1, 2, 4, 8 or 16"),
            "{err}"
        );
        let err = panels(DiagramKind::Banks, r#"index="t" elem=8"#).expect_err("8-byte banks");
        assert!(err.contains("4-byte accesses only"), "{err}");
        let err = panels(DiagramKind::Banks, r#"index="t" lanes=64"#).expect_err("wavefront");
        assert!(
            err.contains("64 lanes") && err.contains("32 lanes"),
            "{err}"
        );
        let err = panels(DiagramKind::Banks, r#"index="t * k""#).expect_err("unknown");
        assert!(err.contains("unknown parameter `k`"), "{err}");
    }
}
