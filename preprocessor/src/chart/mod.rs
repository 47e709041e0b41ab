//! The chart drawn beside every lab's table, as SVG at build time, from the same results the
//! table shows. Which chart follows from the lab ([`LabSpec::chart_kind`]): a sweep's rows at
//! their `plot_x` ([`points`]), the measured roofline of a lab with a `ridge` ([`roofline`]),
//! speed-up bars against a baseline row, or one bar per row ([`bars`]). A chart that has
//! nothing to draw gives way to the bars, where every row without a result is a labelled gap.
//! Coordinates are computed here; `templates/chart.hbs` only writes the elements out.

pub mod bars;
pub mod measure;
pub mod points;
pub mod roofline;
pub mod scale;
pub mod scene;
#[cfg(test)]
mod testing;
pub mod timeline;

use kernelbook_core::results::LabResults;
use kernelbook_core::spec::{ChartKind, LabSpec};
use serde::Serialize;

pub use scale::MAX_TICKS;

/// A chart as the template places it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChartView {
    /// "bars", "speedup", "points" or "roofline": a CSS class and the figure's `data-kind`.
    pub kind: &'static str,
    /// The figure's id, and the prefix of its SVG's ids.
    pub id: String,
    pub svg: scene::Scene,
    /// What the chart draws, in words, under it.
    pub caption: String,
}

/// The GPU the book was recorded on, drawn beside a live measurement on another GPU.
#[derive(Debug, Clone, Copy)]
pub struct Beside<'a> {
    pub results: &'a LabResults,
}

impl Beside<'_> {
    /// "NVIDIA H200, recorded".
    pub fn name(&self) -> String {
        format!("{}, recorded", self.results.provenance.device.name)
    }
}

/// The chart of `results` as `lab` asks for it, with the recorded GPU's results beside a live
/// run where given; `None` for a lab that asks for none (`kind = "none"`).
pub fn chart_view(
    lab: &LabSpec,
    results: &LabResults,
    beside: Option<Beside<'_>>,
) -> Option<ChartView> {
    let id = format!("chart-{}", lab.name);
    let kind = lab.chart_kind();
    let drawn = match kind {
        ChartKind::None => return None,
        ChartKind::Points => points::chart(lab, results, beside),
        ChartKind::Roofline => roofline::chart(lab, results, beside),
        ChartKind::Speedup => bars::speedup_chart(lab, results, beside, &id),
        ChartKind::Bars => None,
    };
    let (kind, (mut svg, caption)) = match drawn {
        Some(drawn) => (kind.name(), drawn),
        None => {
            let mut drawn = bars::bar_chart(lab, results, beside, &id);
            if kind != ChartKind::Bars {
                drawn.1 = format!(
                    "{} (The {} chart has nothing to draw from these results.)",
                    drawn.1,
                    kind.name()
                );
            }
            ("bars", drawn)
        }
    };
    svg.title = format!("{}: {}", lab.title, svg.title);
    Some(ChartView {
        kind,
        id,
        svg,
        caption,
    })
}
