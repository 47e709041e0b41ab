//! The book as a whole: walks over every chapter's diagrams, above the scanner (which finds
//! them) and the diagram views (which draw one at a time).

use crate::diagram::{Drawn, ProfiledRow, Rendered, Results, draw, model};
use crate::labs::Labs;
use crate::scan::{BookIndex, DiagramDirective};
use crate::templates::Templates;
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
            let drawn_one = draw(&id, (&diagram.spec, &diagram.location), labs, results)?;
            drawn.push((path.as_path(), diagram, drawn_one));
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
