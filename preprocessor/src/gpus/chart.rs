//! A lab's effective bandwidth on every GPU as one SVG chart: a group of bars per variant, a
//! bar (a series, one colour) per GPU, on one GB/s axis from zero. Coordinates are computed
//! here; `templates/gpus-chart.hbs` only places them.

use super::view::LabComparison;
use crate::chart::scale::{Tick, zero_based};
use serde::Serialize;

const WIDTH: f64 = 640.0;
/// Room for the variants' labels, left of the bars.
const LEFT: f64 = 170.0;
const RIGHT: f64 = 56.0;
const TOP: f64 = 8.0;
/// Room for the axis' labels below the bars, and the legend below them.
const AXIS: f64 = 32.0;
const LEGEND_LINE: f64 = 16.0;
const BAR: f64 = 9.0;
const GROUP_GAP: f64 = 10.0;
/// Distinct colours (CSS classes `series-0` …); a seventh GPU reuses the first.
const SERIES: usize = 6;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChartView {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    /// Where the bars end and the axis is.
    pub bottom: f64,
    pub groups: Vec<Group>,
    pub bars: Vec<Bar>,
    pub ticks: Vec<Tick>,
    pub legend: Vec<LegendItem>,
    /// What the chart shows, for a screen reader.
    pub label: String,
}

/// A variant's label, at the middle of its bars: cut to the room left of them, whole in its
/// tooltip.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    pub y: f64,
    pub label: String,
    pub full_label: String,
}

/// The characters of a label that fit left of the bars (at the chart's 11 px type).
const LABEL_CHARS: usize = 26;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bar {
    pub y: f64,
    pub width: f64,
    /// Where the bar ends (its figure stands after it).
    pub end: f64,
    pub height: f64,
    pub series: usize,
    /// The tooltip and the figure at its end: "NVIDIA H200 (nvidia-h200-882b8b4e): 3908 GB/s".
    pub title: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LegendItem {
    pub x: f64,
    pub y: f64,
    pub series: usize,
    pub text: String,
}

/// The chart of a lab that moves bytes, where some GPU measured a variant; `None` otherwise.
pub fn chart(lab: &LabComparison) -> Option<ChartView> {
    if !lab.bandwidth {
        return None;
    }
    let max = lab
        .rows
        .iter()
        .flat_map(|row| row.cells.iter().filter_map(|cell| cell.gbs_value))
        .fold(0.0_f64, f64::max);
    if max <= 0.0 {
        return None;
    }
    let gpus = lab.columns.len();
    let group_height = gpus as f64 * BAR + GROUP_GAP;
    let bottom = TOP + lab.rows.len() as f64 * group_height;
    // The same round axis from zero as the lab's own bar chart.
    let (scale, ticks) = zero_based(max, LEFT, WIDTH - RIGHT);
    let mut bars = Vec::new();
    let mut groups = Vec::new();
    for (row_index, row) in lab.rows.iter().enumerate() {
        let top = TOP + row_index as f64 * group_height;
        groups.push(Group {
            y: top + gpus as f64 * BAR / 2.0,
            label: crate::chart::bars::fit(&row.label, LABEL_CHARS),
            full_label: row.label.clone(),
        });
        for (series, (cell, column)) in row.cells.iter().zip(&lab.columns).enumerate() {
            let Some(gbs) = cell.gbs_value else {
                continue;
            };
            let width = (scale.pos(gbs) - LEFT).max(0.5);
            bars.push(Bar {
                y: top + series as f64 * BAR,
                width,
                end: LEFT + width,
                height: BAR - 1.0,
                series: series % SERIES,
                title: format!("{}: {} GB/s", series_name(column), cell.gbs),
                value: cell.gbs.clone(),
            });
        }
    }
    let legend: Vec<LegendItem> = lab
        .columns
        .iter()
        .enumerate()
        .map(|(series, column)| LegendItem {
            x: LEFT,
            y: bottom + AXIS + series as f64 * LEGEND_LINE,
            series: series % SERIES,
            text: series_name(column),
        })
        .collect();
    Some(ChartView {
        width: WIDTH,
        height: bottom + AXIS + legend.len() as f64 * LEGEND_LINE,
        left: LEFT,
        right: WIDTH - RIGHT,
        top: TOP,
        bottom,
        groups,
        bars,
        ticks,
        legend,
        label: format!("Effective GB/s of {} on each GPU", lab.title),
    })
}

/// "NVIDIA H200 (nvidia-h200-882b8b4e)": a series' name, the board apart from its kind.
fn series_name(column: &super::view::LabColumn) -> String {
    if column.device.is_empty() {
        column.folder.clone()
    } else {
        format!("{} ({})", column.device, column.folder)
    }
}
