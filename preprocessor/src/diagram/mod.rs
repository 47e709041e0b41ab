//! Warp-access and bank diagrams: what memory sees of one warp instruction, drawn at build time
//! from an access pattern written in the chapter, and set beside the profiler's counters where
//! the lab that runs the same kernel was profiled.
//!
//! ```text
//! {{#warp-access index="t * stride" stride=[1, 2, 4, 8, 32]}}
//! {{#banks index="32 * t + c" c=0 lab=profile_transpose variant=tiled}}
//! ```
//!
//! In data-flow order: [`directive`] reads the attributes, [`spec`] turns them into a
//! [`DiagramSpec`], [`model`] evaluates each panel with `kernelbook_core::access`, [`counters`]
//! finds the Nsight Compute counters of the lab row, [`compare`] sets them beside the
//! prediction, [`scene`] lays out the SVG and [`view`] assembles the figure for
//! `templates/diagram.hbs`. The model and the drawing know nothing of labs; only `counters`
//! reads results. Walking the book's chapters for their diagrams is `crate::book`'s: this module
//! draws one diagram at a time and knows nothing of chapters.

pub mod compare;
pub mod counters;
pub mod directive;
pub mod error;
pub mod model;
pub mod scene;
pub mod spec;
pub mod view;

pub use error::DirectiveError;
pub use spec::{DiagramKind, DiagramSpec, MemoryOp, PanelSpec, ProfiledRow, Sweep};

use crate::labs::Labs;
use crate::templates::Templates;
use kernelbook_core::SourceLocation;
use kernelbook_core::results::LabResults;
use kernelbook_runner::LabOutcome;
use std::collections::BTreeMap;

/// What the diagrams are rendered from besides their patterns.
#[derive(Debug, Clone, Copy)]
pub struct Results<'a> {
    /// Each lab's results as the book shows them.
    pub outcomes: &'a BTreeMap<&'a str, LabOutcome>,
    /// The recordings of the labs, for counters this machine's run did not give.
    pub recorded: &'a BTreeMap<String, LabResults>,
}

/// One rendered diagram and what `--strict` fails on in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub html: String,
    /// Panels tied to a lab that have no counters beside them.
    pub failures: Vec<String>,
}

/// One diagram's view, before it is rendered, and what `--strict` fails on in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawn {
    pub view: view::DiagramView,
    pub failures: Vec<String>,
}

/// One diagram's HTML, its figure's id `id`.
pub fn render_one(
    id: &str,
    (spec, location): (&DiagramSpec, &SourceLocation),
    labs: &Labs,
    results: Results<'_>,
    templates: &Templates,
) -> anyhow::Result<Rendered> {
    let drawn = draw(id, (spec, location), labs, results)?;
    let html = templates
        .render_diagram(&drawn.view)
        .map_err(|err| anyhow::anyhow!("{location}: rendering the diagram: {err}"))?;
    Ok(Rendered {
        html,
        failures: drawn.failures,
    })
}

/// One diagram's view: its panels evaluated, each beside its lab row's counters if it has one.
pub fn draw(
    id: &str,
    (spec, location): (&DiagramSpec, &SourceLocation),
    labs: &Labs,
    results: Results<'_>,
) -> anyhow::Result<Drawn> {
    let panels = model::evaluate(spec).map_err(|why| anyhow::anyhow!("{location}: {why}"))?;
    let counters: Vec<view::PanelCounters<'_>> = panels
        .iter()
        .map(|panel| {
            let row = spec.profiled.as_ref()?;
            let variant = panel.spec.variant.as_deref()?;
            let Some(lab) = labs.ready.get(&row.lab) else {
                return Some(Err(format!("there is no lab `{}`", row.lab)));
            };
            Some(counters::counter_source(
                lab,
                variant,
                results.outcomes.get(row.lab.as_str()),
                results.recorded.get(&row.lab),
            ))
        })
        .collect();
    let failures = counters
        .iter()
        .flatten()
        .filter_map(|c| c.as_ref().err())
        .map(|why| format!("{location}: the diagram has no counters beside it: {why}"))
        .collect();
    Ok(Drawn {
        view: view::diagram_view(id, spec, &panels, &counters),
        failures,
    })
}
