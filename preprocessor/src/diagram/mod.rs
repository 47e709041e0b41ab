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
//! reads results.

pub mod compare;
pub mod counters;
pub mod directive;
pub mod model;
pub mod scene;
pub mod spec;
pub mod view;

pub use spec::{DiagramKind, DiagramSpec, MemoryOp, PanelSpec, ProfiledRow, Sweep};

use crate::preprocessor::Labs;
use crate::render::Templates;
use crate::scan::{BookIndex, DiagramDirective};
use kernelbook_core::results::LabResults;
use kernelbook_runner::LabOutcome;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every problem with the book's diagrams, each at its directive's file and line: a pattern the
/// model cannot evaluate, a lab or variant that does not exist, a lab that is not profiled.
pub fn check_diagrams(index: &BookIndex, labs: &Labs) -> Vec<String> {
    index
        .chapters
        .values()
        .flat_map(|scan| &scan.diagrams)
        .flat_map(|diagram| {
            let mut problems = Vec::new();
            if let Err(why) = model::evaluate(&diagram.spec) {
                problems.push(format!("{}: {why}", diagram.location));
            }
            if let Some(row) = &diagram.spec.profiled {
                problems.extend(
                    check_profiled_row(row, labs).map(|why| format!("{}: {why}", diagram.location)),
                );
            }
            problems
        })
        .collect()
}

/// Why `row` cannot give counters: no such lab, a lab that is not profiled, no such kernel
/// variant.
fn check_profiled_row(row: &ProfiledRow, labs: &Labs) -> Option<String> {
    let Some(lab) = labs.ready.get(&row.lab) else {
        return Some(if labs.planned.contains_key(&row.lab) {
            format!(
                "lab `{}` is planned: it has no kernels to profile yet",
                row.lab
            )
        } else {
            format!(
                "there is no lab `{}` (labs: {})",
                row.lab,
                labs.names().join(", ")
            )
        });
    };
    if !lab.profile {
        return Some(format!(
            "lab `{}` is not profiled: set `profile = true` in {} so that Nsight Compute counts what this diagram predicts",
            lab.name,
            lab.file.display()
        ));
    }
    let kernel_variants: Vec<&str> = lab
        .variants
        .iter()
        .filter(|v| v.kernel.is_some())
        .map(|v| v.name.as_str())
        .collect();
    row.variants
        .iter()
        .find(|v| !kernel_variants.contains(&v.as_str()))
        .map(|v| {
            format!(
                "lab `{}` has no kernel variant `{v}` (its kernel variants: {})",
                lab.name,
                kernel_variants.join(", ")
            )
        })
}

/// The labs the book's diagrams take counters from, each once.
pub fn profiled_labs(index: &BookIndex) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for diagram in index.chapters.values().flat_map(|scan| &scan.diagrams) {
        if let Some(row) = &diagram.spec.profiled
            && !names.contains(&row.lab.as_str())
        {
            names.push(&row.lab);
        }
    }
    names
}

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

/// Every diagram of the book drawn, in chapter order: its chapter, its directive and its view.
pub fn draw_book<'a>(
    index: &'a BookIndex,
    labs: &Labs,
    results: Results<'_>,
) -> anyhow::Result<Vec<(&'a Path, &'a DiagramDirective, Drawn)>> {
    let mut drawn = Vec::new();
    for (path, scan) in &index.chapters {
        for (i, diagram) in scan.diagrams.iter().enumerate() {
            let id = format!("diagram-{}-{}", slug(path), i + 1);
            drawn.push((path.as_path(), diagram, draw(&id, diagram, labs, results)?));
        }
    }
    Ok(drawn)
}

/// The HTML of every diagram, by chapter, in the order of the chapter's diagrams.
pub fn render_diagrams(
    index: &BookIndex,
    labs: &Labs,
    results: Results<'_>,
    templates: &Templates,
) -> anyhow::Result<BTreeMap<PathBuf, Vec<Rendered>>> {
    let mut rendered: BTreeMap<PathBuf, Vec<Rendered>> = BTreeMap::new();
    for (path, diagram, drawn) in draw_book(index, labs, results)? {
        let html = templates
            .render_diagram(&drawn.view)
            .map_err(|err| anyhow::anyhow!("{}: rendering the diagram: {err}", diagram.location))?;
        rendered
            .entry(path.to_path_buf())
            .or_default()
            .push(Rendered {
                html,
                failures: drawn.failures,
            });
    }
    Ok(rendered)
}

/// One diagram's HTML, its figure's id `id`.
pub fn render_one(
    id: &str,
    diagram: &DiagramDirective,
    labs: &Labs,
    results: Results<'_>,
    templates: &Templates,
) -> anyhow::Result<Rendered> {
    let drawn = draw(id, diagram, labs, results)?;
    let html = templates
        .render_diagram(&drawn.view)
        .map_err(|err| anyhow::anyhow!("{}: rendering the diagram: {err}", diagram.location))?;
    Ok(Rendered {
        html,
        failures: drawn.failures,
    })
}

/// One diagram's view: its panels evaluated, each beside its lab row's counters if it has one.
pub fn draw(
    id: &str,
    diagram: &DiagramDirective,
    labs: &Labs,
    results: Results<'_>,
) -> anyhow::Result<Drawn> {
    let panels = model::evaluate(&diagram.spec)
        .map_err(|why| anyhow::anyhow!("{}: {why}", diagram.location))?;
    let counters: Vec<view::PanelCounters<'_>> = panels
        .iter()
        .map(|panel| {
            let row = diagram.spec.profiled.as_ref()?;
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
        .map(|why| {
            format!(
                "{}: the diagram has no counters beside it: {why}",
                diagram.location
            )
        })
        .collect();
    Ok(Drawn {
        view: view::diagram_view(id, &diagram.spec, &panels, &counters),
        failures,
    })
}

/// A chapter's file name as an id part: `coalescing` for `hierarchy/coalescing.md`.
fn slug(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}
