//! A lab's effective bandwidth on every GPU as one bar chart ([`crate::chart::bars`]): a row
//! per variant, a series (a bar in its own colour) per GPU, on one GB/s axis from zero, with
//! the lab chart's legend, value axis and whiskers over each GPU's samples. `templates/chart.hbs`
//! writes it out, as it does every lab's chart.

use super::view::{LabColumn, LabComparison};
use crate::chart::ChartView;
use crate::chart::bars::{self, BarRow, Bars, Look, Series, Unit};
use crate::chart::measure::Role;
use crate::chart::scene::SERIES;

/// The chart of a lab that moves bytes, where some GPU measured a variant; `None` otherwise.
pub fn chart(lab: &LabComparison) -> Option<ChartView> {
    let measured = |cell: &super::view::Cell| cell.gbs_spread.is_some_and(|s| s.median > 0.0);
    if !lab.bandwidth || !lab.rows.iter().flat_map(|row| &row.cells).any(measured) {
        return None;
    }
    let rows = lab
        .rows
        .iter()
        .map(|row| BarRow {
            label: row.label.clone(),
            // Each GPU has its own ceiling: no row is drawn as the reference.
            role: Role::Own,
            figures: row
                .cells
                .iter()
                .map(|cell| {
                    cell.gbs_spread
                        .ok_or_else(|| cell.problem.clone().unwrap_or_else(|| "no GB/s".into()))
                })
                .collect(),
        })
        .collect();
    let series = lab
        .columns
        .iter()
        .enumerate()
        .map(|(i, column)| Series {
            name: series_name(column),
            short: None,
            key: column.folder.clone(),
            look: Look::Colour(SERIES[i % SERIES.len()]),
        })
        .collect();
    let drawn = Bars {
        rows,
        axis_label: "GB/s".into(),
        unit: Unit::Suffix("GB/s".into()),
        field: "gbs",
        reference: None,
        series,
        axis_from: 0.0,
    };
    let id = format!("gpus-chart-{}", lab.lab);
    let mut svg = bars::draw(&drawn, &id, "bars");
    svg.title = format!("Effective GB/s of {} on each GPU", lab.title);
    let caption = bars::caption(
        &drawn,
        "Effective GB/s of each variant on each GPU, a bar per GPU in the legend's order and colour",
        &[],
    );
    Some(ChartView {
        kind: "gpus",
        id,
        svg,
        caption,
    })
}

/// "NVIDIA H200 (nvidia-h200-882b8b4e)": a series' name, the board apart from its kind.
fn series_name(column: &LabColumn) -> String {
    if column.device.is_empty() {
        column.folder.clone()
    } else {
        format!("{} ({})", column.device, column.folder)
    }
}
